#!/usr/bin/env bash
# Connect latency of the first connections after a broker starts: each run starts a fresh broker, waits until its
# port accepts a TCP connection (polled every 10 ms, as a supervisor or the matrix runner would), then at once runs
#   loadtest -mode conn -levels LEVELS -dial-concurrency DIALS -hold HOLD
# and stops the broker. The brokers take turns run by run (A B C A B C ...), so a noisy machine hurts each alike.
#
#   bench-configs/cold-connect.sh [--runs N] [--levels 1000] [--dials 200] [--hold 1s] [--out DIR] \
#       NAME='COMMAND with {port}' [NAME='COMMAND' ...]
#
# NAME=flashmq (no command) starts /usr/local/bin/flashmq (FLASHMQ_BIN) on a generated config as the matrix runner
# does. One TSV line per run to stdout: name run listen_ms connect_p50_ms connect_p99_ms connect_max_ms failed;
# then the median of each broker's p50 and p99. Logs under --out (default bench-results/cold-connect).
# Example:
#   bench-configs/cold-connect.sh --runs 5 flashmq \
#       bin='bin/ringmq --bind 127.0.0.1 --port {port} --persistence memory' \
#       jar='java -jar transport/target/ringmq.jar --bind 127.0.0.1 --port {port} --persistence memory'
# A broker that exits because its port was taken meanwhile (it binds late with --warmup, and other processes take
# ephemeral ports) is started again on another port, up to 3 times. Only the broker this script started is stopped,
# by its pid.
set -euo pipefail
RUNS=5 LEVELS=1000 DIALS=200 HOLD=1s
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/bench-results/cold-connect
names=() commands=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        --levels) LEVELS=$2; shift 2 ;;
        --dials) DIALS=$2; shift 2 ;;
        --hold) HOLD=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *=*) names+=("${1%%=*}"); commands+=("${1#*=}"); shift ;;
        flashmq) names+=(flashmq); commands+=(""); shift ;;
        *) echo "cold-connect.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#names[@]})) || { echo "cold-connect.sh: name at least one broker (see --help)" >&2; exit 2; }
LT="$REPO/loadtest/target/loadtest.jar"
[[ -f $LT ]] || { echo "cold-connect.sh: $LT not found: mvn -B -ntp package -DskipTests" >&2; exit 1; }
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

source "$REPO/bench-configs/broker-runs.sh"

results="$OUT/results.tsv"
: >"$results"
for ((run = 1; run <= RUNS; run++)); do
    for i in "${!names[@]}"; do
        name=${names[i]}
        log="$OUT/$name-$run"
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
thread_count $(nproc)
log_level notice
rlimit_nofile $(ulimit -Hn)
EOF
            cmd=("${FLASHMQ_BIN:-/usr/local/bin/flashmq}" --config-file "$log.conf")
        else
            read -r -a cmd <<<"${commands[i]//\{port\}/$port}"
        fi
        t0=$(date +%s%N)
        start_broker "$log.broker.log" "$port" "${cmd[@]}"
        listen_ms=$((($(date +%s%N) - t0) / 1000000))
        ((port_taken)) && { stop_broker; continue; }
        break
        done
        if ((!listening)); then
            echo "cold-connect.sh: $name did not listen on $port (log: $log.broker.log)" >&2
            stop_broker; continue
        fi
        java -jar "$LT" -addr 127.0.0.1:"$port" -mode conn -levels "$LEVELS" -dial-concurrency "$DIALS" \
            -hold "$HOLD" -broker-pid "$broker_pid" -label "$name" >"$log.loadtest.txt" 2>&1 || true
        stop_broker
        python3 - "$name" "$run" "$listen_ms" "$log.loadtest.txt" <<'PY' | tee -a "$results"
import json, sys
name, run, listen_ms, path = sys.argv[1:5]
line = [l for l in open(path) if l.startswith('{')]
if not line:
    print(f"{name}\t{run}\t{listen_ms}\tERR\tERR\tERR\tERR"); sys.exit()
level = json.loads(line[-1])["levels"][0]
print(f"{name}\t{run}\t{listen_ms}\t{level['connect_p50_ms']:.1f}\t{level['connect_p99_ms']:.1f}"
      f"\t{level['connect_max_ms']:.1f}\t{level['failed']}")
PY
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().splitlines() if l and 'ERR' not in l]
for name in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == name]
    p50 = statistics.median(float(r[3]) for r in mine)
    p99 = sorted(float(r[4]) for r in mine)
    print(f"# {name}: {len(mine)} runs, median p50 {p50:.1f} ms, median p99 {statistics.median(p99):.1f} ms "
          f"(p99 range {p99[0]:.1f}-{p99[-1]:.1f}), median listen {statistics.median(int(r[2]) for r in mine)} ms")
PY
