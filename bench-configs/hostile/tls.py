#!/usr/bin/env python3
# N MQTT 3.1.1 connections over TLS (certificate not verified), held open; each from its own loopback source address.
# Stops by itself after 3 s.
#   python3 tls.py PORT N                      e.g. tls.py 8883 11000
import ssl, sys, time
from mqttraw import connect, accepted, dial
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
socks, ok, bad, t0 = [], 0, 0, time.time()
for i in range(n):
    try:
        c = ctx.wrap_socket(dial(port, i))
        c.sendall(connect(b't%d' % i))
        if accepted(c.recv(4)):
            ok += 1
        else:
            bad += 1
        socks.append(c)
    except OSError as e:
        bad += 1
        if bad < 3:
            print('error', e)
    if i % 500 == 0:
        print(i, ok, bad, round(time.time() - t0, 1), flush=True)
print('done ok', ok, 'bad', bad, flush=True)
time.sleep(3)
