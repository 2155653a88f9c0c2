#!/usr/bin/env bash
# syscalls and context switches per message at low load: p2p 1,000 pairs x 10 msg/s, 10 s, perf stat over 5 s mid-run
cd /work/main
run() {
  name=$1; shift
  "$@" > /tmp/ll-$name.log 2>&1 &
  P=$!
  for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/18998) 2>/dev/null && break; sleep 0.02; done
  (timeout 60 java -jar loadtest/target/loadtest.jar -addr 127.0.0.1:18998 -mode p2p -pubs 1000 -subs 1000 -qos 0 -rate 10 -payload 64 -duration 12s -warmup 3s -broker-pid $P -quiet > /tmp/ll-$name.txt 2>&1 &)
  sleep 9
  perf stat -e raw_syscalls:sys_enter,context-switches,task-clock -p $P -- sleep 5 2>&1 | grep -E "sys_enter|context|task-clock" | sed "s/^/$name /"
  sleep 8
  grep -o '"latency_p50_us":[0-9.]*\|"latency_p99_us":[0-9.]*\|"delivered":[0-9]*' /tmp/ll-$name.txt | tr '\n' ' ' | sed "s/^/$name /"; echo
  kill $P; wait $P 2>/dev/null
}
printf 'listener 18998 127.0.0.1\nallow_anonymous true\nmax_connections -1\n' > /tmp/ll-mosq.conf
run ringmq bin/ringmq --bind 127.0.0.1 --port 18998 --persistence memory
run mosquitto mosquitto -c /tmp/ll-mosq.conf
