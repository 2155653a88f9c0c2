# Sourced by the bench scripts that report CPU per broker thread (thread-cpu.sh, scaling.sh).
#
# thread_ticks PID: one line per thread of PID, "tid name ticks" (utime + stime in clock ticks; spaces in the
# name become '_'). Never fails: a process or thread that ended meanwhile (a JIT compiler thread comes and goes)
# leaves no line, so a caller under `set -e` goes on.
thread_ticks() {
    local stat
    for stat in /proc/"$1"/task/*/stat; do
        # the name is in parentheses and may hold spaces; the fields after it are space-separated
        { sed -E 's/^([0-9]+) \((.*)\) (.*)$/\1|\2|\3/' "$stat" 2>/dev/null || true; } | awk -F'|' '{ split($3, f, " ");
            gsub(/ /, "_", $2); print $1, $2, f[12] + f[13] }'
    done | LC_ALL=C sort -k1,1
}

# thread_cpu BEFORE AFTER: "name cpu_s" per thread that used at least 0.01 s between the two thread_ticks
# snapshots, busiest first (a thread is matched by its tid, so threads sharing a name are told apart)
thread_cpu() {
    local hz
    hz=$(getconf CLK_TCK)
    LC_ALL=C join <(echo "$1") <(echo "$2") | awk -v hz="$hz" '{ s = ($5 - $3) / hz; if (s >= 0.01) printf "%s %.2f\n", $2, s }' |
        sort -k2,2 -n -r
}
