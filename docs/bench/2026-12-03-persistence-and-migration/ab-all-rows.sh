#!/bin/bash
# alternating A/B: base b0fe366 (/tmp/base40) vs HEAD (/tmp/head-ringmq.jar), 3 rounds, one row set each
cd /work/main
ONLY=ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
for round in 1 2 3; do
  for which in base head; do
    jar=/tmp/base40/transport/target/ringmq.jar; [ $which = head ] && jar=/tmp/head-ringmq.jar
    java -jar loadtest/target/loadtest.jar matrix bench-configs/performance-scaled.json --brokers ringmq --only $ONLY \
      --ringmq-jar $jar --out /tmp/ab41/$which-$round -quiet > /tmp/ab41/$which-$round.log 2>&1
    echo "$which $round rc=$?"
  done
done
