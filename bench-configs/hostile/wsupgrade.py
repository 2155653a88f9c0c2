#!/usr/bin/env python3
# N sockets to a WebSocket listener, each sending the first BYTES bytes of an HTTP Upgrade request whose header never
# ends, held HOLD seconds (default 5); each from its own loopback source address. Stops by itself.
#   python3 wsupgrade.py PORT N BYTES [HOLD]      e.g. wsupgrade.py 8080 12000 8000
# Before fa18b92 this ended a bin/ringmq broker (256m) with OutOfMemoryError; see the broker's
# 'connections closed (no buffer memory left)' counter (ringmq stat) for what it closed instead.
import sys
from mqttraw import hold_open
port, n, length = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hold = float(sys.argv[4]) if len(sys.argv) > 4 else 5
request = (b'GET /mqtt HTTP/1.1\r\nX-Padding: ' + b'a' * length)[:length]
hold_open(port, n, request, hold)
