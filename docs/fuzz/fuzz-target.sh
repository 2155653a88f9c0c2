#!/usr/bin/env bash
# Runs one Jazzer @FuzzTest in fuzzing mode through Jazzer's own command line, so every libFuzzer flag applies
# (-runs, -max_total_time, -print_final_stats) instead of the annotation's maxDuration.
#
#   docs/fuzz/fuzz-target.sh MODULE CLASS METHOD [libFuzzer flags...]
#   docs/fuzz/fuzz-target.sh protocol io.ringmq.protocol.PacketFuzzTest connect -runs=10000000 -max_total_time=900
#
# Build first (mvn -B -ntp -o -q -pl protocol,pipeline,transport test-compile). New corpus entries go to
# target/fuzz/METHOD/corpus (never into src/test/resources: copy the ones worth keeping there by hand); a finding is
# written to target/fuzz/METHOD/ as crash-<sha1> and replays as a regression test once moved into the target's
# Inputs directory. The log, with the final stats (executions, cov, ft), is target/fuzz/METHOD/fuzz.log.
set -euo pipefail
module=$1 class=$2 method=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/$module"
cp_file=target/fuzz-classpath.txt
if [ ! -s "$cp_file" ]; then
  mvn -B -ntp -o -q dependency:build-classpath -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=test >/dev/null
fi
package_path=$(echo "${class%.*}" | tr . /)
simple=${class##*.}
seeds=src/test/resources/$package_path/${simple}Inputs/$method
out=target/fuzz/$method
mkdir -p "$out/corpus"
[ -d "$seeds" ] || mkdir -p "$seeds"
# the reactor's own modules from their target/classes, never a ringmq jar an install left in ~/.m2
classpath=$(tr ':' '\n' < "$cp_file" | sed -E "s#^.*/io/ringmq/ringmq-([a-z]+)/[^/]+/ringmq-[a-z]+-[^/]+\.jar\$#$root/\1/target/classes#" | paste -sd:)
exec java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -XX:+UseParallelGC -Xmx1g -ea \
  -cp "target/test-classes:target/classes:$classpath" \
  com.code_intelligence.jazzer.Jazzer \
  --target_class="$class" --target_method="$method" --instrumentation_includes='io.ringmq.**' --hooks=true \
  -artifact_prefix="$out/" -print_final_stats=1 "$@" "$out/corpus" "$seeds" 2>&1 \
  | grep --line-buffered -v '^INFO: Instrumented' | tee "$out/fuzz.log"
