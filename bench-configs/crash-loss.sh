#!/usr/bin/env bash
# Acknowledged QoS 1 messages lost when the broker is killed (SIGKILL) and restarted on the same data, per broker
# configuration: ringmq with --durability sync, periodic and none (RocksDB), ringmq --persistence memory, Mosquitto
# with `persistence true` at its default autosave_interval (1800 s) and with autosave_interval 1.
#
#   bench-configs/crash-loss.sh [--rounds K] [--configs a,b] [--out DIR] [--rate R] [--subs N] [--protocol 3.1.1|5]
#                               [--seed S] [--clean-restart-after-prepare] [--ringmq-jar JAR] [--loadtest JAR]
#                               [--memory-limit SIZE] [--quiet-for D] [--drain-max D] [--bound SECONDS]
#
# For each configuration, on a fresh data folder and a free loopback port: start the broker; `loadtest crash-loss
# prepare` (N persistent subscribers take crash-loss/# at QoS 1 and go offline); then K rounds (default 5) of
# {start the broker if it is not running; `loadtest crash-loss publish` (one QoS 1 publisher, --rate msg/s, every
# PUBACKed sequence appended to a file); after a random 1-3 s (--seed; counted from 0.5 s after the publisher's JVM
# starts), kill -9 the broker by its pid; restart it on the same folder}; then `loadtest crash-loss drain` (the
# subscribers come back with clean session false, no new SUBSCRIBE, and take everything
# until nothing comes for --quiet-for), which counts acknowledged, delivered, lost (acknowledged and missing at any
# subscriber) and duplicates. --clean-restart-after-prepare stops the broker with SIGTERM once after prepare, so
# that the subscriptions are on disk before the first kill (Mosquitto writes them only at autosave or shutdown).
#
# Configurations (--configs, default all): ringmq-sync, ringmq-periodic, ringmq-none, ringmq-memory,
# mosquitto-autosave-default, mosquitto-autosave-1. ringmq starts through bin/ringmq --memory-limit 1g over
# transport/target/ringmq.jar with --max-queued 1000000 --max-queued-bytes 268435456 (nothing dropped for queue
# limits) and, per row, --persistence rocksdb --data-dir DIR --durability sync|periodic|none (periodic with
# --fsync-interval 10ms) or --persistence memory. A build without those flags: set RINGMQ_PERSISTENCE_ARGS to what
# every ringmq row gets instead ({dir} is replaced by the row's data folder; empty for none) and the table says so.
# Mosquitto: listener on 127.0.0.1, anonymous, set_tcp_nodelay, max_queued_messages 1000000, persistence true,
# persistence_location DIR/ (and autosave_interval 1 for its second row).
#
# Results: DIR (default docs/bench/DATE-persistence) gets crash-loss.md (the table), crash-loss.tsv, and
# crash-loss/<config>/ (the drain's result.json, each phase's output, the broker's logs). About 30 s per
# configuration at the defaults, about 3 minutes in all; each step is bounded, the whole run by --bound (default
# 420 s). Only the brokers and generators this script started are stopped, by pid.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "crash-loss.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

ALL_CONFIGS="ringmq-sync,ringmq-periodic,ringmq-none,ringmq-memory,mosquitto-autosave-default,mosquitto-autosave-1"
ROUNDS=5
CONFIGS=$ALL_CONFIGS
OUT=""
RATE=5000
SUBS=4
PROTOCOL=3.1.1
SEED=$$
CLEAN_RESTART=0
RINGMQ_JAR_PATH="$REPO/transport/target/ringmq.jar"
LOADTEST="$REPO/loadtest/target/loadtest.jar"
MEMORY_LIMIT=1g
QUIET_FOR=3s
DRAIN_MAX=60s
BOUND_S=420
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --configs) CONFIGS=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        --subs) SUBS=${2:?}; shift 2 ;;
        --protocol) PROTOCOL=${2:?}; shift 2 ;;
        --seed) SEED=${2:?}; shift 2 ;;
        --clean-restart-after-prepare) CLEAN_RESTART=1; shift ;;
        --ringmq-jar) RINGMQ_JAR_PATH=${2:?}; shift 2 ;;
        --loadtest) LOADTEST=${2:?}; shift 2 ;;
        --memory-limit) MEMORY_LIMIT=${2:?}; shift 2 ;;
        --quiet-for) QUIET_FOR=${2:?}; shift 2 ;;
        --drain-max) DRAIN_MAX=${2:?}; shift 2 ;;
        --bound) BOUND_S=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer: '$ROUNDS'"
