#!/usr/bin/env bash
# Peak RSS and throughput of one broker command in the launcher's two scenarios, each on a fresh broker:
#   fanout: 100 subscribers x 10 publishers x 500 msg/s (--rate; 0 floods), QoS 0, 64 B (--duration, default 15s)
#   idle:   5,000 connections held 10 s (-mode conn; --levels, --hold); RSS read from /proc during the hold
#
#   bench-configs/launcher-rss.sh LABEL PORT [--duration D] [--only fanout|idle] [--rate R] [--levels N] [--hold D]
#       [--settle S] -- BROKER COMMAND ...
#
# --settle: seconds between the broker listening and the load (default 1). A hold of 10 s can end before the young
# collection that moves the last connections' state into the old generation; --hold 40s reads the resident size
# after it (docs/perf/2026-12-05-idle-rss.md).
#
# The broker command is started with PORT in it (the caller's job) on 127.0.0.1; one TSV line per scenario goes
# to stdout: label scenario deliveries/s p99_us peak_rss_MB (idle: VmRSS at the end of the hold, VmHWM).
# Only the broker this script started is stopped, by its pid.
set -euo pipefail
LABEL=$1 PORT=$2; shift 2
DURATION=15s ONLY="" RATE=500 LEVELS=5000 HOLD=10s SETTLE=1
while [[ $# -gt 0 && $1 != -- ]]; do
    case "$1" in
        --duration) DURATION=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --levels) LEVELS=$2; shift 2 ;;
        --hold) HOLD=$2; shift 2 ;;
        --settle) SETTLE=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
shift
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LT="$REPO/loadtest/target/loadtest.jar"
OUT=${OUT:-$REPO/bench-results/launcher-rss}
mkdir -p "$OUT"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

broker_pid=""
stop_broker() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "$broker_pid"; for _ in $(seq 50); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$broker_pid" 2>/dev/null && kill -9 "$broker_pid"
    fi
    broker_pid=""
}
trap stop_broker EXIT
start_broker() {
    "$@" >"$OUT/$LABEL-broker.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "broker did not listen on $PORT" >&2; return 1
}
rss_of() { awk -v k="$2:" '$1==k {printf "%.1f", $2/1024}' /proc/"$1"/status; }

if [[ -z $ONLY || $ONLY == fanout ]]; then
    start_broker "$@"
    sleep "$SETTLE"
    java -jar "$LT" -addr 127.0.0.1:"$PORT" -mode pubsub -subs 100 -pubs 10 -qos 0 -rate "$RATE" -payload 64 \
        -duration "$DURATION" -broker-pid "$broker_pid" -label "$LABEL" >"$OUT/$LABEL-fanout.txt" 2>&1 || true
    hwm=$(rss_of "$broker_pid" VmHWM)
    line=$(grep '^{' "$OUT/$LABEL-fanout.txt" | tail -1)
    python3 - "$LABEL" "$hwm" "$line" <<'PY'
import json, sys
label, hwm, line = sys.argv[1], sys.argv[2], sys.argv[3]
try: j = json.loads(line)
except Exception: print(f"{label}\tfanout\tERR\t\t\t{hwm}"); sys.exit()
def g(*ks):
    for k in ks:
        for d in (j, j.get('latency_us', {}), j.get('broker', {})):
            if isinstance(d, dict) and k in d: return d[k]
    return ''
print(f"{label}\tfanout\t{j['rate_per_s']:.0f}/s\tp99={j['latency_p99_us']/1000:.1f}ms\tsampledPeakRSS={j.get('broker_peak_rss_mb',0):.0f}MB\tVmHWM={hwm}MB\tlost={j['lost']}\tbrokerCPU={j.get('broker_cpu_s',0)}s")
PY
    stop_broker
fi
if [[ -z $ONLY || $ONLY == idle ]]; then
    start_broker "$@"
    sleep "$SETTLE"
    java -jar "$LT" -addr 127.0.0.1:"$PORT" -mode conn -levels "$LEVELS" -hold "$HOLD" -dial-concurrency 200 \
        -broker-pid "$broker_pid" -label "$LABEL" >"$OUT/$LABEL-idle.txt" 2>&1 &
    lt=$!
    rss=""
    while kill -0 $lt 2>/dev/null; do
        rss=$(rss_of "$broker_pid" VmRSS); sleep 0.5
    done
    wait $lt || true
    hwm=$(rss_of "$broker_pid" VmHWM)
    est=$(grep -Eo '[0-9,]+ established' "$OUT/$LABEL-idle.txt" | head -1)
    printf '%s\tidle%s\tVmRSS(last)=%s\tVmHWM=%s\t%s\n' "$LABEL" "$LEVELS" "$rss" "$hwm" "$est"
    stop_broker
fi
