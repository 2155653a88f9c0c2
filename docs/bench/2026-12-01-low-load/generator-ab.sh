#!/bin/bash
# A/B of the generator: main's loadtest.jar (OLD) vs this branch's (NEW) against one Mosquitto already running on
# port 23101 (its pid in /tmp/gen/mosq.pid), alternating old/new, order reversed every other round, ROUNDS per mode
set -u
OLD=/tmp/full/loadtest/target/loadtest.jar NEW=/work/wt-gen/loadtest/target/loadtest.jar
ROUNDS=${ROUNDS:-3}
ulimit -n 20000
declare -a MODES=("-mode p2p -pubs 1000 -qos 0 -rate 10 -payload 64 -duration 10s -warmup 5s"
 "-mode pubsub -subs 10 -pubs 10 -qos 0 -rate 100 -payload 64 -duration 10s -warmup 5s"
 "-mode pubsub -subs 1000 -pubs 5 -qos 0 -rate 100 -payload 64 -duration 10s")
printf "mode\tjar\tround\tgen_cpu_s\tdelivered\tus_per_delivery\tp50_us\tp99_us\tbroker_cpu_s\tsend_lag_p99_us\tload1\n"
for m in "${MODES[@]}"; do
  for ((r=1; r<=ROUNDS; r++)); do
    if ((r % 2)); then order="old new"; else order="new old"; fi
    for j in $order; do
      jar=$OLD; [[ $j == new ]] && jar=$NEW
      out=$(timeout 120 java -jar $jar $m -addr 127.0.0.1:23101 -broker-pid $(cat /tmp/gen/mosq.pid) -quiet 2>&1 | grep '^{' | tail -1)
      python3 - "$out" "$m" "$j" "$r" <<'PY'
import json,sys
o,m,j,r=sys.argv[1:5]
d=json.loads(o); mode=" ".join(m.split()[1:6])
load=open('/proc/loadavg').read().split()[0]
print("\t".join([mode,j,r,"%.2f"%d["generator_cpu_s"],str(d["delivered"]),"%.1f"%(d["generator_cpu_s"]*1e6/max(1,d["delivered"])),"%.0f"%d["latency_p50_us"],"%.0f"%d["latency_p99_us"],"%.2f"%d["broker_cpu_s"],"%.0f"%d.get("send_lag_p99_us",-1),load]))
PY
    done
  done
done
