#!/usr/bin/env bash
# Allocation check of a broker's hot path under fan-out: starts the broker jar on 127.0.0.1 with Java Flight
# Recorder, warms it up, records (settings=profile) while loadtest drives a paced fan-out, stops, and prints the
# top allocation sites (topmost io.ringmq frame of each jdk.ObjectAllocationSample, with their total weight)
# and the bytes allocated per delivered message, estimated from the samples and exact from
# jdk.ThreadAllocationStatistics. An allocation-free hot path shows well under 1 byte per delivery.
#
#   bench-configs/jfr-fanout.sh [options] [JAR]
#
# JAR: the ringmq jar (default: transport/target/ringmq.jar of this checkout).
# Options:
#   --duration D     the recorded fan-out run (default 30s)
#   --warmup D       an unrecorded run first, so that the hot paths are compiled (default 10s; 0: none)
#   --rate N         msg/s per publisher (default 2000); --subs N (default 100), --pubs N (default 10),
#   --qos N (default 0), --payload BYTES (default 64)
#   --top N          allocation sites and threads listed (default 15)
#   --from-start     record from JVM start (-XX:StartFlightRecording, warm-up included) instead of starting the
#                    recording with jcmd once the warm-up is over
#   --loadtest JAR   the generator (default: loadtest/target/loadtest.jar of this checkout)
#   --out DIR        where the recording and summaries go (default: bench-results/jfr-fanout-<date>)
#   --heap SIZE      broker -Xms/-Xmx (default: the JVM's)
#
# Only the broker this script started is stopped (SIGTERM, then SIGKILL after 20 s), by its pid.
set -euo pipefail

die() { echo "jfr-fanout.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || dirname "$SCRIPT_DIR")
JAR=""
LOADTEST="$REPO/loadtest/target/loadtest.jar"
DURATION=30s
WARMUP=10s
RATE=2000
SUBS=100
PUBS=10
QOS=0
PAYLOAD=64
TOP=15
FROM_START=0
OUT=""
HEAP=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        --subs) SUBS=${2:?}; shift 2 ;;
        --pubs) PUBS=${2:?}; shift 2 ;;
        --qos) QOS=${2:?}; shift 2 ;;
        --payload) PAYLOAD=${2:?}; shift 2 ;;
        --top) TOP=${2:?}; shift 2 ;;
        --from-start) FROM_START=1; shift ;;
        --loadtest) LOADTEST=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --heap) HEAP=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --*) die "unknown option $1 (see --help)" ;;
        *) [[ -z $JAR ]] || die "one JAR only"; JAR=$1; shift ;;
    esac
done
JAR=${JAR:-$REPO/transport/target/ringmq.jar}
[[ -f $JAR ]] || die "no broker jar at $JAR (build it: mvn -B -ntp package -DskipTests)"
[[ -f $LOADTEST ]] || die "no loadtest jar at $LOADTEST (build it: mvn -B -ntp package -DskipTests)"
for n in RATE SUBS PUBS QOS PAYLOAD TOP; do [[ ${!n} =~ ^[0-9]+$ ]] || die "--${n,,} must be a number"; done

seconds_of() {
    local d=$1
    case "$d" in
        *ms) echo $(( (${d%ms} + 999) / 1000 )) ;;
        *s) echo "${d%s}" ;;
        *m) echo $(( ${d%m} * 60 )) ;;
        *) die "cannot read duration '$d' (e.g. 30s, 500ms, 2m)" ;;
    esac
}
DUR_S=$(seconds_of "$DURATION")
WARM_S=0; [[ $WARMUP == 0* ]] || WARM_S=$(seconds_of "$WARMUP")

JAVA=$(command -v "${JAVA:-java}") || die "java not found"
JAVA_HOME_DIR=$(dirname "$(dirname "$(readlink -f "$JAVA")")")
JCMD=$(command -v jcmd || echo "$JAVA_HOME_DIR/bin/jcmd")
JFR=$(command -v jfr || echo "$JAVA_HOME_DIR/bin/jfr")
[[ -x $JFR ]] || die "jfr not found (a JDK is needed, not a JRE)"
[[ $FROM_START == 1 || -x $JCMD ]] || die "jcmd not found (a JDK is needed); or use --from-start"

