#!/usr/bin/env bash
# The low-load latency rows, measured fairly: p2p-1000x10 and pubsub-10x10-100 of performance-scaled.json (their
# arguments are read from it) against ringmq (bin/ringmq, as the matrix runs it), Mosquitto and FlashMQ (when
# installed), for N rounds. Every run starts its broker fresh on a free loopback port, runs
#   loadtest ROW-ARGS -warmup WARMUP -addr 127.0.0.1:PORT -broker-pid PID
# (a warm-up on the same broker process, then the measured run) and stops the broker by its pid; the brokers take
# turns within a round and the order reverses every other round (A B C, C B A, ...), so a noisy machine, or a
# generator that drifts, hurts each alike. At low load a single run's p99 is a handful of slow wakes, so the
# figure to compare is the median of the rounds' p99s, with every round's p99 beside it.
#
#   bench-configs/low-load-latency.sh [--rounds 5] [--duration 10s] [--warmup 5s] [--rows 'p2p-1000x10 ...'] \
#       [--brokers 'ringmq mosquitto flashmq'] [--out DIR] [--ports LO-HI] [--matrix FILE]
#
# --matrix takes the rows from another matrix file, e.g. --matrix bench-configs/five-broker-scaled.json --rows
# persistent-sessions (a row of -mode persistent gives Mosquitto `persistence true`, as five-broker-v5.sh does).
#
# Prints, per row and broker: every round's p99 (µs), their median, and the medians of the broker's and the
# generator's CPU seconds and of the generator's send lag p99 (how late it sent after the due time, µs; empty with
# an older loadtest.jar); then, per row and peer, ringmq's p99 over the peer's round by round, their median and how
# many rounds ringmq's was lower or equal (a slow stretch of the host hits both of a round alike). Writes
# results.tsv (one line per run), summary.md and each run's loadtest output and
# broker log under --out (default bench-results/low-load-latency). --ports LO-HI takes each broker's port from
# that range, next in turn (default: any free port; a range below the ephemeral ports cannot be taken meanwhile by
# some client's socket); a broker that finds its port taken is started again on another, twice at most. flashmq
# is left out when not found (FLASHMQ_BIN, else /usr/local/bin/flashmq, else flashmq on the PATH).
# Environment: LOADTEST_JAR (default loadtest/target/loadtest.jar), RINGMQ_CMD (default
# 'bin/ringmq --bind 127.0.0.1 --port {port} --data-dir DIR'), MOSQUITTO_BIN (default mosquitto on the PATH).
# A/B of ringmq builds or flags: a broker named ringmq:LABEL (LABEL letters, digits, _) is started by the command in
# RINGMQ_CMD_LABEL ({port} and {data} replaced), and takes its turn in each round like the others, e.g.
#   RINGMQ_CMD_c2='env RINGMQ_JAVA_OPTS=-XX:TieredStopAtLevel=4 bin/ringmq --bind 127.0.0.1 --port {port} --data-dir {data}' \
#   bench-configs/low-load-latency.sh --brokers 'ringmq ringmq:c2 mosquitto'
# Both commands are split at whitespace, quotes and all: give RINGMQ_JAVA_OPTS one flag, or set it in the
# environment of the script instead.
# Bounded: a broker gets 30 s to listen (3 ports at most), a loadtest duration + warm-up + 90 s; only processes
# this script started are stopped, by their pids.
set -euo pipefail
ROUNDS=5 DURATION=10s WARMUP=5s ROWS="p2p-1000x10 pubsub-10x10-100" BROKERS="ringmq mosquitto flashmq" PORTS=""
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MATRIX=$REPO/bench-configs/performance-scaled.json
OUT=$REPO/bench-results/low-load-latency
die() { echo "low-load-latency.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --rows) ROWS=${2:?}; shift 2 ;;
        --brokers) BROKERS=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --ports) PORTS=${2:?}; shift 2 ;;
        --matrix) MATRIX=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
