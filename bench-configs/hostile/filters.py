#!/usr/bin/env python3
# One persistent MQTT 3.1.1 client (clean session 0) subscribes N filters of LEN bytes, one SUBSCRIBE each, and
# leaves (its session stays); then M new clients (clean session, 1,000-byte ids) connect and each subscribes one
# 1,000-byte filter, staying connected until all have tried: does one client's filters lock the others out? Stops by
# itself.
# With G (default 1), G such clients subscribe N filters each, one after another, from their own addresses.
#   python3 filters.py PORT N LEN M [G]       e.g. filters.py 1883 10000 6000 1000 20
import struct, sys, time
from mqttraw import connect, accepted, dial, packet, recv_exactly, utf8


def subscribe(sock, packet_id, topic_filter):
    """SUBSCRIBE one filter at QoS 1; the SUBACK's return code (0x80: refused)."""
    sock.sendall(packet(0x82, struct.pack('>H', packet_id) + utf8(topic_filter) + b'\x01'))
    suback = recv_exactly(sock, 5)
    return suback[4]


port, n, length, m = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.time()
g = int(sys.argv[5]) if len(sys.argv) > 5 else 1
granted = refused = shut_out = 0
for k in range(g):
    greedy = dial(port, 10000 + k, timeout=30)
    greedy.sendall(connect(b'greedy%d' % k, flags=0x00))
    if not accepted(recv_exactly(greedy, 4)):
        shut_out += 1
        greedy.close()
        continue
    for i in range(n):
        code = subscribe(greedy, 1 + i % 65535, (('g/%d/%d/' % (k, i)).encode() + b'f' * length)[:length])
        granted, refused = (granted + 1, refused) if code != 0x80 else (granted, refused + 1)
    greedy.sendall(b'\xe0\x00')  # DISCONNECT: its session and filters stay
    greedy.close()
print('greedy (%d, %d of them refused at CONNECT): %d filters granted, %d refused, %.1f s'
      % (g, shut_out, granted, refused, time.time() - t0), flush=True)
connected = subscribed = 0
others = []
for i in range(m):
    try:
        c = dial(port, 1 + i)
        others.append(c)
        c.sendall(connect(('n%d' % i).encode().ljust(1000, b'p')))
        if accepted(recv_exactly(c, 4)):
            connected += 1
            subscribed += subscribe(c, 1, ('o/%d/' % i).encode().ljust(1000, b'o')) != 0x80
    except OSError:
        pass
for c in others:
    try:
        c.sendall(b'\xe0\x00')
        c.close()
    except OSError:
        pass
print('others: %d of %d connected, %d subscribed a filter' % (connected, m, subscribed), flush=True)
