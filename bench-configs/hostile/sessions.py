#!/usr/bin/env python3
# N persistent MQTT 3.1.1 sessions (clean session 0), client ids of IDLEN bytes, each connected then disconnected, 200
# at a time from loopback source addresses: what offline sessions cost. Stops by itself.
#   python3 sessions.py PORT N IDLEN           e.g. sessions.py 1883 60000 1000
import socket, sys, time, struct
port=int(sys.argv[1]); n=int(sys.argv[2]); idlen=int(sys.argv[3])
def s(b): return struct.pack('>H',len(b))+b
def vbi(x):
    out=b''
    while True:
        b=x%128; x//=128
        if x: b|=0x80
        out+=bytes([b])
        if not x: return out
ok=0; bad=0; t0=time.time()
batch=200
i=0
while i<n:
    socks=[]
    for k in range(batch):
        cid=('s%d'%(i+k)).encode().ljust(idlen,b'p')
        vh=s(b'MQTT')+bytes([4, 0x00])+struct.pack('>H',60)  # clean session 0
        body=vh+s(cid)
        src='127.0.%d.%d'%(1+((i+k)//250)%250, 1+(i+k)%250)
        try:
            c=socket.socket(); c.bind((src,0)); c.settimeout(10); c.connect(('127.0.0.1',port)); c.sendall(bytes([0x10])+vbi(len(body))+body)
            socks.append(c)
        except Exception as e:
            bad+=1
    for c in socks:
        try:
            r=c.recv(4)
            if len(r)==4 and r[3]==0: ok+=1
            else: bad+=1
            c.sendall(b'\xe0\x00'); c.close()
        except Exception: bad+=1
    i+=batch
    if i%5000==0: print(i, ok, bad, round(time.time()-t0,1), flush=True)
print('done ok',ok,'bad',bad, flush=True)
