#!/usr/bin/env bash
# The second many-core run, as one unattended command on a lent 16-core machine with no Java (15 minutes of device
# time in all): unpacks bench-configs/portable-bundle.sh's archive, then runs bench-configs/scaling.sh three times,
# most telling first, packing what each wrote into $OUT as it ends (so a run cut short still returns the parts done):
#   1. fan-out (200 subscribers x 20 publishers, QoS 0, unlimited) on 2, 4, 8 and 12 broker cores, ringmq in the
#      script's layouts and FlashMQ with a thread per core;
#      then once more on 2, 4 and 8;
#   2. fan-out on 8 cores in two other ringmq layouts: each delivery shard on its I/O agent's core with two routing
#      shards, and three I/O agents with the delivery shards on cores of their own;
#   3. ingest, QoS 0 and QoS 1 (100 publishers spread over the generator's cores), on 2, 4 and 8 cores, both brokers.
#
#   OUT=DIR docs/bench/2026-12-04-scaling-2/run.sh [ARCHIVE]   (default: bench-results/portable-bundle.tar.gz)
set -uo pipefail

OUT=${OUT:?set OUT to the folder for the results}
ARCHIVE=${1:-bench-results/portable-bundle.tar.gz}
B=$(mktemp -d)
R=$(mktemp -d)
tar xzf "$ARCHIVE" -C "$B" || exit 2
export JAVA=$B/bundle/jre/bin/java FLASHMQ_BIN=$B/bundle/flashmq
{
    echo "cores: $(nproc), open files: $(ulimit -Hn) hard, $(uname -sr)"
    grep -m1 'model name' /proc/cpuinfo
    free -g | sed -n 2p
    "$JAVA" -version 2>&1 | head -1
    "$FLASHMQ_BIN" --version 2>&1 | head -1
} >"$OUT/machine.txt"
common=(--duration 5s --warmup 3s --connections 0 --ringmq-jar "$B/bundle/ringmq.jar"
    --loadtest-jar "$B/bundle/loadtest.jar")
pack() { tar czf "$OUT/$1.tgz" -C "$R" "$1"; }

bench-configs/scaling.sh --flashmq --cores "${FANOUT_CORES:-2 4 8 12}" --only fanout-unlimited --out "$R/fanout" \
    "${common[@]}"
pack fanout
# the same again on 2, 4 and 8 cores: one run per broker and count is one sample
bench-configs/scaling.sh --flashmq --cores "${FANOUT_CORES2:-2 4 8}" --only fanout-unlimited --out "$R/fanout-again" \
    "${common[@]}"
pack fanout-again
i=0
for layout in \
    "--threading dedicated --io-threads 4 --route-shards 2 --pin io=0-3,deliver=0-3,route=4-5,auth=6,persist=7" \
    "--threading dedicated --io-threads 3 --route-shards 2 --pin io=0-2,deliver=3-5,route=6-7,auth=6,persist=7"; do
    i=$((i + 1))
    echo "layout-$i: $layout" >>"$OUT/layouts.txt"
    bench-configs/scaling.sh --cores "${LAYOUT_CORES:-8}" --only fanout-unlimited --layout "$layout" \
        --out "$R/layout-$i" "${common[@]}"
    pack "layout-$i"
done
bench-configs/scaling.sh --flashmq --cores "${INGEST_CORES:-2 4 8}" --only ingest-qos0,ingest-qos1 \
    --out "$R/ingest" "${common[@]}"
pack ingest
