#!/usr/bin/env bash
# Builds FlashMQ (https://github.com/halfgaar/FlashMQ, a C++ MQTT broker), an optional peer of the bench matrices,
# from source, and installs its one binary where the matrix runner finds it (`flashmq` on the PATH; or point
# FLASHMQ_BIN at it). Nothing in CI needs it: without FlashMQ the bench scripts simply leave it out.
#
#   bench-configs/build-flashmq.sh [--src DIR | --tarball FILE | --git-dir DIR] [--tag TAG] [--build DIR]
#                                  [--dest FILE] [--jobs N] [--bound SECONDS] [--no-install]
#
# Source, one of: --src DIR (a checkout or unpacked source, used read-only), --tarball FILE (a .tar/.tar.gz of the
# source, e.g. `git archive v1.26.2 | gzip` or GitHub's release tarball, unpacked into a temporary folder),
# --git-dir DIR (a clone of the repository, bare or not, that has TAG: `git archive TAG` of it, offline), or by
# default `git clone --depth 1 --branch TAG` of the repository (needs the network). TAG defaults to v1.26.2, the
# version the bench reports name; a source whose CMakeLists.txt says another version is built with a warning.
# Build dependencies (cmake, g++, make, libssl-dev; Debian package names) are installed with apt-get when missing
# and this runs as root, unless --no-install. The build is Release (`cmake -DCMAKE_BUILD_TYPE=Release`) in
# --build DIR (default /tmp/flashmq-build; a rebuild from the same --src only compiles what changed, another
# source starts it afresh) with --jobs N (default: the number of cores), and the binary is copied to --dest
# (default /usr/local/bin/flashmq). Every step is bounded: the clone at 5 minutes, configure and build together
# at --bound seconds (default 3600; from scratch about 2 minutes on a 2-core machine). Ends by printing
# `flashmq --version`.
#
# Examples:
#   bench-configs/build-flashmq.sh                                   # clone v1.26.2, build, install
#   bench-configs/build-flashmq.sh --src /tmp/flashmq-src            # a source folder at hand
#   bench-configs/build-flashmq.sh --git-dir /srv/mirrors/FlashMQ.git  # a clone or mirror at hand
#   bench-configs/build-flashmq.sh --tarball /tmp/fmq.tgz    # after git -C FlashMQ archive -o /tmp/fmq.tgz v1.26.2
set -euo pipefail

die() { echo "build-flashmq.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

REPO_URL=https://github.com/halfgaar/FlashMQ.git
TAG=v1.26.2
SRC=""
TARBALL=""
GIT_DIR_SRC=""
BUILD=/tmp/flashmq-build
DEST=/usr/local/bin/flashmq
JOBS=$(nproc)
BOUND_S=3600
INSTALL=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --src) SRC=${2:?}; shift 2 ;;
        --tarball) TARBALL=${2:?}; shift 2 ;;
        --git-dir) GIT_DIR_SRC=${2:?}; shift 2 ;;
        --tag) TAG=${2:?}; shift 2 ;;
        --build) BUILD=${2:?}; shift 2 ;;
        --dest) DEST=${2:?}; shift 2 ;;
        --jobs) JOBS=${2:?}; shift 2 ;;
        --bound) BOUND_S=${2:?}; shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
