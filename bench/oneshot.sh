#!/usr/bin/env bash
# One-shot `nearby send` to a peer this host reached before, in milliseconds per command, side by
# side in one run: by name (remembered address tried at once, discovery in parallel), by HOST:PORT
# (no discovery at all: the floor), by name with NEARBY_REMEMBER=0 (discovery first, as before
# remembered addresses), and `avahi-browse -t -r` of the same service type (what a browse costs).
# Rounds take turns; prints the median of each and its ratio to HOST:PORT.
#
#   bench/oneshot.sh [NEARBY] [ROUNDS]      (root; default .build/release/nearby, 10 rounds)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${1:-$ROOT/.build/release/nearby}") ROUNDS=${2:-10}
cd "$ROOT"
source tests/lab/netlab.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
lab_run 1 "$NEARBY" identity --rename bench-recv >/dev/null
lab_bg 1 "$WORK/recv.jsonl" "$NEARBY" advertise --service bn --auto-accept >/dev/null
lab_wait_line "$WORK/recv.jsonl" 'select(.event=="advertising")' 20 >/dev/null
port=$(jq -r 'select(.event=="advertising") | .port' "$WORK/recv.jsonl")
# Reached once, through discovery: now it is remembered.
lab_run 2 "$NEARBY" send bench-recv warm --service bn --timeout 10 >/dev/null 2>&1
declare -A times
# time_ms LABEL CMD...: one run, its milliseconds appended to times[LABEL]; a failure stops the bench.
time_ms() {
    local label=$1 t0; shift
    t0=$(now)
    "$@" >/dev/null 2>&1 || { echo "oneshot: '$label' failed" >&2; exit 1; }
    times[$label]+="$(( ($(now) - t0) / 1000 )) "
}
for ((round = 1; round <= ROUNDS; round++)); do
    time_ms name lab_run 2 "$NEARBY" send bench-recv hi --service bn
    time_ms hostport lab_run 2 "$NEARBY" send "10.99.0.1:$port" hi --service bn
    time_ms discovery lab_run 2 env NEARBY_REMEMBER=0 "$NEARBY" send bench-recv hi --service bn
    time_ms avahi-browse lab_run 2 avahi-browse -t -r -p _bn._tcp
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "${times[hostport]}")
printf '%-34s %8s %8s\n' "one-shot send, $ROUNDS rounds" "median" "÷ H:P"
for label in name hostport discovery avahi-browse; do
    m=$(median "${times[$label]}")
    printf '%-34s %6s ms %8s\n' "$label" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
done
