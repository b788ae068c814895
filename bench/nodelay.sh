#!/usr/bin/env bash
# What asking for TCP_NODELAY at the wrong level cost, in one run on the lab link: two builds of
# nearby (BEFORE: one that asked with `.socketOption(.tcp_nodelay)`, i.e. SO_DEBUG, which only root
# may set; AFTER: one that asks at the TCP level), taking turns, each as root and as the lab's
# ordinary user (tests/lab/as-user). Per round and command, the milliseconds of:
#   oneshot   `nearby send HOST:PORT hi` to a node (connect, TLS, handshake, one message, leave)
#   insession `nearby send NAME hi` through a running node already in session with the receiver
#   connect   `nearby invite HOST:PORT` until its `connected` event (the node stays; then disconnect)
#   lines     `nearby send --lines` of LINES lines through the running node, until the receiver
#             printed the last one
# A build that cannot connect (BEFORE as a user) prints "failed" for its row.
#
#   bench/nodelay.sh BEFORE AFTER [ROUNDS]     (root; ROUNDS=5; LINES=20000)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=$(readlink -f "${1:?usage: bench/nodelay.sh BEFORE AFTER [ROUNDS]}")
AFTER=$(readlink -f "${2:?usage: bench/nodelay.sh BEFORE AFTER [ROUNDS]}")
ROUNDS=${3:-5} LINES=${LINES:-20000}
cd "$ROOT"
source tests/lab/netlab.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
umask 000
lab_up 2 >/dev/null
_lab_ensure_user
chmod 0755 "$WORK"
for bin in "$BEFORE" "$AFTER"; do tests/lab/as-user test -x "$bin" || { echo "nodelay: $LAB_USER cannot run $bin" >&2; exit 2; }; done
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
declare -A times


# One receiving node per (build, who), each with a home of its own on h1; the sender's on h2.
measure() {
    local label=$1 bin=$2 who=$3 tag=$4 t0 port status
    local home1=$WORK/$tag/h1 home2=$WORK/$tag/h2
    mkdir -p "$home1" "$home2" && chmod 0700 "$home1" "$home2"
    local runner=env   # as root: env execs the binary as it is
    if [[ $who == user ]]; then chown -R "$LAB_USER:" "$WORK/$tag"; runner=$ROOT/tests/lab/as-user; fi
    lab_bg 1 "$WORK/$tag/recv.jsonl" env NEARBY_HOME="$home1" HOME="$home1" XDG_RUNTIME_DIR="$home1" \
        "$runner" "$bin" advertise --service bnd --name "recv-$tag" --auto-accept >/dev/null
    local receiver=$LAB_PID
    lab_wait_line "$WORK/$tag/recv.jsonl" 'select(.event=="advertising")' 20 >/dev/null || { echo "nodelay: $label: no node" >&2; return 1; }
    port=$(jq -r 'select(.event=="advertising") | .port' "$WORK/$tag/recv.jsonl")
    local env2=(env NEARBY_HOME="$home2" HOME="$home2" XDG_RUNTIME_DIR="$home2")
    t0=$(now)
    if lab_run 2 "${env2[@]}" "$runner" "$bin" send --service bnd "$(lab_addr 1):$port" hi >/dev/null 2>&1; then
        times[$label/oneshot]+="$(( ($(now) - t0) / 1000 )) "
    else
        times[$label/oneshot]+="failed "; kill -INT "$receiver"; lab_wait_pid "$receiver" 10 >/dev/null; return 0
    fi
    t0=$(now)
    lab_bg 2 "$WORK/$tag/invite.jsonl" "${env2[@]}" "$runner" "$bin" invite --service bnd "$(lab_addr 1):$port" >/dev/null
    local inviter=$LAB_PID
    lab_wait_line "$WORK/$tag/invite.jsonl" 'select(.event=="connected")' 30 >/dev/null
    times[$label/connect]+="$(( ($(now) - t0) / 1000 )) "
    t0=$(now)
    lab_run 2 "${env2[@]}" "$runner" "$bin" send --service bnd "recv-$tag" hi >/dev/null 2>&1
    times[$label/insession]+="$(( ($(now) - t0) / 1000 )) "
    local before
    before=$(grep -c '"event":"message"' "$WORK/$tag/recv.jsonl")
    t0=$(now)
    lab_run 2 "${env2[@]}" "$runner" "$bin" send --lines --service bnd "recv-$tag" <"$WORK/lines.txt" >/dev/null 2>&1
    until (( $(grep -c '"event":"message"' "$WORK/$tag/recv.jsonl") >= before + LINES )); do
        (( $(now) - t0 < 120000000 )) || break
        sleep 0.01
    done
    times[$label/lines]+="$(( ($(now) - t0) / 1000 )) "
    kill -INT "$inviter" "$receiver" 2>/dev/null
    lab_wait_pid "$inviter" 10 >/dev/null; lab_wait_pid "$receiver" 10 >/dev/null
    rm -rf "$WORK/$tag"
}

seq "$LINES" >"$WORK/lines.txt"
for round in $(seq "$ROUNDS"); do
    measure "before/root" "$BEFORE" root "b-r-$round"
    measure "after/root" "$AFTER" root "a-r-$round"
    measure "before/user" "$BEFORE" user "b-u-$round"
    measure "after/user" "$AFTER" user "a-u-$round"
done
lab_down

median() { tr ' ' '\n' <<<"$*" | grep -E '^[0-9]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "failed" }'; }
printf '%-12s %-10s %10s %10s %10s %14s   (ms, median of %s rounds; lines: %s)\n' build as oneshot insession connect lines "$ROUNDS" "$LINES"
for label in before/root after/root before/user after/user; do
    printf '%-12s %-10s' "${label%/*}" "${label#*/}"
    for what in oneshot insession connect lines; do printf ' %10s' "$(median ${times[$label/$what]:-})"; done
    echo
done
