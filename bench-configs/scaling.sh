#!/usr/bin/env bash
# How ringmq scales with cores, unattended on a many-core machine: the same scenarios on 2, 4, 8 and 16 cores
# (taskset for the broker, --threading and --pin chosen per count), the load generator pinned to the cores the
# broker does not use, then the most connections the machine holds. Ends with one Markdown table (per scenario:
# rate per core count, speed-up over the smallest count, and efficiency = speed-up / (cores / smallest)). For
# ringmq it also gives each run's busiest broker thread (its CPU seconds over the generator's whole run, start-up,
# connecting and draining included: its share of one core, an underestimate of its share while publishing) and writes
# every thread's CPU to <run>-threads.txt.
#
#   bench-configs/scaling.sh [options]
#
# Options:
#   --cores "2 4 8 16"   broker core counts (default: those that leave at least 2 cores to the generator)
#   --duration D         each measured run (default 10s)
#   --warmup D           the warm-up run before it on the same broker: the JIT, the pools (default 5s)
#   --connections N      the connection run's largest level (default 100000; 0: skip it), spread over
#                        127.0.0.1..16 as source addresses, on the largest core count
#   --hold D             how long each connection level is held (default 10s)
#   --flashmq            also run FlashMQ (FLASHMQ_BIN or flashmq on the PATH) on the same cores, thread per core
#   --flashmq-only       run FlashMQ alone
#   --layout "ARGS"      ringmq's threading and pinning on every core count instead of the layout below, e.g.
#                        "--threading shared-network --io-threads 6 --pin io=0-5,pipeline=6-7"
#   --only A,B           only these scenarios (fanout-unlimited, fanout-1000x5-paced, ingest-qos0, ingest-qos1)
#   --out DIR            where logs and the table go (default: bench-results/scaling-<date>)
#   --ringmq-jar JAR     default: transport/target/ringmq.jar of this checkout
#   --loadtest-jar JAR   default: loadtest/target/loadtest.jar of this checkout
#
# Core layout per count N (cores 0..N-1 for the broker; generator on N..): N=2 shared (one thread, pinned);
# N=4 shared-network (io=0-1, pipeline=2-3, 2 I/O agents); N>=8 dedicated with two routing shards (--route-shards)
# on the last two cores, auth and persist on those too (below 16) or on two more, and the rest split evenly between
# the I/O agents and their delivery shards, a core each (N=8: io=0-2, deliver=3-5, route=6-7, auth=6, persist=7;
# N=16: io=0-5, deliver=6-11, route=12-13, auth=14, persist=15). On the 16-core machine this fanned out 15.5-17.7 M
# deliveries/s on 8 cores where four delivery shards sharing one core (the layout before) held it to 11.7-12.3 M
# (docs/bench/2026-12-04-scaling-2/). The ingest rows from 8 cores run the broker's default instead (--threading
# dedicated, unpinned): there auth is on the path of every message, and on routing shard 0's core it cost 15 %.
# A run where a pin did not take is marked PIN FAILED in the table.
# On a machine without Java: bench-configs/portable-bundle.sh packs a Java runtime, the jars and FlashMQ into one
# archive; set JAVA and FLASHMQ_BIN to what it unpacks (its README line says how).
# Needs: java 17+ (JAVA, else java on the PATH), taskset (util-linux), a raised open-file limit for the connection run (the script asks for
# 1,048,576 and says what it got). Every broker runs on 127.0.0.1, is started fresh per scenario and stopped by
# its pid; every run is bounded in time.
set -euo pipefail

die() { echo "scaling.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPT_DIR")
TOTAL=$(nproc)
CORES=""
DURATION=10s
WARMUP=5s
HOLD=10s
CONNECTIONS=100000
WITH_FLASHMQ=0
WITH_RINGMQ=1
LAYOUT=""
ONLY=""
OUT=""
RINGMQ_JAR="$REPO/transport/target/ringmq.jar"
LOADTEST_JAR="$REPO/loadtest/target/loadtest.jar"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cores) CORES=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --hold) HOLD=${2:?}; shift 2 ;;
        --connections) CONNECTIONS=${2:?}; shift 2 ;;
        --flashmq) WITH_FLASHMQ=1; shift ;;
        --flashmq-only) WITH_FLASHMQ=1; WITH_RINGMQ=0; shift ;;
        --layout) LAYOUT=${2:?}; shift 2 ;;
        --only) ONLY=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --ringmq-jar) RINGMQ_JAR=${2:?}; shift 2 ;;
        --loadtest-jar) LOADTEST_JAR=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
