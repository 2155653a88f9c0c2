#!/usr/bin/env python3
# N MQTT 5.0 connections, each mapping ALIASES inbound topic aliases to topics of TLEN bytes (QoS 0 PUBLISHes), held
# open; each from its own loopback source address. Stops by itself.
#   python3 alias.py PORT N TLEN ALIASES       e.g. alias.py 1883 1500 1000 64
import struct, sys, time
from mqttraw import connect, accepted, dial, packet, utf8, vbi
port, n, tlen, aliases = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
socks, ok, bad, t0 = [], 0, 0, time.time()
for i in range(n):
    try:
        c = dial(port, i, timeout=5)
        c.sendall(connect(b'a%d' % i, version=5))
        if not accepted(c.recv(64)):
            bad += 1
            continue
        ok += 1
        out = b''
        for alias in range(1, aliases + 1):
            topic = (b'%d/' % alias) + b't' * (tlen - 4)
            properties = bytes([0x23]) + struct.pack('>H', alias)  # Topic Alias
            out += packet(0x30, utf8(topic) + vbi(len(properties)) + properties + b'x')
        c.sendall(out)
        socks.append(c)
    except OSError:
        bad += 1
    if i % 200 == 0:
        print(i, ok, bad, round(time.time() - t0, 1), flush=True)
print('done ok', ok, 'bad', bad, flush=True)
time.sleep(3)
