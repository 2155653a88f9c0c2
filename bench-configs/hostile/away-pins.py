#!/usr/bin/env python3
# Pins under every queue away: does one host make each message that wants room cost the broker a plan that steps over
# them? ONE source address (127.0.0.2) leaves AWAY persistent sessions subscribed at QoS 1 to 'pin' offline; one of its
# connections ('pinner') subscribes to 'pin' too and acknowledges nothing; then PINS one-byte QoS 1 messages go to 'pin',
# so each session away queues PINS copies that the pinner holds too (none can be taken back: each is a pin). Then K
# connections from each of HOSTS more addresses (127.0.0.4 on) subscribe to topics of their own, publish N QoS 1
# messages of SIZE bytes each and acknowledge none, which leaves little of the message memory free (each address may
# hold three times what is free). Then, for SECONDS: an honest publisher on 127.0.0.1 sends QoS 1 messages of SIZE bytes
# to a subscriber of its own that acknowledges what it reads (up to 32 unacknowledged), which so holds more than is
# free: each message wants room, and the broker plans to take it back from the sessions away, through the pins. A
# bystander pair on 127.0.0.3 times QoS 0 round trips meanwhile. Prints the honest messages acknowledged and received,
# and the bystander's round trips. Against ringmq, start the broker with --limit-loopback (bench-configs/hostile/
# address-share-run.sh does, with this script by name). Stops by itself.
#   python3 away-pins.py PORT AWAY PINS HOSTS K N SIZE SECONDS   e.g. away-pins.py 1883 1024 300 8 3 40 16384 5
import socket, struct, sys, threading, time
from mqttraw import connect, accepted, dial_from, packet, read_packet, recv_exactly, utf8



def client(port, source, client_id, subscribe=None, qos=1, clean=True):
    s = dial_from(port, source)
    s.sendall(connect(client_id, flags=0x02 if clean else 0x00))
    assert accepted(recv_exactly(s, 4)), 'refused: %s' % client_id
    if subscribe:
        s.sendall(packet(0x82, struct.pack('>H', 1) + utf8(subscribe) + bytes([qos])))
        read_packet(s)  # SUBACK
    return s


def read_forever(sock):
    try:
        while True:
            read_packet(sock)  # never a PUBACK back
    except OSError:
        pass


def percentile(values, p):
    return sorted(values)[min(len(values) - 1, int(len(values) * p / 100))] if values else float('nan')


port, away, pins, hosts, k, n, size, seconds = (int(a) for a in sys.argv[1:9])
t0 = time.time()
for i in range(away):
    s = client(port, '127.0.0.2', b'away%d' % i, b'pin', clean=False)
    s.sendall(packet(0xE0, b''))  # DISCONNECT: the session stays, offline
    s.close()
pinner = client(port, '127.0.0.2', b'pinner', b'pin')
pinner.settimeout(None)
threading.Thread(target=read_forever, args=(pinner,), daemon=True).start()
feeder = client(port, '127.0.0.2', b'feeder')
feeder.settimeout(60)
for m in range(pins):
    feeder.sendall(packet(0x32, utf8(b'pin') + struct.pack('>H', 1 + m % 65535) + b'p'))
    read_packet(feeder)  # its PUBACK
print('%d sessions of 127.0.0.2 away, %d pins each, in %.1f s' % (away, pins, time.time() - t0), flush=True)
for i in range(hosts * k):
    topic = b'hog/%d' % i
    s = client(port, '127.0.0.%d' % (4 + i // k), b'hog%d' % i, topic)
    s.settimeout(None)
    threading.Thread(target=read_forever, args=(s,), daemon=True).start()
    s.sendall(b''.join(packet(0x32, utf8(topic) + struct.pack('>H', 1 + m) + b'h' * size) for m in range(n)))
    time.sleep(0.1)
print('%d connections from each of %d more addresses up, %d x %d B each, in %.1f s' % (
    k, hosts, n, size, time.time() - t0), flush=True)
time.sleep(2)

live = client(port, '127.0.0.1', b'live', b'live/x')
pub = client(port, '127.0.0.1', b'publisher')
by_sub = client(port, '127.0.0.3', b'bysub', b'by/x', qos=0)
by_pub = client(port, '127.0.0.3', b'bypub')
stop = time.time() + seconds
received = [0]
acked = [0]


def receive_live():
    live.settimeout(0.5)
    while time.time() < stop + 1:
        try:
            first, body = read_packet(live)
        except socket.timeout:
            continue
        except OSError:
            return
        if first >> 4 == 3:
            received[0] += 1
            live.sendall(b'\x40\x02' + body[2 + struct.unpack('>H', body[:2])[0]:][:2])  # PUBACK


def publish_live():
    sent = 0
    pub.settimeout(5)
    try:
        while time.time() < stop:
            while sent - acked[0] < 32:
                pub.sendall(packet(0x32, utf8(b'live/x') + struct.pack('>H', 1 + sent % 65535) + b'l' * size))
                sent += 1
            read_packet(pub)  # a PUBACK
            acked[0] += 1
    except OSError:
        pass


threads = [threading.Thread(target=receive_live, daemon=True), threading.Thread(target=publish_live, daemon=True)]
for t in threads:
    t.start()
trips = []
by_sub.settimeout(5)
try:
    while time.time() < stop:
        began = time.perf_counter()
        by_pub.sendall(packet(0x30, utf8(b'by/x') + b'b' * 64))
        read_packet(by_sub)
        trips.append((time.perf_counter() - began) * 1e6)
except OSError:
    print('bystander: no message within 5 s', flush=True)
for t in threads:
    t.join(seconds + 5)
print('honest QoS 1 on 127.0.0.1 in %d s: %d acknowledged (%.0f/s), %d received' % (
    seconds, acked[0], acked[0] / seconds, received[0]), flush=True)
print('bystander QoS 0 round trips on 127.0.0.3: %d (%.0f/s), p50 %.0f us, p99 %.0f us, max %.0f us' % (
    len(trips), len(trips) / seconds, percentile(trips, 50), percentile(trips, 99), max(trips or [0])), flush=True)
