#!/usr/bin/env python3
# N persistent MQTT 3.1.1 sessions (clean session 0), client ids of IDLEN bytes, each connected then disconnected, 200
# at a time from loopback source addresses: what offline sessions cost. Stops by itself.
#   python3 sessions.py PORT N IDLEN           e.g. sessions.py 1883 60000 1000
import sys, time
from mqttraw import connect, accepted, dial
port, n, idlen = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ok, bad, t0, batch = 0, 0, time.time(), 200
for start in range(0, n, batch):
    socks = []
    for i in range(start, min(n, start + batch)):
        try:
            c = dial(port, i)
            c.sendall(connect(('s%d' % i).encode().ljust(idlen, b'p'), flags=0x00))
            socks.append(c)
        except OSError:
            bad += 1
    for c in socks:
        try:
            if accepted(c.recv(4)):
                ok += 1
            else:
                bad += 1
            c.sendall(b'\xe0\x00')  # DISCONNECT
            c.close()
        except OSError:
            bad += 1
    if (start + batch) % 5000 == 0:
        print(start + batch, ok, bad, round(time.time() - t0, 1), flush=True)
print('done ok', ok, 'bad', bad, flush=True)
