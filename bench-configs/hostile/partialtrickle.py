#!/usr/bin/env python3
# N admitted clients (keep-alive 0), each from its own loopback source address, each sending the first 8 KiB of a
# PUBLISH that declares LENGTH and then one byte every 1.5 s (never silent for 2 s); then an honest client with
# keep-alive KA publishes a 100 KB QoS 0 message to a subscriber. Prints when it arrives, and whether the honest
# publisher was closed. Stops by itself after HOLD seconds.
#   python3 partialtrickle.py PORT N LENGTH KA HOLD      e.g. partialtrickle.py 1883 150 262000 4 25
# Before 56a9e7c the tricklers held their rooms for good (PartialPacketRoom) and the message never came; see the
# broker's 'connections closed (partial packet stalled 2 s while others waited for room)' counter (ringmq stat).
import socket
import struct
import sys
import time
from mqttraw import dial, accepted, read_packet, recv_exactly, packet, utf8, vbi
port, n, length, ka, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])


def conn(index, cid, keepalive):
    s = dial(port, index, timeout=5)
    s.sendall(packet(0x10, utf8(b'MQTT') + bytes([4, 2]) + struct.pack('>H', keepalive) + utf8(cid)))
    if not accepted(recv_exactly(s, 4)):
        raise OSError('refused')
    return s


socks = []
for i in range(n):
    s = conn(i, b'trickle-%d' % i, 0)
    topic = utf8(b'trickle/%d' % i)
    s.sendall(bytes([0x30]) + vbi(length) + topic + b'x' * 8192)
    socks.append(s)
print('tricklers', len(socks), flush=True)


def trickle():
    for s in socks:
        try:
            s.send(b'x')
        except OSError:
            pass


trickle()
time.sleep(1.0)
trickle()
sub = conn(5000, b'sub', 0)
sub.sendall(packet(0x82, b'\x00\x01' + utf8(b'large') + b'\x00')); read_packet(sub)
pub = conn(5001, b'honest', ka)
body = utf8(b'large') + b'y' * 100000
pub.sendall(packet(0x30, body))
sub.settimeout(0.2); pub.settimeout(0.01)
t0 = time.time(); last = t0; got = False; pub_closed = None
while time.time() - t0 < hold:
    if time.time() - last > 1.5:
        trickle(); last = time.time()
    try:
        d = sub.recv(200000)
        if d: got = True; print('subscriber got %d bytes at %.1f s' % (len(d), time.time() - t0), flush=True); break
    except socket.timeout: pass
    if pub_closed is None:
        try:
            d = pub.recv(10)
            if not d: pub_closed = time.time() - t0; print('honest publisher closed by broker at %.1f s' % pub_closed, flush=True)
        except socket.timeout: pass
        except OSError as ex: pub_closed = time.time() - t0; print('honest publisher error %s at %.1f' % (ex, pub_closed), flush=True)
print('delivered=%s honest_closed=%s' % (got, pub_closed), flush=True)
for s in socks:
    s.close()
