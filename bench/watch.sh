#!/usr/bin/env bash
# `nearby watch` under a flood: h3 sends RATE mDNS answers a second for SECONDS seconds
# (tests/e2e/mdns_peer.py flood); on h1, `watch --json --interface nb0` and, in the same run on the
# same link, tcpdump (the reference) capture them. Prints packets sent, packets each reported, what
# the kernel dropped for each, and watch's peak RSS (VmHWM) and CPU beside tcpdump's.
#
#   bench/watch.sh [SECONDS] [RATE]   (root; default 10 s at 10000/s; NEARBY=path, default .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
DURATION=${1:-10}
RATE=${2:-10000}
source "$ROOT/tests/lab/netlab.sh"

lab_up 3 >/dev/null
TICK=$(getconf CLK_TCK)
cpu_ticks() { local stat; read -r stat <"/proc/$1/stat"; stat=${stat##*) }; local f; read -r -a f <<<"$stat"; echo $((f[11] + f[12])); }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# watch as root here (the bench measures the capture, not the capability; the e2e tests run it as a user).
lab_bg 1 "$LAB_DIR/watch.jsonl" "$NEARBY" watch --json --interface nb0 >/dev/null; WATCH=$LAB_PID
lab_bg 1 "$LAB_DIR/tcpdump.out" tcpdump -n -i nb0 -Z root -B 4096 -w "$LAB_DIR/ref.pcap" udp port 5353 and src host 10.99.0.3 >/dev/null; DUMP=$LAB_PID
for ((i = 0; i < 200; i++)); do
    grep -q '"event":"watching"' "$LAB_DIR/watch.jsonl" 2>/dev/null && grep -q listening "$LAB_DIR/tcpdump.out.err" 2>/dev/null && break
    sleep 0.05
done
watch0=$(cpu_ticks "$WATCH") dump0=$(cpu_ticks "$DUMP") t0=${EPOCHREALTIME/[.,]/}
sent=$(lab_run 3 python3 "$ROOT/tests/e2e/mdns_peer.py" flood --from 10.99.0.3 --rate "$RATE" --seconds "$DURATION")
# Let both drain what is queued (up to 5 s: until watch's count stops growing).
last=-1
for ((i = 0; i < 50; i++)); do
    now=$(grep -c '"source":"10.99.0.3"' "$LAB_DIR/watch.jsonl" || true)
    [[ $now == "$last" ]] && break
    last=$now; sleep 0.1
done
t1=${EPOCHREALTIME/[.,]/}
watch1=$(cpu_ticks "$WATCH") dump1=$(cpu_ticks "$DUMP")
watch_hwm=$(hwm_kb "$WATCH") dump_hwm=$(hwm_kb "$DUMP")
kill -INT "$WATCH" "$DUMP"
lab_wait_pid "$WATCH" 20 || true
lab_wait_pid "$DUMP" 20 || true

elapsed=$(( (t1 - t0) / 1000 ))
seen=$(grep -c '"source":"10.99.0.3"' "$LAB_DIR/watch.jsonl" || true)
summary=$(jq -c 'select(.event=="summary") | {packets, dropped, malformed, findings}' "$LAB_DIR/watch.jsonl")
reference=$(tcpdump -n -r "$LAB_DIR/ref.pcap" 2>/dev/null | wc -l)
dump_drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel/\1/p' "$LAB_DIR/tcpdump.out.err")
percent() { awk -v t="$1" -v e="$2" -v k="$TICK" 'BEGIN { printf "%.0f", 100 * t / k / (e / 1000) }'; }
echo "flood: $(jq -r '"\(.sent) packets in \(.seconds) s"' <<<"$sent") from h3 ($RATE/s asked), $(nproc) cores shared with the lab's daemons"
printf '%-10s %10s %14s %10s %10s\n' "" reported "kernel drops" "peak RSS" "CPU"
printf '%-10s %10s %14s %8s MB %9s%%\n' "watch" "$seen" "$(jq -r .dropped <<<"$summary")" "$(awk -v k="$watch_hwm" 'BEGIN{printf "%.1f", k/1024}')" "$(percent $((watch1 - watch0)) "$elapsed")"
printf '%-10s %10s %14s %8s MB %9s%%\n' "tcpdump" "$reference" "${dump_drops:-?}" "$(awk -v k="$dump_hwm" 'BEGIN{printf "%.1f", k/1024}')" "$(percent $((dump1 - dump0)) "$elapsed")"
echo "watch's summary: $summary"