[[ $RATE =~ ^[0-9]+$ ]] || die "--rate must be msg/s (0: as fast as the window allows): '$RATE'"
[[ $SUBS =~ ^[1-9][0-9]*$ ]] || die "--subs must be a positive integer: '$SUBS'"
[[ $SEED =~ ^[0-9]+$ ]] || die "--seed must be a number: '$SEED'"
[[ $BOUND_S =~ ^[1-9][0-9]*$ ]] || die "--bound must be seconds: '$BOUND_S'"
for c in ${CONFIGS//,/ }; do
    [[ ,$ALL_CONFIGS, == *,$c,* ]] || die "unknown configuration '$c' (one of $ALL_CONFIGS)"
done
[[ -f $LOADTEST ]] || die "no loadtest jar at $LOADTEST (mvn -B -ntp package -DskipTests)"
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
JAVA=$(command -v "${JAVA:-java}") || die "java not found"
MOSQUITTO=""
if [[ ,$CONFIGS, == *,mosquitto-* ]]; then
    MOSQUITTO=$(command -v mosquitto || ls /usr/sbin/mosquitto 2>/dev/null) ||
        die "mosquitto is not installed (apt-get install -y mosquitto)"
fi
PERSISTENCE_NOTE=""
if [[ ,$CONFIGS, == *,ringmq-* ]]; then
    [[ -f $RINGMQ_JAR_PATH ]] || die "no ringmq jar at $RINGMQ_JAR_PATH (mvn -B -ntp package -DskipTests)"
    if [[ -n ${RINGMQ_PERSISTENCE_ARGS+set} ]]; then
        PERSISTENCE_NOTE="ringmq rows ran with RINGMQ_PERSISTENCE_ARGS='$RINGMQ_PERSISTENCE_ARGS' instead of their own persistence flags"
    elif ! "$JAVA" -jar "$RINGMQ_JAR_PATH" --help 2>&1 | grep -q -- '--durability'; then
        die "$RINGMQ_JAR_PATH has no --persistence/--durability flags: set RINGMQ_PERSISTENCE_ARGS (e.g. '' for an in-memory broker) to run without them"
    fi
fi

OUT=${OUT:-$REPO/docs/bench/$(date +%Y-%m-%d)-persistence}
mkdir -p "$OUT/crash-loss"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d /tmp/ringmq-crash-loss.XXXXXX)
BROKER_PID=""
STEP_PID=""
DEADLINE=$((SECONDS + BOUND_S))
RANDOM=$SEED

# shellcheck source=process-tree.sh
source "$REPO/bench-configs/process-tree.sh"

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for p in $STEP_PID $BROKER_PID; do
        kill -0 "$p" 2>/dev/null && kill_tree "$p"
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$TMP/jars"
cp "$LOADTEST" "$TMP/jars/loadtest.jar"
[[ -f $RINGMQ_JAR_PATH ]] && cp "$RINGMQ_JAR_PATH" "$TMP/jars/ringmq.jar"
export RINGMQ_JAR="$TMP/jars/ringmq.jar" # bin/ringmq starts this jar

free_port() { # a loopback port nothing listens on
    local p
    for ((i = 0; i < 50; i++)); do
        p=$((20000 + SRANDOM % 20000)) # not RANDOM: that one is seeded for the kill times
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
    done
    die "no free port found"
}

ringmq_args() { # the persistence flags of a ringmq row; $2: its data folder
    local args
    [[ $1 == ringmq-* ]] || return 0
    if [[ -n ${RINGMQ_PERSISTENCE_ARGS+set} ]]; then
        args=$RINGMQ_PERSISTENCE_ARGS
    else
        case "$1" in
            ringmq-sync) args="--persistence rocksdb --data-dir {dir} --durability sync" ;;
            ringmq-periodic) args="--persistence rocksdb --data-dir {dir} --durability periodic --fsync-interval 10ms" ;;
            ringmq-none) args="--persistence rocksdb --data-dir {dir} --durability none" ;;
            ringmq-memory) args="--persistence memory" ;;
        esac
    fi
    echo "${args//\{dir\}/$2}"
}

