#!/bin/bash
# One run of address-share.py (or of the hostile script named first among ARGS, e.g. away-pins.py) against a fresh
# bin/ringmq: starts the broker on a free port with --limit-loopback --persistence memory (and --max-message-memory
# SHARE unless SHARE is 0), runs the script with ARGS, then prints the broker's $SYS counters of message-memory drops,
# its peak RSS and CPU time, and ends the broker by its pid. BROKER_ARGS (e.g. "--stalled-client-timeout 1s") go to the
# broker besides.
#   bench-configs/hostile/address-share-run.sh JAR SHARE ARGS...   e.g. ... transport/target/ringmq.jar 524288 24 40 16384 16 one-topic
#   bench-configs/hostile/address-share-run.sh JAR 0 away-pins.py 1024 300 24 40 16384 5
set -u
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
jar=$1; share=$2; shift 2
port=$((20000 + RANDOM % 20000))
extra=(); [ "$share" != 0 ] && extra=(--max-message-memory "$share")
log=$(mktemp)
# shellcheck disable=SC2086 # BROKER_ARGS is split into its words
RINGMQ_JAR=$jar "$repo/bin/ringmq" -p $port --limit-loopback --persistence memory --sys-interval 1s "${extra[@]}" \
    ${BROKER_ARGS:-} > "$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.2; done
script=address-share.py; case "${1:-}" in *.py) script=$1; shift;; esac
(cd "$here" && timeout 300 python3 "$script" $port "$@")
sleep 1.5 # the next $SYS publication
python3 - "$port" "$here" <<'PY'
import socket, struct, sys
sys.path.insert(0, sys.argv[2])
from mqttraw import connect, packet, read_packet, recv_exactly, utf8
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)
s.sendall(connect(b'sysdump', flags=0x02)); recv_exactly(s, 4)
s.sendall(packet(0x82, struct.pack('>H', 1) + utf8(b'$SYS/broker/ringmq/#') + b'\x00'))
seen = {}
import time
until = time.time() + 3  # the retained $SYS topics come at once; later publications repeat them
try:
    while time.time() < until:
        first, body = read_packet(s)
        if first >> 4 == 3:
            n = struct.unpack('>H', body[:2])[0]
            seen[body[2:2 + n].decode()] = body[2 + n:].decode(errors='replace')
except OSError:
    pass  # no more within the timeout
for topic in sorted(seen):
    if 'sessions_away' in topic or 'dropped_max_message_memory' in topic or 'stalled' in topic:
        print(topic, seen[topic])
PY
grep VmHWM /proc/$pid/status
awk -v hz="$(getconf CLK_TCK)" '{printf "broker CPU: %.2f s\n", ($14 + $15) / hz}' /proc/$pid/stat
kill $pid; wait $pid 2>/dev/null
rm -f "$log"
