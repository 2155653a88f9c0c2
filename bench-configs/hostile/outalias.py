#!/usr/bin/env python3
# One MQTT 5.0 subscriber to '#' allowing 65,535 outbound topic aliases, and one publisher of N distinct topics of
# TLEN bytes (QoS 0); prints what the subscriber received. Stops by itself.
#   python3 outalias.py PORT N TLEN            e.g. outalias.py 1883 2000 60000
import socket, sys, time, struct, threading
port=int(sys.argv[1]); n=int(sys.argv[2]); tlen=int(sys.argv[3])
def vbi(x):
    out=b''
    while True:
        b=x%128; x//=128
        if x: b|=0x80
        out+=bytes([b])
        if not x: return out
def s(b): return struct.pack('>H',len(b))+b
def connect(cid, props=b''):
    c=socket.socket(); c.connect(('127.0.0.1',port))
    body=s(b'MQTT')+bytes([5,2])+struct.pack('>H',60)+vbi(len(props))+props+s(cid)
    c.sendall(bytes([0x10])+vbi(len(body))+body); r=c.recv(64); assert r[0]==0x20 and r[3]==0, r; return c
sub=connect(b'sub', bytes([0x22])+struct.pack('>H',65535))
body=struct.pack('>H',1)+bytes([0])+s(b'#')+bytes([0])
sub.sendall(bytes([0x82])+vbi(len(body))+body); sub.recv(16)
got=[0]
def reader():
    sub.settimeout(20)
    try:
        while True:
            d=sub.recv(1<<20)
            if not d: break
            got[0]+=len(d)
    except Exception: pass
t=threading.Thread(target=reader,daemon=True); t.start()
pub=connect(b'pub')
for i in range(n):
    topic=(b'%d/'%i)+b'x'*(tlen-8)
    b2=s(topic)+bytes([0])+b'p'
    pub.sendall(bytes([0x30])+vbi(len(b2))+b2)
time.sleep(5)
print('published',n,'subscriber bytes',got[0])
