#!/usr/bin/env python3
# N anonymous MQTT 3.1.1 connections, each CONNECT carrying a QoS 1 will of SIZE bytes, held open; each from its own
# loopback source address (127.0.x.y), past --max-connections-per-address. Stops by itself after HOLD seconds.
#   python3 wills.py PORT N SIZE [HOLD]        e.g. wills.py 1883 3000 60000 3
import sys, time
from mqttraw import connect, accepted, dial, utf8
port, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hold = float(sys.argv[4]) if len(sys.argv) > 4 else 5
socks, ok, refused, t0 = [], 0, 0, time.time()
for i in range(n):
    try:
        c = dial(port, i)
        # clean session, a will at QoS 1
        c.sendall(connect(b'w%d' % i, flags=0x02 | 0x04 | 0x08, payload_after_id=utf8(b'will/%d' % i) + utf8(b'x' * size)))
        if accepted(c.recv(4)):
            ok += 1
        else:
            refused += 1
        socks.append(c)
    except OSError:
        refused += 1
    if i % 200 == 0:
        print(i, ok, refused, round(time.time() - t0, 1), flush=True)
print('done ok', ok, 'refused', refused, flush=True)
time.sleep(hold)