(( (${#SRC} > 0) + (${#TARBALL} > 0) + (${#GIT_DIR_SRC} > 0) <= 1 )) || die "give one of --src, --tarball, --git-dir"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer: '$JOBS'"
[[ $BOUND_S =~ ^[1-9][0-9]*$ ]] || die "--bound must be seconds: '$BOUND_S'"

TMP=$(mktemp -d /tmp/build-flashmq.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# build dependencies: command, then its Debian package
missing=()
for pair in cmake:cmake g++:g++ make:make; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
[[ -f /usr/include/openssl/ssl.h ]] || missing+=(libssl-dev)
if [[ -z $SRC && -z $TARBALL ]] && ! command -v git >/dev/null; then missing+=(git); fi
if ((${#missing[@]} > 0)); then
    [[ $INSTALL == 1 ]] || die "missing build dependencies: apt-get install -y ${missing[*]}"
    [[ $(id -u) == 0 ]] || die "missing build dependencies and this is not root: apt-get install -y ${missing[*]}"
    echo "installing ${missing[*]} ..."
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y -q "${missing[@]}" >/dev/null ||
        { timeout 300 apt-get update -q >/dev/null && timeout 600 apt-get install -y -q "${missing[@]}" >/dev/null; } ||
        die "apt-get install ${missing[*]} failed"
fi

# the source
if [[ -n $TARBALL ]]; then
    [[ -f $TARBALL ]] || die "no tarball $TARBALL"
    mkdir -p "$TMP/src"
    tar -xf "$TARBALL" -C "$TMP/src" || die "cannot unpack $TARBALL"
    # git archive has no top folder, GitHub's tarballs have one
    SRC=$(dirname "$(find "$TMP/src" -maxdepth 2 -name fmqmain.cpp | head -1)")
    [[ $SRC != . ]] || die "$TARBALL holds no FlashMQ source (no fmqmain.cpp)"
    echo "source: $TARBALL"
elif [[ -n $GIT_DIR_SRC ]]; then
    git --git-dir="$GIT_DIR_SRC" rev-parse -q --verify "$TAG^{commit}" >/dev/null 2>&1 ||
        git -C "$GIT_DIR_SRC" rev-parse -q --verify "$TAG^{commit}" >/dev/null 2>&1 ||
        die "$GIT_DIR_SRC is not a git repository with $TAG"
    mkdir -p "$TMP/src"
    # a bare repository is its own git dir; a checkout has .git
    gd=$GIT_DIR_SRC; [[ ! -d $GIT_DIR_SRC/.git ]] || gd=$GIT_DIR_SRC/.git
    timeout 300 git --git-dir="$gd" archive "$TAG" | tar -x -C "$TMP/src" || die "git archive $TAG of $GIT_DIR_SRC failed"
    SRC=$TMP/src
    echo "source: $TAG of $GIT_DIR_SRC"
elif [[ -z $SRC ]]; then
    echo "source: git clone --depth 1 --branch $TAG $REPO_URL"
    timeout 300 git clone -q --depth 1 --branch "$TAG" "$REPO_URL" "$TMP/src" ||
        die "git clone of $REPO_URL at $TAG failed (no network? give --src DIR or --tarball FILE)"
    SRC=$TMP/src
else
    echo "source: $SRC"
fi
SRC=$(cd "$SRC" && pwd)
[[ -f $SRC/CMakeLists.txt && -f $SRC/fmqmain.cpp ]] || die "$SRC is not FlashMQ's source (no CMakeLists.txt, fmqmain.cpp)"
version=$(sed -n 's/^project(FlashMQ VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[[ v$version == "$TAG" ]] || echo "warning: the source is FlashMQ ${version:-of unknown version}, not $TAG" >&2

# configure and build, bounded together
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
# a build folder configured for another source folder (a tarball's or clone's temporary one): start it afresh
if [[ -f $BUILD/CMakeCache.txt ]]; then
    home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")
    if [[ $home != "$SRC" ]]; then
        grep -qx 'CMAKE_PROJECT_NAME:STATIC=FlashMQ' "$BUILD/CMakeCache.txt" ||
            die "$BUILD holds another project's build: give --build DIR"
        echo "$BUILD was configured for $home: configuring it afresh"
        rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles" "$BUILD/Makefile" "$BUILD/cmake_install.cmake" "$BUILD/flashmq"
    fi
fi
DEADLINE=$((SECONDS + BOUND_S))
T0=$SECONDS
echo "building FlashMQ $version Release in $BUILD with $JOBS jobs (log: $BUILD/build.log) ..."
# its CMakeLists runs ../.get-os-codename-and-stamp.sh relative to the build folder: harmless when absent
timeout "$BOUND_S" cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$BUILD/build.log" 2>&1 ||
    { tail -20 "$BUILD/build.log" >&2; die "cmake configure failed (see $BUILD/build.log)"; }
left=$((DEADLINE - SECONDS))
((left > 0)) || die "no time left for the build (--bound $BOUND_S)"
timeout "$left" cmake --build "$BUILD" --target flashmq -j "$JOBS" >>"$BUILD/build.log" 2>&1 || {
    rc=$?
    tail -20 "$BUILD/build.log" >&2
    [[ $rc != 124 ]] || die "the build ran past its bound of $BOUND_S s (--bound; the build folder is kept: rerun to continue)"
    die "the build failed (see $BUILD/build.log)"
}
echo "built in $((SECONDS - T0)) s"

mkdir -p "$(dirname "$DEST")"
install -m 0755 "$BUILD/flashmq" "$DEST" || die "cannot install $BUILD/flashmq to $DEST"
"$DEST" --version | head -3
echo "installed: $DEST$( [[ $(command -v flashmq || true) == "$DEST" ]] || echo " (not the flashmq on the PATH: export FLASHMQ_BIN=$DEST)")"
