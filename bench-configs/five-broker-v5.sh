#!/usr/bin/env bash
# The five-broker comparison (REFERENCE.md section 2), scaled to this machine, on MQTT 5.0: ringmq and Mosquitto
# side by side (and FlashMQ, when it is installed), one scenario at a time, each broker started fresh for every
# scenario, all driven by one load generator on 127.0.0.1. Ends with a table ringmq ÷ Mosquitto (and ringmq ÷
# FlashMQ) per scenario: throughput, p99 latency, loss.
#
#   bench-configs/five-broker-v5.sh [--out DIR] [--duration D] [--warmup D] [--only a,b] [--brokers ringmq,mosquitto[,flashmq]]
#                                   [--matrix FILE] [--ringmq-jar JAR] [--loadtest JAR] [--memory-limit SIZE]
#
# Every scenario of the matrix (default five-broker-scaled.json) runs with -protocol 5 added; --duration also drops
# persistent-sessions' -offline (then half the duration). ringmq starts from
# its jar through bin/ringmq (--memory-limit, default 1g); Mosquitto from a minimal configuration in a temporary
# folder (listener on 127.0.0.1, anonymous, set_tcp_nodelay, max_queued_messages 100000 so QoS 1 is queued, not
# dropped), with `persistence true` for the persistent-sessions scenario. FlashMQ (FLASHMQ_BIN, else `flashmq` on
# the PATH; bench-configs/build-flashmq.sh builds it) is in the default --brokers when found, and left out with a
# warning when --brokers names it but it is not found; the matrix runner configures it as Mosquitto (127.0.0.1,
# anonymous, tcp_nodelay; max_qos_msg_pending_per_client 65535, its maximum; a storage_dir for persistent-sessions).
# Build first:
#   mvn -B -ntp package -DskipTests
# Results: DIR (default bench-results/five-broker-v5-DATE) holds the matrix runner's dated folder (report.md,
# report.html, every run's summary.json, histograms and plots), matrix.json, matrix.log, runs.tsv and
# five-broker-v5.md (the ratio table). About 6 minutes at the scaled matrix's durations; bounded at 10.
# Only the generator and the brokers it started (its child processes) are stopped, by pid, on a timeout or Ctrl-C.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "five-broker-v5.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

OUT=""
DURATION=""
WARMUP=""
ONLY=""
BROKERS=""
MATRIX="$REPO/bench-configs/five-broker-scaled.json"
RINGMQ_JAR_PATH="$REPO/transport/target/ringmq.jar"
LOADTEST="$REPO/loadtest/target/loadtest.jar"
MEMORY_LIMIT=1g
BOUND_S=600
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
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
JAVA=$(command -v "${JAVA:-java}") || die "java not found"
# FlashMQ, an optional peer: in the default brokers when found, dropped (with a warning) when named but not found
FLASHMQ=${FLASHMQ_BIN:-$(command -v flashmq || true)}
[[ -n $FLASHMQ && -f $FLASHMQ && -x $FLASHMQ ]] || FLASHMQ=""
if [[ -z $BROKERS ]]; then
    BROKERS="ringmq,mosquitto${FLASHMQ:+,flashmq}"
    [[ -z ${FLASHMQ_BIN:-} || -n $FLASHMQ ]] ||
        echo "five-broker-v5.sh: warning: FLASHMQ_BIN=$FLASHMQ_BIN is not an executable file: FlashMQ left out" >&2
elif [[ ,$BROKERS, == *,flashmq,* && -z $FLASHMQ ]]; then
    echo "five-broker-v5.sh: warning: flashmq not found (${FLASHMQ_BIN:+FLASHMQ_BIN=$FLASHMQ_BIN is not an executable file; }set FLASHMQ_BIN or put flashmq on the PATH; bench-configs/build-flashmq.sh builds it): leaving it out" >&2
    BROKERS=$(echo ",$BROKERS," | sed 's/,flashmq,/,/g; s/^,//; s/,$//')
    [[ -n $BROKERS ]] || die "no broker left to run"
