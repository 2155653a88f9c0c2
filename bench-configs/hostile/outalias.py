#!/usr/bin/env python3
# One MQTT 5.0 subscriber to '#' allowing 65,535 outbound topic aliases, and one publisher of N distinct topics of
# TLEN bytes (QoS 0); prints what the subscriber received. Stops by itself.
#   python3 outalias.py PORT N TLEN            e.g. outalias.py 1883 2000 60000
import struct, sys, threading, time
from mqttraw import connect, accepted, dial, packet, utf8
port, n, tlen = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def client(client_id, properties=None):
    c = dial(port, 0)
    c.sendall(connect(client_id, version=5, properties=properties))
    assert accepted(c.recv(64))
    return c


sub = client(b'sub', bytes([0x22]) + struct.pack('>H', 65535))  # Topic Alias Maximum
sub.sendall(packet(0x82, struct.pack('>H', 1) + bytes([0]) + utf8(b'#') + bytes([0])))
sub.recv(16)
got = [0]


def read():
    sub.settimeout(20)
    try:
        while True:
            data = sub.recv(1 << 20)
            if not data:
                return
            got[0] += len(data)
    except OSError:
        pass


threading.Thread(target=read, daemon=True).start()
pub = client(b'pub')
for i in range(n):
    pub.sendall(packet(0x30, utf8((b'%d/' % i) + b'x' * (tlen - 8)) + bytes([0]) + b'p'))
time.sleep(5)
print('published', n, 'subscriber bytes', got[0])
