#!/usr/bin/env bash
# A broker's CPU per message (broker_cpu_s / published, µs), to compare builds or flags where msg/s moves too much:
# per round, each variant in turn gets a fresh broker process, one warm-up run, then RUNS measured runs of the same
# load, and one line: the CPU per message of each run and the least of them. On a machine whose host slows it for
# seconds at a time (this project's 2-core VM: 0.24-0.28 against 0.35-0.50 µs for the same build), the least of a
# process's runs estimates its cost without those stretches; compare variants round by round.
#
#   bench-configs/cpu-per-message.sh [--rounds 2] [--runs 4] [--duration 3s] [--load 'LOADTEST ARGS'] \
#       [--out DIR] NAME='COMMAND with {port}' [NAME='COMMAND' ...]
#
# --load defaults to '-mode pub -pubs 10 -qos 0 -payload 64' (the QoS 0 ingest row). A COMMAND runs from the
# repository root and must become the broker's process (bin/ringmq execs java), so its pid is the broker's.
# Example (the launcher of an earlier commit against this one, on the same jar):
#   git show 8b48734:bin/ringmq > /tmp/ringmq-before && chmod +x /tmp/ringmq-before
#   bench-configs/cpu-per-message.sh --rounds 3 \
#       before='env RINGMQ_JAR=transport/target/ringmq.jar /tmp/ringmq-before --bind 127.0.0.1 --port {port} --persistence memory' \
#       now='bin/ringmq --bind 127.0.0.1 --port {port} --persistence memory'
# Output: "NAME ROUND: us us us us min us" per process; logs under --out (default bench-results/cpu-per-message).
# Only the brokers this script started are stopped, by their pids.
set -euo pipefail
ROUNDS=2 RUNS=4 DURATION=3s LOAD="-mode pub -pubs 10 -qos 0 -payload 64"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/bench-results/cpu-per-message
names=() commands=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --load) LOAD=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *=*) names+=("${1%%=*}"); commands+=("${1#*=}"); shift ;;
        *) echo "cpu-per-message.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#names[@]})) || { echo "cpu-per-message.sh: name at least one broker (see --help)" >&2; exit 2; }
LT="$REPO/loadtest/target/loadtest.jar"
[[ -f $LT ]] || { echo "cpu-per-message.sh: $LT not found: mvn -B -ntp package -DskipTests" >&2; exit 1; }
mkdir -p "$OUT"
read -r -a load <<<"$LOAD"

# shellcheck source=broker-runs.sh
. "$REPO/bench-configs/broker-runs.sh" # free_port, start_broker, stop_broker (also at exit)

# loadtest's last JSON line on stdin -> µs of broker CPU per message published
per_message() {
    python3 -c '
import json, sys
lines = [l for l in sys.stdin if l.startswith("{")]
if not lines: print("ERR"); sys.exit()
j = json.loads(lines[-1])
print("%.3f" % (1e6 * j.get("broker_cpu_s", 0.0) / max(1, j["published"])))'
}

for ((round = 1; round <= ROUNDS; round++)); do
    for i in "${!names[@]}"; do
        name=${names[i]}
        port=$(free_port)
        read -r -a cmd <<<"${commands[i]//\{port\}/$port}"
        start_broker "$OUT/$name-$round.broker.log" "$port" "${cmd[@]}"
        if ((!listening)); then
            echo "cpu-per-message.sh: $name did not listen on $port (log: $OUT/$name-$round.broker.log)" >&2
            stop_broker; continue
        fi
        java -jar "$LT" -addr 127.0.0.1:"$port" "${load[@]}" -duration "$DURATION" -quiet >/dev/null 2>&1 || true
        runs=()
        for ((run = 1; run <= RUNS; run++)); do
            runs+=("$(java -jar "$LT" -addr 127.0.0.1:"$port" "${load[@]}" -duration "$DURATION" \
                -broker-pid "$broker_pid" -quiet 2>>"$OUT/$name-$round.loadtest.log" | per_message)")
        done
        stop_broker
        least=$(printf '%s\n' "${runs[@]}" | grep -v ERR | sort -n | head -1)
        echo "$name $round: ${runs[*]} min ${least:-ERR}"
    done
done
