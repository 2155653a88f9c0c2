#!/usr/bin/env bash
# Persistent sessions with durable storage, side by side: ringmq --persistence memory, ringmq on RocksDB with
# --durability none, periodic and sync, and Mosquitto with `persistence true`; one load generator on 127.0.0.1,
# each broker started fresh (on a fresh data folder) for every scenario. Ends with a table per scenario:
# throughput, p50/p99 latency, loss, broker peak RSS and CPU.
#
#   bench-configs/persistence.sh [--out DIR] [--duration D] [--warmup D] [--only a,b] [--brokers a,b]
#                                [--matrix FILE] [--ringmq-jar JAR] [--loadtest JAR] [--memory-limit SIZE]
#                                [--bound SECONDS]
#
# The matrix (default persistence-scaled.json): persistent-sessions (1,000 pairs, clean session false, QoS 1,
# 2 msg/s each, subscribers away for the first 10 s of 30 s), paced-10x10 (10 QoS 1 publishers x 1,000 msg/s to
# 10 subscribers with clean session false, 10 s) and flood-10x10 (the same as fast as PUBACKs come back); each
# after a 5 s warm-up on the same broker process.
# --duration D replaces every -duration and drops persistent-sessions' -offline (then half the duration).
#
# Brokers (--brokers, default all): ringmq-memory (--persistence memory), ringmq-none, ringmq-periodic
# (--fsync-interval 10ms), ringmq-sync (--persistence rocksdb --data-dir DIR --durability ...), mosquitto
# (listener on 127.0.0.1, anonymous, set_tcp_nodelay, max_queued_messages 100000, persistence true,
# persistence_location DIR/, default autosave). ringmq starts through bin/ringmq --memory-limit 1g over
# transport/target/ringmq.jar with --max-queued 100000 (as Mosquitto's max_queued_messages). A build without the
# persistence flags: set RINGMQ_PERSISTENCE_ARGS to what every ringmq broker gets instead ({dir} is replaced by its
# fresh data folder; empty for none); the table says so.
#
# Results: DIR (default docs/bench/DATE-persistence) gets persistence.md (the table), persistence-runs.tsv,
# persistence-matrix.json, persistence-matrix.log and the matrix runner's dated folder (report.md, report.html,
# every run's summary.json, histograms and plots). About 8-9 minutes with the defaults (5 brokers x 3 scenarios);
# bounded at --bound (default 720 s). A smoke test: --duration 5s --warmup 1s (about 2 minutes).
# Only the generator and the brokers it started (its child processes) are stopped, by pid, on a timeout or Ctrl-C.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "persistence.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

ALL_BROKERS="ringmq-memory,ringmq-none,ringmq-periodic,ringmq-sync,mosquitto"
OUT=""
DURATION=""
WARMUP=""
ONLY=""
BROKERS=$ALL_BROKERS
MATRIX="$REPO/bench-configs/persistence-scaled.json"
RINGMQ_JAR_PATH="$REPO/transport/target/ringmq.jar"
LOADTEST="$REPO/loadtest/target/loadtest.jar"
MEMORY_LIMIT=1g
BOUND_S=720
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) OUT=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --only) ONLY=${2:?}; shift 2 ;;
        --brokers) BROKERS=${2:?}; shift 2 ;;
        --matrix) MATRIX=${2:?}; shift 2 ;;
        --ringmq-jar) RINGMQ_JAR_PATH=${2:?}; shift 2 ;;
        --loadtest) LOADTEST=${2:?}; shift 2 ;;
        --memory-limit) MEMORY_LIMIT=${2:?}; shift 2 ;;
        --bound) BOUND_S=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ -f $MATRIX ]] || die "no matrix file $MATRIX"
