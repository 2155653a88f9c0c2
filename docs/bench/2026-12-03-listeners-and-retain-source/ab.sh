#!/bin/bash
# alternating A/B: base 601ce89 (/tmp/base42, the build this stop began at) vs head (/tmp/head42.jar)
# usage: bash ab.sh OUT_DIR ROUNDS FIRST ROWS
#   the three sets of this page:
#   bash ab.sh /tmp/ab42 3 base ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
#   bash ab.sh /tmp/ab42b 4 head ingest-qos1-window-10,p2p-1000x10
#   bash ab.sh /tmp/ab42c 5 base p2p-1000x10
set -u
out=$1 rounds=$2 first=$3 rows=$4
second=head; [ "$first" = head ] && second=base
mkdir -p "$out"
cd "$(dirname "$0")/../../.."
for round in $(seq 1 "$rounds"); do
  for which in "$first" "$second"; do
    jar=/tmp/base42/transport/target/ringmq.jar; [ "$which" = head ] && jar=/tmp/head42.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq \
      --only "$rows" --ringmq-jar $jar --out "$out/$which-$round" -quiet > "$out/$which-$round.log" 2>&1
    echo "$which $round rc=$?"
  done
done
