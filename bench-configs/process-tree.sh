# Stopping what a bench script started, and nothing else: sourced by regression.sh and five-broker-v5.sh.

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
