#!/usr/bin/env bash
# CPU seconds per broker thread during one load run: shows which stage thread a scenario loads, and how routing
# shards (--route-shards) split the routing work. Runs ringmq in --threading dedicated (a thread per agent),
# a warm-up run, then the measured run; reads utime + stime of every thread (/proc/PID/task/*/stat) before and
# after it.
#
#   bench-configs/thread-cpu.sh [--broker-args "..."] [--duration D] -- LOADTEST ARGS...
#
# e.g. bench-configs/thread-cpu.sh --broker-args "--route-shards 2" -- -mode pub -pubs 10 -qos 0 -rate 20000
# Prints "thread cpu_s" lines (the threads that used at least 0.01 s) and the load generator's JSON line.
set -euo pipefail

die() { echo "thread-cpu.sh: $*" >&2; exit 2; }
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPT_DIR")
BROKER_ARGS=""
DURATION=10s
while [[ $# -gt 0 ]]; do
    case "$1" in
        --broker-args) BROKER_ARGS=${2?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --) shift; break ;;
        *) die "unknown option $1" ;;
    esac
done
[[ $# -gt 0 ]] || die "no load generator arguments after --"
RINGMQ_JAR=${RINGMQ_JAR:-$REPO/transport/target/ringmq.jar}
LOADTEST_JAR=${LOADTEST_JAR:-$REPO/loadtest/target/loadtest.jar}
[[ -f $RINGMQ_JAR && -f $LOADTEST_JAR ]] || die "build first: mvn -B -ntp package -DskipTests"
PORT=${PORT:-$(( 20000 + RANDOM % 10000 ))}
DATA=$(mktemp -d)
# shellcheck disable=SC2086
java -Xms1g -Xmx1g -XX:+UseParallelGC -jar "$RINGMQ_JAR" --bind 127.0.0.1 --port "$PORT" --data-dir "$DATA" \
    --threading dedicated --io-threads 1 --warmup 0 $BROKER_ARGS >"$DATA/broker.log" 2>&1 &
broker_pid=$!
trap 'kill "$broker_pid" 2>/dev/null; wait "$broker_pid" 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.1; done
(echo >/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null || { cat "$DATA/broker.log" >&2; die "the broker did not start"; }

# shellcheck source=bench-configs/thread-ticks.sh
. "$SCRIPT_DIR/thread-ticks.sh"

java -jar "$LOADTEST_JAR" -addr 127.0.0.1:"$PORT" -quiet -duration 5s "$@" >/dev/null 2>&1 || true # warm-up
before=$(thread_ticks "$broker_pid")
json=$(java -jar "$LOADTEST_JAR" -addr 127.0.0.1:"$PORT" -quiet -duration "$DURATION" "$@" | tail -1)
after=$(thread_ticks "$broker_pid")
thread_cpu "$before" "$after"
echo "$json"
