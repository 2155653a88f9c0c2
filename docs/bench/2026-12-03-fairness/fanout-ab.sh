#!/usr/bin/env bash
# fan-out 100 x 10 unlimited, QoS 0, 64 B: prev (3f2e2f5) and now alternating, fresh broker per run, 5 s warm-up + 10 s.
set -uo pipefail
cd /work/main
for r in 1 2 3; do
  for v in prev now; do
    if [[ $v == prev ]]; then cmd="env RINGMQ_JAR=/tmp/prev/transport/target/ringmq.jar /tmp/prev/bin/ringmq"; else cmd="bin/ringmq"; fi
    $cmd --bind 127.0.0.1 --port 18999 --persistence memory > /work/exp/fairness/$v-$r.broker.log 2>&1 &
    P=$!
    for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/18999) 2>/dev/null && break; sleep 0.02; done
    timeout 120 java -jar loadtest/target/loadtest.jar -addr 127.0.0.1:18999 -mode pubsub -subs 100 -pubs 10 -qos 0 -payload 64 -duration 10s -warmup 5s -broker-pid $P -quiet > /work/exp/fairness/$v-$r.txt 2>&1
    kill $P; wait $P 2>/dev/null
    python3 -c "
import json,sys
j=[json.loads(l) for l in open('/work/exp/fairness/$v-$r.txt') if l.startswith('{')][-1]
print('$v\t$r\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f' % (j['rate_per_s'], j['latency_p50_us']/1000, j['latency_p99_us']/1000, j['latency_p999_us']/1000, j['latency_max_us']/1000, j['broker_cpu_s']))"
  done
done
