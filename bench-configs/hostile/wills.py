#!/usr/bin/env python3
# N anonymous MQTT 3.1.1 connections, each CONNECT carrying a QoS 1 will of SIZE bytes, held open; each from its own
# loopback source address (127.0.x.y), past --max-connections-per-address. Stops by itself after HOLD seconds.
#   python3 wills.py PORT N SIZE [HOLD]        e.g. wills.py 1883 3000 60000 3
import socket, sys, time, struct
port=int(sys.argv[1]); n=int(sys.argv[2]); size=int(sys.argv[3])
def vbi(x):
    out=b''
    while True:
        b=x%128; x//=128
        if x: b|=0x80
        out+=bytes([b])
        if not x: return out
def s(b): return struct.pack('>H',len(b))+b
socks=[]; ok=0; refused=0
t0=time.time()
for i in range(n):
    cid=('w%d'%i).encode()
    vh=s(b'MQTT')+bytes([4, 0x02|0x04|0x08])+struct.pack('>H',60)  # clean, will, will qos1
    pl=s(cid)+s(b'will/%d'%i)+s(b'x'*size)
    body=vh+pl
    pkt=bytes([0x10])+vbi(len(body))+body
    src='127.0.%d.%d'%(1+i//250, 1+i%250)
    try:
        c=socket.socket(); c.bind((src,0)); c.settimeout(5); c.connect(('127.0.0.1',port)); c.sendall(pkt)
        r=c.recv(4)
        if len(r)==4 and r[3]==0: ok+=1
        else: refused+=1
        socks.append(c)
    except Exception as e:
        refused+=1
    if i%200==0: print(i, ok, refused, round(time.time()-t0,1), flush=True)
print('done ok',ok,'refused',refused, flush=True)
time.sleep(float(sys.argv[4]) if len(sys.argv)>4 else 5)
