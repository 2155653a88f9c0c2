#!/usr/bin/env python3
# N admitted clients, each from its own loopback source address, each sending all but the last 1,000 bytes of a
# QoS 0 PUBLISH of LENGTH bytes (remaining length), then nothing, held HOLD seconds (default 10). Meanwhile, from
# other addresses, probes: a fresh client's CONNECT answered, and a large message (100 KB) published and delivered
# back to its own subscription. Stops by itself. With `one-host`, every flooding client comes from one source address
# (give the broker --limit-loopback, and --max-connections-per-address N or more, to count it as one host).
#   python3 partialpub.py PORT N LENGTH [HOLD] [one-host]      e.g. partialpub.py 1883 450 262000
# Prints: clients admitted, then each probe (seconds after the flood was in) and whether it got through.
import sys
import time
from mqttraw import dial, connect, accepted, read_packet, recv_exactly, packet, utf8, vbi
port, n, length = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hold = float(sys.argv[4]) if len(sys.argv) > 4 else 10
one_host = len(sys.argv) > 5 and sys.argv[5] == 'one-host'


def admitted(index, client_id):
    sock = dial(port, index, timeout=5)
    sock.sendall(connect(client_id))
    if not accepted(recv_exactly(sock, 4)):
        raise OSError('refused')
    return sock


socks, refused = [], 0
for i in range(n):
    try:
        s = admitted(0 if one_host else i, b'flood-%d' % i)
        topic = utf8(b'flood/%d' % i)
        s.sendall(bytes([0x30]) + vbi(length) + topic + b'x' * (length - len(topic) - 1000))
        socks.append(s)
    except OSError:
        refused += 1
print('admitted=%d refused=%d' % (len(socks), refused), flush=True)
t0 = time.time()
probe = 0
while time.time() - t0 < hold:
    probe += 1
    start = time.time()
    result = 'ok'
    try:
        p = admitted(60000 + probe, b'probe-%d' % probe)
        p.settimeout(15)
        p.sendall(packet(0x82, b'\x00\x01' + utf8(b'probe/%d' % probe) + b'\x00'))
        read_packet(p)  # SUBACK
        body = utf8(b'probe/%d' % probe) + b'y' * 100000
        p.sendall(packet(0x30, body))
        first, got = read_packet(p)
        if got != body:
            result = 'wrong message'
        p.close()
    except OSError as ex:
        result = 'failed (%s)' % ex
    print('probe %d at %.1f s: %s in %.2f s' % (probe, start - t0, result, time.time() - start), flush=True)
    time.sleep(max(0.0, 1.0 - (time.time() - start)))
for s in socks:
    s.close()
