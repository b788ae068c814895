#!/usr/bin/env bash
# Discovery latency: time from starting an advertiser on h1 to the peer being reported (resolved,
# with addresses) by a browser already running on h2, for nearby (advertise → browse) and, in the
# same run on the same hosts, for Avahi's own tools (avahi-publish → avahi-browse -r). Each trial
# uses a fresh service type so no cache helps; the order alternates between trials. Both browsers'
# lines are timestamped the same way (a bash reader on their stdout), so the comparison is fair.
#
#   bench/discovery.sh [TRIALS]      (root; default 10 trials; NEARBY=path, default .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
TRIALS=${1:-10}
source "$ROOT/tests/lab/netlab.sh"

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
# Stamp every line of stdin with the time it was read (µs).
STAMP='while IFS= read -r line; do printf "%s %s\n" "${EPOCHREALTIME/[.,]/}" "$line"; done'

# wait_for FILE PATTERN: the stamp of the first line matching PATTERN (within 10 s), else fail.
wait_for() {
    local deadline=$(( $(now_us) + 10000000 )) stamp
    while (( $(now_us) < deadline )); do
        stamp=$(grep -m1 -- "$2" "$1" 2>/dev/null | cut -d' ' -f1) || true
        [[ -n $stamp ]] && { echo "$stamp"; return 0; }
        sleep 0.02
    done
    echo "bench: timed out waiting for '$2' in $1" >&2; return 1
}

trial_nearby() { # prints the latency in ms
    local service=$1 out=$LAB_DIR/nb-$1.txt t0 t1 adv
    lab_bg 2 /dev/null bash -c "'$NEARBY' browse --service $service | $STAMP > '$out'" >/dev/null
    wait_for "$out" '"event":"browsing"' >/dev/null
    t0=$(now_us)
    lab_bg 1 /dev/null "$NEARBY" advertise --service "$service" >/dev/null; adv=$LAB_PID
    t1=$(wait_for "$out" '"event":"found"')
    kill -INT "$adv"; lab_wait_pid "$adv" 5 >/dev/null || true
    pkill -INT -f "browse --service $service" || true
    echo $(( (t1 - t0) / 1000 ))
}

trial_avahi() {
    local service=$1 out=$LAB_DIR/av-$1.txt t0 t1 pub
    lab_bg 2 /dev/null bash -c "stdbuf -oL avahi-browse -rp _$service._tcp | $STAMP > '$out'" >/dev/null
    sleep 0.3  # avahi-browse prints nothing until something is found: give it the same head start
    t0=$(now_us)
    lab_bg 1 /dev/null avahi-publish -s "bench-$service" "_$service._tcp" 4242 "_d=bench" >/dev/null; pub=$LAB_PID
    t1=$(wait_for "$out" "^[0-9]* =;")
    kill "$pub"; lab_wait_pid "$pub" 5 >/dev/null || true
    pkill -f "avahi-browse -rp _$service._tcp" || true
    echo $(( (t1 - t0) / 1000 ))
}

stats() { # "median p90" of the numbers given
    printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; i=int(0.9*NR+0.999); if(i<1)i=1; printf "%s %s", m, v[i]}'
}

lab_up 2 >/dev/null
nearby=() avahi=()
for ((i = 1; i <= TRIALS; i++)); do
    if ((i % 2)); then
        nearby+=("$(trial_nearby "bn$i-$$")"); avahi+=("$(trial_avahi "ba$i-$$")")
    else
        avahi+=("$(trial_avahi "ba$i-$$")"); nearby+=("$(trial_nearby "bn$i-$$")")
    fi
    printf 'trial %2d: nearby %4d ms   avahi %4d ms\n' "$i" "${nearby[-1]}" "${avahi[-1]}"
done
lab_down

read -r nm np <<<"$(stats "${nearby[@]}")"
read -r am ap <<<"$(stats "${avahi[@]}")"
echo
printf '%-42s %8s %8s\n' "advertise start -> found on another host" "median" "p90"
printf '%-42s %6s ms %6s ms\n' "nearby advertise -> nearby browse" "$nm" "$np"
printf '%-42s %6s ms %6s ms\n' "avahi-publish -> avahi-browse -r" "$am" "$ap"
awk -v a="$nm" -v b="$am" -v c="$np" -v d="$ap" 'BEGIN {printf "%-42s %8.2f %8.2f\n", "ratio nearby / avahi", a/b, c/d}'