OUT=${OUT:-$REPO/bench-results/jfr-fanout-$(date +%Y-%m-%d_%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REC="$OUT/fanout.jfr"
BROKER_PID=""
GEN_PID=""

stop_pid() { # SIGTERM a process we started, SIGKILL after 20 s
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -z $GEN_PID ]] || stop_pid "$GEN_PID"
    [[ -z $BROKER_PID ]] || stop_pid "$BROKER_PID"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

jvm=()
[[ -z $HEAP ]] || jvm+=("-Xms$HEAP" "-Xmx$HEAP")
if [[ $FROM_START == 1 ]]; then
    jvm+=("-XX:StartFlightRecording=name=alloc,settings=profile,filename=$REC,duration=$((WARM_S + DUR_S + 60))s,dumponexit=true")
fi
# port 0: the broker picks a free one and prints it ("ringmq ... listening on 127.0.0.1:PORT")
"$JAVA" "${jvm[@]+"${jvm[@]}"}" -jar "$JAR" --bind 127.0.0.1 --port 0 >"$OUT/broker.log" 2>&1 &
BROKER_PID=$!
PORT=""
for ((i = 0; i < 300; i++)); do
    kill -0 "$BROKER_PID" 2>/dev/null || { cat "$OUT/broker.log" >&2; die "the broker exited before listening"; }
    PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$OUT/broker.log" | head -1)
    [[ -n $PORT ]] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
[[ -n $PORT ]] && ((i < 300)) || die "the broker did not say it listens within 30 s (see $OUT/broker.log)"
echo "broker: $JAR, pid $BROKER_PID, on 127.0.0.1:$PORT${HEAP:+, heap $HEAP}"

LOAD=(-addr "127.0.0.1:$PORT" -mode pubsub -subs "$SUBS" -pubs "$PUBS" -qos "$QOS" -rate "$RATE" -payload "$PAYLOAD")
run_load() { # args: duration out-dir label; bounded at duration + 120 s
    local bound=$(( $(seconds_of "$1") + 120 )) rc
    "$JAVA" -jar "$LOADTEST" "${LOAD[@]}" -duration "$1" -broker-pid "$BROKER_PID" -out "$2" -label "$3" \
        >"$2.log" 2>&1 &
    GEN_PID=$!
    local deadline=$((SECONDS + bound))
    while kill -0 "$GEN_PID" 2>/dev/null; do
        if ((SECONDS > deadline)); then echo "the load generator ran past $bound s: stopped" >&2; stop_pid "$GEN_PID"; fi
        sleep 0.5
    done
    if wait "$GEN_PID"; then rc=0; else rc=$?; fi
    GEN_PID=""
    return "$rc"
}

# every ingress ring slot (16,384 by default) grows its per-slot arrays on first use: a warm-up that does not cycle
# the ring several times leaves those one-time allocations in the recording, where they look per-message
if ((WARM_S * PUBS * RATE < 4 * 16384)); then
    echo "warning: the warm-up publishes $((WARM_S * PUBS * RATE)) messages, fewer than 4 x 16,384 ingress ring slots:" \
        "first-use growth of ring slots may show as per-message allocation (longer --warmup or higher --rate)" >&2
fi
if ((WARM_S > 0)); then
    echo "warm-up: $WARMUP of fan-out ($SUBS subscribers x $PUBS publishers x $RATE msg/s, QoS $QOS, $PAYLOAD B), not measured"
    run_load "$WARMUP" "$OUT/warmup" warmup || { cat "$OUT/warmup.log" >&2; die "the warm-up run failed"; }
fi
if [[ $FROM_START == 0 ]]; then
    "$JCMD" "$BROKER_PID" JFR.start name=alloc settings=profile filename="$REC" duration=$((DUR_S + 120))s \
        >"$OUT/jcmd-start.log" 2>&1 || { cat "$OUT/jcmd-start.log" >&2; die "jcmd JFR.start failed (try --from-start)"; }
fi
echo "recorded: $DURATION of fan-out ($SUBS subscribers x $PUBS publishers x $RATE msg/s = $((SUBS * PUBS * RATE)) deliveries/s offered)"
run_load "$DURATION" "$OUT/run" measured || { cat "$OUT/run.log" >&2; die "the measured run failed"; }
if [[ $FROM_START == 0 ]]; then
    "$JCMD" "$BROKER_PID" JFR.stop name=alloc filename="$REC" >"$OUT/jcmd-stop.log" 2>&1 ||
        { cat "$OUT/jcmd-stop.log" >&2; die "jcmd JFR.stop failed"; }
fi
stop_pid "$BROKER_PID"   # with --from-start the recording is written on exit
wait "$BROKER_PID" 2>/dev/null || true
BROKER_PID=""
[[ -s $REC ]] || die "no recording at $REC (see $OUT/broker.log)"

sed -n '/^loadtest/,$p' "$OUT/run.log" | grep -v '^{' || true
summary="$OUT/run/summary.json"
[[ -f $summary ]] || die "no $summary"
num() { sed -n "s/.*\"$1\":\\(-\\{0,1\\}[0-9.]*\\).*/\\1/p" "$summary"; }
DELIVERED=$(num delivered); PUBLISHED=$(num published); LOST=$(num lost); EXPECTED=$(num expected)
if ((EXPECTED > 0 && LOST * 100 > EXPECTED)); then
    echo "warning: $LOST of $EXPECTED deliveries lost: the broker or the generator is saturated at this rate;" \
        "the check is meant at a busy but sustainable rate (lower --rate)" >&2
fi

"$JFR" summary "$REC" >"$OUT/jfr-summary.txt" 2>&1 || true
"$JFR" print --events jdk.ObjectAllocationSample --stack-depth 16 "$REC" >"$OUT/allocation-samples.txt" 2>&1 || true
echo
echo "allocation samples in the recording: $(awk '$1 == "jdk.ObjectAllocationSample" { print $2 }' "$OUT/jfr-summary.txt")" \
    "(all of them, with stacks: $OUT/allocation-samples.txt)"
keep=(); [[ $FROM_START == 0 ]] || keep=(--keep-first)  # from JVM start, a first sample counts from thread start
"$JAVA" "$SCRIPT_DIR/JfrAllocations.java" "$REC" "$DELIVERED" "$PUBLISHED" --top "$TOP" "${keep[@]+"${keep[@]}"}" |
    tee "$OUT/allocations.md"
echo
echo "recording: $REC; summary: $OUT/allocations.md"
