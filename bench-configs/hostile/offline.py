#!/usr/bin/env python3
# K persistent MQTT 3.1.1 subscribers to '#' at QoS 1 go offline (clean session 0, then DISCONNECT); a publisher
# sends N QoS 1 messages of SIZE bytes, which the broker keeps for them; then a live subscriber to 'live/#' takes
# 200 QoS 1 messages: do the offline sessions' queues starve the live one? Stops by itself.
#   python3 offline.py PORT K N SIZE          e.g. offline.py 1883 1 2000 16000
import struct, sys, time
from mqttraw import connect, accepted, live_receives, dial, packet, read_packet, recv_exactly, utf8


def publish(sock, topic, packet_id, payload):
    sock.sendall(packet(0x32, utf8(topic) + struct.pack('>H', packet_id) + payload))


def subscriber(index, client_id, topic_filter, clean):
    sock = dial(port, index, timeout=10)
    sock.sendall(connect(client_id, flags=0x02 if clean else 0x00))
    assert accepted(recv_exactly(sock, 4)), 'refused'
    sock.sendall(packet(0x82, struct.pack('>H', 1) + utf8(topic_filter) + b'\x01'))
    read_packet(sock)  # SUBACK
    return sock


port, k, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for i in range(k):
    s = subscriber(1 + i, b'offline%d' % i, b'#', False)
    s.sendall(b'\xe0\x00')
    s.close()
pub = dial(port, 0, timeout=30)
pub.sendall(connect(b'publisher'))
assert accepted(recv_exactly(pub, 4))
t0 = time.time()
body = b'b' * size
for i in range(n):
    publish(pub, b'bulk/x', 1 + i % 65535, body)
    if i % 32 == 31:
        for _ in range(32):
            read_packet(pub)  # PUBACKs, 32 in flight at most
for _ in range(n % 32):
    read_packet(pub)
print('%d x %d B published to %d offline session(s) in %.1f s' % (n, size, k, time.time() - t0), flush=True)
live = subscriber(5000, b'live', b'live/#', True)
print('live subscriber: %d of 200 QoS 1 messages received' % live_receives(live, pub), flush=True)
