#!/bin/bash
# the two rows where the first three rounds read head below base: 4 more alternating rounds, head first
# usage: bash docs/bench/2026-12-03-listeners-and-retain-source/ab-two-rows.sh OUT_DIR
set -u
out=${1:-/tmp/ab42b}
mkdir -p "$out"
cd "$(dirname "$0")/../../.."
ONLY=ingest-qos1-window-10,p2p-1000x10
for round in 1 2 3 4; do
  for which in head base; do
    jar=/tmp/base42/transport/target/ringmq.jar; [ "$which" = head ] && jar=/tmp/head42.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq \
      --only $ONLY --ringmq-jar $jar --out "$out/$which-$round" -quiet > "$out/$which-$round.log" 2>&1
    echo "$which $round rc=$?"
  done
done
