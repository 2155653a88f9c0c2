#!/usr/bin/env bash
# Authentication under attack, 127.0.0.1 only, bounded (about 2 x SECONDS x 3 + the CONNECT timing):
#   1. a good client's QoS 1 PUBLISH -> PUBACK p99 at 500/s, alone, then beside 1,000 bad CONNECTs a second
#      (a known user, wrong password), on a broker with the back-off off (--auth-max-failures 0: every bad CONNECT
#      is hashed) and on one with the default back-off;
#   2. CONNECT -> CONNACK time of an unknown user and of a known user with a wrong password (back-off off).
#
#   bench-configs/auth-storm.sh [PORT] [SECONDS] [BAD_PER_S]      (defaults 18830 10 1000)
#
# Needs transport/target/ringmq.jar (mvn -o -q -pl protocol,pipeline,persistence,transport package -DskipTests).
# Only the brokers this script started are stopped, by their pid. Lines go to stdout.
set -euo pipefail
PORT=${1:-18830} SECONDS_EACH=${2:-10} BAD=${3:-1000}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JAR="$REPO/transport/target/ringmq.jar"
WORK=$(mktemp -d)
broker_pid=""
stop_broker() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "$broker_pid"; for _ in $(seq 50); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$broker_pid" 2>/dev/null && kill -9 "$broker_pid"
    fi
    broker_pid=""
}
trap 'stop_broker; rm -rf "$WORK"' EXIT
start_broker() {
    # bin/ringmq: the README's run command, JVM sized by --memory-limit (256m); exec keeps the pid the broker's
    timeout 600 "$REPO/bin/ringmq" -b 127.0.0.1 -p "$PORT" --password-file "$WORK/passwd" --counters-dir "$WORK" \
        --persistence memory "$@" >"$WORK/broker.log" 2>&1 &
    broker_pid=$!
    await_port
}
await_port() {
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "broker did not listen on $PORT" >&2; cat "$WORK/broker.log" >&2; return 1
}
java -jar "$JAR" passwd --password alice-secret "$WORK/passwd" alice >/dev/null
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); entry: $(cut -d'$' -f2-3 "$WORK/passwd" | head -1)"
for backoff in off default; do
    if [[ $backoff == off ]]; then start_broker --auth-max-failures 0; else start_broker; fi
    echo "## back-off $backoff"
    java "$REPO/bench-configs/AuthStorm.java" "$PORT" publish "$SECONDS_EACH" 0 alice
    java "$REPO/bench-configs/AuthStorm.java" "$PORT" publish "$SECONDS_EACH" "$BAD" alice
    if [[ $backoff == off ]]; then
        java "$REPO/bench-configs/AuthStorm.java" "$PORT" connect 300 alice
    fi
    stop_broker
done
if command -v mosquitto >/dev/null && command -v mosquitto_passwd >/dev/null; then
    # the same two runs against Mosquitto (its password file, 101 iterations; the good client is anonymous, as
    # ringmq lets it be from loopback), for the ratio side by side
    touch "$WORK/mpasswd" && mosquitto_passwd -b "$WORK/mpasswd" alice alice-secret && chmod 600 "$WORK/mpasswd"
    printf 'user %s\nlistener %s 127.0.0.1\nallow_anonymous true\npassword_file %s\n' "$(id -un)" "$PORT" \
        "$WORK/mpasswd" >"$WORK/mosquitto.conf"
    timeout 600 mosquitto -c "$WORK/mosquitto.conf" >"$WORK/broker.log" 2>&1 &
    broker_pid=$!
    await_port
    echo "## mosquitto $(mosquitto -h 2>/dev/null | head -1 | awk '{print $3}')"
    java "$REPO/bench-configs/AuthStorm.java" "$PORT" publish "$SECONDS_EACH" 0 alice
    java "$REPO/bench-configs/AuthStorm.java" "$PORT" publish "$SECONDS_EACH" "$BAD" alice
    stop_broker
fi
