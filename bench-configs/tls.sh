#!/usr/bin/env bash
# TLS cost, side by side: the fan-out and ingest rows of the regression matrix (scaled to a 2-core machine), plus a
# connection row and a paced latency row, each over TLS and over plain TCP, against Mosquitto's TLS listener and
# ringmq's, driven by one load generator (its TLS is the JDK's SSLEngine). Ends with one Markdown report: TLS ÷ TCP
# ratios first (per broker), then ringmq ÷ Mosquitto over TLS, then every figure.
#
#   bench-configs/tls.sh [options]
#
# Options:
#   --duration D     each run's -duration (default 5s)
#   --warmup D       a warm-up run before each measured one, same broker and generator processes (default 3s; 0: none;
#                    the connection row repeats its level once instead)
#   --only A,B       only these scenarios: conn-300, fanout-100x10, ingest-qos0-10, ingest-qos1-window-10,
#                    pubsub-10x10-100
#   --brokers L      mosquitto,ringmq (default both)
#   --ringmq JAR     ringmq's jar (default transport/target/ringmq.jar, built with mvn package when missing)
#   --loadtest JAR   the generator (default loadtest/target/loadtest.jar, built when missing)
#   --tls-version V  tlsv1.2 or tlsv1.3 for every TLS connection (default: both offered; TLS 1.3 is chosen)
#   --out DIR        where the report goes (default docs/bench/<date>-tls)
#   --no-install     do not apt-get install mosquitto, jq or openssl when missing: fail instead
#   --report-only    run nothing: write report.md again from the runs.tsv already in --out
#
# Certificates are made in a temporary folder with openssl (an EC P-256 CA and a server certificate for 127.0.0.1
# and localhost). Everything runs on 127.0.0.1; every run is bounded in time (the whole script in about 5 minutes at
# the defaults); only processes this script started are stopped, by pid. When ringmq's jar has no TLS listener yet
# (it does not accept --listener PORT,certfile=...,keyfile=..., or no handshake succeeds on it), its TLS rows are
# reported as unavailable and the rest still runs.
set -euo pipefail

die() { echo "tls.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel)
DURATION=5s
WARMUP=3s
ONLY=""
BROKERS=mosquitto,ringmq
RINGMQ=""
LOADTEST=""
TLS_VERSION=""
OUT=""
INSTALL=1
REPORT_ONLY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION=${2:?}; shift 2 ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --only) ONLY=${2:?}; shift 2 ;;
        --brokers) BROKERS=${2:?}; shift 2 ;;
        --ringmq) RINGMQ=${2:?}; shift 2 ;;
        --loadtest) LOADTEST=${2:?}; shift 2 ;;
        --tls-version) TLS_VERSION=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
seconds_of() { # seconds in a loadtest duration (10s, 500ms, 2m), rounded up
    local d=$1
    case "$d" in
        *ms) echo $(( (${d%ms} + 999) / 1000 )) ;;
        *s) [[ ${d%s} =~ ^[0-9]+$ ]] || die "cannot read duration '$d'"; echo "${d%s}" ;;
        *m) echo $(( ${d%m} * 60 )) ;;
        *) die "cannot read duration '$d' (e.g. 5s, 500ms, 1m)" ;;
    esac
}
DURATION_S=$(seconds_of "$DURATION")
WARMUP_S=0; [[ $WARMUP == 0* ]] || WARMUP_S=$(seconds_of "$WARMUP")
[[ -z $TLS_VERSION || $TLS_VERSION == tlsv1.2 || $TLS_VERSION == tlsv1.3 ]] ||
    die "--tls-version must be tlsv1.2 or tlsv1.3"
