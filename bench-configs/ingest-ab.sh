#!/usr/bin/env bash
# Ingest A/B: each run starts a fresh broker, waits until its port accepts a TCP connection, runs
#   loadtest -mode pub -pubs PUBS -qos QOS [-inflight N] -payload P -duration DURATION -warmup WARMUP -broker-pid PID
# and stops the broker; the brokers take turns within a round (A B C A B C ...), payload by payload, so a noisy
# machine hurts each alike. For each run it also reads the broker's /proc/PID/io before and after the loadtest:
# read system calls, and the bytes each took on average (rchar / syscr), the figure that showed one read per
# 1 KiB PUBLISH (docs/perf/2026-11-30-ingest-1k.md).
#
#   bench-configs/ingest-ab.sh [--rounds 2] [--payloads '1024 64'] [--pubs 50] [--duration 10s] [--warmup 3s] \
#       [--qos 0] [--inflight N] [--out DIR] NAME='COMMAND with {port}' [NAME='COMMAND' ...] [flashmq]
#
# NAME=flashmq (no command) starts /usr/local/bin/flashmq (FLASHMQ_BIN) with thread_count 2 as the matrix runner
# does. A COMMAND runs from the repository root and must become the broker's process (bin/ringmq execs java), so
# its pid is the broker's. One TSV line per run to stdout: name round payload msg_per_s broker_cpu_s us_per_msg
# reads bytes_per_read generator_cpu_pct. Logs under --out (default bench-results/ingest-ab).
# Example (main's jar copied aside first):
#   bench-configs/ingest-ab.sh --rounds 2 flashmq \
#       main='env RINGMQ_JAR=/tmp/main/ringmq.jar bin/ringmq --memory-limit 1g --bind 127.0.0.1 --port {port} --persistence memory' \
#       branch='bin/ringmq --memory-limit 1g --bind 127.0.0.1 --port {port} --persistence memory'
# Only the broker this script started is stopped, by its pid.
set -euo pipefail
ROUNDS=2 PAYLOADS="1024 64" PUBS=50 DURATION=10s WARMUP=3s QOS=0 INFLIGHT=()
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/bench-results/ingest-ab
names=() commands=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --payloads) PAYLOADS=$2; shift 2 ;;
        --pubs) PUBS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --qos) QOS=$2; shift 2 ;;
        --inflight) INFLIGHT=(-inflight "$2"); shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *=*) names+=("${1%%=*}"); commands+=("${1#*=}"); shift ;;
        flashmq) names+=(flashmq); commands+=(""); shift ;;
        *) echo "ingest-ab.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#names[@]})) || { echo "ingest-ab.sh: name at least one broker (see --help)" >&2; exit 2; }
LT="$REPO/loadtest/target/loadtest.jar"
[[ -f $LT ]] || { echo "ingest-ab.sh: $LT not found: mvn -B -ntp package -DskipTests" >&2; exit 1; }
mkdir -p "$OUT"

# shellcheck source=broker-runs.sh
. "$REPO/bench-configs/broker-runs.sh" # free_port, start_broker, stop_broker (also at exit)
proc_io() { awk '/^(rchar|syscr):/{printf "%s ", $2}' "/proc/$1/io" 2>/dev/null || echo "0 0"; }

results="$OUT/results.tsv"
: >"$results"
for ((round = 1; round <= ROUNDS; round++)); do
    for payload in $PAYLOADS; do
        for i in "${!names[@]}"; do
            name=${names[i]}
            log="$OUT/$name-$round-$payload"
            for _attempt in 1 2 3; do # a broker binding late (--warmup) may find its port taken: try another
            port=$(free_port)
            if [[ $name == flashmq && -z ${commands[i]} ]]; then
                cat >"$log.conf" <<EOF
listen {
  protocol mqtt
  inet_protocol ip4
  inet4_bind_address 127.0.0.1
  port $port
  tcp_nodelay true
}
allow_anonymous true
thread_count 2
log_level notice
rlimit_nofile $(ulimit -n)
EOF
                cmd=("${FLASHMQ_BIN:-/usr/local/bin/flashmq}" --config-file "$log.conf")
            else
                read -r -a cmd <<<"${commands[i]//\{port\}/$port}"
            fi
            start_broker "$log.broker.log" "$port" "${cmd[@]}"
            ((port_taken)) && { stop_broker; continue; }
            break
            done
            if ((!listening)); then
                echo "ingest-ab.sh: $name did not listen on $port (log: $log.broker.log)" >&2
                stop_broker; continue
            fi
            before=$(proc_io "$broker_pid")
            java -jar "$LT" -addr 127.0.0.1:"$port" -mode pub -pubs "$PUBS" -qos "$QOS" ${INFLIGHT[@]+"${INFLIGHT[@]}"} -payload "$payload" \
                -duration "$DURATION" -warmup "$WARMUP" -broker-pid "$broker_pid" -label "$name" -quiet \
                >"$log.loadtest.txt" 2>&1 || true
            after=$(proc_io "$broker_pid")
            stop_broker
            python3 - "$name" "$round" "$payload" "$log.loadtest.txt" "$before" "$after" <<'PY' | tee -a "$results"
import json, sys
name, round_, payload, path, before, after = sys.argv[1:7]
line = [l for l in open(path) if l.startswith('{')]
if not line:
    print(f"{name}\t{round_}\t{payload}\tERR"); sys.exit()
j = json.loads(line[-1])
rchar0, reads0 = (int(x) for x in before.split())
rchar1, reads1 = (int(x) for x in after.split())
reads = reads1 - reads0
per_read = (rchar1 - rchar0) // reads if reads > 0 else 0
cpu = j.get("broker_cpu_s", 0.0)
print(f"{name}\t{round_}\t{payload}\t{j['rate_per_s']:.0f}\t{cpu:.2f}\t{1e6 * cpu / max(1, j['published']):.3f}"
      f"\t{reads}\t{per_read}\t{j.get('generator_avg_cpu_pct', 0):.0f}")
PY
        done
    done
done
