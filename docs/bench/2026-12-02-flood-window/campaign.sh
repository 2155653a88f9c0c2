#!/usr/bin/env bash
# The runs of 2026-12-02 after the load generator's flood window (issue 12), kept as run, one step at a time on a
# quiet machine: the reference matrix twice against ringmq, FlashMQ and Mosquitto, then the flood rows three more
# times against ringmq and FlashMQ.
set -uo pipefail
cd "$(dirname "$0")/../../.."
O=${O:-bench-results/flood-window}
LT=loadtest/target/loadtest.jar
ROWS=ingest-qos0-10,ingest-qos0-100,ingest-qos0-500,size-64,size-256,size-1k
mkdir -p $O
stamp() { echo "$(date -u +%H:%M:%S) $*" >> $O/campaign.log; }
stamp start $(git rev-parse --short HEAD) $(git status --porcelain | grep -q . && echo "(with local changes)")
for r in 1 2; do
  stamp ref-$r; timeout 2400 java -jar $LT matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq,flashmq,mosquitto -quiet --out $O/ref-$r > $O/ref-$r.out 2>&1; stamp ref-$r rc=$?
done
for r in 3 4 5; do
  stamp rows-$r; timeout 900 java -jar $LT matrix bench-configs/reference-stand-b-scaled.json --brokers ringmq,flashmq --only $ROWS -quiet --out $O/rows-$r > $O/rows-$r.out 2>&1; stamp rows-$r rc=$?
done
stamp done
touch $O/done