[[ -f $LOADTEST ]] || die "no loadtest jar at $LOADTEST (mvn -B -ntp package -DskipTests)"
[[ $BOUND_S =~ ^[1-9][0-9]*$ ]] || die "--bound must be seconds: '$BOUND_S'"
for b in ${BROKERS//,/ }; do
    [[ ,$ALL_BROKERS, == *,$b,* ]] || die "unknown broker '$b' (one of $ALL_BROKERS)"
done
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
JAVA=$(command -v "${JAVA:-java}") || die "java not found"
MOSQUITTO=""
if [[ ,$BROKERS, == *,mosquitto,* ]]; then
    MOSQUITTO=$(command -v mosquitto || ls /usr/sbin/mosquitto 2>/dev/null) ||
        die "mosquitto is not installed (apt-get install -y mosquitto)"
fi
PERSISTENCE_NOTE=""
if [[ ,$BROKERS, == *,ringmq-* ]]; then
    [[ -f $RINGMQ_JAR_PATH ]] || die "no ringmq jar at $RINGMQ_JAR_PATH (mvn -B -ntp package -DskipTests)"
    if [[ -n ${RINGMQ_PERSISTENCE_ARGS+set} ]]; then
        PERSISTENCE_NOTE="every ringmq broker ran with RINGMQ_PERSISTENCE_ARGS='$RINGMQ_PERSISTENCE_ARGS' instead of its own persistence flags: the ringmq rows differ by name only"
    elif ! "$JAVA" -jar "$RINGMQ_JAR_PATH" --help 2>&1 | grep -q -- '--durability'; then
        die "$RINGMQ_JAR_PATH has no --persistence/--durability flags: set RINGMQ_PERSISTENCE_ARGS (e.g. '' for an in-memory broker) to run without them"
    fi
fi

OUT=${OUT:-$REPO/docs/bench/$(date +%Y-%m-%d)-persistence}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d /tmp/ringmq-persistence.XXXXXX)
RUNNING_PID=""

# shellcheck source=process-tree.sh
source "$REPO/bench-configs/process-tree.sh"

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $RUNNING_PID ]] && kill -0 "$RUNNING_PID" 2>/dev/null; then
        echo "stopping the generator (pid $RUNNING_PID) and the brokers it started" >&2
        kill_tree "$RUNNING_PID"
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the matrix runner splits a broker command on whitespace: paths without any
[[ $REPO != *[[:space:]]* ]] || die "the repository's path has a space: $REPO"
mkdir -p "$TMP/jars"
cp "$LOADTEST" "$TMP/jars/loadtest.jar"
[[ -f $RINGMQ_JAR_PATH ]] && cp "$RINGMQ_JAR_PATH" "$TMP/jars/ringmq.jar"

# Each broker from a wrapper that makes it a fresh data folder and execs it, so that the matrix runner's pid (CPU
# and RSS sampling, SIGTERM) is the broker's own: `ringmq.sh PORT memory|none|periodic|sync`, `mosquitto.sh PORT`.
[[ -n ${RINGMQ_PERSISTENCE_ARGS+set} ]] && printf '%s' "$RINGMQ_PERSISTENCE_ARGS" >"$TMP/ringmq-args"
cat >"$TMP/ringmq.sh" <<EOF
#!/usr/bin/env bash
set -eu
dir=\$(mktemp -d "$TMP/ringmq-\$2.XXXXXX")
case "\$2" in
    memory) args="--persistence memory" ;;
    periodic) args="--persistence rocksdb --data-dir {dir} --durability periodic --fsync-interval 10ms" ;;
    *) args="--persistence rocksdb --data-dir {dir} --durability \$2" ;;
