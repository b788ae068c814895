#!/usr/bin/env bash
# A file the receiver already has (issue 47, item 4): `nearby send-file` of one file over one lab
# link, then the same file again, beside `sha256sum` of the same file in the same run. Prints each
# send's time (the whole command: a one-shot node finds the peer, the handshake, the file), the
# bytes the receiver's interface took in during it, and the time of `sha256sum`: the second send
# (and the file itself: file-sent's `seconds`, from the offer to the receiver's confirmation)
# should take about as long as hashing the file (the sender hashes it; the receiver hashed its copy
# just before), not as long as sending it. The sender's link is shaped with tc (as the issue's
# 80 Mbit link) unless SHAPE is empty. Each round sends a fresh file twice, the rows taking turns.
#
#   bench/there.sh [MiB]      (root; default 57; ROUNDS=3; SHAPE=80mbit; NEARBY=path to a build,
#                              else it builds nearby in release mode)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIB=${1:-57}
ROUNDS=${ROUNDS:-3}
SHAPE=${SHAPE-80mbit}
cd "$ROOT"
if [[ -z ${NEARBY:-} ]]; then
    swift build -c release --product nearby >/dev/null
    NEARBY=$(swift build -c release --show-bin-path)/nearby
fi
NEARBY=$(readlink -f "$NEARBY")
source tests/lab/netlab.sh

WORK=$(mktemp -d /dev/shm/nbthere.XXXXXX)
chmod 0755 "$WORK"
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
mkdir -p "$WORK/src" "$WORK/dst"

now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
secs() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1e6 }'; }
rx() { lab_run 1 cat "/sys/class/net/$LAB_IFACE/statistics/rx_bytes"; }
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

if [[ -n $SHAPE ]]; then
    ip netns exec "$(lab_ns 2)" tc qdisc add dev "$LAB_IFACE" root tbf rate "$SHAPE" burst 64kb latency 50ms
fi
lab_run 1 "$NEARBY" identity --rename there-recv >/dev/null
lab_bg 1 "$WORK/node.jsonl" "$NEARBY" advertise --service there --auto-accept --save-dir "$WORK/dst" >/dev/null
lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 10 >/dev/null

# send ROUND WHICH: one send-file of data.bin; records its time and the bytes h1 took in.
declare -A US=() RX=() FILE=()
send() {
    local t0 r0 t1 r1
    r0=$(rx); t0=$(now)
    (cd "$WORK/src" && lab_run 2 "$NEARBY" send-file there-recv data.bin --service there >"$WORK/$2.jsonl" 2>"$WORK/$2.err") || { echo "bench: send-file failed ($2)" >&2; cat "$WORK/$2.jsonl" "$WORK/$2.err" >&2; exit 1; }
    t1=$(now); r1=$(rx)
    grep -q "\"event\":\"file-sent\"" "$WORK/$2.jsonl" || { echo "bench: no file-sent ($2)" >&2; cat "$WORK/$2.jsonl" "$WORK/$2.err" >&2; exit 1; }
    US[$2]="${US[$2]:-} $((t1 - t0))"; RX[$2]="${RX[$2]:-} $((r1 - r0))"
    local file; file=$(jq -r 'select(.event=="file-sent") | (.seconds * 1000 | round | tostring) + " " + ((.already_there // false) | tostring)' "$WORK/$2.jsonl")
    FILE[$2]="${FILE[$2]:-} ${file% *}000"
    printf '  round %s, %-6s send: %6s s (the file itself: %s s), %10s bytes into the receiver, already_there: %s\n' "$1" "$2" \
        "$(secs $((t1 - t0)))" "$(secs "${file% *}000")" "$((r1 - r0))" "${file#* }"
}

echo "bench/there.sh: $MIB MiB, link ${SHAPE:-unshaped}, $ROUNDS rounds, $NEARBY"
for (( round = 1; round <= ROUNDS; round++ )); do
    rm -f "$WORK/dst/data.bin"
    head -c $((MIB << 20)) /dev/urandom >"$WORK/src/data.bin"
    send "$round" first
    cmp -s "$WORK/src/data.bin" "$WORK/dst/data.bin" || { echo "bench: the first send delivered other bytes" >&2; exit 1; }
    send "$round" second
    t0=$(now); sha256sum "$WORK/src/data.bin" >/dev/null; t1=$(now)
    US[sha]="${US[sha]:-} $((t1 - t0))"
    printf '  round %s, sha256sum:   %6s s\n' "$round" "$(secs $((t1 - t0)))"
done
echo "median of $ROUNDS: first send $(secs "$(median "${US[first]}")") s ($(median "${RX[first]}") bytes in)," \
    "second send $(secs "$(median "${US[second]}")") s (the file itself $(secs "$(median "${FILE[second]}")") s, $(median "${RX[second]}") bytes in)," \
    "sha256sum $(secs "$(median "${US[sha]}")") s"
