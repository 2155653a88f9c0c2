# Shared by the scripts that start a fresh broker per run (cold-connect.sh, empty-rss.sh, ingest-ab.sh); sourced,
# not run.
#   free_port                      a loopback port free now
#   start_broker LOG PORT CMD...   starts CMD in the repository ($REPO) with its output in LOG, sets broker_pid, and
#                                  waits until PORT accepts a TCP connection (polled every 10 ms, 30 s at most) or the
#                                  broker exits; sets listening=1 or 0, and port_taken=1 when it exited because its
#                                  port was taken meanwhile (a broker binding late, after its warm-up, can find that)
#   stop_broker                    stops the broker this script started, by its pid (also at exit)
#   flashmq_conf PORT THREADS      prints a FlashMQ config for one run: loopback PORT, TCP_NODELAY, anonymous,
#                                  THREADS threads, notice logging, rlimit_nofile this shell's open-files limit

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

broker_pid=""
stop_broker() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "$broker_pid"; for _ in $(seq 100); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$broker_pid" 2>/dev/null && kill -9 "$broker_pid"
        wait "$broker_pid" 2>/dev/null || true
    fi
    broker_pid=""
}
trap stop_broker EXIT

start_broker() {
    local log=$1 port=$2
    shift 2
    (cd "$REPO" && exec "$@") >"$log" 2>&1 &
    broker_pid=$!
    listening=0
    port_taken=0
    for _ in $(seq 3000); do
        if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then listening=1; break; fi
        kill -0 "$broker_pid" 2>/dev/null || break
        sleep 0.01
    done
    if ((!listening)) && grep -q "already in use" "$log"; then
        port_taken=1
    fi
}

flashmq_conf() {
    printf 'listen {\n  protocol mqtt\n  inet_protocol ip4\n  inet4_bind_address 127.0.0.1\n  port %s\n  tcp_nodelay true\n}\n' "$1"
    printf 'allow_anonymous true\nthread_count %s\nlog_level notice\nrlimit_nofile %s\n' "$2" "$(ulimit -n)"
}
