#!/usr/bin/env python3
# N sockets to a TLS listener, each sending two whole 16 KB handshake records that carry the first 32,764 bytes of
# one ClientHello claiming 32,768 (the JDK's jdk.tls.maxHandshakeMessageSize), held HOLD seconds (default 8); each
# from its own loopback source address. Every record arrives whole, so no record buffer stays held: the JDK engine
# keeps the unfinished message on the heap instead. Stops by itself.
#   python3 tlsfrag.py PORT N [HOLD]              e.g. tlsfrag.py 8883 2500
# Before 018852d (handshake slots) 2,500 of these ended a bin/ringmq broker (256m) with OutOfMemoryError.
import sys
from mqttraw import hold_open
port, n = int(sys.argv[1]), int(sys.argv[2])
hold = float(sys.argv[3]) if len(sys.argv) > 3 else 8
record = bytes([0x16, 0x03, 0x01, 0x40, 0x00])
hello = record + bytes([0x01, 0x00, 0x80, 0x00]) + bytes(16_380) + record + bytes(16_384)
hold_open(port, n, hello, hold)
