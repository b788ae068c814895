#!/usr/bin/env bash
# CPU time per GiB of a stream through a running node, its client's stdin a pipe (as from `tar c |`):
# the sender's node and its client, with their descriptors passed to the node (SCM_RIGHTS) and
# without (NEARBY_PASS_FDS=0: the client copies every byte over the control socket), in turns,
# ROUNDS times, on the same lab link; the listener on the other host (node-less, to a file in RAM)
# is shown apart. CPU from /proc/PID/stat (the node, over the stream) and GNU time (the commands).
#
#   bench/stream-node-cpu.sh NEARBY [MiB] [ROUNDS]      (root; e.g. .build/release/nearby 1024 3)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "$1") MIB=${2:-1024} ROUNDS=${3:-3}
cd "$ROOT"
source tests/lab/netlab.sh

WORK=$(mktemp -d /dev/shm/nbcpu.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
head -c $((MIB << 20)) /dev/urandom >"$WORK/data.bin"
TICKS=$(getconf CLK_TCK)
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
timed() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }
lab_run 1 "$NEARBY" identity --rename cpu-recv >/dev/null

# run PASS: prints "MB/s node-s client-s listener-s" for one stream.
run() {
    local pass=$1 listener node n0 t0 rate node_s
    lab_bg 1 "$WORK/out.bin" /usr/bin/time -f '%U %S' -o "$WORK/listen.time" "$NEARBY" stream --listen --service cpu >/dev/null
    listener=$LAB_PID
    lab_wait_line "$WORK/out.bin.err" 'select(.event=="advertising")' 20 >/dev/null
    lab_bg 2 "$WORK/node.jsonl" "$NEARBY" advertise --service cpu --name cpu-send >/dev/null
    node=$LAB_PID
    lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
    n0=$(ticks "$node") t0=$(now)
    cat "$WORK/data.bin" | lab_run 2 env NEARBY_PASS_FDS="$pass" /usr/bin/time -f '%U %S' -o "$WORK/client.time" \
        "$NEARBY" stream cpu-recv --service cpu >/dev/null 2>/dev/null
    lab_wait_pid "$listener" 60 >/dev/null || true
    rate=$(( (MIB << 20) / ($(now) - t0) ))
    node_s=$(awk -v a="$n0" -v b="$(ticks "$node")" -v t="$TICKS" 'BEGIN { printf "%.2f", (b - a) / t }')
    kill -INT "$node"; lab_wait_pid "$node" 20 >/dev/null || true
    cmp -s "$WORK/data.bin" "$WORK/out.bin" || { echo "stream-node-cpu: different bytes (pass=$pass)" >&2; exit 1; }
    rm -f "$WORK/out.bin" "$WORK/node.jsonl"
    echo "$rate $node_s $(timed "$WORK/client.time") $(timed "$WORK/listen.time")"
}

per_gib() { awk -v s="$1" -v m="$MIB" 'BEGIN { printf "%.2f", s * 1024 / m }'; }
printf '%-28s %8s %10s %10s %14s %12s\n' "$MIB MiB, h2 -> h1" "MB/s" "node CPU-s" "client CPU-s" "node+client/GiB" "listener/GiB"
for round in $(seq "$ROUNDS"); do
    for pass in $( (( round % 2 )) && echo "1 0" || echo "0 1"); do
        read -r rate node client listen < <(run "$pass")
        printf '%-28s %8s %10s %10s %14s %12s\n' "round $round: $( [[ $pass == 1 ]] && echo passed || echo NEARBY_PASS_FDS=0)" \
            "$rate" "$node" "$client" "$(per_gib "$(awk -v a="$node" -v b="$client" 'BEGIN { print a + b }')")" "$(per_gib "$listen")"
    done
done
lab_down
