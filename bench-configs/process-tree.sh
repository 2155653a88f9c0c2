# Shared by the bench scripts (regression.sh, five-broker-v5.sh, persistence.sh, crash-loss.sh, tls.sh): stopping
# what a script started and nothing else, bounded waits, running a matrix, and installing a missing tool.

descendants() { # every descendant of a pid, deepest first
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null || true); do
        descendants "$child"
        echo "$child"
    done
}

kill_tree() { # SIGTERM a process we started and everything it started, then SIGKILL what is left after 15 s
    local pids i alive p
    pids="$(descendants "$1") $1"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
        alive=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [[ -z $alive ]] && return 0
        sleep 0.5
    done
    # shellcheck disable=SC2086
    kill -KILL $alive 2>/dev/null || true
}

wait_bounded() { # wait for a process we started, at most $2 s (then stop it and its children); $3 names it; returns its exit code
    local pid=$1 deadline=$((SECONDS + $2)) rc
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS > deadline)); then
            echo "$3 ran past its bound of $2 s: stopping it" >&2
            kill_tree "$pid"
            break
        fi
        sleep 1
    done
    if wait "$pid"; then rc=0; else rc=$?; fi
    return $rc
}

warn_if_busy() { # a figure measured on a busy machine is noise: say so before a run
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if awk -v l="$load" 'BEGIN { exit !(l > 0.7) }'; then
        echo "warning: load average $load before the run: the machine is not quiet, figures will be noisy" >&2
    fi
}

run_matrix() { # JAVA LOADTEST_JAR MATRIX_JSON OUT LOG SHOWN_LINES_RE BOUND_S REPORT_SUFFIX: runs the matrix, bounded;
    # sets REPORT to the runner's dated folder (empty when it made none); RUNNING_PID is the runner's while it runs
    local rc
    "$1" -jar "$2" matrix "$3" --out "$4" --quiet > >(tee "$5" | grep --line-buffered -E "$6") 2>&1 &
    RUNNING_PID=$!
    if wait_bounded "$RUNNING_PID" "$7" "the matrix"; then rc=0; else rc=$?; fi
    RUNNING_PID=""
    [[ $rc == 0 ]] || echo "the matrix runner exited with $rc (see $5)" >&2
    REPORT=$(find "$4" -mindepth 1 -maxdepth 1 -type d -name "*-$8" | sort | tail -1)
}

need_package() { # command package: apt-get install the package when the command is missing (INSTALL=0: fail instead)
    command -v "$1" >/dev/null && return 0
    [[ ${INSTALL:-1} == 1 ]] || die "$1 is not installed (apt-get install -y $2)"
    [[ $(id -u) == 0 ]] || die "$1 is not installed and this is not root: apt-get install -y $2"
    echo "installing $2 ..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null ||
        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; } ||
        die "apt-get install $2 failed"
    command -v "$1" >/dev/null || die "$2 installed but $1 not found"
}