[[ -z $PORTS || $PORTS =~ ^[1-9][0-9]*-[1-9][0-9]*$ ]] || die "--ports must be LO-HI"
LT=${LOADTEST_JAR:-$REPO/loadtest/target/loadtest.jar}
[[ -f $LT ]] || die "$LT not found: mvn -B -ntp package -DskipTests"
[[ -f $MATRIX ]] || die "--matrix $MATRIX not found"
MOSQUITTO=${MOSQUITTO_BIN:-$(command -v mosquitto || echo /usr/sbin/mosquitto)}
FLASHMQ=${FLASHMQ_BIN:-$( [[ -x /usr/local/bin/flashmq ]] && echo /usr/local/bin/flashmq || command -v flashmq || true)}
seconds() { python3 -c 'import re,sys; m=re.fullmatch(r"(\d+)(ms|s|m)?", sys.argv[1]); assert m, sys.argv[1]
print(int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[m.group(2)])' "$1"; }
LIMIT_S=$(python3 -c "print(int($(seconds "$DURATION") + $(seconds "$WARMUP") + 90))")

brokers=()
for b in $BROKERS; do
    case "$b" in
        ringmq) brokers+=(ringmq) ;;
        ringmq:*)
            [[ ${b#ringmq:} =~ ^[A-Za-z0-9_]+$ ]] || die "$b: the label takes letters, digits and _"
            var=RINGMQ_CMD_${b#ringmq:}
            [[ -n ${!var:-} ]] || die "$b needs the command in $var"
            brokers+=("$b") ;;
        mosquitto) [[ -x $MOSQUITTO ]] && brokers+=(mosquitto) || echo "mosquitto not found: left out" >&2 ;;
        flashmq) [[ -n $FLASHMQ && -x $FLASHMQ ]] && brokers+=(flashmq) || echo "flashmq not found: left out" >&2 ;;
        *) die "unknown broker $b (ringmq, ringmq:LABEL, mosquitto, flashmq)" ;;
    esac
done
((${#brokers[@]})) || die "no broker to run"
declare -A row_args
for row in $ROWS; do
    row_args[$row]=$(python3 -c 'import json,sys
rows = {s["name"]: s["args"] for s in json.load(open(sys.argv[1]))["scenarios"]}
print(rows.get(sys.argv[2], ""))' "$MATRIX" "$row")
    [[ -n ${row_args[$row]} ]] || die "no scenario $row in $MATRIX"
done
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)"

# shellcheck source=broker-runs.sh
. "$REPO/bench-configs/broker-runs.sh" # free_port, start_broker, stop_broker (also at exit)
lt_pid=""
stop_all() {
    if [[ -n $lt_pid ]] && kill -0 "$lt_pid" 2>/dev/null; then kill "$lt_pid"; wait "$lt_pid" 2>/dev/null || true; fi
    stop_broker
}
trap stop_all EXIT

next_port=0
pick_port() { # a port free now: the next free one in --ports after the last picked, else any
    if [[ -z $PORTS ]]; then free_port; return; fi
    python3 - "${PORTS%-*}" "${PORTS#*-}" "$next_port" <<'PY'
import socket, sys
lo, hi, last = (int(a) for a in sys.argv[1:4])
span = hi - lo + 1
for k in range(span):
    port = lo + (max(0, last - lo) + 1 + k) % span
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    sys.exit("no free port in %d-%d" % (lo, hi))
PY
}

broker_command() { # NAME PORT LOG-PREFIX: sets cmd
    local name=$1 port=$2 log=$3
    case "$name" in
        ringmq)
            local ringmq=${RINGMQ_CMD:-"bin/ringmq --bind 127.0.0.1 --port {port} --data-dir $log-data"}
            read -r -a cmd <<<"${ringmq//\{port\}/$port}" ;;
        ringmq:*)
            local var=RINGMQ_CMD_${name#ringmq:} variant
            variant=${!var//\{port\}/$port}
            read -r -a cmd <<<"${variant//\{data\}/"$log-data"}" ;;
        mosquitto)
            # as the matrix runner starts it (set_tcp_nodelay: its lowest-latency setting), with no connection cap
            printf 'listener %s 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\nmax_queued_messages 1000\nmax_connections -1\n' \
                "$port" >"$log.conf"
            if [[ " ${row_args[$row]} " == *" -mode persistent "* ]]; then
                mkdir -p "$log-data"
                printf 'persistence true\npersistence_location %s/\n' "$log-data" >>"$log.conf"
            fi
            cmd=("$MOSQUITTO" -c "$log.conf") ;;
        flashmq)
            { flashmq_conf "$port" "$(nproc)"; echo "max_qos_msg_pending_per_client 1000"; } >"$log.conf"
            cmd=("$FLASHMQ" --config-file "$log.conf") ;;
    esac
}

results=$OUT/results.tsv
printf 'row\tbroker\tround\tp50_us\tp99_us\tp999_us\tmax_us\tdelivered\texpected\tbroker_cpu_s\tgenerator_cpu_s\tsend_lag_p99_us\n' >"$results"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); loadtest $LT;" \
    "brokers ${brokers[*]}; $ROUNDS round(s) of $DURATION after a $WARMUP warm-up" | tee "$OUT/run.txt"
for ((round = 1; round <= ROUNDS; round++)); do
    order=("${brokers[@]}")
    if ((round % 2 == 0)); then
        order=()
        for ((i = ${#brokers[@]} - 1; i >= 0; i--)); do order+=("${brokers[i]}"); done
    fi
    for row in $ROWS; do
        for name in "${order[@]}"; do
            log=$OUT/$row-${name/:/-}-$round
            for _attempt in 1 2 3; do # the port may be taken between the pick and the broker's bind: another
                port=$(pick_port)
                next_port=$port
                broker_command "$name" "$port" "$log"
                start_broker "$log.broker.log" "$port" "${cmd[@]}"
                ((port_taken)) || break
                stop_broker
                rm -rf "$log-data"
            done
            if ((!listening)); then
                echo "$row $name round $round: the broker did not listen: $(tail -2 "$log.broker.log")" >&2
                stop_broker
                rm -rf "$log-data"
                continue
            fi
            read -r -a row_argv <<<"${row_args[$row]}"
            args=()
            for ((i = 0; i < ${#row_argv[@]}; i++)); do # --duration replaces the row's own
                if [[ ${row_argv[i]} == -duration ]]; then i=$((i + 1)); else args+=("${row_argv[i]}"); fi
            done
            timeout "$LIMIT_S" java -jar "$LT" "${args[@]}" -warmup "$WARMUP" -duration "$DURATION" \
                -addr 127.0.0.1:"$port" -broker-pid "$broker_pid" -quiet >"$log.txt" 2>&1 &
            lt_pid=$!
            wait "$lt_pid" || echo "$row $name round $round: loadtest exited $? (see $log.txt)" >&2
            lt_pid=""
            stop_broker
            rm -rf "$log-data"
            python3 - "$log.txt" "$row" "$name" "$round" >>"$results" <<'PY'
import json, sys
path, row, name, rnd = sys.argv[1:5]
lines = [l for l in open(path, errors="replace") if l.startswith("{")]
if lines:
    r = json.loads(lines[-1])
    f = lambda k: "" if r.get(k) is None else "%g" % r[k]
    print("\t".join([row, name, rnd] + [f(k) for k in ("latency_p50_us", "latency_p99_us", "latency_p999_us",
        "latency_max_us", "delivered", "expected", "broker_cpu_s", "generator_cpu_s", "send_lag_p99_us")]))
PY
            tail -n 1 "$results" | cut -f1-5,10,11,12 | tr '\t' ' '
        done
    done
done
python3 - "$results" "$OUT/run.txt" <<'PY' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def med(values):
    values = [float(v) for v in values if v not in ("", None)]
    return "%.0f" % statistics.median(values) if values else "–"
def med2(values):
    values = [float(v) for v in values if v not in ("", None)]
    return "%.2f" % statistics.median(values) if values else "–"
print(open(sys.argv[2]).read().strip())
print()
print("| row | broker | p99 µs, each round | median p99 µs | median p50 µs | broker CPU s | generator CPU s | generator send lag p99 µs | lost |")
print("|---|---|---|---|---|---|---|---|---|")
seen = []
for r in rows:
    if (r["row"], r["broker"]) not in seen:
        seen.append((r["row"], r["broker"]))
for row, broker in seen:
    runs = [r for r in rows if r["row"] == row and r["broker"] == broker]
    lost = sum(max(0, int(float(r["expected"] or 0)) - int(float(r["delivered"] or 0))) for r in runs)
    print("| %s | %s | %s | **%s** | %s | %s | %s | %s | %d |" % (row, broker,
        " ".join("%.0f" % float(r["p99_us"]) for r in runs if r["p99_us"]), med(r["p99_us"] for r in runs),
        med(r["p50_us"] for r in runs), med2(r["broker_cpu_s"] for r in runs),
        med2(r["generator_cpu_s"] for r in runs), med(r["send_lag_p99_us"] for r in runs), lost))
# paired by round: the host's slow stretches hit both brokers of a round alike, so a round's ratio, and how many
# rounds each broker won, say more than the two medians
pairs = []
for row in dict.fromkeys(r["row"] for r in rows):
    p99 = {(r["broker"], r["round"]): float(r["p99_us"]) for r in rows if r["row"] == row and r["p99_us"]}
    brokers = list(dict.fromkeys(b for b, _ in p99))
    for other in [b for b in brokers if b != "ringmq"] if "ringmq" in brokers else []:
        rounds = sorted({n for b, n in p99 if b == "ringmq"} & {n for b, n in p99 if b == other}, key=int)
        if rounds:
            ratios = [p99[("ringmq", n)] / p99[(other, n)] for n in rounds]
            pairs.append("| %s | %s | %s | **%.2f** | %d of %d |" % (row, other, " ".join("%.2f" % x for x in ratios),
                statistics.median(ratios), sum(x <= 1 for x in ratios), len(ratios)))
if pairs:
    print()
    print("| row | ringmq's p99 ÷ | each round | median | rounds ringmq's p99 was lower or equal |")
    print("|---|---|---|---|---|")
    print("\n".join(pairs))
PY
