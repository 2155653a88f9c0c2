#!/usr/bin/env bash
# The campaign of 2026-12-02 (issue 12), kept as run: every step in turn on a quiet machine (paths as they were there).
set -uo pipefail
cd /work/main
O=/work/exp/perf12
LT=loadtest/target/loadtest.jar
stamp() { echo "$(date -u +%H:%M:%S) $*" >> $O/campaign.log; }
stamp start $(git rev-parse --short HEAD)
for r in 1 2; do
  stamp ref-$r; timeout 2400 java -jar $LT matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq,flashmq,mosquitto -quiet --out $O/ref-$r > $O/ref-$r.out 2>&1; stamp ref-$r rc=$?
  stamp v5-$r; timeout 900 bench-configs/five-broker-v5.sh --memory-limit 256m --brokers ringmq,mosquitto,flashmq --out $O/v5-$r > $O/v5-$r.out 2>&1; stamp v5-$r rc=$?
done
stamp lowload; timeout 1500 bench-configs/low-load-latency.sh --rounds 3 --brokers 'ringmq mosquitto flashmq' --out $O/lowload --ports 20000-20999 > $O/lowload.out 2>&1; stamp lowload rc=$?
stamp cold; timeout 900 bench-configs/cold-connect.sh --runs 5 --out $O/cold flashmq ringmq='bin/ringmq --bind 127.0.0.1 --port {port} --persistence memory' > $O/cold.tsv 2>$O/cold.err; stamp cold rc=$?
for r in 1 2; do
  stamp idle-$r
  timeout 300 bench-configs/idle-connections.sh ringmq 18851 -- bin/ringmq --memory-limit 384m --max-connections 20000 --bind 127.0.0.1 --port 18851 >> $O/idle.tsv 2>>$O/idle.err
  timeout 300 bench-configs/idle-connections.sh mosquitto 18850 -- mosquitto -c $O/mosquitto-idle.conf >> $O/idle.tsv 2>>$O/idle.err
  timeout 300 bench-configs/idle-connections.sh flashmq 18852 -- /usr/local/bin/flashmq --config-file $O/flashmq-idle.conf >> $O/idle.tsv 2>>$O/idle.err
done
for r in 3 4 5; do
  stamp rows-$r; timeout 900 java -jar $LT matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq,flashmq --only ingest-qos0-10,size-256,size-1k -quiet --out $O/rows-$r > $O/rows-$r.out 2>&1; stamp rows-$r rc=$?
done
stamp done
touch /work/bench-done
