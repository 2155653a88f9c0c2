#!/usr/bin/env bash
# This folder's measurements, one after another on a quiet machine (about 17 minutes): the launcher of 8b48734 (no
# inline list) and this one on the same jar, and FlashMQ (bench-configs/build-flashmq.sh), alternating per round.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
git show 8b48734:bin/ringmq > /tmp/ringmq-before && chmod +x /tmp/ringmq-before
OUT=bench-results/c1-inlining
mkdir -p $OUT
D=$(mktemp -d)
OLD="env RINGMQ_JAR=transport/target/ringmq.jar /tmp/ringmq-before"
timeout 900 bench-configs/ingest-ab.sh --rounds 5 --payloads '64 1024' --pubs 10 --duration 5s --warmup 5s --out $OUT/ab flashmq \
  new="bin/ringmq --bind 127.0.0.1 --port {port} --data-dir $D/a" \
  old="$OLD --bind 127.0.0.1 --port {port} --data-dir $D/b" > $OUT/ab.tsv 2>&1
for r in 1 2 3; do
  timeout 900 java -jar loadtest/target/loadtest.jar matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq,flashmq \
    --only ingest-qos0-10,ingest-qos0-100,ingest-qos0-500,ingest-qos1-window-10,size-64,size-256,size-1k --out $OUT/mx -quiet > $OUT/mx-$r.log 2>&1
done
for r in 1 2; do for v in old new; do
  P=$((20000+RANDOM%10000)); DD=$(mktemp -d)
  if [[ $v == old ]]; then c="$OLD"; else c="bin/ringmq"; fi
  OUT=$OUT/lr bench-configs/launcher-rss.sh $v$r $P --only idle -- $c --bind 127.0.0.1 --port $P --data-dir $DD 2>&1 | tail -1 >> $OUT/idle.tsv
  rm -rf $DD
done; done
