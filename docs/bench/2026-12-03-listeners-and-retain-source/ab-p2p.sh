#!/bin/bash
# point-to-point broker CPU only: 5 more alternating rounds, base first
# usage: bash docs/bench/2026-12-03-listeners-and-retain-source/ab-p2p.sh OUT_DIR
set -u
out=${1:-/tmp/ab42c}
mkdir -p "$out"
cd "$(dirname "$0")/../../.."
for round in 1 2 3 4 5; do
  for which in base head; do
    jar=/tmp/base42/transport/target/ringmq.jar; [ "$which" = head ] && jar=/tmp/head42.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq \
      --only p2p-1000x10 --ringmq-jar $jar --out "$out/$which-$round" -quiet > "$out/$which-$round.log" 2>&1
    echo "$which $round rc=$?"
  done
done
