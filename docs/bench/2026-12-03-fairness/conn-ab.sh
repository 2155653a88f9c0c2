#!/usr/bin/env bash
# conn-levels 1000,5000 as the reference matrix runs it: prev (3f2e2f5) and now alternating, fresh broker per run.
set -uo pipefail
cd /work/main
for r in 1 2 3; do
  for v in prev now; do
    if [[ $v == prev ]]; then cmd="env RINGMQ_JAR=/tmp/prev/transport/target/ringmq.jar /tmp/prev/bin/ringmq"; else cmd="bin/ringmq"; fi
    $cmd --bind 127.0.0.1 --port 18999 --data-dir /tmp/conn-ab-data-$v-$r > /work/exp/fairness/conn-$v-$r.broker.log 2>&1 &
    P=$!
    for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/18999) 2>/dev/null && break; sleep 0.02; done
    timeout 120 java -jar loadtest/target/loadtest.jar -addr 127.0.0.1:18999 -mode conn -levels 1000,5000 -hold 3s -dial-concurrency 200 -broker-pid $P -quiet > /work/exp/fairness/conn-$v-$r.txt 2>&1
    kill $P; wait $P 2>/dev/null; rm -rf /tmp/conn-ab-data-$v-$r
    echo "$v $r $(grep -o '"connect_p99_ms":[0-9.]*' /work/exp/fairness/conn-$v-$r.txt | tr '\n' ' ')"
  done
done