# start_broker CONFIG PORT DIR LOG: sets BROKER_PID, waits until it listens (30 s at most)
start_broker() {
    local config=$1 port=$2 dir=$3 log=$4 i
    case "$config" in
        ringmq-*)
            # shellcheck disable=SC2046
            "$REPO/bin/ringmq" --memory-limit "$MEMORY_LIMIT" --bind 127.0.0.1 --port "$port" \
                --max-queued 1000000 --max-queued-bytes 268435456 $(ringmq_args "$config" "$dir") >>"$log" 2>&1 &
            ;;
        mosquitto-*)
            if [[ ! -f $dir/mosquitto.conf ]]; then
                {
                    echo "listener $port 127.0.0.1"
                    echo "allow_anonymous true"
                    echo "set_tcp_nodelay true"
                    echo "max_queued_messages 1000000"
                    echo "persistence true"
                    echo "persistence_location $dir/"
                    # as root it would switch to the user mosquitto, who cannot write this script's private folder
                    [[ $(id -u) == 0 ]] && echo "user root"
                    [[ $config == mosquitto-autosave-1 ]] && echo "autosave_interval 1"
                } >"$dir/mosquitto.conf"
            fi
            "$MOSQUITTO" -c "$dir/mosquitto.conf" >>"$log" 2>&1 &
            ;;
    esac
    BROKER_PID=$! # bin/ringmq execs java: the pid is the broker's own
    for ((i = 0; i < 300; i++)); do
        kill -0 "$BROKER_PID" 2>/dev/null || { BROKER_PID=""; echo "the broker exited at start (see $log)" >&2; return 1; }
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "the broker did not listen on $port within 30 s (see $log)" >&2
    return 1
}

kill9_broker() {
    kill -KILL "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
    BROKER_PID=""
}

stop_broker() { # SIGTERM, then SIGKILL after 15 s
    [[ -n $BROKER_PID ]] || return 0
    kill_tree "$BROKER_PID"
    wait "$BROKER_PID" 2>/dev/null || true
    BROKER_PID=""
}

# step NAME SECONDS loadtest-args...: one loadtest crash-loss phase, bounded; its output into the row's folder
step() {
    local name=$1 bound=$2 rc
    shift 2
    "$JAVA" -jar "$TMP/jars/loadtest.jar" crash-loss "$@" >>"$ROW_OUT/$name.log" 2>&1 &
    STEP_PID=$!
    if wait_bounded "$STEP_PID" "$bound" "loadtest crash-loss $name"; then rc=0; else rc=$?; fi
    STEP_PID=""
    tail -1 "$ROW_OUT/$name.log" | sed 's/^/    /'
    return $rc
}

: >"$OUT/crash-loss.tsv"
T0=$SECONDS
echo "crash-loss: configurations $CONFIGS, $ROUNDS kill round(s) each, $SUBS subscribers, QoS 1 at ${RATE} msg/s" \
    "(0: flood), MQTT $PROTOCOL, seed $SEED; results in $OUT"
for config in ${CONFIGS//,/ }; do
    if ((SECONDS > DEADLINE)); then
        echo "the run is past its bound of $BOUND_S s: $config not run" >&2
        printf '%s\tnot run (bound)\n' "$config" >>"$OUT/crash-loss.tsv"
        continue
    fi
    echo "== $config"
    ROW_OUT="$OUT/crash-loss/$config"
    rm -rf "$ROW_OUT"
    mkdir -p "$ROW_OUT"
    dir="$TMP/$config/data"
    mkdir -p "$dir"
    port=$(free_port)
    log="$ROW_OUT/broker.log"
    acked="$TMP/$config/acked"
    common=(-addr "127.0.0.1:$port" -protocol "$PROTOCOL" -subs "$SUBS" -client-prefix "cl-$config" -acked "$acked")
    kills=0
    note=""
    if ! start_broker "$config" "$port" "$dir" "$log"; then
        printf '%s\tbroker did not start\n' "$config" >>"$OUT/crash-loss.tsv"
        continue
    fi
    if ! step prepare 60 prepare "${common[@]}"; then
        stop_broker
        printf '%s\tprepare failed\n' "$config" >>"$OUT/crash-loss.tsv"
        continue
    fi
    if ((CLEAN_RESTART)); then
        stop_broker
        start_broker "$config" "$port" "$dir" "$log" || true
    fi
    for ((round = 1; round <= ROUNDS; round++)); do
        if [[ -z $BROKER_PID ]] && ! start_broker "$config" "$port" "$dir" "$log"; then
            note="broker did not restart after round $((round - 1))"
            break
        fi
        sleep_ms=$((1000 + RANDOM % 2001))
        "$JAVA" -jar "$TMP/jars/loadtest.jar" crash-loss publish "${common[@]}" -rate "$RATE" -duration 30s \
            >>"$ROW_OUT/publish.log" 2>&1 &
        STEP_PID=$!
        sleep 0.5 # the publisher's JVM starting; the random 1-3 s count from its first message, roughly
        sleep "$(awk -v ms="$sleep_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
        kill9_broker
        kills=$((kills + 1))
        wait_bounded "$STEP_PID" 20 "loadtest crash-loss publish" || true
        STEP_PID=""
        echo "    round $round: killed after ${sleep_ms} ms: $(tail -1 "$ROW_OUT/publish.log" | sed 's/^crash-loss publish //')"
        start_broker "$config" "$port" "$dir" "$log" || { note="broker did not restart after round $round"; break; }
    done
    if [[ -n $BROKER_PID ]]; then
        step drain 120 drain "${common[@]}" -quiet-for "$QUIET_FOR" -drain-max "$DRAIN_MAX" -label "$config" \
            -out "$ROW_OUT/result.json" || note="${note:+$note; }drain failed"
        grep -h '^crash-loss drain by round' "$ROW_OUT/drain.log" | sed 's/^crash-loss drain /    /' || true
        stop_broker
    fi
    if grep -q 'Error saving' "$log" 2>/dev/null; then
        note="${note:+$note; }Mosquitto could not save its database (see broker.log)"
    fi
    if [[ -f $ROW_OUT/result.json ]]; then
        jq -r --arg kills "$kills" --arg note "$note" --arg args "$(ringmq_args "$config" DIR)" \
            '[.label, .acknowledged, .lost, .lost_percent, .duplicates, .sessions_resumed, .subscribers,
              .unacknowledged_delivered, $kills, $note, $args] | @tsv' "$ROW_OUT/result.json" >>"$OUT/crash-loss.tsv"
    else
        printf '%s\t%s\n' "$config" "${note:-no result}" >>"$OUT/crash-loss.tsv"
    fi
    rm -rf "${TMP:?}/$config"