fi
[[ -z $FLASHMQ ]] || export FLASHMQ_BIN=$FLASHMQ   # the matrix runner starts this one
[[ ,$BROKERS, == *,ringmq,* && ! -f $RINGMQ_JAR_PATH ]] && die "no ringmq jar at $RINGMQ_JAR_PATH (mvn -B -ntp package -DskipTests)"
MOSQUITTO=""
if [[ ,$BROKERS, == *,mosquitto,* ]]; then
    MOSQUITTO=$(command -v mosquitto || ls /usr/sbin/mosquitto 2>/dev/null) || die "mosquitto is not installed (apt-get install -y mosquitto)"
fi

OUT=${OUT:-$REPO/bench-results/five-broker-v5-$(date +%Y-%m-%d_%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d /tmp/ringmq-five-broker-v5.XXXXXX)
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

# Mosquitto from a configuration of its own in a fresh folder: `mosquitto.sh PORT [persistent]`. It execs, so the
# matrix runner's pid (CPU and RSS sampling, SIGTERM) is Mosquitto's own.
cat >"$TMP/mosquitto.sh" <<EOF
#!/usr/bin/env bash
set -eu
dir=\$(mktemp -d "$TMP/mosquitto.XXXXXX")
{
    echo "listener \$1 127.0.0.1"
    echo "allow_anonymous true"
    echo "set_tcp_nodelay true"
    echo "max_queued_messages 100000"
    if [[ \${2:-} == persistent ]]; then
        echo "persistence true"
        echo "persistence_location \$dir/"
    fi
} >"\$dir/mosquitto.conf"
cat "\$dir/mosquitto.conf"
exec "$MOSQUITTO" -c "\$dir/mosquitto.conf"
EOF
chmod +x "$TMP/mosquitto.sh"
# the matrix runner splits a broker command on whitespace: paths without any
mkdir -p "$TMP/jars"
cp "$LOADTEST" "$TMP/jars/loadtest.jar"
if [[ ,$BROKERS, == *,ringmq,* ]]; then
    cp "$RINGMQ_JAR_PATH" "$TMP/jars/ringmq.jar"
    export RINGMQ_JAR="$TMP/jars/ringmq.jar"   # bin/ringmq starts this jar
fi
[[ $REPO != *[[:space:]]* ]] || die "bin/ringmq's path has a space: $REPO"

jq --arg brokers "$BROKERS" --arg only "$ONLY" --arg dur "$DURATION" --arg warm "$WARMUP" \
    --arg ringmq "$REPO/bin/ringmq --memory-limit $MEMORY_LIMIT --bind 127.0.0.1 --port {port} --data-dir {dir}/ringmq-data" \
    --arg mosq "$TMP/mosquitto.sh {port}" '
    .name = "five-broker-v5"
    | .description = "five-broker-scaled on MQTT 5.0: ringmq, Mosquitto (and FlashMQ when installed), each fresh per scenario (five-broker-v5.sh)"
    | .brokers = ($brokers | split(","))
    | .commands = { "ringmq": $ringmq, "mosquitto": $mosq }
    | .flashmqConfig = "max_qos_msg_pending_per_client 65535"
    | .scenarios |= map(select($only == "" or (.name as $n | $only | split(",") | index($n))))
    | .scenarios |= map(.args |= (if test("-protocol ") then sub("-protocol [^ ]+"; "-protocol 5") else . + " -protocol 5" end))
    | .scenarios |= map(if .name == "persistent-sessions" then .commands = { "mosquitto": ($mosq + " persistent") } | .persistence = true else . end)
    | if $dur != "" then .scenarios |= map(.args |= (sub("-duration [^ ]+"; "-duration " + $dur)
        | sub(" -offline [^ ]+"; ""))) else . end
    | if $warm != "" then .warmup = (if ($warm | test("^0[a-z]*$")) then "" else $warm end) else . end' \
    "$MATRIX" >"$OUT/matrix.json"
SCENARIOS=$(jq -r '.scenarios[].name' "$OUT/matrix.json")
[[ -n $SCENARIOS ]] || die "no scenario of $MATRIX matches --only '$ONLY'"

warn_if_busy
T0=$SECONDS
echo "five-broker-v5: $(echo $SCENARIOS | wc -w) scenario(s) x brokers $BROKERS, MQTT 5.0, bounded at $BOUND_S s; results in $OUT"
run_matrix "$JAVA" "$TMP/jars/loadtest.jar" "$OUT/matrix.json" "$OUT" "$OUT/matrix.log" \
    '^(== |  published|  latency|  problems|   failed|  [0-9,]+ connections)' "$BOUND_S" five-broker-v5

# one line per run: scenario broker mode throughput p99_us lost expected problems
: >"$OUT/runs.tsv"
if [[ -n $REPORT ]]; then
    while IFS= read -r f; do
        broker=$(basename "$(dirname "$f")")
        scenario=$(basename "$(dirname "$(dirname "$f")")")
        jq -r --arg s "$scenario" --arg b "$broker" '
            if has("levels") then
                [$s, $b, .mode, .levels[0].connects_per_s, .levels[0].connect_p99_ms * 1000,
                 .levels[0].target - .levels[0].established, .levels[0].target, ""]
            else
                [$s, $b, .mode, .rate_per_s, .latency_p99_us, .lost, .expected,
                 ([if .connections_lost > 0 then "\(.connections_lost) connections lost" else empty end,
                   if .failed > 0 then "\(.failed) clients never ready" else empty end,
                   if .broker_disconnects > 0 then "\(.broker_disconnects) DISCONNECTs" else empty end,
                   if .rejected > 0 then "\(.rejected) refused" else empty end] | join(", "))]
            end | @tsv' "$f" >>"$OUT/runs.tsv"
    done < <(find "$REPORT" -name summary.json | sort)
fi

{
    echo "# five-broker comparison on MQTT 5.0, scaled: ringmq ÷ Mosquitto$( [[ ,$BROKERS, == *,flashmq,* ]] && echo ", ringmq ÷ FlashMQ")"
    echo
    echo "$(date '+%Y-%m-%d %H:%M'); $(nproc) cores; $("$JAVA" -version 2>&1 | head -1); $( [[ -n $MOSQUITTO ]] && "$MOSQUITTO" -h 2>/dev/null | head -1 | sed 's/ is an MQTT.*//');$( [[ ,$BROKERS, == *,flashmq,* ]] && echo " $("$FLASHMQ" --version 2>/dev/null | head -1);")"
    echo "generator and brokers on 127.0.0.1, one broker at a time, each fresh per scenario; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Matrix $(basename "$MATRIX") with -protocol 5${DURATION:+, -duration $DURATION}${WARMUP:+, warm-up $WARMUP}; ringmq via bin/ringmq --memory-limit $MEMORY_LIMIT."
    echo "Full report (dup, reordering, p50/p99.9, CPU, RSS, plots): ${REPORT:+${REPORT#"$OUT"/}/}report.md and report.html."
    echo
    echo "Throughput: deliveries/s (connections: connects/s); p99: delivery latency (connections: connect time);"
    echo "loss: messages not delivered of those expected (connections: not established). For throughput higher is"
    echo "better, for p99 and loss lower. QoS 1 should lose nothing: a loss is marked **LOSS**."
    echo
    awk -F'\t' -v scenarios="$(echo $SCENARIOS)" -v brokers="$BROKERS" '
        function fmt(v,   s) {
            if (v == "") return "–"
            if (v < 10 && v != int(v)) return sprintf("%.1f", v)
            v = sprintf("%.0f", v); s = ""
            while (length(v) > 3) { s = "," substr(v, length(v) - 2) s; v = substr(v, 1, length(v) - 3) }
            return v s
        }
        function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f×", a / b) }
        function loss(k) { return expected[k] > 0 ? sprintf("%.2f %%", 100 * lost[k] / expected[k]) : "0 %" }
        function cell(have, b, v) { return have ? v : (("," brokers ",") ~ ("," b ",") ? "failed" : "not run") }
        {
            k = $1 SUBSEP $2; rate[k] = $4 + 0; p99[k] = $5 + 0; lost[k] = $6 + 0; expected[k] = $7 + 0; note[k] = $8
        }
        END {
            fl = (("," brokers ",") ~ /,flashmq,/) # FlashMQ columns (ringmq ÷ FlashMQ) only when it is run
            print "| scenario | throughput ringmq | Mosquitto | ÷ |" (fl ? " FlashMQ | ÷ |" : "") \
                " p99 µs ringmq | Mosquitto | ÷ |" (fl ? " FlashMQ | ÷ |" : "") \
                " loss ringmq | Mosquitto |" (fl ? " FlashMQ |" : "") " notes |"
            print "|---|---:|---:|---:|" (fl ? "---:|---:|" : "") "---:|---:|---:|" (fl ? "---:|---:|" : "") \
                "---:|---:|" (fl ? "---:|" : "") "---|"
            n = split(scenarios, list, " ")
            for (i = 1; i <= n; i++) {
                s = list[i]; r = s SUBSEP "ringmq"; m = s SUBSEP "mosquitto"; f = s SUBSEP "flashmq"
                hr = (r in rate); hm = (m in rate); hf = (f in rate) # before any read of rate[r], which would create it
                notes = ""
                if ((r in lost) && lost[r] > 0) notes = notes "**LOSS** ringmq; "
                if ((m in lost) && lost[m] > 0) notes = notes "**LOSS** mosquitto; "
                if ((f in lost) && lost[f] > 0) notes = notes "**LOSS** flashmq; "
                if (note[r] != "") notes = notes "ringmq: " note[r] "; "
                if (note[m] != "") notes = notes "mosquitto: " note[m] "; "
                if (note[f] != "") notes = notes "flashmq: " note[f] "; "
                sub(/; $/, "", notes)
                row = "| " s " | " cell(hr, "ringmq", fmt(rate[r])) " | " cell(hm, "mosquitto", fmt(rate[m])) \
                    " | " (hr && hm ? ratio(rate[r], rate[m]) : "–")
                if (fl) row = row " | " cell(hf, "flashmq", fmt(rate[f])) " | " (hr && hf ? ratio(rate[r], rate[f]) : "–")
                row = row " | " cell(hr, "ringmq", fmt(p99[r])) " | " cell(hm, "mosquitto", fmt(p99[m])) \
                    " | " (hr && hm ? ratio(p99[r], p99[m]) : "–")
                if (fl) row = row " | " cell(hf, "flashmq", fmt(p99[f])) " | " (hr && hf ? ratio(p99[r], p99[f]) : "–")
                row = row " | " (hr ? loss(r) : "–") " | " (hm ? loss(m) : "–")
                if (fl) row = row " | " (hf ? loss(f) : "–")
                print row " | " notes " |"
            }
        }' "$OUT/runs.tsv"
} >"$OUT/five-broker-v5.md"

echo
cat "$OUT/five-broker-v5.md"
echo
echo "table: $OUT/five-broker-v5.md; runs: $OUT/runs.tsv; report: ${REPORT:-none}; total $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"
expected_runs=$(( $(echo "$SCENARIOS" | wc -w) * $(echo "$BROKERS" | tr ',' '\n' | grep -c .) ))
got_runs=$(wc -l <"$OUT/runs.tsv")
if ((got_runs < expected_runs)); then
    echo "five-broker-v5.sh: only $got_runs of $expected_runs runs produced a summary (see $OUT/matrix.log)" >&2
    exit 1
fi
if awk -F'\t' '$6 > 0 { found = 1 } END { exit !found }' "$OUT/runs.tsv"; then
    echo "five-broker-v5.sh: a run lost messages or connections (see the table)" >&2
    exit 1
fi
