#!/usr/bin/env bash
# The four floods that ran a bin/ringmq broker's heap out before a CONNECT (before 7b660e2, fa18b92, 018852d), each
# against a fresh bin/ringmq (256m, its default) with a TLS and a WebSocket listener on 127.0.0.1:
#   tls-1byte  9,000 TLS sockets, one byte of a record each                    (tlspartial.py PORT 9000 1)
#   tls-4101   9,000 TLS sockets, the first 4 KB of a 16 KB record each        (tlspartial.py PORT 9000 4101)
#   ws-8000    12,000 WebSocket sockets, 8,000 bytes of an unended Upgrade    (wsupgrade.py PORT 12000 8000)
#   tls-frag   2,500 TLS sockets, two 16 KB records of an unended ClientHello (tlsfrag.py PORT 2500)
# One line each: whether the broker was alive after the flood, connections accepted, those closed for want of
# buffer memory, OutOfMemoryError lines in its log, peak RSS (MB).
#   bench-configs/hostile/heap-floods.sh [JAR]     (default transport/target/ringmq.jar; RINGMQ_JAR for bin/ringmq)
# Needs python3 and an open-file limit of 20,000 (it asks for it). Stops only the brokers it started, by pid.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
JAR=${1:-$REPO/transport/target/ringmq.jar}
TLS=$REPO/transport/src/test/resources/tls
ulimit -n 20000 || echo "heap-floods.sh: could not raise the open-file limit" >&2
stat_of() { timeout 5 java -jar "$JAR" stat --counters-dir "$1" 2>/dev/null | grep -m1 "$2" | awk -F': ' '{print $2}'; }
run() { # NAME SCRIPT ARGS...
    local d pid alive=no hwm
    d=$(mktemp -d)
    (cd "$REPO" && exec env RINGMQ_JAR="$JAR" bin/ringmq --bind 127.0.0.1 --port 21883 --data-dir "$d/data" \
        --counters-dir "$d/c" --listener "21884@127.0.0.1,certfile=$TLS/server-chain.pem,keyfile=$TLS/server-key.pem" \
        --listener "21885@127.0.0.1,protocol=websockets") > "$d/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/21883) 2>/dev/null && break; sleep 0.1; done
    (cd "$REPO/bench-configs/hostile" && timeout 60 python3 "${@:2}" > "$d/flood" 2>&1)
    kill -0 "$pid" 2>/dev/null && alive=yes
    hwm=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status" 2>/dev/null)
    echo "$1 alive=$alive accepted=$(stat_of "$d/c" 'connections accepted') closed_no_memory=$(stat_of "$d/c" \
'no buffer memory left') oom_lines=$(grep -c OutOfMemoryError "$d/log") peak_MB=${hwm:-?} ($(head -1 "$d/flood"))"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$d"
}
run tls-1byte tlspartial.py 21884 9000 1 3
run tls-4101 tlspartial.py 21884 9000 4101 3
run ws-8000 wsupgrade.py 21885 12000 8000 3
run tls-frag tlsfrag.py 21884 2500 5
