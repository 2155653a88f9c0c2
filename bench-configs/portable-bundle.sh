#!/usr/bin/env bash
# Packs what the bench scripts need into one archive for a Linux x86-64 machine that has no Java, no Maven and no
# network (a many-core machine lent for bench-configs/scaling.sh): a Java runtime cut to the modules the broker and
# the load generator use (jlink), the two jars (the broker's without the RocksDB and JNA natives of other
# platforms), and FlashMQ with the OpenSSL it was linked against, when it is installed here.
#
#   bench-configs/portable-bundle.sh [ARCHIVE]     (default: bench-results/portable-bundle.tar.gz)
#
# There:  tar xzf ARCHIVE -C /tmp && export JAVA=/tmp/bundle/jre/bin/java FLASHMQ_BIN=/tmp/bundle/flashmq
#         bench-configs/scaling.sh --ringmq-jar /tmp/bundle/ringmq.jar --loadtest-jar /tmp/bundle/loadtest.jar ...
# The runtime and FlashMQ need glibc 2.34 or newer there (Debian 12's builds; Ubuntu 22.04 and later have it).
# Build the jars first: mvn -B -ntp package -DskipTests.
set -euo pipefail

die() { echo "portable-bundle.sh: $*" >&2; exit 2; }
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPT_DIR")
ARCHIVE=${1:-$REPO/bench-results/portable-bundle.tar.gz}
RINGMQ_JAR="$REPO/transport/target/ringmq.jar"
LOADTEST_JAR="$REPO/loadtest/target/loadtest.jar"
[[ -f $RINGMQ_JAR && -f $LOADTEST_JAR ]] || die "build first: mvn -B -ntp package -DskipTests"
JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}
[[ -x $JAVA_HOME/bin/jlink ]] || die "no jlink under $JAVA_HOME (set JAVA_HOME to a JDK 17)"
command -v zip >/dev/null || die "zip not found (apt-get install zip)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
B="$TMP/bundle"
mkdir -p "$B/lib"
# the modules jdeps finds in both jars, less java.desktop and java.compiler (only optional paths of dependencies
# use them); jdk.crypto.ec for TLS listeners
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.logging,java.naming,java.management,jdk.management,jdk.httpserver,jdk.jfr,jdk.unsupported,jdk.crypto.ec \
    --strip-debug --no-header-files --no-man-pages --compress=2 --output "$B/jre"
cp "$LOADTEST_JAR" "$B/loadtest.jar"
cp "$RINGMQ_JAR" "$B/ringmq.jar"
# native libraries only: JNA's Java classes live in folders beside its per-platform ones (com/sun/jna/ptr, internal)
mapfile -t foreign < <(unzip -Z1 "$B/ringmq.jar" |
    grep -E '^(librocksdbjni-.*|com/sun/jna/[^/]+/[^/]+\.(so|a|dll|jnilib|dylib))$' |
    grep -v -E '^(librocksdbjni-linux64\.so|com/sun/jna/linux-x86-64/.*)$')
(( ${#foreign[@]} == 0 )) || zip -q -d "$B/ringmq.jar" "${foreign[@]}"

FLASHMQ=${FLASHMQ_BIN:-$(command -v flashmq || true)}
if [[ -x $FLASHMQ ]]; then
    cp "$FLASHMQ" "$B/flashmq.bin"
    # OpenSSL travels with it (its soname is the same everywhere, its build not); the C and C++ runtimes do not
    for lib in libssl.so.3 libcrypto.so.3; do
        path=$(ldd "$FLASHMQ" | awk -v l="$lib" '$1 == l && $3 ~ /^\// { print $3 }')
        [[ -r $path ]] || die "FlashMQ at $FLASHMQ is not linked to a $lib found here (ldd: ${path:-none})"
        cp -L "$path" "$B/lib/$lib"
    done
    cat >"$B/flashmq" <<'WRAP'
#!/bin/sh
# FlashMQ with the OpenSSL it was built against; exec keeps the pid, which the bench scripts stop and measure
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/flashmq.bin" "$@"
WRAP
    chmod +x "$B/flashmq"
else
    echo "portable-bundle.sh: no FlashMQ here (FLASHMQ_BIN or flashmq on the PATH): the bundle has none"
fi
"$B/jre/bin/java" -jar "$B/ringmq.jar" --version >/dev/null || die "the bundled runtime does not start the broker"
mkdir -p "$(dirname "$ARCHIVE")"
tar czf "$ARCHIVE" -C "$TMP" bundle
echo "portable-bundle.sh: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)): $(cd "$B" && ls | tr '\n' ' ')"
