#!/usr/bin/env bash
# A bridge between two brokers of one kind, side by side: the publishing broker A bridges `bench/#` out at QoS 1 to
# broker B, from the same mosquitto.conf for ringmq and for Mosquitto; the load generator publishes on A and
# subscribes on B (-sub-addr), so every message crosses the bridge. Both brokers queue up to 100,000 messages per
# session (max_queued_messages), so a burst shows as latency, not as the default 1,000's drops:
#   loadtest -addr A -sub-addr B -mode pubsub -pubs PUBS -subs 1 -qos 1 -rate R -duration D -topic-prefix bench
# Each round starts both brokers fresh for each kind (the kinds take turns: ringmq, mosquitto, ringmq, ...), waits
# until A's bridge reports itself connected (its retained state topic reads 1), then runs every rate in turn.
#
#   bench-configs/bridge-bench.sh [--rounds N] [--rates "1000 5000"] [--pubs 10] [--duration 10s]
#       [--ringmq-jar JAR] [--out DIR]
#
# One TSV line per run to stdout: kind round rate published delivered lost dup reordered p50_us p99_us
# cpu_a_s cpu_b_s (broker CPU seconds of A and B during the run, from /proc). Needs mosquitto and mosquitto_sub
# (Debian's mosquitto, mosquitto-clients). Only the brokers this script started are stopped, by their pids.
set -euo pipefail
ROUNDS=3 RATES="1000 5000" PUBS=10 DURATION=10s
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JAR=$REPO/transport/target/ringmq.jar
OUT=$REPO/bench-results/bridge
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --rates) RATES=$2; shift 2 ;;
        --pubs) PUBS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --ringmq-jar) JAR=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bridge-bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
LT=$REPO/loadtest/target/loadtest.jar
for need in "$LT" "$JAR"; do
    [[ -f $need ]] || { echo "bridge-bench.sh: $need not found: mvn -B -ntp package -DskipTests" >&2; exit 1; }
done
command -v mosquitto >/dev/null && command -v mosquitto_sub >/dev/null ||
    { echo "bridge-bench.sh: needs mosquitto and mosquitto_sub (apt-get install mosquitto mosquitto-clients)" >&2; exit 1; }
mkdir -p "$OUT"

# below the ephemeral range: the warm-up of a ringmq started first (500 client sockets on port 0) cannot take it
free_port() {
    python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
while True:
    port = random.randint(10000, low - 1)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass
    finally:
        s.close()'
}
pids=()
stop_all() {
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"; for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
            wait "$pid" 2>/dev/null || true
        fi
    done
    pids=()
}
trap stop_all EXIT
await_port() {
    for _ in $(seq 3000); do
        (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        sleep 0.01
    done
    return 1
}
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

start() { # LOG COMMAND...: starts it, appends its pid to pids
    local log=$1
    shift
    (cd "$REPO" && exec "$@") >"$log" 2>&1 &
    pids+=("$!")
}

for ((round = 1; round <= ROUNDS; round++)); do
    for kind in ringmq mosquitto; do
        dir="$OUT/$kind-$round"
        mkdir -p "$dir"
        port_a=$(free_port) port_b=$(free_port)
        cat >"$dir/a.conf" <<EOF
listener $port_a 127.0.0.1
allow_anonymous true
max_queued_messages 100000
connection bench
address 127.0.0.1:$port_b
remote_clientid bench-bridge
topic bench/# out 1
EOF
        printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\n' "$port_b" >"$dir/b.conf"
        if [[ $kind == ringmq ]]; then
            start "$dir/b.log" java -jar "$JAR" -c "$dir/b.conf" --persistence memory
            await_port "$port_b"
            start "$dir/a.log" java -jar "$JAR" -c "$dir/a.conf" --persistence memory
        else
            start "$dir/b.log" mosquitto -c "$dir/b.conf"
            await_port "$port_b"
            start "$dir/a.log" mosquitto -c "$dir/a.conf"
        fi
        await_port "$port_a"
        pid_b=${pids[0]} pid_a=${pids[1]}
        state=$(mosquitto_sub -p "$port_a" -t '$SYS/broker/connection/bench-bridge/state' -C 1 -W 30 || true)
        for _ in $(seq 30); do
            [[ $state == 1 ]] && break
            state=$(mosquitto_sub -p "$port_a" -t '$SYS/broker/connection/bench-bridge/state' -C 1 -W 2 || true)
        done
        [[ $state == 1 ]] || { echo "bridge-bench.sh: $kind's bridge never connected (see $dir)" >&2; exit 1; }
        for rate in $RATES; do
            before_a=$(cpu_s "$pid_a") before_b=$(cpu_s "$pid_b")
            java -jar "$LT" -addr "127.0.0.1:$port_a" -sub-addr "127.0.0.1:$port_b" -mode pubsub -pubs "$PUBS" \
                -subs 1 -qos 1 -rate "$rate" -duration "$DURATION" -topic-prefix bench -quiet \
                -label "$kind bridge" -out "$dir/rate-$rate" >"$dir/rate-$rate.log" 2>&1 || true
            after_a=$(cpu_s "$pid_a") after_b=$(cpu_s "$pid_b")
            python3 - "$dir/rate-$rate/summary.json" "$kind" "$round" "$rate" "$before_a" "$after_a" "$before_b" \
                "$after_b" <<'PY'
import json, sys
path, kind, rnd, rate, a0, a1, b0, b1 = sys.argv[1:]
try:
    s = json.load(open(path))
except OSError:
    print(f"{kind}\t{rnd}\t{rate}\tfailed"); sys.exit(0)
print("\t".join(str(x) for x in [kind, rnd, rate, s.get("published"), s.get("delivered"), s.get("lost"),
      s.get("duplicates"), s.get("reordered"), s.get("latency_p50_us"), s.get("latency_p99_us"),
      round(float(a1) - float(a0), 2), round(float(b1) - float(b0), 2)]))
PY
        done
        stop_all
    done
done
