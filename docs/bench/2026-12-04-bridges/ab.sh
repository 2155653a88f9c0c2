#!/bin/bash
# alternating A/B: base 63f162a (/tmp/base44.jar, the build this stop began at) vs head (/tmp/head44.jar, ab56522)
# usage: bash ab.sh OUT_DIR ROUNDS FIRST ROWS (bench-configs/matrix-ab.sh with this page's jars); the set of this page:
#   bash ab.sh /tmp/ab44 3 base ingest-qos0-10,ingest-qos1-window-10,fanout-100x10-unlimited,p2p-1000x10
exec bash "$(dirname "$0")/../../../bench-configs/matrix-ab.sh" /tmp/base44.jar /tmp/head44.jar "$@"