done

{
    echo "# Acknowledged messages lost on kill -9"
    echo
    echo "$(date '+%Y-%m-%d %H:%M'); $(nproc) cores; $("$JAVA" -version 2>&1 | head -1); $( [[ -n $MOSQUITTO ]] && "$MOSQUITTO" -h 2>/dev/null | head -1 | sed 's/ is an MQTT.*//');"
    echo "broker and generator on 127.0.0.1; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Command: \`bench-configs/crash-loss.sh --rounds $ROUNDS --rate $RATE --subs $SUBS --protocol $PROTOCOL --seed $SEED$( ((CLEAN_RESTART)) && echo ' --clean-restart-after-prepare')$([[ $CONFIGS != "$ALL_CONFIGS" ]] && echo " --configs $CONFIGS")\`."
    [[ -n $PERSISTENCE_NOTE ]] && echo "**Note:** $PERSISTENCE_NOTE."
    echo
    echo "Per configuration: a fresh data folder; $SUBS persistent subscribers (clean session false) take crash-loss/# at QoS 1"
    echo "and go offline$( ((CLEAN_RESTART)) && echo ', then the broker is stopped cleanly (SIGTERM) and restarted once'); then $ROUNDS rounds of: one QoS 1 publisher at $RATE msg/s, kill -9 of the"
    echo "broker after a random 1-3 s, restart on the same folder; then the subscribers come back and drain."
    echo "acknowledged: messages whose PUBACK reached the publisher; lost: of those, the ones missing at any subscriber;"
    echo "duplicates: deliveries a subscriber already had (allowed for QoS 1); resumed: subscribers whose session was"
    echo "present at the drain; unacked delivered: (message, subscriber) pairs delivered though never acknowledged (allowed)."
    echo
    echo "| broker / config | acknowledged | lost | lost % | duplicates | sessions resumed | unacked delivered | kills | notes |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
    awk -F'\t' '
        function fmt(v,   s) {
            v = sprintf("%.0f", v); s = ""
            while (length(v) > 3) { s = "," substr(v, length(v) - 2) s; v = substr(v, 1, length(v) - 3) }
            return v s
        }
        NF <= 2 { print "| " $1 " | – | – | – | – | – | – | – | " $2 " |"; next }
        {
            notes = $10
            if ($1 == "ringmq-sync" && $3 > 0) notes = "**LOSS** with sync durability" (notes == "" ? "" : "; " notes)
            if ($11 != "") notes = (notes == "" ? "" : notes "; ") "`" $11 "`"
            printf "| %s | %s | %s | %.2f %% | %s | %s of %s | %s | %s | %s |\n", $1, fmt($2), fmt($3), $4, fmt($5),
                $6, $7, fmt($8), $9, notes
        }' "$OUT/crash-loss.tsv"
} >"$OUT/crash-loss.md"

echo
cat "$OUT/crash-loss.md"
echo
echo "table: $OUT/crash-loss.md; rows: $OUT/crash-loss.tsv; per configuration: $OUT/crash-loss/; total $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"
if awk -F'\t' 'NF <= 2 { bad = 1 } END { exit !bad }' "$OUT/crash-loss.tsv"; then
    echo "crash-loss.sh: some configurations produced no result (see the table)" >&2
    exit 1
fi
