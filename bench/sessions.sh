#!/usr/bin/env bash
# Sessions against raw TCP, in one run on the same lab link (two hosts, each with its own avahi):
# invite -> connected (discovery included, by name to a remembered address, and excluded with HOST:PORT), message round trip p50/p99
# and echoed small-message throughput between two nodes (64-byte messages over TLS), next to a raw
# TCP connect and a raw TCP ping-pong of the same size (4-byte length + 64 bytes, TCP_NODELAY).
# nearby and raw TCP take turns, ROUNDS times; the medians are printed, with each round's values:
# on a noisy machine the raw TCP round trip alone moves by half between two runs a minute apart.
#
#   bench/sessions.sh [ROUND_TRIPS]    (root; default 2000; ROUNDS=3; builds nearby-bench in release mode)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-2000}
ROUNDS=${ROUNDS:-3}
cd "$ROOT"
swift build -c release --product nearby-bench >/dev/null
swift build -c release --product nearby >/dev/null
BENCH=$(swift build -c release --show-bin-path)/nearby-bench
NEARBY=$(swift build -c release --show-bin-path)/nearby
LINES=${LINES_COUNT:-200000}
source tests/lab/netlab.sh

RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT   # set before lab_up, which chains its own teardown onto it
lab_up 2 >/dev/null
lab_bg 1 "$LAB_DIR/echo.txt" "$BENCH" echo --service sbench >/dev/null
lab_bg 1 "$LAB_DIR/tcp-echo.txt" "$BENCH" tcp-echo 47001 >/dev/null
for _ in $(seq 100); do grep -q ready "$LAB_DIR/echo.txt" 2>/dev/null && grep -q ready "$LAB_DIR/tcp-echo.txt" 2>/dev/null && break; sleep 0.1; done
sleep 1  # let the advertisement settle, so "discovery included" measures a browse, not avahi's probing

for round in $(seq "$ROUNDS"); do
    lab_run 2 "$BENCH" ping --service sbench bench-echo "$N" >"$RESULTS/nearby.$round.txt"
    lab_run 2 "$BENCH" tcp-ping "$(lab_addr 1)" 47001 "$N" >"$RESULTS/tcp.$round.txt"
done

# `send --lines` through a running node: h2's node in session with h1's, $LINES lines from a pipe;
# the clock stops when h1 has printed the last one as a `message` event.
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
lab_run 1 "$NEARBY" identity --rename lines-recv >/dev/null
lab_bg 1 "$RESULTS/recv.jsonl" "$NEARBY" advertise --service sblines --auto-accept >/dev/null
lab_bg 2 "$RESULTS/send-node.jsonl" "$NEARBY" advertise --service sblines --name lines-send >/dev/null
lab_wait_line "$RESULTS/recv.jsonl" 'select(.event=="advertising")' 10 >/dev/null
lab_wait_line "$RESULTS/send-node.jsonl" 'select(.event=="advertising")' 10 >/dev/null
lab_run 2 "$NEARBY" invite lines-recv --service sblines >/dev/null
seq "$LINES" >"$RESULTS/lines.txt"
lines_rates=""
for round in $(seq "$ROUNDS"); do
    t0=$(now)
    lab_run 2 "$NEARBY" send --lines lines-recv --service sblines <"$RESULTS/lines.txt" >/dev/null
    until [[ $(grep -c '"event":"message"' "$RESULTS/recv.jsonl") -ge $((LINES * round)) ]]; do
        (( $(now) - t0 < 120000000 )) || { echo "bench: only $(grep -c '"event":"message"' "$RESULTS/recv.jsonl") of $((LINES * round)) lines arrived" >&2; exit 1; }
        sleep 0.02
    done
    lines_rates+="$(awk -v n="$LINES" -v us="$(( $(now) - t0 ))" 'BEGIN { printf "%.0f", n / (us / 1e6) }') "
done
lab_down

# values KIND KEY: one value per round, in order; median VALUES...: the middle one.
values() { for round in $(seq "$ROUNDS"); do awk -v k="$2" '$1==k {print $2}' "$RESULTS/$1.$round.txt"; done | xargs; }
median() { tr ' ' '\n' <<<"$*" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
row() { # label key-nearby key-tcp unit
    local a b
    a=$(values nearby "$2"); b=${3:+$(values tcp "$3")}
    awk -v l="$1" -v a="$(median $a)" -v b="$(median $b)" -v u="$4" -v ra="$a" -v rb="$b" 'BEGIN {
        if (b == "") printf "%-44s %12.2f %12s %-9s %9s   (%s)\n", l, a, "-", u, "", ra;
        else printf "%-44s %12.2f %12.2f %-9s x%-8.2f (%s | %s)\n", l, a, b, u, (u == "msg/s" ? b / a : a / b), ra, rb }'
}
printf '%-44s %12s %12s %-9s %-9s  %s\n' "sessions, $N round trips, median of $ROUNDS" "nearby" "raw TCP" "" "" "(each round: nearby | raw TCP)"
row "invite -> connected, discovery included" invite_connected_with_discovery_p50 "" "ms (p50)"
row "invite -> connected, by name, remembered" invite_connected_remembered_p50 "" "ms (p50)"
row "invite -> connected, HOST:PORT / TCP connect" invite_connected_direct_p50 tcp_connect_p50 "ms (p50)"
row "message round trip p50" rtt_p50 rtt_p50 "ms"
row "message round trip p99" rtt_p99 rtt_p99 "ms"
row "echoed 64-byte messages" echoed_msgs_per_s echoed_msgs_per_s "msg/s"
awk -v n="$LINES" -v r="$(median $lines_rates)" -v rs="$lines_rates" 'BEGIN { printf "%-44s %12.0f %12s %-9s %9s   (%s; target 50,000)\n", "send --lines through a running node, " n, r, "-", "lines/s", "", substr(rs, 1, length(rs) - 1) }'
echo "(xN: how many times slower nearby is than raw TCP, from the medians)"
