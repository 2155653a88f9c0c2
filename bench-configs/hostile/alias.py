#!/usr/bin/env python3
# N MQTT 5.0 connections, each mapping ALIASES inbound topic aliases to topics of TLEN bytes (QoS 0 PUBLISHes), held
# open; each from its own loopback source address. Stops by itself.
#   python3 alias.py PORT N TLEN ALIASES       e.g. alias.py 1883 1500 1000 64
import socket, sys, time, struct
port=int(sys.argv[1]); n=int(sys.argv[2]); tlen=int(sys.argv[3]); aliases=int(sys.argv[4])
def vbi(x):
    out=b''
    while True:
        b=x%128; x//=128
        if x: b|=0x80
        out+=bytes([b])
        if not x: return out
def s(b): return struct.pack('>H',len(b))+b
socks=[]; ok=0; bad=0
t0=time.time()
for i in range(n):
    cid=('a%d'%i).encode()
    vh=s(b'MQTT')+bytes([5, 0x02])+struct.pack('>H',60)+bytes([0])
    body=vh+s(cid)
    pkt=bytes([0x10])+vbi(len(body))+body
    src='127.0.%d.%d'%(1+i//250, 1+i%250)
    try:
        c=socket.socket(); c.bind((src,0)); c.settimeout(5); c.connect(('127.0.0.1',port)); c.sendall(pkt)
        r=c.recv(64)
        if len(r)>=4 and r[3]==0: ok+=1
        else: bad+=1; continue
        out=b''
        for a in range(1,aliases+1):
            topic=(b'%d/'%a)+b't'*(tlen-4)
            props=bytes([0x23])+struct.pack('>H',a)
            vh2=s(topic)+vbi(len(props))+props
            body2=vh2+b'x'
            out+=bytes([0x30])+vbi(len(body2))+body2
        c.sendall(out)
        socks.append(c)
    except Exception as e:
        bad+=1
    if i%200==0: print(i, ok, bad, round(time.time()-t0,1), flush=True)
print('done ok',ok,'bad',bad, flush=True)
time.sleep(3)
