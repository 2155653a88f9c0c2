#!/bin/bash
# alternating A/B: base 601ce89 (/tmp/base42, the build this stop began at) vs head (/tmp/head42.jar), 3 rounds
# usage: bash docs/bench/2026-12-03-listeners-and-retain-source/ab.sh OUT_DIR
set -u
out=${1:-/tmp/ab42}
mkdir -p "$out"
cd "$(dirname "$0")/../../.."
ONLY=ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
for round in 1 2 3; do
  for which in base head; do
    jar=/tmp/base42/transport/target/ringmq.jar; [ "$which" = head ] && jar=/tmp/head42.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq \
      --only $ONLY --ringmq-jar $jar --out "$out/$which-$round" -quiet > "$out/$which-$round.log" 2>&1
    echo "$which $round rc=$?"
  done
done
