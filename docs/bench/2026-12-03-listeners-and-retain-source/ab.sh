#!/bin/bash
# alternating A/B: base 601ce89 (/tmp/base42, the build this stop began at) vs head (/tmp/head42.jar)
# usage: bash ab.sh OUT_DIR ROUNDS FIRST ROWS (bench-configs/matrix-ab.sh with this page's jars)
#   the three sets of this page:
#   bash ab.sh /tmp/ab42 3 base ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
#   bash ab.sh /tmp/ab42b 4 head ingest-qos1-window-10,p2p-1000x10
#   bash ab.sh /tmp/ab42c 5 base p2p-1000x10
exec bash "$(dirname "$0")/../../../bench-configs/matrix-ab.sh" /tmp/base42/transport/target/ringmq.jar \
  /tmp/head42.jar "$@"
