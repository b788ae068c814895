#!/usr/bin/env bash
# Two builds of nearby side by side, in turns, on the same lab link: before and after a change to
# the data path. Each round runs A then B for a stream through a node already running on the
# sender, a one-shot stream and a send-file, 1 GiB by default, to a file in RAM; the bytes are
# checked. Then messages: `send --lines` of MSGS 64-byte lines (100,000 by default), in messages a
# second until the receiving node has printed every one. Prints MB/s per round and the ratio B/A, so a noisy machine still gives a fair answer.
# With PERF=DIR, each process also runs under `perf record -g` (files in DIR/<build>-<path>-*.data).
#
# A goes first in odd rounds, B in even ones. PATHS picks rows (node stream file lines), e.g.
# PATHS=lines MSGS=200000 bench/ab.sh A B 1 6 for the messages alone.
#
#   bench/ab.sh NEARBY_A NEARBY_B [MiB] [ROUNDS]      (root; e.g. a copy of last week's build and .build/release/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=$(readlink -f "$1") B=$(readlink -f "$2") MIB=${3:-1024} ROUNDS=${4:-2}
cd "$ROOT"
source tests/lab/netlab.sh

WORK=$(mktemp -d /dev/shm/nbab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
mkdir -p "$WORK/dst"
head -c $((MIB << 20)) /dev/urandom >"$WORK/data.bin"
MSGS=${MSGS:-100000}
for ((i = 0; i < MSGS; i++)); do printf '%063d\n' "$i"; done >"$WORK/lines.txt"
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
perf_of() { [[ -z ${PERF:-} ]] || echo perf record -F 499 -g -o "$PERF/$1.data"; }
rate() { echo $(( (MIB << 20) / ($(now) - $1) )); }
check() { cmp -s "$WORK/data.bin" "$1" || { echo "ab: $2 delivered different bytes" >&2; exit 1; }; rm -f "$1"; }

# run BUILD-LABEL NEARBY PATH: prints MB/s for one transfer.
run() {
    local label=$1 nearby=$2 path=$3 t0 receiver node=
    lab_run 1 "$nearby" identity --rename ab-recv >/dev/null
    if [[ $path == lines ]]; then
        lab_bg 1 "$WORK/msgs.jsonl" $(perf_of "$label-lines-recv") "$nearby" advertise --service ab --auto-accept >/dev/null
        receiver=$LAB_PID
        lab_wait_line "$WORK/msgs.jsonl" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
        t0=$(now)
        lab_run 2 $(perf_of "$label-lines-send") "$nearby" send --lines ab-recv --service ab <"$WORK/lines.txt" >/dev/null 2>&1
        local deadline=$(( $(now) + 120000000 ))
        until (( $(grep -c '"event":"message"' "$WORK/msgs.jsonl") >= MSGS )); do
            (( $(now) < deadline )) || { echo "ab: $label lost messages" >&2; exit 1; }
            sleep 0.05
        done
        echo $(( MSGS * 1000000 / ($(now) - t0) ))
        kill -INT "$receiver"; lab_wait_pid "$receiver" 20 >/dev/null || true
        rm -f "$WORK/msgs.jsonl"
        return
    fi
    if [[ $path == file ]]; then
        lab_bg 1 "$WORK/recv.jsonl" $(perf_of "$label-file-recv") "$nearby" advertise --service ab --auto-accept --save-dir "$WORK/dst" >/dev/null
        receiver=$LAB_PID
        lab_wait_line "$WORK/recv.jsonl" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
        t0=$(now)
        (cd "$WORK" && lab_run 2 $(perf_of "$label-file-send") "$nearby" send-file ab-recv data.bin --service ab >/dev/null 2>&1)
        rate "$t0"
        kill -INT "$receiver"; lab_wait_pid "$receiver" 20 >/dev/null || true
        check "$WORK/dst/data.bin" "$label send-file"
        return
    fi
    lab_bg 1 "$WORK/dst/out.bin" $(perf_of "$label-$path-recv") "$nearby" stream --listen --service ab >/dev/null
    receiver=$LAB_PID
    lab_wait_line "$WORK/dst/out.bin.err" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
    if [[ $path == node ]]; then
        lab_bg 2 "$WORK/node.jsonl" $(perf_of "$label-node-node") "$nearby" advertise --service ab --name ab-send >/dev/null
        node=$LAB_PID
        lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 20 >/dev/null
    fi
    t0=$(now)
    if [[ $path == node ]]; then
        # Through the node, stdin is a pipe (as from `tar c |`): the node reads it itself when the
        # client can hand it over (SCM_RIGHTS), else the client copies it over the control socket.
        cat "$WORK/data.bin" | lab_run 2 $(perf_of "$label-$path-send") "$nearby" stream ab-recv --service ab >/dev/null 2>/dev/null
    else
        lab_run 2 $(perf_of "$label-$path-send") "$nearby" stream ab-recv --service ab <"$WORK/data.bin" >/dev/null 2>/dev/null
    fi
    lab_wait_pid "$receiver" 60 >/dev/null || true
    rate "$t0"
    [[ -z $node ]] || { kill -INT "$node"; lab_wait_pid "$node" 20 >/dev/null || true; }
    check "$WORK/dst/out.bin" "$label $path"
}

printf '%-40s %8s %8s %8s\n' "$MIB MiB, h2 -> h1 (MB/s)" "A" "B" "B/A"
for round in $(seq "$ROUNDS"); do
    for path in ${PATHS:-node stream file lines}; do
        # Who goes first alternates, so a machine warming up or slowing down favours neither.
        if (( round % 2 )); then a=$(run A "$A" "$path") b=$(run B "$B" "$path"); else b=$(run B "$B" "$path") a=$(run A "$A" "$path"); fi
        label="round $round: $(case $path in node) echo "stream through a running node";; stream) echo "one-shot stream";; file) echo "send-file";; lines) echo "send --lines (messages/s)";; esac)"
        printf '%-40s %8s %8s %8s\n' "$label" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
    done
done
lab_down
