#!/usr/bin/env bash
# What idle connections cost a broker: its resident memory empty, then while N connections (full CONNECT/CONNACK,
# keep-alive traffic only) are held, and the PINGREQ round trip while they are. One TSV line per run:
#   label  connections_established  rss_empty_MB  rss_held_MB  KB_per_connection  ping_p50_ms  ping_p99_ms  connect_p99_ms
#
#   bench-configs/idle-connections.sh LABEL PORT [--connections N] [--hold D] [--ping-interval D] -- BROKER COMMAND ...
#
# The broker command must listen on 127.0.0.1:PORT (the caller puts PORT in it). N defaults to 18000 (these machines
# allow 20,000 open files per process, and the generator holds one socket per connection), the hold to 20s, the
# ping interval to 5s (every held connection pings every 5 s, spread evenly: 3,600 PINGREQs a second at 18,000).
# The empty broker's RSS is read after a settle of 3 s; the held RSS is the largest VmRSS sampled during the hold.
# Only the broker this script started is stopped, by its pid.
set -euo pipefail

die() { echo "idle-connections.sh: $*" >&2; exit 2; }
[[ $# -ge 3 ]] || die "usage: idle-connections.sh LABEL PORT [options] -- BROKER COMMAND ..."
LABEL=$1 PORT=$2; shift 2
CONNECTIONS=18000 HOLD=20s PING=5s
while [[ $# -gt 0 && $1 != -- ]]; do
    case "$1" in
        --connections) CONNECTIONS=${2:?}; shift 2 ;;
        --hold) HOLD=${2:?}; shift 2 ;;
        --ping-interval) PING=${2:?}; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
[[ ${1:-} == -- ]] || die "the broker command goes after --"
shift
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LT="$REPO/loadtest/target/loadtest.jar"
[[ -f $LT ]] || die "no $LT: mvn -B -ntp package -DskipTests"
OUT=${OUT:-$REPO/bench-results/idle-connections}
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)"

broker_pid=""
stop_broker() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "$broker_pid"
        for _ in $(seq 100); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$broker_pid" 2>/dev/null && kill -9 "$broker_pid"
    fi
    broker_pid=""
}
trap stop_broker EXIT
rss_mb() { awk '$1 == "VmRSS:" {printf "%.1f", $2 / 1024}' /proc/"$1"/status 2>/dev/null || echo 0; }

"$@" >"$OUT/$LABEL-broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 200); do
    (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break
    kill -0 "$broker_pid" 2>/dev/null || die "the broker exited: $(tail -3 "$OUT/$LABEL-broker.log")"
    sleep 0.1
done
sleep 3
empty=$(rss_mb "$broker_pid")
java -jar "$LT" -addr 127.0.0.1:"$PORT" -mode conn -levels "$CONNECTIONS" -hold "$HOLD" -ping-interval "$PING" \
    -dial-concurrency 200 -label "$LABEL" >"$OUT/$LABEL-loadtest.txt" 2>&1 &
lt=$!
held=0
while kill -0 "$lt" 2>/dev/null; do
    now=$(rss_mb "$broker_pid")
    held=$(awk -v a="$held" -v b="$now" 'BEGIN {print (b > a ? b : a)}')
    sleep 0.5
done
wait "$lt" || true
stop_broker
level=$(grep -o '{"target"[^}]*}' "$OUT/$LABEL-loadtest.txt" | tail -1 || true)
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$level"; }
established=$(field established)
awk -v l="$LABEL" -v n="${established:-0}" -v e="$empty" -v h="$held" -v p50="$(field ping_p50_ms)" \
    -v p99="$(field ping_p99_ms)" -v c99="$(field connect_p99_ms)" 'BEGIN {
    per = n > 0 ? (h - e) * 1024 / n : 0
    printf "%s\t%d\t%.1f\t%.1f\t%.2f\t%s\t%s\t%s\n", l, n, e, h, per, p50, p99, c99 }'
