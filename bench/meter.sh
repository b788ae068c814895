#!/usr/bin/env bash
# meter.sh OUT CMD...: runs CMD, then appends to OUT the CPU ticks it and its children used (user +
# system, from this shell's cutime/cstime), their read- and write-class syscalls (syscr, syscw: a
# reaped child's /proc/PID/io is added to its parent's) and their page faults (cminflt). CMD's exit
# status is kept.
out=$1
shift
rc=0
"$@" || rc=$?
read -ra stat </proc/$$/stat
read -r _ syscr < <(grep '^syscr' /proc/$$/io)
read -r _ syscw < <(grep '^syscw' /proc/$$/io)
echo "$((stat[15] + stat[16])) $syscr $syscw ${stat[10]}" >>"$out"
exit "$rc"
