#!/usr/bin/env bash
# Wide-area DNS-SD latency across a router (tests/lab/netlab_router.sh: h1 on 10.99.0.0/24, the far
# host on 10.99.1.0/24, BIND 9's named on the router), in one run: nearby (advertise --domain on the
# far host -> found by a browse --domain already running on h1) against BIND's own tools (nsupdate
# on the far host adding the same four records -> dig on h1 seeing the SRV). Each trial uses a fresh
# service type; the order alternates. nearby's times come from its events' "time" fields, the tools'
# from the shell's clock (the same machine clock). The browser polls every NEARBY_DNS_TTL seconds
# (1 here; 5 by default), which bounds how soon it can see a registration.
#
#   bench/widearea.sh [TRIALS]      (root; default 10; NEARBY=path, default .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
TRIALS=${1:-10}
TTL=${NEARBY_DNS_TTL:-1}
ZONE=lab.test
source "$ROOT/tests/lab/netlab.sh"
source "$ROOT/tests/lab/netlab_router.sh"

now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( 10#$t / 1000 )); }
event_ms() { date -d "$(jq -r .time <<<"$1")" +%s%3N; }   # an event's "time" in ms

trial_nearby() { # prints "registered_ms found_ms"
    local service=$1 browse=$LAB_DIR/nb-$1.jsonl adv=$LAB_DIR/adv-$1.jsonl t0 reg found bpid apid
    lab_bg 1 "$browse" env NEARBY_DNS_TTL="$TTL" "$NEARBY" browse --service "$service" --domain $ZONE --dns-server "$LAB_ROUTER_A" >/dev/null; bpid=$LAB_PID
    lab_wait_line "$browse" 'select(.event=="browsing")' 10 >/dev/null
    t0=$(now_ms)
    lab_bg "$LAB_FAR" "$adv" env NEARBY_DNS_TTL="$TTL" "$NEARBY" advertise --service "$service" --domain $ZONE --dns-server "$LAB_ROUTER_B" >/dev/null; apid=$LAB_PID
    reg=$(event_ms "$(lab_wait_line "$adv" 'select(.event=="advertising")' 10)")
    found=$(event_ms "$(lab_wait_line "$browse" 'select(.event=="found")' 20)")
    kill -INT "$apid" "$bpid"; lab_wait_pid "$apid" 5 >/dev/null || true; lab_wait_pid "$bpid" 5 >/dev/null || true
    echo "$(( reg - t0 )) $(( found - t0 ))"
}

trial_tools() { # prints "nsupdate_ms dig_ms"
    local service=$1 t0 t1 t2 name="bench._$1._tcp.$ZONE"
    printf 'server %s\nzone %s\nupdate add _%s._tcp.%s %s PTR %s.\nupdate add %s %s SRV 0 0 4242 far.%s.\nupdate add %s %s TXT "_d=bench" "_nb=2"\nupdate add far.%s %s A 10.99.1.1\nsend\n' \
        "$LAB_ROUTER_B" $ZONE "$service" $ZONE "$TTL" "$name" "$name" "$TTL" $ZONE "$name" "$TTL" $ZONE "$TTL" >"$LAB_DIR/up-$service.txt"
    t0=$(now_ms)
    lab_run "$LAB_FAR" nsupdate -k "$LAB_DIR/named/nearby.key" "$LAB_DIR/up-$service.txt"
    t1=$(now_ms)
    until [[ -n $(lab_run 1 dig +short +time=1 +tries=1 @"$LAB_ROUTER_A" "$name" SRV) ]]; do
        (( $(now_ms) - t0 < 10000 )) || { echo "bench: dig never saw $name" >&2; return 1; }
    done
    t2=$(now_ms)
    printf 'server %s\nzone %s\nupdate delete _%s._tcp.%s PTR %s.\nupdate delete %s\nsend\n' "$LAB_ROUTER_B" $ZONE "$service" $ZONE "$name" "$name" >"$LAB_DIR/del-$service.txt"
    lab_run "$LAB_FAR" nsupdate -k "$LAB_DIR/named/nearby.key" "$LAB_DIR/del-$service.txt"
    echo "$(( t1 - t0 )) $(( t2 - t0 ))"
}

stats() { # "median p90" of the numbers given
    printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; i=int(0.9*NR+0.999); if(i<1)i=1; printf "%s %s", m, v[i]}'
}

lab_up 1 >/dev/null
lab_router_up >/dev/null
lab_named_start $ZONE >/dev/null
install -m 600 "$LAB_DIR/named/nearby.key" "$(_lab_hostdir "$LAB_FAR")/home/dns.key"
reg=() found=() upd=() dig=()
for ((i = 1; i <= TRIALS; i++)); do
    if ((i % 2)); then
        read -r a b <<<"$(trial_nearby "wn$i")"; read -r c d <<<"$(trial_tools "wt$i")"
    else
        read -r c d <<<"$(trial_tools "wt$i")"; read -r a b <<<"$(trial_nearby "wn$i")"
    fi
    reg+=("$a") found+=("$b") upd+=("$c") dig+=("$d")
    printf 'trial %2d: nearby registered %4d ms, found %4d ms   nsupdate %4d ms, dig sees it %4d ms\n' "$i" "$a" "$b" "$c" "$d"
done
lab_down

echo
printf '%-58s %8s %8s\n' "start -> ... across the router (TTL/poll $TTL s)" "median" "p90"
read -r m p <<<"$(stats "${reg[@]}")";   printf '%-58s %6s ms %6s ms\n' "nearby advertise --domain -> registered (advertising)" "$m" "$p"
read -r m p <<<"$(stats "${upd[@]}")";   printf '%-58s %6s ms %6s ms\n' "nsupdate (4 records) -> done" "$m" "$p"
read -r m p <<<"$(stats "${found[@]}")"; printf '%-58s %6s ms %6s ms\n' "nearby advertise --domain -> found by browse --domain" "$m" "$p"
read -r m p <<<"$(stats "${dig[@]}")";   printf '%-58s %6s ms %6s ms\n' "nsupdate -> dig sees the SRV" "$m" "$p"
