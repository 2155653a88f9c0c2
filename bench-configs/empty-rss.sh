#!/usr/bin/env bash
# The empty broker's resident memory and what its first persistent session costs, on a fresh (missing) data
# directory: each run starts a broker, waits until its port accepts (polled every 10 ms), waits 3 s more, reads
# VmRSS and VmHWM from /proc, then times CONNECT to CONNACK for 3.1.1 sessions in a row: clean, clean, persistent,
# persistent, clean (the first persistent one creates the store when it is opened lazily), and stops the broker.
# The brokers take turns run by run (A B A B ...).
#
#   bench-configs/empty-rss.sh [--runs N] NAME='COMMAND with {port} {dir}' [NAME='COMMAND' ...]
#
# {dir} is a fresh temporary directory per run (give --data-dir {dir}/data --counters-dir {dir}). One TSV line per
# run: name run VmRSS_MB VmHWM_MB data_dir(created|absent) connack_ms...
# Example:
#   bench-configs/empty-rss.sh --runs 3 \
#       base='env RINGMQ_JAR=/tmp/base.jar bin/ringmq --bind 127.0.0.1 --port {port} --data-dir {dir}/data --counters-dir {dir}' \
#       new='bin/ringmq --bind 127.0.0.1 --port {port} --data-dir {dir}/data --counters-dir {dir}'
# A broker whose port was taken while it warmed up is started again on another port, up to 3 times. Only the
# broker this script started is stopped, by its pid.
set -euo pipefail
RUNS=3
names=() commands=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *=*) names+=("${1%%=*}"); commands+=("${1#*=}"); shift ;;
        *) echo "empty-rss.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#names[@]})) || { echo "empty-rss.sh: name at least one broker (see --help)" >&2; exit 2; }
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

source "$REPO/bench-configs/broker-runs.sh"

connacks() {
    python3 - "$1" <<'PY'
import socket, struct, sys, time
port = int(sys.argv[1])
out = []
for i, clean in enumerate([True, True, False, False, True]):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    cid = ("empty-rss-%d" % i).encode()
    body = b"\x00\x04MQTT\x04" + bytes([0x02 if clean else 0x00]) + b"\x00\x3c" + struct.pack(">H", len(cid)) + cid
    start = time.perf_counter()
    s.sendall(bytes([0x10, len(body)]) + body)
    ack = s.recv(4)
    out.append("%s=%.1fms" % ("clean" if clean else "persistent", (time.perf_counter() - start) * 1000)
               if ack[:1] == b"\x20" else "no-connack")
    s.sendall(b"\xe0\x00")
    s.close()
print("\t".join(out))
PY
}

for ((run = 1; run <= RUNS; run++)); do
    for i in "${!names[@]}"; do
        for _attempt in 1 2 3; do # its warm-up's client sockets may take the chosen port first: try another
        dir=$(mktemp -d)
        port=$(free_port)
        cmd=${commands[i]//\{port\}/$port}
        read -r -a cmd <<<"${cmd//\{dir\}/$dir}"
        start_broker "$dir/broker.log" "$port" "${cmd[@]}"
        ((port_taken)) && { stop_broker; rm -rf "$dir"; continue; }
        break
        done
        if ((listening)); then
            sleep 3
            rss=$(awk '$1=="VmRSS:"{printf "%.1f", $2/1024}' /proc/"$broker_pid"/status)
            hwm=$(awk '$1=="VmHWM:"{printf "%.1f", $2/1024}' /proc/"$broker_pid"/status)
            created=$([[ -e $dir/data ]] && echo created || echo absent)
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${names[i]}" "$run" "$rss" "$hwm" "$created" "$(connacks "$port")"
        else
            echo "empty-rss.sh: ${names[i]} did not listen on $port: $(tail -2 "$dir/broker.log" | tr "\n" " ")" >&2
        fi
        stop_broker
        rm -rf "$dir"
    done
done
