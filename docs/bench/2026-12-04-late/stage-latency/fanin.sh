#!/bin/bash
# fan-in QoS1 5.0 with a share group against ringmq with stage-latency metrics; scrape the histograms
cd /work/main
OUT=/tmp/fanin-${RATE:-1}; rm -rf $OUT; mkdir -p $OUT
PORT=23921
bin/ringmq --bind 127.0.0.1 --port $PORT --data-dir $OUT/data --metrics-port 23922 > $OUT/broker.log 2>&1 &
BPID=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
java -jar loadtest/target/loadtest.jar -addr 127.0.0.1:$PORT -mode fanin -protocol 5 -share-group benchmark -topic-prefix test -pubs 500 -subs 5 -qos 1 -rate 1 -payload 16 -duration 5s > $OUT/warm.log 2>&1
curl -s http://127.0.0.1:23922/metrics > /dev/null
java -jar loadtest/target/loadtest.jar -addr 127.0.0.1:$PORT -mode fanin -protocol 5 -share-group benchmark -topic-prefix test -pubs 500 -subs 5 -qos 1 -rate ${RATE:-1} -payload 16 -duration 15s -broker-pid $BPID > $OUT/run.log 2>&1
curl -s http://127.0.0.1:23922/metrics > $OUT/metrics.txt
kill $BPID; wait $BPID 2>/dev/null
grep -E "p50|p99|latency" $OUT/run.log | tail -3
grep "ringmq_stage_latency_seconds" $OUT/metrics.txt | grep -E "quantile|_count|_sum" | head -20