(( ! WITH_RINGMQ )) || [[ -f $RINGMQ_JAR ]] || die "no broker jar at $RINGMQ_JAR (mvn -B -ntp package -DskipTests)"
[[ -f $LOADTEST_JAR ]] || die "no loadtest jar at $LOADTEST_JAR (mvn -B -ntp package -DskipTests)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
JAVA=$(command -v "${JAVA:-java}") || die "java not found"
if [[ -z $CORES ]]; then
    for n in 2 4 8 16; do (( n + 2 <= TOTAL )) && CORES="$CORES $n"; done
fi
[[ -n ${CORES// /} ]] || die "this machine has $TOTAL cores: at least 4 are needed (2 broker, 2 generator)"
FLASHMQ=""
if (( WITH_FLASHMQ )); then
    FLASHMQ=${FLASHMQ_BIN:-$(command -v flashmq || true)}
    [[ -x $FLASHMQ ]] || die "--flashmq: no FlashMQ (set FLASHMQ_BIN; bench-configs/build-flashmq.sh builds it)"
fi
OUT=${OUT:-$REPO/bench-results/scaling-$(date +%Y-%m-%d_%H%M)}
mkdir -p "$OUT"
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
FILES=$(ulimit -n)
if (( CONNECTIONS > 0 && CONNECTIONS + 2000 > FILES )); then
    # each process holds one descriptor per connection: the largest level must fit the limit, with room to spare
    capped=$(( FILES > 6000 ? FILES - 2000 : 0 ))
    if (( capped > 0 )); then
        echo "scaling.sh: open files are limited to $FILES here: the connection run goes to $capped, not $CONNECTIONS"
    else
        echo "scaling.sh: open files are limited to $FILES here: no connection run"
    fi
    CONNECTIONS=$capped
fi
echo "scaling.sh: $TOTAL cores, broker core counts:$CORES, open files $(ulimit -n), out $OUT" | tee "$OUT/run.txt"

# shellcheck source=bench-configs/thread-ticks.sh
. "$SCRIPT_DIR/thread-ticks.sh"

PORT=21883
broker_pid=""
stop_broker() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "$broker_pid"
        for _ in $(seq 100); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$broker_pid" 2>/dev/null && kill -9 "$broker_pid"
    fi
    broker_pid=""
    rm -rf "$OUT/data-$PORT" # the session store of a run: not a result
}
trap stop_broker EXIT

# the ringmq options for N cores (0..N-1) and SCENARIO
ringmq_layout() {
    local n=$1 scenario=${2:-} io routes deliver_from
    [[ -z $LAYOUT ]] || { echo "$LAYOUT"; return; }
    if (( n >= 8 )) && [[ $scenario == ingest-* ]]; then
        # ingest passes every message through auth, which the fan-out layout below puts on routing shard 0's core:
        # the broker's own default, unpinned, ran 4.44 M QoS 0 and 3.03 M QoS 1 msg/s on 8 cores against that
        # layout's 3.77 and 2.64 M (docs/bench/2026-12-04-scaling-2/)
        echo "--threading dedicated"
        return
    fi
    if (( n <= 2 )); then
        echo "--threading shared --io-threads 1 --pin pipeline=0"
    elif (( n < 8 )); then
        io=$(( n / 2 ))
        echo "--threading shared-network --io-threads $io --pin io=0-$((io - 1)),pipeline=$io-$((n - 1))"
    else
        # two routing shards on the last two cores, auth and persist beside them (on cores of their own from 16),
        # and the rest split evenly between the I/O agents and their delivery shards, a core each
        local own=$(( n >= 16 ? 2 : 0 ))
        io=$(( (n - 2 - own) / 2 )); routes=2
        deliver_from=$io
        local route_from=$(( 2 * io )) auth persist
        if (( own )); then auth=$((route_from + 2)); persist=$((route_from + 3))
        else auth=$route_from; persist=$((route_from + 1)); fi
        echo "--threading dedicated --io-threads $io --route-shards $routes --pin io=0-$((io - 1)),deliver=$deliver_from-$((2 * io - 1)),route=$route_from-$((route_from + 1)),auth=$auth,persist=$persist"
    fi
}

wait_port() {
    for _ in $(seq 200); do
        (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        kill -0 "$broker_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# start_broker NAME N LOG [SCENARIO]: the broker on cores 0..N-1
start_broker() {
    local name=$1 n=$2 log=$3 scenario=${4:-}
    PORT=$((PORT + 1))
    if [[ $name == ringmq ]]; then
        # shellcheck disable=SC2046
        taskset -c 0-$((n - 1)) "$JAVA" -Xms1g -Xmx4g -XX:+UseParallelGC -XX:MaxDirectMemorySize=8g -jar "$RINGMQ_JAR" \
            --bind 127.0.0.1 --port "$PORT" --data-dir "$OUT/data-$PORT" --max-connections 1000000 \
            --max-connections-per-address 1000000 $(ringmq_layout "$n" "$scenario") >"$log" 2>&1 &
    else
        cat >"$OUT/flashmq-$PORT.conf" <<EOF
thread_count $n
max_packet_size 1048576
listen {
    protocol mqtt
    inet_protocol ip4
    inet4_bind_address 127.0.0.1
    port $PORT
}
allow_anonymous true
EOF
        taskset -c 0-$((n - 1)) "$FLASHMQ" --config-file "$OUT/flashmq-$PORT.conf" >"$log" 2>&1 &
    fi
    broker_pid=$!
    wait_port "$PORT" || { cat "$log" >&2; die "$name did not start on $n cores"; }
}

# loadtest N ARGS...: the generator on the cores after the broker's, its JSON line to stdout. Unpaced ingest
# (-mode pub) spreads its publishers over all of them (one publishing thread reached 4-5 M msg/s at most); an
# unpaced fan-out gives a quarter to publishers and the rest to subscribers; a paced run keeps one publishing thread.
loadtest() {
    local n=$1; shift
    local gen=$(( TOTAL - n )) pub_threads sub_threads
    if [[ " $* " == *" -rate "* || " $* " == *" -mode conn "* ]]; then pub_threads=1
    elif [[ " $* " == *" -mode pub "* ]]; then pub_threads=$gen
    else pub_threads=$(( gen / 4 > 1 ? gen / 4 : 1 )); fi
    sub_threads=$(( gen - pub_threads > 1 ? gen - pub_threads : 1 ))
    [[ " $* " == *" -mode conn "* || " $* " == *" -rate "* ]] && sub_threads=$gen # as before: -threads was every core
    taskset -c "$n-$((TOTAL - 1))" "$JAVA" -Xmx4g -jar "$LOADTEST_JAR" -addr 127.0.0.1:"$PORT" -threads "$sub_threads" \
        -pub-threads "$pub_threads" -broker-pid "$broker_pid" -quiet "$@" | tail -1
}

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2"; }

SCENARIOS=(
    "fanout-unlimited|-mode pubsub -subs 200 -pubs 20 -qos 0 -payload 64"
    "fanout-1000x5-paced|-mode pubsub -subs 1000 -pubs 5 -qos 0 -rate 100 -payload 64"
    "ingest-qos0|-mode pub -pubs 100 -qos 0 -payload 64"
    "ingest-qos1|-mode pub -pubs 100 -qos 1 -inflight 32 -payload 64"
)
BROKERS=()
(( WITH_RINGMQ )) && BROKERS+=(ringmq)
[[ -n $FLASHMQ ]] && BROKERS+=(flashmq)
TSV="$OUT/scaling.tsv"
printf 'broker\tscenario\tcores\trate_per_s\tp99_us (connections: ms)\tbroker_cpu_s\tbroker_peak_rss_mb\tbusiest_thread\n' >"$TSV"
for entry in "${SCENARIOS[@]}"; do
    scenario=${entry%%|*}; args=${entry#*|}
    [[ -z $ONLY || ,$ONLY, == *,$scenario,* ]] || continue
    for broker in "${BROKERS[@]}"; do
        for n in $CORES; do
            log="$OUT/$broker-$scenario-$n"
            start_broker "$broker" "$n" "$log-broker.log" "$scenario"
            # shellcheck disable=SC2086
            [[ $WARMUP =~ ^0+[a-z]*$ ]] || loadtest "$n" $args -duration "$WARMUP" >/dev/null 2>&1 || true
            before=$(thread_ticks "$broker_pid")
            t0=$(date +%s%N)
            # shellcheck disable=SC2086
            json=$(loadtest "$n" $args -duration "$DURATION" -out "$log" 2>"$log-loadtest.err" || true)
            busiest=""
            if [[ $broker == ringmq ]]; then # FlashMQ's threads are all alike: one per core
                after=$(thread_ticks "$broker_pid")
                ms=$(( ($(date +%s%N) - t0) / 1000000 ))
                { echo "# CPU seconds per thread over $ms ms of wall time"; thread_cpu "$before" "$after"; } \
                    >"$log-threads.txt"
                busiest=$(sed -n 2p "$log-threads.txt" | awk -v ms="$ms" 'ms > 0 { printf "%s %.2f", $1, $2 * 1000 / ms }')
                if grep -q "could not pin" "$log-broker.log"; then
                    # the run stands, but not for the layout it names: its threads ran where the scheduler put them
                    echo "scaling.sh: $broker $scenario on $n cores: a pin did not take (see $log-broker.log)" >&2
                    busiest="$busiest, PIN FAILED"
                fi
            fi
            stop_broker
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$broker" "$scenario" "$n" "$(field rate_per_s "$json")" \
                "$(field latency_p99_us "$json")" "$(field broker_cpu_s "$json")" \
                "$(field broker_peak_rss_mb "$json")" "$busiest" | tee -a "$TSV"
        done
    done
done

if (( CONNECTIONS > 0 )); then
    n=${CORES##* }
    levels=$(( CONNECTIONS / 4 )),$(( CONNECTIONS / 2 )),$CONNECTIONS
    for broker in "${BROKERS[@]}"; do
        log="$OUT/$broker-connections-$n"
        start_broker "$broker" "$n" "$log-broker.log"
        json=$(loadtest "$n" -mode conn -levels "$levels" -hold "$HOLD" -dial-concurrency 1000 -source-ips 16 \
            -out "$log" 2>"$log-loadtest.err" || true)
        stop_broker
        last=$(grep -o '{"target"[^}]*}' <<<"$json" | tail -1 || true) # the largest level
        printf '%s\tconnections-%s\t%s\t%s established, %s/s\t%s\t\t%s\n' "$broker" "$CONNECTIONS" "$n" \
            "$(field established "$last")" "$(field connects_per_s "$last")" "$(field connect_p99_ms "$last")" \
            "$(field broker_peak_rss_mb "$last")" | tee -a "$TSV"
    done
fi

# the table: speed-up and efficiency against the smallest core count, per broker and scenario
awk -F'\t' '
NR == 1 { next }
$2 ~ /^connections/ { conn[++nc] = $0; next }
{
    key = $1 "\t" $2
    if (!(key in base)) { base[key] = $4; basecores[key] = $3; order[++nk] = key }
    rows[key] = rows[key] sprintf("%s cores: %.0f/s (x%.2f, efficiency %.2f, p99 %.1f ms%s); ", $3, $4,
        base[key] > 0 ? $4 / base[key] : 0, base[key] > 0 ? ($4 / base[key]) / ($3 / basecores[key]) : 0, $5 / 1000,
        $8 == "" ? "" : ", busiest thread " $8)
}
END {
    print "| broker | scenario | by core count |"
    print "|---|---|---|"
    for (i = 1; i <= nk; i++) { split(order[i], k, "\t"); print "| " k[1] " | " k[2] " | " rows[order[i]] " |" }
    for (i = 1; i <= nc; i++) { split(conn[i], c, "\t"); printf "| %s | %s on %s cores | %s, connect p99 %s ms, peak RSS %s MB |\n", c[1], c[2], c[3], c[4], c[5], c[7] }
}' "$TSV" | tee "$OUT/scaling.md"
echo "scaling.sh: table in $OUT/scaling.md, every run under $OUT"
