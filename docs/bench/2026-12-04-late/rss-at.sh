#!/bin/bash
# build commit $1 in /tmp/base and measure 5,000-idle VmHWM twice
set -e
cd /tmp/base && git checkout -q -f $1 && mvn -B -ntp -q package -DskipTests > /tmp/base-build.log 2>&1 || { echo "build failed $1"; exit 1; }
cd /tmp/base
for r in 1 2; do rm -rf /tmp/lr-bis; bench-configs/launcher-rss.sh $1-$r 23951 --only idle -- bin/ringmq --bind 127.0.0.1 --port 23951 --data-dir /tmp/lr-bis/data 2>/dev/null | tail -1; done
