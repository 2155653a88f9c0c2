#!/bin/bash
# Alternating A/B of two ringmq jars on rows of the scaled matrix: each round runs the matrix once per jar, FIRST
# first, so a noisy machine hurts each alike; one report per run under OUT_DIR/{base,head}-ROUND.
#   bench-configs/matrix-ab.sh BASE_JAR HEAD_JAR OUT_DIR ROUNDS FIRST ROWS
#   FIRST: base or head; ROWS: --only's comma-separated row names, e.g.
#   bench-configs/matrix-ab.sh /tmp/base/transport/target/ringmq.jar transport/target/ringmq.jar /tmp/ab 3 base \
#       ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
# The pages under docs/bench/ that use it keep a wrapper naming their jars and the sets they ran.
set -u
base_jar=$1 head_jar=$2 out=$3 rounds=$4 first=$5 rows=$6
second=head; [ "$first" = head ] && second=base
mkdir -p "$out"
cd "$(dirname "$0")/.."
for round in $(seq 1 "$rounds"); do
  for which in "$first" "$second"; do
    jar=$base_jar; [ "$which" = head ] && jar=$head_jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq \
      --only "$rows" --ringmq-jar "$jar" --out "$out/$which-$round" -quiet > "$out/$which-$round.log" 2>&1
    echo "$which $round rc=$?"
  done
done
