#!/usr/bin/env bash
# Transfers through faults (issue 41), nearby against scp in the same run on one lab link: the
# sender's interface taken down mid-transfer for each of OUTAGES seconds (5 20 60 by default), then
# up again; and (nearby only: scp has no node to restart) the receiving node SIGKILLed mid-transfer
# and started again at once (another port: discovery finds it). The link is slowed (tbf, RATE) so
# that the cut lands mid-transfer, the same for both tools. Each row prints the time from the
# link's return (or the node's restart) to the file complete, that time minus what the rest of
# the bytes needed at the clean run's rate (the time lost), and the bytes sent twice: the sender's
# interface counted bytes (tx_bytes) beyond what a clean run of the same tool sent.
#
#   NEARBY=path/to/nearby bench/faults.sh [MiB] [RATE]
#       (root; default 256 MiB at 400mbit; NEARBY default .build-release/release/nearby;
#        OUTAGES="5 20 60"; CUT=30 (percent of the file on the receiver when the cut comes))
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIB=${1:-256} RATE=${2:-400mbit}
OUTAGES=${OUTAGES:-5 20 60} CUT=${CUT:-30}
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build-release/release/nearby}")
[[ -x $NEARBY ]] || { echo "faults: no nearby at $NEARBY" >&2; exit 2; }
cd "$ROOT"
source tests/lab/netlab.sh
source bench/sshd.sh

WORK=$(mktemp -d /dev/shm/nbfaults.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
mkdir -p "$WORK/src" "$WORK/dst" "$WORK/ssh"
BYTES=$((MIB << 20))
head -c "$BYTES" /dev/urandom >"$WORK/src/data.bin"
H1=$(lab_addr 1)
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }
tx() { lab_run 2 cat /sys/class/net/nb0/statistics/tx_bytes; }
# What has arrived on h1 so far (scp's file, or nearby's hidden partial file).
arrived() { find "$WORK/dst" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
until_arrived() { while (( $(arrived) < $1 )); do sleep 0.05; done; }
check() { cmp -s "$WORK/src/data.bin" "$WORK/dst/data.bin" || { echo "faults: $1 delivered different bytes" >&2; exit 1; }; rm -f "$WORK/dst/data.bin"; }
lab_run 2 tc qdisc replace dev nb0 root tbf rate "$RATE" burst 256kb latency 300ms

# The receivers: a node on h1 that takes files, and sshd on h1.
lab_run 1 "$NEARBY" identity --rename faults-recv >/dev/null
NODE_LOG=$WORK/node.jsonl
start_node() {
    lab_bg 1 "$NODE_LOG" "$NEARBY" advertise --service faults --auto-accept --save-dir "$WORK/dst" >/dev/null
    NODE=$LAB_PID
    lab_wait_line "$NODE_LOG" 'select(.event=="advertising")' 20 >/dev/null
}
start_node
lab_sshd 1 "$WORK/ssh"

# start TOOL: the transfer in the background (PID in SENDER).
start() {
    case $1 in
    nearby) lab_bg 2 "$WORK/send.jsonl" "$NEARBY" send-file faults-recv "$WORK/src/data.bin" --service faults --retry-for 300 >/dev/null ;;
    scp) lab_bg 2 "$WORK/scp.out" scp "${SCP_OPTIONS[@]}" "$WORK/src/data.bin" "root@$H1:$WORK/dst/data.bin" >/dev/null ;;
    esac
    SENDER=$LAB_PID
}
finish() { lab_wait_pid "$SENDER" 900 >/dev/null || { echo "faults: $1 failed" >&2; cat "$WORK/send.jsonl.err" "$WORK/scp.out.err" 2>/dev/null >&2; exit 1; }; }

declare -A CLEAN_MS=() CLEAN_TX=()
clean() { # TOOL
    local t0 x0
    x0=$(tx); t0=$(now_ms)
    start "$1"; finish "$1 (clean)"
    CLEAN_MS[$1]=$(( $(now_ms) - t0 )) CLEAN_TX[$1]=$(( $(tx) - x0 ))
    check "$1 (clean)"
}
# row TOOL FAULT T_BACK X0 CUT_BYTES: after the fault, wait for the end and print the row.
row() {
    local tool=$1 fault=$2 back=$3 x0=$4 at=$5 done_ms left_ms extra
    finish "$tool ($fault)"
    done_ms=$(( $(now_ms) - back ))
    # What the rest of the file needed at the clean run's pace.
    left_ms=$(awk -v b="$BYTES" -v a="$at" -v ms="${CLEAN_MS[$tool]}" 'BEGIN { printf "%d", (b - a) / b * ms }')
    extra=$(( $(tx) - x0 - CLEAN_TX[$tool] ))
    check "$tool ($fault)"
    printf '%-8s %-22s %9d ms %9d ms %10.1f MB\n' "$tool" "$fault" "$done_ms" $((done_ms - left_ms)) "$(awk -v e="$extra" 'BEGIN { print (e > 0 ? e : 0) / 1e6 }')"
}
outage() { # TOOL SECONDS
    local x0 at back
    x0=$(tx)
    start "$1"
    until_arrived $((BYTES * CUT / 100)); at=$(arrived)
    lab_run 2 ip link set nb0 down
    sleep "$2"
    lab_run 2 ip link set nb0 up; back=$(now_ms)
    row "$1" "link down $2 s" "$back" "$x0" "$at"
}
restart() {
    local x0 at back
    x0=$(tx)
    start nearby
    until_arrived $((BYTES * CUT / 100)); at=$(arrived)
    kill -KILL "$NODE"; lab_wait_pid "$NODE" 10 >/dev/null || true
    mv "$NODE_LOG" "$NODE_LOG.1"
    start_node; back=$(now_ms)
    row nearby "receiver restarted" "$back" "$x0" "$at"
}

printf 'faults: %d MiB at %s, cut at %d%%, nearby %s\n' "$MIB" "$RATE" "$CUT" "$NEARBY"
clean nearby; clean scp
printf 'clean:   nearby %d ms (%.1f MB on the wire), scp %d ms (%.1f MB)\n' "${CLEAN_MS[nearby]}" "$(awk -v b="${CLEAN_TX[nearby]}" 'BEGIN { print b / 1e6 }')" \
    "${CLEAN_MS[scp]}" "$(awk -v b="${CLEAN_TX[scp]}" 'BEGIN { print b / 1e6 }')"
printf '%-8s %-22s %12s %12s %13s\n' tool fault "back→done" "time lost" "sent twice"
for seconds in $OUTAGES; do
    outage nearby "$seconds"
    outage scp "$seconds"
done
restart
