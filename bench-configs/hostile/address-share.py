#!/usr/bin/env python3
# K MQTT 3.1.1 connections from ONE source address (127.0.0.2) each subscribe at QoS 1 to a topic of their own and
# publish N QoS 1 messages of SIZE bytes to it; they read what comes back and acknowledge none, and stay. Then an
# honest subscriber and publisher from another address (127.0.0.1) exchange 200 QoS 1 messages: does the one host's
# held messages starve it? Against ringmq, start the broker with --limit-loopback so that 127.0.0.2 counts as a host
# (without it, loopback is exempt from every per-address bound). With AWAY, the same host first leaves AWAY persistent
# sessions subscribed to 'away/I' offline and publishes N messages of SIZE bytes to each, which the broker queues for
# them; with 'one-topic' after AWAY, all AWAY sessions subscribe to 'away/all' instead and N messages are published
# there once (every queued copy shared by the AWAY sessions). Stops by itself.
#   python3 address-share.py PORT K N SIZE [AWAY [one-topic]]   e.g. address-share.py 1883 24 40 65536 16
import struct, sys, threading, time
from mqttraw import connect, accepted, dial_from, live_receives, packet, read_packet, recv_exactly, utf8



def read_forever(sock):
    try:
        while True:
            read_packet(sock)  # PUBACKs and PUBLISHes alike: never a PUBACK back
    except OSError:
        pass


port, k, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
away = int(sys.argv[5]) if len(sys.argv) > 5 else 0
one_topic = len(sys.argv) > 6 and sys.argv[6] == 'one-topic'
t0 = time.time()
for i in range(away):
    s = dial_from(port, '127.0.0.2')
    s.sendall(connect(b'away%d' % i, flags=0x00))  # a persistent session
    assert accepted(recv_exactly(s, 4)), 'refused'
    s.sendall(packet(0x82, struct.pack('>H', 1) + utf8(b'away/all' if one_topic else b'away/%d' % i) + b'\x01'))
    read_packet(s)  # SUBACK
    s.sendall(packet(0xE0, b''))  # DISCONNECT: the session stays, offline
    s.close()
if away:
    feeder = dial_from(port, '127.0.0.2', timeout=60)
    feeder.sendall(connect(b'feeder'))
    assert accepted(recv_exactly(feeder, 4)), 'refused'
    for i in range(1 if one_topic else away):
        for m in range(n):
            topic = b'away/all' if one_topic else b'away/%d' % i
            feeder.sendall(packet(0x32, utf8(topic) + struct.pack('>H', 1 + m) + b'a' * size))
            read_packet(feeder)  # its PUBACK
    print('%d sessions of 127.0.0.2 offline, sent %d x %d B %s, in %.1f s' % (
        away, n, size, 'to all on one topic' if one_topic else 'each', time.time() - t0), flush=True)
hogs = []
for i in range(k):
    s = dial_from(port, '127.0.0.2')
    s.sendall(connect(b'hog%d' % i))
    assert accepted(recv_exactly(s, 4)), 'refused'
    topic = b'hog/%d' % i
    s.sendall(packet(0x82, struct.pack('>H', 1) + utf8(topic) + b'\x01'))
    read_packet(s)  # SUBACK
    s.settimeout(None)
    threading.Thread(target=read_forever, args=(s,), daemon=True).start()
    body = b'h' * size
    s.sendall(b''.join(packet(0x32, utf8(topic) + struct.pack('>H', 1 + m) + body) for m in range(n)))
    hogs.append(s)
    time.sleep(0.2)
print('%d connections from 127.0.0.2 up, %d x %d B each, in %.1f s' % (k, n, size, time.time() - t0), flush=True)
time.sleep(2)
live = dial_from(port, '127.0.0.1')
live.sendall(connect(b'live'))
assert accepted(recv_exactly(live, 4))
live.sendall(packet(0x82, struct.pack('>H', 1) + utf8(b'live/x') + b'\x01'))
read_packet(live)
pub = dial_from(port, '127.0.0.1', timeout=30)
pub.sendall(connect(b'publisher'))
assert accepted(recv_exactly(pub, 4))
print('live subscriber on 127.0.0.1: %d of 200 QoS 1 messages received' % live_receives(live, pub), flush=True)
