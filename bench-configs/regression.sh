#!/usr/bin/env bash
# Regression check: two ringmq builds (BASE and HEAD) and Mosquitto, measured in one run by one load generator,
# alternating broker by broker within each scenario of bench-configs/regression-scaled.json, repeated --rounds
# times; ends with one Markdown table (median of the rounds, min-max, ratios to Mosquitto and head to base).
# FlashMQ joins as a fourth broker when it is installed (FLASHMQ_BIN, else `flashmq` on the PATH;
# bench-configs/build-flashmq.sh builds it), with its own column and head ÷ FlashMQ.
#
#   bench-configs/regression.sh [options] [BASE [HEAD]]
#
# BASE and HEAD are git revisions of this repository (built in a temporary git worktree with
# `mvn -B -ntp -q package -DskipTests`, the jars cached by commit under bench-results/regression-builds/),
# a ringmq jar path, or a directory holding a checkout (built in place, uncommitted changes included).
# BASE defaults to c3edc00 (main before the pipeline refactoring), HEAD to this checkout's HEAD commit.
# HEAD's loadtest.jar drives all three brokers (or --loadtest JAR, needed when both sides are jars).
#
# Options:
#   --rounds N        repeat the whole matrix N times, broker order reversed every other round (default 2)
#   --duration D      override every scenario's -duration (default: the matrix's, 10s)
#   --warmup D        override the matrix's warm-up run per broker and scenario (default: the matrix's, 5s; 0: none)
#   --only A,B        only these scenarios (names in the matrix)
#   --matrix FILE     another matrix (default: bench-configs/regression-scaled.json)
#   --loadtest JAR    the generator (default: HEAD's build)
#   --out DIR         where rounds and the table go (default: bench-results/regression-<date>)
#   --no-cache        rebuild git revisions even if their jars are cached
#   --no-install      do not apt-get install mosquitto/jq when missing: fail instead
#   --flashmq         require FlashMQ (fail when it is not found); default: include it only when found
#   --no-flashmq      leave FlashMQ out even when it is installed
#
# Everything runs on 127.0.0.1; each round is bounded in time; only processes this script started are stopped,
# by pid (the generator and the brokers it started, found as its child processes).
set -euo pipefail

die() { echo "regression.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel)
BASE_SPEC=c3edc00
HEAD_SPEC=HEAD
ROUNDS=2
DURATION=""
WARMUP=""
ONLY=""
MATRIX="$SCRIPT_DIR/regression-scaled.json"
LOADTEST=""
OUT=""
USE_CACHE=1
INSTALL=1
WITH_FLASHMQ=auto
positional=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --only) ONLY=${2:?}; shift 2 ;;
        --matrix) MATRIX=${2:?}; shift 2 ;;
        --loadtest) LOADTEST=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --no-cache) USE_CACHE=0; shift ;;
        --no-install) INSTALL=0; shift ;;
        --flashmq) WITH_FLASHMQ=yes; shift ;;
        --no-flashmq) WITH_FLASHMQ=no; shift ;;
        -h|--help) usage; exit 0 ;;
        --*) die "unknown option $1 (see --help)" ;;
        *) positional+=("$1"); shift ;;
    esac
