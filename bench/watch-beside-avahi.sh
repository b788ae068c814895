#!/usr/bin/env bash
# `nearby watch` beside the host's daemon under a flood (issue 60): h3 floods the link with RATE
# mDNS packets a second (tests/e2e/watch_flood_peer.py: NSEC answers, services, TXT and questions
# in turn) while h2 sends legacy unicast queries for h1.local to h1's avahi-daemon, one every 50 ms
# (tests/e2e/watch_flood_peer.py probe), and counts those avahi answered within 1 s. Each round
# runs it twice, with watch off and then with `nearby watch --interface nb0` on h1 (at a terminal,
# a pty, or MODE=json to a file), and prints avahi's answers side by side, their ratio in the same
# round, watch's CPU, and what it decoded, counted without decoding and what the kernel dropped.
#
#   bench/watch-beside-avahi.sh [SECONDS] [RATE] [ROUNDS]
#       (root; default 15 s at 20000/s, 1 round; MODE=tty|json, KIND=mixed|nsec|service|txt,
#        NEARBY=path, default .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
DURATION=${1:-15}
RATE=${2:-20000}
ROUNDS=${3:-1}
MODE=${MODE:-tty}
KIND=${KIND:-mixed}
EVERY=0.05
PEER=$ROOT/tests/e2e/watch_flood_peer.py
source "$ROOT/tests/lab/netlab.sh"

lab_up 3 >/dev/null
TICK=$(getconf CLK_TCK)
cpu_ticks() { local stat; read -r stat <"/proc/$1/stat"; stat=${stat##*) }; local f; read -r -a f <<<"$stat"; echo $((f[11] + f[12])); }
probes=$(awk -v s="$DURATION" -v e="$EVERY" 'BEGIN { printf "%d", s / e }')

# flood_and_probe — the flood from h3 and, during it, the probes from h2; prints the probe's JSON.
flood_and_probe() {
    lab_bg 3 "$LAB_DIR/flood.json" python3 "$PEER" flood --kind "$KIND" --names 256 --rate "$RATE" --seconds "$((DURATION + 2))" >/dev/null
    local flood=$LAB_PID
    sleep 1
    lab_run 2 python3 "$PEER" probe --to 10.99.0.1 --name h1.local --count "$probes" --every "$EVERY" --wait 1
    lab_wait_pid "$flood" 30 >/dev/null || true
}

# watch_pid PID — the $NEARBY process at or under PID (pty_run.py runs it as its child).
watch_pid() {
    local p
    for p in "$1" $(pgrep -P "$1"); do
        [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$NEARBY" ]] && { echo "$p"; return 0; }
    done
    return 1
}

echo "flood: $RATE mDNS packets/s asked from h3 ($KIND), $probes unicast probes for h1.local to h1's avahi-daemon from h2 (1 every ${EVERY}s, answered within 1 s); watch: $MODE; $(nproc) cores shared with the lab's daemons; $NEARBY"
printf '%-6s %-10s %9s %8s %9s %6s %10s %9s %9s %13s\n' round watch "flood/s" probes answered ratio "watch CPU" decoded skimmed "kernel drops"
flood_rate() { jq -r '(.sent / .seconds | floor)' "$LAB_DIR/flood.json"; }
for ((round = 1; round <= ROUNDS; round++)); do
    off=$(flood_and_probe)
    printf '%-6s %-10s %9s %8s %9s %6s %10s %9s %9s %13s\n' "$round" off "$(flood_rate)" "$(jq .sent <<<"$off")" "$(jq .answered <<<"$off")" 1.00 - - - -

    out=$LAB_DIR/watch-$round.out
    if [[ $MODE == json ]]; then
        lab_bg 1 "$out" "$NEARBY" watch --json --interface nb0 >/dev/null
    else
        lab_bg 1 "$out" python3 "$ROOT/tests/e2e/pty_run.py" --columns 160 -- "$NEARBY" watch --interface nb0 >/dev/null
    fi
    runner=$LAB_PID
    for ((i = 0; i < 100; i++)); do grep -q -a -e '"event":"watching"' -e HOSTS "$out" 2>/dev/null && break; sleep 0.1; done
    watch=$(watch_pid "$runner")
    cpu0=$(cpu_ticks "$watch") t0=${EPOCHREALTIME/[.,]/}
    on=$(flood_and_probe)
    cpu1=$(cpu_ticks "$watch") t1=${EPOCHREALTIME/[.,]/}
    kill -INT "$watch"
    lab_wait_pid "$runner" 20 >/dev/null || true
    if [[ $MODE == json ]]; then
        summary=$(jq -c 'select(.event=="summary")' "$out")
        packets=$(jq .packets <<<"$summary") skimmed=$(jq '.skimmed // 0' <<<"$summary") dropped=$(jq .dropped <<<"$summary")
    else
        words=$(tr -d '\r' <"$out" | grep -a -o '^[0-9]* packets ([0-9]* malformed[^)]*)' | tail -n 1)
        packets=${words%% *}
        skimmed=$(grep -o '[0-9]* counted, not decoded' <<<"$words" | cut -d' ' -f1 || true); skimmed=${skimmed:-0}
        dropped=$(grep -o '[0-9]* dropped by the kernel' <<<"$words" | cut -d' ' -f1 || true); dropped=${dropped:-0}
    fi
    cpu=$(awk -v t=$((cpu1 - cpu0)) -v k="$TICK" -v e=$(((t1 - t0) / 1000)) 'BEGIN { printf "%.0f %%", 100 * t / k / (e / 1000) }')
    ratio=$(awk -v a="$(jq .answered <<<"$on")" -v b="$(jq .answered <<<"$off")" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
    printf '%-6s %-10s %9s %8s %9s %6s %10s %9s %9s %13s\n' "$round" on "$(flood_rate)" "$(jq .sent <<<"$on")" "$(jq .answered <<<"$on")" "$ratio" "$cpu" \
        "$((packets - skimmed))" "$skimmed" "$dropped"
done
