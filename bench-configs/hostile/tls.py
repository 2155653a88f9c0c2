#!/usr/bin/env python3
# N MQTT 3.1.1 connections over TLS (certificate not verified), held open; each from its own loopback source address.
# Stops by itself after 3 s.
#   python3 tls.py PORT N                      e.g. tls.py 8883 11000
import socket, ssl, sys, time, struct
port=int(sys.argv[1]); n=int(sys.argv[2])
ctx=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname=False; ctx.verify_mode=ssl.CERT_NONE
def s(b): return struct.pack('>H',len(b))+b
socks=[]; ok=0; bad=0; t0=time.time()
for i in range(n):
    try:
        raw=socket.socket(); raw.bind(('127.0.%d.%d'%(1+i//250,1+i%250),0)); raw.settimeout(10); raw.connect(('127.0.0.1',port))
        c=ctx.wrap_socket(raw)
        body=s(b'MQTT')+bytes([4,2])+struct.pack('>H',60)+s(b't%d'%i)
        c.sendall(bytes([0x10,len(body)])+body); r=c.recv(4)
        if len(r)==4 and r[3]==0: ok+=1
        else: bad+=1
        socks.append(c)
    except Exception as e:
        bad+=1
        if bad<3: print('err',e)
    if i%500==0: print(i,ok,bad,round(time.time()-t0,1),flush=True)
print('done ok',ok,'bad',bad,flush=True)
time.sleep(3)