esac
if [[ -f "$TMP/ringmq-args" ]]; then args=\$(cat "$TMP/ringmq-args"); fi # RINGMQ_PERSISTENCE_ARGS
args=\${args//\{dir\}/\$dir}
echo "ringmq \$2: bin/ringmq --memory-limit $MEMORY_LIMIT --bind 127.0.0.1 --port \$1 --max-queued 100000 \$args"
export RINGMQ_JAR="$TMP/jars/ringmq.jar"
# shellcheck disable=SC2086
exec "$REPO/bin/ringmq" --memory-limit "$MEMORY_LIMIT" --bind 127.0.0.1 --port "\$1" --max-queued 100000 \$args
EOF
cat >"$TMP/mosquitto.sh" <<EOF
#!/usr/bin/env bash
set -eu
dir=\$(mktemp -d "$TMP/mosquitto.XXXXXX")
{
    echo "listener \$1 127.0.0.1"
    echo "allow_anonymous true"
    echo "set_tcp_nodelay true"
    echo "max_queued_messages 100000"
    echo "persistence true"
    echo "persistence_location \$dir/"
    # as root it would switch to the user mosquitto, who cannot write this script's private folder
    if [[ \$(id -u) == 0 ]]; then echo "user root"; fi
} >"\$dir/mosquitto.conf"
cat "\$dir/mosquitto.conf"
exec "$MOSQUITTO" -c "\$dir/mosquitto.conf"
EOF
chmod +x "$TMP/ringmq.sh" "$TMP/mosquitto.sh"

jq --arg brokers "$BROKERS" --arg only "$ONLY" --arg dur "$DURATION" --arg warm "$WARMUP" \
    --arg ringmq "$TMP/ringmq.sh {port}" --arg mosq "$TMP/mosquitto.sh {port}" '
    .name = "persistence"
    | .brokers = ($brokers | split(","))
    | .commands = { "ringmq-memory": ($ringmq + " memory"), "ringmq-none": ($ringmq + " none"),
                    "ringmq-periodic": ($ringmq + " periodic"), "ringmq-sync": ($ringmq + " sync"), "mosquitto": $mosq }
    | .scenarios |= map(select($only == "" or (.name as $n | $only | split(",") | index($n))))
    | if $dur != "" then .scenarios |= map(.args |= (sub("-duration [^ ]+"; "-duration " + $dur)
        | sub(" -offline [^ ]+"; ""))) else . end
    | if $warm != "" then .warmup = (if ($warm | test("^0[a-z]*$")) then "" else $warm end) else . end' \
    "$MATRIX" >"$OUT/persistence-matrix.json"
SCENARIOS=$(jq -r '.scenarios[].name' "$OUT/persistence-matrix.json")
[[ -n $SCENARIOS ]] || die "no scenario of $MATRIX matches --only '$ONLY'"

warn_if_busy
T0=$SECONDS
echo "persistence: $(echo $SCENARIOS | wc -w) scenario(s) x brokers $BROKERS, bounded at $BOUND_S s; results in $OUT"
run_matrix "$JAVA" "$TMP/jars/loadtest.jar" "$OUT/persistence-matrix.json" "$OUT" "$OUT/persistence-matrix.log" \
    '^(== |  published|  latency|  problems|   failed)' "$BOUND_S" persistence

# one line per run: scenario broker deliveries/s published/s p50_us p99_us lost expected peak_rss_mb cpu_s problems
: >"$OUT/persistence-runs.tsv"
if [[ -n $REPORT ]]; then
    while IFS= read -r f; do
        broker=$(basename "$(dirname "$f")")
        scenario=$(basename "$(dirname "$(dirname "$f")")")
        jq -r --arg s "$scenario" --arg b "$broker" '
            [$s, $b, .rate_per_s, (if .seconds > 0 then .published / .seconds else 0 end), .latency_p50_us, .latency_p99_us, .lost, .expected, .broker_peak_rss_mb,
             .broker_cpu_s,
             ([if .connections_lost > 0 then "\(.connections_lost) connections lost" else empty end,
               if .failed > 0 then "\(.failed) clients never ready" else empty end,
               if .resumed_sessions > 0 then "\(.resumed_sessions) sessions resumed" else empty end,
               if .duplicates > 0 then "\(.duplicates) duplicates" else empty end,
               if .rejected > 0 then "\(.rejected) refused" else empty end] | join(", "))] | @tsv' "$f" \
            >>"$OUT/persistence-runs.tsv"
    done < <(find "$REPORT" -name summary.json | sort)
fi

{
    echo "# Persistent sessions with durable storage: ringmq's durability modes and Mosquitto"
    echo
    echo "$(date '+%Y-%m-%d %H:%M'); $(nproc) cores; $("$JAVA" -version 2>&1 | head -1); $( [[ -n $MOSQUITTO ]] && "$MOSQUITTO" -h 2>/dev/null | head -1 | sed 's/ is an MQTT.*//');"
    echo "generator and brokers on 127.0.0.1, one broker at a time, each fresh (fresh data folder) per scenario; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Matrix $(basename "$MATRIX")${DURATION:+, -duration $DURATION}${WARMUP:+, warm-up $WARMUP}; ringmq via bin/ringmq --memory-limit $MEMORY_LIMIT --max-queued 100000;"
    echo "Mosquitto with persistence true, max_queued_messages 100000. Command: \`bench-configs/persistence.sh$([[ -n $DURATION ]] && echo " --duration $DURATION")$([[ -n $WARMUP ]] && echo " --warmup $WARMUP")$([[ $BROKERS != "$ALL_BROKERS" ]] && echo " --brokers $BROKERS")$([[ -n $ONLY ]] && echo " --only $ONLY")\`."
    [[ -n $PERSISTENCE_NOTE ]] && echo "**Note:** $PERSISTENCE_NOTE."
    echo "Full report (dup, reordering, p99.9, plots): ${REPORT:+${REPORT#"$OUT"/}/}report.md and report.html."
    echo
    echo "deliveries/s: messages received by subscribers per second; ÷ memory: against ringmq-memory; published/s: messages"
    echo "the publishers sent per second (flood: as fast as PUBACKs came back); p50/p99: delivery latency from the intended"
    echo "send time (persistent-sessions: the offline queue's wait included); loss: messages not delivered of those expected"
    echo "(QoS 1 should lose nothing: a loss is marked **LOSS**; in the flood row a broker that acknowledges faster than its"
    echo "subscribers read fills their queues, 100,000 messages each, and drops the rest: that loss is not durability's);"
    echo "RSS: the broker's peak resident memory; CPU: the broker's CPU seconds over the run."
    echo
    awk -F'\t' -v scenarios="$(echo $SCENARIOS)" -v brokers="$BROKERS" '
        function fmt(v,   s) {
            if (v == "") return "–"
            if (v < 10 && v != int(v)) return sprintf("%.1f", v)
            v = sprintf("%.0f", v); s = ""
            while (length(v) > 3) { s = "," substr(v, length(v) - 2) s; v = substr(v, 1, length(v) - 3) }
            return v s
        }
        { k = $1 SUBSEP $2; have[k] = 1; rate[k] = $3; pub[k] = $4; p50[k] = $5; p99[k] = $6; lost[k] = $7
          expected[k] = $8; rss[k] = $9; cpu[k] = $10; note[k] = $11 }
        END {
            print "| scenario | broker | deliveries/s | ÷ memory | published/s | p50 µs | p99 µs | loss | peak RSS MB | CPU s | notes |"
            print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
            ns = split(scenarios, slist, " "); nb = split(brokers, blist, ",")
            for (i = 1; i <= ns; i++) {
                s = slist[i]; base = s SUBSEP "ringmq-memory"
                for (j = 1; j <= nb; j++) {
                    b = blist[j]; k = s SUBSEP b
                    if (!(k in have)) { print "| " s " | " b " | failed | – | – | – | – | – | – | – | see the log |"; continue }
                    ratio = ((base in have) && rate[base] > 0) ? sprintf("%.2f×", rate[k] / rate[base]) : "–"
                    loss = expected[k] > 0 ? sprintf("%.2f %%", 100 * lost[k] / expected[k]) : "0 %"
                    notes = (lost[k] > 0 ? "**LOSS** " fmt(lost[k]) " of " fmt(expected[k]) (note[k] == "" ? "" : "; ") : "") note[k]
                    print "| " s " | " b " | " fmt(rate[k]) " | " ratio " | " fmt(pub[k]) " | " fmt(p50[k]) " | " fmt(p99[k]) " | " loss \
                        " | " fmt(rss[k]) " | " fmt(cpu[k]) " | " notes " |"
                }
            }
        }' "$OUT/persistence-runs.tsv"
} >"$OUT/persistence.md"

echo
cat "$OUT/persistence.md"
echo
echo "table: $OUT/persistence.md; runs: $OUT/persistence-runs.tsv; report: ${REPORT:-none}; total $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"
expected_runs=$(( $(echo "$SCENARIOS" | wc -w) * $(echo "$BROKERS" | tr ',' '\n' | grep -c .) ))
got_runs=$(wc -l <"$OUT/persistence-runs.tsv")
if ((got_runs < expected_runs)); then
    echo "persistence.sh: only $got_runs of $expected_runs runs produced a summary (see $OUT/persistence-matrix.log)" >&2
    exit 1
fi
