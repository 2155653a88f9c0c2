#!/usr/bin/env bash
# alternates: the matrix (in-process generator, ringmq only, 1 round of ingest-qos0-10) and the standalone generator
# run the matrix's way (warm-up run, then a fresh 5 s run), 3 times each
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
OUT=${OUT:-/tmp/matrix-vs-standalone}; mkdir -p "$OUT"
LT=loadtest/target/loadtest.jar
for r in 1 2 3; do
  out=$(java -jar $LT matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq --only ingest-qos0-10 --out $OUT/mvs -quiet | grep "^report:" | awk '{print $2}')
  python3 - "$out" <<'PY'
import json,sys,glob,os
d=os.path.dirname(sys.argv[1])
j=json.load(open(glob.glob(d+'/ingest-qos0-10/ringmq/summary.json')[0]))
print('matrix', round(j['rate_per_s']/1e6,2), round(1e6*j['broker_cpu_s']/j['published'],3))
PY
  port=$((19000 + RANDOM % 500))
  bin/ringmq --bind 127.0.0.1 --port $port --data-dir $OUT/mvs-d$r > $OUT/mvs-$r.log 2>&1 &
  bp=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
  java -jar $LT -addr 127.0.0.1:$port -mode pub -pubs 10 -qos 0 -payload 64 -duration 5s -quiet > /dev/null
  java -jar $LT -addr 127.0.0.1:$port -mode pub -pubs 10 -qos 0 -payload 64 -duration 5s -broker-pid $bp -quiet | grep '^{' | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print('standalone', round(j['rate_per_s']/1e6,2), round(1e6*j['broker_cpu_s']/j['published'],3))"
  kill $bp; wait $bp 2>/dev/null
done
