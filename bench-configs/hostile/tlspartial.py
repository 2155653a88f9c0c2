#!/usr/bin/env python3
# N sockets to a TLS listener, each sending the first BYTES bytes of a 16 KB TLS handshake record and nothing more,
# held HOLD seconds (default 5); each from its own loopback source address. Stops by itself.
#   python3 tlspartial.py PORT N BYTES [HOLD]     e.g. tlspartial.py 8883 9000 1; tlspartial.py 8883 9000 4101
# Before 7b660e2 either ended a bin/ringmq broker (256m) with OutOfMemoryError; see the broker's
# 'connections closed (no buffer memory left)' counter (ringmq stat) for what it closed instead.
import sys
from mqttraw import hold_open
port, n, length = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hold = float(sys.argv[4]) if len(sys.argv) > 4 else 5
record = (bytes([0x16, 0x03, 0x01, 0x40, 0x00]) + bytes(16_384))[:length]  # a handshake record of 16,384 bytes
hold_open(port, n, record, hold)