done
[[ ${#positional[@]} -le 2 ]] || die "at most two positional arguments: BASE [HEAD]"
[[ ${#positional[@]} -ge 1 ]] && BASE_SPEC=${positional[0]}
[[ ${#positional[@]} -ge 2 ]] && HEAD_SPEC=${positional[1]}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer: '$ROUNDS'"
[[ -f $MATRIX ]] || die "no matrix file $MATRIX"
MATRIX=$(cd "$(dirname "$MATRIX")" && pwd)/$(basename "$MATRIX")

# seconds in a loadtest duration (10s, 500ms, 2m), rounded up
seconds_of() {
    local d=$1
    case "$d" in
        *ms) echo $(( (${d%ms} + 999) / 1000 )) ;;
        *s) echo "${d%s}" ;;
        *m) echo $(( ${d%m} * 60 )) ;;
        *h) echo $(( ${d%h} * 3600 )) ;;
        *) die "cannot read duration '$d' (e.g. 10s, 500ms, 2m)" ;;
    esac
}
[[ -z $DURATION ]] || seconds_of "$DURATION" >/dev/null
[[ -z $WARMUP || $WARMUP == 0* ]] || seconds_of "$WARMUP" >/dev/null

# shellcheck source=process-tree.sh
source "$REPO/bench-configs/process-tree.sh"
need_package jq jq
need_package mosquitto mosquitto
command -v mvn >/dev/null || die "mvn not found"
JAVA=$(command -v "${JAVA:-java}") || die "java not found"
# FlashMQ, an optional fourth broker: the matrix runner starts FLASHMQ_BIN with a configuration of its own
FLASHMQ=""
if [[ $WITH_FLASHMQ != no ]]; then
    FLASHMQ=${FLASHMQ_BIN:-$(command -v flashmq || true)}
    [[ -n $FLASHMQ && -f $FLASHMQ && -x $FLASHMQ ]] || FLASHMQ=""
    [[ -n $FLASHMQ || $WITH_FLASHMQ != yes ]] || die "flashmq not found (${FLASHMQ_BIN:+FLASHMQ_BIN=$FLASHMQ_BIN is not an executable file; }set FLASHMQ_BIN or put flashmq on the PATH; bench-configs/build-flashmq.sh builds it)"
    [[ -z ${FLASHMQ_BIN:-} || -n $FLASHMQ ]] ||
        echo "regression.sh: warning: FLASHMQ_BIN=$FLASHMQ_BIN is not an executable file: FlashMQ left out" >&2
    [[ -z $FLASHMQ ]] || export FLASHMQ_BIN=$FLASHMQ
fi
NBROKERS=$(( 3 + (${#FLASHMQ} > 0) ))

STAMP=$(date +%Y-%m-%d_%H%M%S)
OUT=${OUT:-$REPO/bench-results/regression-$STAMP}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CACHE="$REPO/bench-results/regression-builds"
TMP=$(mktemp -d /tmp/ringmq-regression.XXXXXX)
WORKTREES=()
RUNNING_PID=""

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $RUNNING_PID ]] && kill -0 "$RUNNING_PID" 2>/dev/null; then
        echo "stopping the generator (pid $RUNNING_PID) and the brokers it started" >&2
        kill_tree "$RUNNING_PID"
    fi
    for w in "${WORKTREES[@]+"${WORKTREES[@]}"}"; do
        git -C "$REPO" worktree remove --force "$w" >/dev/null 2>&1 || true
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# build one side: sets SIDE_RINGMQ, SIDE_LOADTEST (may be empty), SIDE_LABEL
build_side() {
    local side=$1 spec=$2 sha dir log
    SIDE_LOADTEST=""
    if [[ -f $spec && $spec == *.jar ]]; then
        SIDE_RINGMQ=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
        SIDE_LABEL="jar $SIDE_RINGMQ"
        return
    fi
    if [[ -d $spec ]]; then
        dir=$(cd "$spec" && pwd)
        log="$OUT/build-$side.log"
        echo "building $side: the checkout at $dir, in place"
        (cd "$dir" && mvn -B -ntp -q package -DskipTests) >"$log" 2>&1 ||
            { tail -30 "$log" >&2; die "build of $dir failed (see $log)"; }
        SIDE_RINGMQ=$dir/transport/target/ringmq.jar
        SIDE_LOADTEST=$dir/loadtest/target/loadtest.jar
        sha=$(git -C "$dir" rev-parse --short HEAD 2>/dev/null || echo "?")
        SIDE_LABEL="working tree $dir at $sha$( [[ -n $(git -C "$dir" status --porcelain -uno 2>/dev/null) ]] && echo ' + uncommitted changes')"
        return
    fi
    sha=$(git -C "$REPO" rev-parse --verify --quiet "$spec^{commit}") ||
        die "$side '$spec' is neither a jar, a directory nor a git revision"
    SIDE_LABEL="$(git -C "$REPO" log -1 --format='%h %ad %s' --date=short "$sha" | cut -c1-90)"
    [[ $sha == "$spec"* ]] || SIDE_LABEL="$spec: $SIDE_LABEL"
    if [[ $USE_CACHE == 1 && -f $CACHE/$sha/ringmq.jar && -f $CACHE/$sha/loadtest.jar ]]; then
        echo "$side: $spec ($sha) from the cache $CACHE/$sha"
    else
        dir="$TMP/src-$side-${sha:0:12}"
        log="$OUT/build-$side.log"
        echo "building $side: $spec ($sha) in a temporary worktree"
        git -C "$REPO" worktree add --detach "$dir" "$sha" >"$log" 2>&1 || { cat "$log" >&2; die "git worktree add failed"; }
        WORKTREES+=("$dir")
        (cd "$dir" && mvn -B -ntp -q package -DskipTests) >>"$log" 2>&1 ||
            { tail -30 "$log" >&2; die "build of $spec failed (see $log)"; }
        mkdir -p "$CACHE/$sha"
        cp "$dir/transport/target/ringmq.jar" "$CACHE/$sha/ringmq.jar"
        cp "$dir/loadtest/target/loadtest.jar" "$CACHE/$sha/loadtest.jar"
        git -C "$REPO" worktree remove --force "$dir" >/dev/null 2>&1 || true
    fi
    SIDE_RINGMQ=$CACHE/$sha/ringmq.jar
    SIDE_LOADTEST=$CACHE/$sha/loadtest.jar
}

T0=$SECONDS
build_side base "$BASE_SPEC"; BASE_JAR=$SIDE_RINGMQ; BASE_LT=$SIDE_LOADTEST; BASE_LABEL=$SIDE_LABEL
build_side head "$HEAD_SPEC"; HEAD_JAR=$SIDE_RINGMQ; HEAD_LT=$SIDE_LOADTEST; HEAD_LABEL=$SIDE_LABEL
if [[ $HEAD_SPEC == HEAD && -n $(git -C "$REPO" status --porcelain -uno) ]]; then
    echo "note: $REPO has uncommitted changes, not measured (HEAD is the last commit); pass '.' as HEAD to build them" >&2
fi
LOADTEST=${LOADTEST:-${HEAD_LT:-$BASE_LT}}
[[ -n $LOADTEST ]] || die "both sides are jars: name the generator with --loadtest JAR"
[[ -f $LOADTEST ]] || die "no loadtest jar at $LOADTEST"
[[ -f $BASE_JAR ]] || die "no ringmq jar at $BASE_JAR"
[[ -f $HEAD_JAR ]] || die "no ringmq jar at $HEAD_JAR"
echo "builds ready in $((SECONDS - T0)) s"

# the matrix runner splits a broker command on whitespace: give it paths without any
mkdir -p "$TMP/jars"
cp "$BASE_JAR" "$TMP/jars/ringmq-base.jar"
cp "$HEAD_JAR" "$TMP/jars/ringmq-head.jar"
cp "$LOADTEST" "$TMP/jars/loadtest.jar"
# name the jars measured by checksum (the jars themselves stay out of reports: they are build outputs)
(cd "$TMP/jars" && sha256sum ./*.jar) >"$OUT/jars.sha256"

MATRIX_WARMUP=$(jq -r '.warmup // ""' "$MATRIX")
SCENARIOS=$(jq -r --arg only "$ONLY" '.scenarios[] | select($only == "" or (.name as $n | $only | split(",") | index($n))) | .name' "$MATRIX")
[[ -n $SCENARIOS ]] || die "no scenario of $MATRIX matches --only '$ONLY'"
# time bound per round: per run, warm-up + duration + 60 s (start up to 30 s, drain, stop up to 20 s)
round_bound=0
round_estimate=0
for s in $SCENARIOS; do
    d=$(jq -r --arg s "$s" '.scenarios[] | select(.name == $s) | .args' "$MATRIX" | sed -n 's/.*-duration \([^ ]*\).*/\1/p')
    d=${DURATION:-${d:-10s}}
    w=${WARMUP:-$MATRIX_WARMUP}
    ws=0; [[ -z $w || $w == 0* ]] || ws=$(seconds_of "$w")
    round_bound=$((round_bound + NBROKERS * (ws + $(seconds_of "$d") + 60)))
    round_estimate=$((round_estimate + NBROKERS * (ws + $(seconds_of "$d") + 4)))
done

LOADTEST_DESC="$( [[ $LOADTEST == "$HEAD_LT" ]] && echo "head's loadtest.jar" || echo "$LOADTEST")"

load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.7) }'; then
    echo "warning: load average $load before the run: the machine is not quiet, figures will be noisy" >&2
fi
echo "running $ROUNDS round(s) of $(echo "$SCENARIOS" | wc -w) scenario(s) x $NBROKERS brokers, about $((ROUNDS * round_estimate / 60)) min $((ROUNDS * round_estimate % 60)) s (bounded at $((round_bound / 60)) min per round)"

for ((r = 1; r <= ROUNDS; r++)); do
    # alternate the order so that neither ringmq build always runs right after the other
    if ((r % 2 == 1)); then order='["ringmq-base","ringmq-head","mosquitto"]'; else order='["mosquitto","ringmq-head","ringmq-base"]'; fi
    if [[ -n $FLASHMQ ]]; then
        if ((r % 2 == 1)); then order=${order%]}',"flashmq"]'; else order='["flashmq",'${order#[}; fi
    fi
    rdir="$OUT/round-$r"
    mkdir -p "$rdir"
    jq --argjson order "$order" --arg java "$JAVA" --arg jars "$TMP/jars" --arg dur "$DURATION" --arg warm "$WARMUP" \
        --arg only "$ONLY" '
        .brokers = $order
        | .commands = {
            "ringmq-base": ($java + " -jar " + $jars + "/ringmq-base.jar --bind 127.0.0.1 --port {port} --data-dir {dir}/ringmq-data"),
            "ringmq-head": ($java + " -jar " + $jars + "/ringmq-head.jar --bind 127.0.0.1 --port {port} --data-dir {dir}/ringmq-data") }
        | .scenarios |= map(select($only == "" or (.name as $n | $only | split(",") | index($n))))
        | if $dur != "" then .scenarios |= map(.args |= sub("-duration [^ ]+"; "-duration " + $dur)) else . end
        | if $warm != "" then .warmup = (if ($warm | test("^0[a-z]*$")) then "" else $warm end) else . end' "$MATRIX" >"$rdir/matrix.json"
    echo "round $r of $ROUNDS: $(jq -r '.brokers | join(", ")' "$rdir/matrix.json")"
    "$JAVA" -jar "$TMP/jars/loadtest.jar" matrix "$rdir/matrix.json" --out "$rdir" \
        > >(tee "$rdir/matrix.log" | grep --line-buffered -E '^(== |  published|  latency|   failed)') 2>&1 &
    RUNNING_PID=$!
    if wait_bounded "$RUNNING_PID" "$round_bound" "round $r"; then rc=0; else rc=$?; fi
    RUNNING_PID=""
    [[ $rc == 0 ]] || echo "round $r: the matrix runner exited with $rc (see $rdir/matrix.log)" >&2
done

# one line per run: round scenario broker mode rate p50 p99 lost expected
: >"$OUT/runs.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
    while IFS= read -r f; do
        broker=$(basename "$(dirname "$f")")
        scenario=$(basename "$(dirname "$(dirname "$f")")")
        jq -r --arg r "$r" --arg s "$scenario" --arg b "$broker" \
            '[$r, $s, $b, .mode, .rate_per_s, .latency_p50_us, .latency_p99_us, .lost, .expected] | @tsv' "$f" \
            >>"$OUT/runs.tsv"
    done < <(find "$OUT/round-$r" -name summary.json | sort)
done

{
    echo "# ringmq regression check"
    echo
    echo "$(date '+%Y-%m-%d %H:%M'); $(nproc) cores; $("$JAVA" -version 2>&1 | head -1); $(mosquitto -h 2>/dev/null | head -1 | sed 's/ is an MQTT.*//');${FLASHMQ:+ $("$FLASHMQ" --version 2>/dev/null | head -1);}"
    echo "generator and brokers on 127.0.0.1; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "- base ringmq: $BASE_LABEL"
    echo "- head ringmq: $HEAD_LABEL"
    echo "- generator: $LOADTEST_DESC; matrix $(basename "$MATRIX"), $ROUNDS round(s), broker order reversed every other round${DURATION:+, -duration $DURATION}${WARMUP:+, warm-up $WARMUP}"
    echo
    echo "Each cell: median of the rounds (min–max). Ratios of medians: for rates higher is better, for latency"
    echo "and loss lower is better. Per-round reports (loss, p99.9, CPU, RSS, plots): round-N/*/report.md."
    echo
    awk -F'\t' -v scenarios="$(echo $SCENARIOS)" -v rounds="$ROUNDS" -v fl="${FLASHMQ:+1}" '
        function fmt(v,   s) { # thousands separators, no decimals (one decimal below 10)
            if (v == "") return "–"
            if (v < 10 && v != int(v)) return sprintf("%.1f", v)
            v = sprintf("%.0f", v); s = ""
            while (length(v) > 3) { s = "," substr(v, length(v) - 2) s; v = substr(v, 1, length(v) - 3) }
            return v s
        }
        function median(key,   n, i, j, t, a) {
            n = count[key]; if (n == 0) return ""
            for (i = 1; i <= n; i++) a[i] = val[key, i]
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            lo[key] = a[1]; hi[key] = a[n]
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function cell(key,   m) {
            m = median(key)
            if (m == "") return "failed"
            return count[key] > 1 ? fmt(m) " (" fmt(lo[key]) "–" fmt(hi[key]) ")" : fmt(m)
        }
        function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f×", a / b) }
        function add(key, v) { count[key]++; val[key, count[key]] = v }
        {
            mode[$2] = $4
            add($2 SUBSEP $3 SUBSEP "rate", $5 + 0)
            if ($4 != "pub") {
                add($2 SUBSEP $3 SUBSEP "p50", $6 + 0); add($2 SUBSEP $3 SUBSEP "p99", $7 + 0)
                add($2 SUBSEP $3 SUBSEP "lost", ($9 > 0 ? 100 * $8 / $9 : 0)); if ($8 > 0) lossy[$2] = 1
            }
        }
        END {
            # FlashMQ, when it ran, in two columns at the end: its figure and head ÷ flashmq
            print "| scenario | figure | ringmq base | ringmq head | mosquitto | base ÷ mosquitto | head ÷ mosquitto | head ÷ base |" \
                (fl ? " flashmq | head ÷ flashmq |" : "")
            print "|---|---|---:|---:|---:|---:|---:|---:|" (fl ? "---:|---:|" : "")
            n = split(scenarios, list, " ")
            for (i = 1; i <= n; i++) {
                s = list[i]
                if (!(s in mode)) { print "| " s " | (no run completed) | failed | failed | failed | – | – | – |" (fl ? " failed | – |" : ""); continue }
                nf = split(mode[s] == "pub" ? "rate" : "rate p50 p99" (s in lossy ? " lost" : ""), figs, " ")
                for (f = 1; f <= nf; f++) {
                    fig = figs[f]
                    label = fig == "rate" ? (mode[s] == "pub" ? "msg/s" : "deliveries/s") : fig == "lost" ? "lost %" : fig " µs"
                    cb = cell(s SUBSEP "ringmq-base" SUBSEP fig); ch = cell(s SUBSEP "ringmq-head" SUBSEP fig)
                    cm = cell(s SUBSEP "mosquitto" SUBSEP fig)
                    b = median(s SUBSEP "ringmq-base" SUBSEP fig); h = median(s SUBSEP "ringmq-head" SUBSEP fig)
                    m = median(s SUBSEP "mosquitto" SUBSEP fig)
                    if (fig == "lost") { rb = "–"; rh = "–"; hb = "–" } else { rb = ratio(b, m); rh = ratio(h, m); hb = ratio(h, b) }
                    extra = ""
                    if (fl) {
                        x = median(s SUBSEP "flashmq" SUBSEP fig)
                        extra = " " cell(s SUBSEP "flashmq" SUBSEP fig) " | " (fig == "lost" ? "–" : ratio(h, x)) " |"
                    }
                    print "| " (f == 1 ? s : "") " | " label " | " cb " | " ch " | " cm " | " rb " | " rh " | " hb " |" extra
                }
            }
        }' "$OUT/runs.tsv"
} >"$OUT/regression.md"

echo
cat "$OUT/regression.md"
echo
echo "table: $OUT/regression.md; runs: $OUT/runs.tsv; total $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"
expected_runs=$((ROUNDS * $(echo "$SCENARIOS" | wc -w) * NBROKERS))
got_runs=$(wc -l <"$OUT/runs.tsv")
if ((got_runs < expected_runs)); then
    echo "regression.sh: only $got_runs of $expected_runs runs produced a summary (see round-N/matrix.log)" >&2
    exit 1
fi
