#!/bin/bash
cd /work/main
for round in 1 2 3 4 5; do
  for which in head base; do
    jar=/tmp/base40/transport/target/ringmq.jar; [ $which = head ] && jar=/tmp/head-ringmq.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq --only p2p-1000x10 \
      --ringmq-jar $jar --out /tmp/ab41/p2p-$which-$round -quiet > /tmp/ab41/p2p-$which-$round.log 2>&1
    echo "$which $round rc=$?"
  done
done