for b in ${BROKERS//,/ }; do [[ $b == mosquitto || $b == ringmq ]] || die "--brokers: mosquitto and ringmq only, not '$b'"; done

# name|title|loadtest flags (the regression matrix's fan-out and ingest rows; a connection row; a paced row)
SCENARIO_LIST="conn-300|Connections: 300 opened 50 at a time, held 1 s; the connect time includes the TLS handshake.|-mode conn -levels 300 -hold 1s -dial-concurrency 50
fanout-100x10|Fan-out peak: 100 subscribers, 10 publishers, unlimited, QoS 0, 64 B.|-mode pubsub -subs 100 -pubs 10 -qos 0 -payload 64
ingest-qos0-10|Ingest, QoS 0, 64 B, 10 publishers, unlimited (paced on PINGRESP).|-mode pub -pubs 10 -qos 0 -payload 64
ingest-qos1-window-10|Ingest, QoS 1, 64 B, 10 publishers with 32 in flight each.|-mode pub -pubs 10 -qos 1 -inflight 32 -payload 64
pubsub-10x10-100|Normal load: 10 subscribers, 10 publishers, 100 msg/s each, QoS 0, 64 B (latency).|-mode pubsub -subs 10 -pubs 10 -qos 0 -rate 100 -payload 64"
SCENARIOS=()
while IFS= read -r line; do
    name=${line%%|*}
    [[ -z $ONLY || ,$ONLY, == *,$name,* ]] && SCENARIOS+=("$line")
done <<<"$SCENARIO_LIST"
[[ ${#SCENARIOS[@]} -gt 0 ]] || die "no scenario matches --only '$ONLY'"

# shellcheck source=process-tree.sh
source "$SCRIPT_DIR/process-tree.sh"
need_package jq jq
need_package openssl openssl
[[ ,$BROKERS, != *,mosquitto,* ]] || need_package mosquitto mosquitto
JAVA=$(command -v "${JAVA:-java}") || die "java not found"

RINGMQ=${RINGMQ:-$REPO/transport/target/ringmq.jar}
LOADTEST=${LOADTEST:-$REPO/loadtest/target/loadtest.jar}
if [[ ! -f $LOADTEST || ( ,$BROKERS, == *,ringmq,* && ! -f $RINGMQ ) ]]; then
    echo "building the jars (mvn package) ..."
    (cd "$REPO" && timeout 900 mvn -B -ntp -q package -Dmaven.test.skip=true) || die "mvn package failed"
fi
[[ -f $LOADTEST ]] || die "no loadtest jar at $LOADTEST"

STAMP=$(date +%Y-%m-%d)
OUT=${OUT:-$REPO/docs/bench/$STAMP-tls}
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d /tmp/ringmq-tls.XXXXXX)
BROKER_PID=""

stop_broker() {
    if [[ -n $BROKER_PID ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
        kill_tree "$BROKER_PID"
        wait "$BROKER_PID" 2>/dev/null || true
    fi
    BROKER_PID=""
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_broker
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- certificates: a CA and a server certificate for 127.0.0.1 and localhost
PKI=$TMP/pki
mkdir -p "$PKI"
(
    cd "$PKI"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 \
        -subj "/CN=ringmq bench CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr \
        -subj "/CN=127.0.0.1"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
        -extfile server.ext
) >"$TMP/openssl.log" 2>&1 || { cat "$TMP/openssl.log" >&2; die "openssl could not make the certificates"; }

await_port() { # port pid: wait up to 30 s for a listener; fails if the process died
    local i
    for ((i = 0; i < 300; i++)); do
        kill -0 "$2" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# start_broker BROKER TRANSPORT DIR: sets BROKER_PID and PORT; returns 1 when it does not come up
start_broker() {
    local broker=$1 transport=$2 dir=$3
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    if [[ $broker == mosquitto ]]; then
        {
            echo "user root" # as root, Mosquitto would otherwise switch to a user that cannot read the temporary folder
            echo "listener $PORT 127.0.0.1"
            echo "allow_anonymous true"
            echo "set_tcp_nodelay true"
            echo "max_queued_messages 1000"
            if [[ $transport == tls ]]; then
                echo "cafile $PKI/ca.pem"
                echo "certfile $PKI/server.pem"
                echo "keyfile $PKI/server.key"
                [[ -z $TLS_VERSION ]] || echo "tls_version $TLS_VERSION"
            fi
        } >"$dir/mosquitto.conf"
        mosquitto -c "$dir/mosquitto.conf" >"$dir/broker.log" 2>&1 &
    else
        local listener="$PORT@127.0.0.1"
        [[ $transport == tcp ]] || listener="$listener,certfile=$PKI/server.pem,keyfile=$PKI/server.key,cafile=$PKI/ca.pem${TLS_VERSION:+,tls_version=$TLS_VERSION}"
        echo "$JAVA -jar $RINGMQ --persistence memory --listener $listener" >"$dir/command.txt"
        "$JAVA" -jar "$RINGMQ" --persistence memory --listener "$listener" >"$dir/broker.log" 2>&1 &
    fi
    BROKER_PID=$!
    if ! await_port "$PORT" "$BROKER_PID"; then
        stop_broker
        return 1
    fi
}

TLS_FLAGS=(-cafile "$PKI/ca.pem")
[[ -z $TLS_VERSION ]] || TLS_FLAGS+=(-tls-version "$TLS_VERSION")

# loadtest DIR LABEL TRANSPORT ARGS...: one bounded run, its summary in DIR/summary.json
loadtest() {
    local dir=$1 label=$2 transport=$3 bound
    shift 3
    bound=$((2 * WARMUP_S + DURATION_S + 60))
    mkdir -p "$dir"
    local flags=(-addr "127.0.0.1:$PORT" -broker-pid "$BROKER_PID" -label "$label" -quiet -out "$dir" "$@")
    [[ $transport == tcp ]] || flags+=("${TLS_FLAGS[@]}")
    timeout -k 10 "$bound" "$JAVA" -jar "$LOADTEST" "${flags[@]}" >"$dir/output.txt" 2>&1
}

load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.7) }'; then
    echo "warning: load average $load before the run: the machine is not quiet, figures will be noisy" >&2
fi
T0=$SECONDS
UNAVAILABLE=()
[[ -n $REPORT_ONLY ]] || : >"$OUT/runs.tsv"
for broker in ${BROKERS//,/ }; do
    [[ -z $REPORT_ONLY ]] || break # the runs are there already
    for transport in tcp tls; do
        bdir="$OUT/runs/$broker-$transport"
        mkdir -p "$bdir"
        echo "== $broker over $transport"
        if ! start_broker "$broker" "$transport" "$bdir"; then
            echo "   $broker did not start with a $transport listener: $(head -c 300 "$bdir/broker.log" | tr '\n' ' ')" >&2
            UNAVAILABLE+=("$broker over $transport: did not start ($(head -c 200 "$bdir/broker.log" | tr '\n' ' '))")
            continue
        fi
        if [[ $transport == tls ]]; then # a listener that takes the option but serves no TLS yet
            if ! loadtest "$bdir/probe" probe tls -mode conn -levels 1 -hold 100ms ||
                [[ $(jq -r '.levels[0].established' "$bdir/probe/summary.json" 2>/dev/null) != 1 ]]; then
                echo "   no TLS handshake succeeded on $broker's listener: its TLS rows are left out" >&2
                UNAVAILABLE+=("$broker over tls: the listener started but no TLS handshake succeeded ($(grep -m1 -o 'problems: .*' "$bdir/probe/output.txt" || echo 'see its output.txt'))")
                stop_broker
                continue
            fi
        fi
        for line in "${SCENARIOS[@]}"; do
            IFS='|' read -r name title args <<<"$line"
            # shellcheck disable=SC2206
            argv=($args)
            # the warm-up runs in the generator's own process first: its JIT (the JDK's TLS included) and the broker
            # are warm when the measured run starts
            dur=(); [[ ${argv[1]} == conn ]] || dur=(-duration "$DURATION")
            [[ $WARMUP_S == 0 ]] || dur+=(-warmup "$WARMUP")
            if loadtest "$bdir/$name" "$broker-$transport" "$transport" "${argv[@]}" "${dur[@]}"; then
                s="$bdir/$name/summary.json"
                if [[ ${argv[1]} == conn ]]; then
                    jq -r --arg s "$name" --arg b "$broker" --arg t "$transport" \
                        '[$s, $b, $t, .levels[0].connects_per_s, .levels[0].connect_p50_ms * 1000, .levels[0].connect_p99_ms * 1000, .levels[0].failed, .levels[0].broker_peak_rss_mb, -1, -1] | @tsv' "$s" >>"$OUT/runs.tsv"
                else
                    jq -r --arg s "$name" --arg b "$broker" --arg t "$transport" \
                        '[$s, $b, $t, .rate_per_s, .latency_p50_us, .latency_p99_us, .failed + (if .mode == "pub" then 0 else .lost end), .broker_peak_rss_mb, .broker_cpu_s, .generator_cpu_s] | @tsv' "$s" >>"$OUT/runs.tsv"
                fi
                printf '   %-22s %s\n' "$name" "$(grep -m1 -E '^  (published|[0-9,]+ connections)' "$bdir/$name/output.txt" | sed 's/^ *//' | cut -c1-110)"
            else
                echo "   $name: the generator failed or ran past its bound (see $bdir/$name/output.txt)" >&2
            fi
        done
        stop_broker
    done
done

# --- the report
{
    echo "# TLS cost: ringmq and Mosquitto, TLS and plain TCP"
    echo
    echo "$(date '+%Y-%m-%d %H:%M'); $(nproc) cores; $("$JAVA" -version 2>&1 | head -1); $(mosquitto -h 2>/dev/null | head -1 | sed 's/ is an MQTT.*//'); $(openssl version | cut -d' ' -f1-2)."
    echo "Generator and brokers on 127.0.0.1; load average at the end $(cut -d' ' -f1-3 /proc/loadavg). Made by"
    echo "\`bench-configs/tls.sh\` (-duration $DURATION after a -warmup $WARMUP in the same generator and broker processes)."
    echo
    echo "- TLS: ${TLS_VERSION:-TLS 1.3 (both offered)}, an EC P-256 server certificate from a test CA, verified by the"
    echo "  generator (\`-cafile\`, host name checked); the generator's TLS is the JDK's SSLEngine in its client loops."
    echo "  Mosquitto: \`listener PORT 127.0.0.1\` with cafile/certfile/keyfile, \`set_tcp_nodelay true\`."
    echo "  ringmq: \`--persistence memory --listener PORT@127.0.0.1,certfile=...,keyfile=...,cafile=...\`."
    echo "- ringmq jar: $RINGMQ$(git -C "$(dirname "$RINGMQ")" log -1 --format=' (built from %h %ad)' --date=short 2>/dev/null || true)"
    for u in "${UNAVAILABLE[@]+"${UNAVAILABLE[@]}"}"; do echo "- not measured: $u"; done
    echo
    echo "Rates: deliveries/s (pubsub), messages/s read by the broker (pub), connections/s (conn); latency in µs"
    echo "(conn: the connect time, TCP connect + TLS handshake + CONNECT/CONNACK). One run each, on 2 cores shared"
    echo "with other work: a row moved by up to 40 % between runs while this was written, so read the ratios of large"
    echo "gaps, not the small ones. The generator is one JVM on the same 2 cores: where its CPU"
    echo "seconds approach the run's length it, not the broker, sets the rate. Over TLS the connection row has a"
    echo "ceiling of the generator's own: its JDK TLS 1.3 client handshakes on one thread, about 200-300 a second"
    echo "here (it was what held Mosquitto back, which spent about 0.5 ms of CPU per handshake when this was"
    echo "written); a broker well below that ceiling is the slower side."
    echo
    awk -F'\t' -v scenarios="$(for l in "${SCENARIOS[@]}"; do printf '%s ' "${l%%|*}"; done)" '
        function fmt(v,   s, neg) {
            if (v == "") return "–"
            if (v < 10 && v != int(v)) return sprintf("%.1f", v)
            v = sprintf("%.0f", v); s = ""
            while (length(v) > 3) { s = "," substr(v, length(v) - 2) s; v = substr(v, 1, length(v) - 3) }
            return v s
        }
        function mode_pub(s) { return s ~ /^ingest/ }
        function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f×", a / b) }
        { k = $1 SUBSEP $2 SUBSEP $3; rate[k] = $4; p50[k] = $5; p99[k] = $6; bad[k] = $7; rss[k] = $8; cpu[k] = $9; gen[k] = $10; have[k] = 1 }
        function row_ratios(s, b,   t, c) {
            t = s SUBSEP b SUBSEP "tls"; c = s SUBSEP b SUBSEP "tcp"
            return ratio(rate[t], rate[c]) " | " ratio(p50[t], p50[c]) " | " ratio(p99[t], p99[c])
        }
        END {
            n = split(scenarios, list, " ")
            print "## TLS ÷ TCP, per broker (rate: lower is the cost; latency: higher is the cost)"
            print ""
            print "| scenario | mosquitto rate | mosquitto p50 | mosquitto p99 | ringmq rate | ringmq p50 | ringmq p99 |"
            print "|---|---:|---:|---:|---:|---:|---:|"
            for (i = 1; i <= n; i++) {
                s = list[i]
                print "| " s " | " row_ratios(s, "mosquitto") " | " row_ratios(s, "ringmq") " |"
            }
            print ""
            print "## ringmq ÷ Mosquitto, each over TLS and over TCP"
            print ""
            print "| scenario | rate, TLS | rate, TCP | p99, TLS | p99, TCP |"
            print "|---|---:|---:|---:|---:|"
            for (i = 1; i <= n; i++) {
                s = list[i]
                print "| " s " | " ratio(rate[s, "ringmq", "tls"], rate[s, "mosquitto", "tls"]) " | " \
                    ratio(rate[s, "ringmq", "tcp"], rate[s, "mosquitto", "tcp"]) " | " \
                    ratio(p99[s, "ringmq", "tls"], p99[s, "mosquitto", "tls"]) " | " \
                    ratio(p99[s, "ringmq", "tcp"], p99[s, "mosquitto", "tcp"]) " |"
            }
            print ""
            print "## Every figure"
            print ""
            print "| scenario | broker | transport | rate/s | p50 µs | p99 µs | failed + lost | broker CPU s | generator CPU s | broker peak RSS MB |"
            print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
            for (i = 1; i <= n; i++) {
                s = list[i]
                split("mosquitto ringmq", bs, " ")
                for (j = 1; j <= 2; j++) for (tt = 1; tt <= 2; tt++) {
                    t = tt == 1 ? "tcp" : "tls"; k = s SUBSEP bs[j] SUBSEP t
                    if (!(k in have)) { print "| " s " | " bs[j] " | " t " | not measured | | | | | | |"; continue }
                    print "| " s " | " bs[j] " | " t " | " fmt(rate[k]) " | " (mode_pub(s) ? "–" : fmt(p50[k])) " | " \
                        (mode_pub(s) ? "–" : fmt(p99[k])) " | " fmt(bad[k]) " | " (cpu[k] < 0 ? "–" : sprintf("%.1f", cpu[k])) " | " \
                        (gen[k] < 0 ? "–" : sprintf("%.1f", gen[k])) " | " fmt(rss[k]) " |"
                }
            }
        }' "$OUT/runs.tsv"
    echo
    echo "Scenarios:"
    for l in "${SCENARIOS[@]}"; do IFS='|' read -r name title args <<<"$l"; echo "- \`$name\`: $title \`$args\`"; done
    echo
    echo "Each run's summary (summary.md, summary.json, latency.hgrm, plots) is under runs/BROKER-TRANSPORT/SCENARIO/."
} >"$OUT/report.md"
echo
cat "$OUT/report.md"
echo
echo "report: $OUT/report.md; total $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"
