# End-to-end tests of the caps on links that are not sessions (docs/security.md, "Links before a
# session"): a stranger on host 2 (tests/e2e/rogue_links.py, plaintext, from one address or from
# many extra addresses on host 2) holds invited links or trickles handshakes at a node on host 1,
# while a friend on host 3 (accepted with --accept-from) sends messages. Each test checks the node's
# peak RSS, its descriptors against its limit, and that the friend gets through during and after.
# Sourced by run.sh; uses the helpers of sessions.sh, security.sh and bounds.sh.
# shellcheck shell=bash

# hl_sources N: adds N (at most 16) addresses (10.99.0.201 …) to host 2 and prints them
# comma-separated; hl_drop_sources removes any of them (it runs where the list was made in a subshell).
hl_sources() {
    local n=$1 i list=
    for ((i = 1; i <= n; i++)); do
        ip -n "$(lab_ns 2)" addr add "10.99.0.$((200 + i))/24" dev nb0 2>/dev/null
        list+="${list:+,}10.99.0.$((200 + i))"
    done
    printf '%s' "$list"
}
hl_drop_sources() {
    local i
    for ((i = 1; i <= 16; i++)); do ip -n "$(lab_ns 2)" addr del "10.99.0.$((200 + i))/24" dev nb0 2>/dev/null; done
    return 0
}

# hl_node SERVICE ENV...: a node on host 1 under a 1024-descriptor limit that accepts host 3 only;
# sets NODE (pid), NODE_OUT and PORT.
hl_node() {
    local service=$1 friend; shift
    friend=$(id_of 3) || return 1
    NODE_OUT=$OUT/node.jsonl
    spawn 1 "$NODE_OUT" env "$@" sh -c 'ulimit -n 1024 && exec "$0" "$@" </dev/null' \
        "$NEARBY" advertise --accept-from "$friend" --encryption none --service "$service" || return 1
    NODE=$PID
    PORT=$(sec_port "$NODE_OUT") || return 1
    expect_eq "$(awk '/Max open files/ {print $4}' "/proc/$NODE/limits")" 1024 "the node's descriptor limit"
}

# hl_friend_sends SERVICE TEXT: host 3 sends TEXT to the node (up to 3 tries) and the node gets it.
hl_friend_sends() {
    local try status
    for try in 1 2 3; do
        nb 3 send "$(lab_addr 1):$PORT" "$2" --service "$1" --encryption none --timeout 10 >"$OUT/friend-$try.jsonl" 2>"$OUT/friend-$try.err"
        status=$?
        [[ $status == 0 ]] && break
    done
    printf '    the friend sent "%s" in %s tr%s\n' "$2" "$try" "$([[ $try == 1 ]] && echo y || echo ies)"
    expect_eq "$status" 0 "the friend's send ($2)" || { show "$OUT/friend-$try.jsonl"; return 1; }
    await "$NODE_OUT" "select(.event==\"message\" and .text==\"$2\")" 5 "the node got the friend's message" >/dev/null
}

hl_check_node() {
    local fds
    fds=$(bounds_fds "$NODE")
    still_running "$NODE" "the node" || { show "$NODE_OUT"; return 1; }
    bounds_check_memory "$NODE" || return 1
    (( fds < 900 )) || fail "the node holds $fds descriptors (limit 1024)"
}

hl_rogue_bg() { rogue_bg rogue_links.py 2 "$1" "$(lab_addr 1)" "$PORT" "${@:2}"; }

# hl_invited_flood SERVICE MAX_HELD [SOURCES]: 1,100 invited links (from SOURCES, else host 2's own
# address) while the friend sends during and after; the node keeps at most MAX_HELD of them.
hl_invited_flood() {
    local service=$1 max=$2 rogue
    hl_node "$service" || return 1
    hl_rogue_bg "$OUT/rogue.out" --mode invited --count 1100 ${3:+--sources "$3"} --hold 8 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 90 "the rogue's links" >/dev/null || return 1
    printf '    %s\n' "$(head -1 "$OUT/rogue.out")"
    hl_check_node || return 1
    hl_friend_sends "$service" "during the flood" || return 1
    exits "$rogue" 30 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    # From one address nothing is evicted, so no more than the cap got its invitation out, but for
    # the places the node's own deadlines freed (closed by the node: a loaded machine's flood runs
    # past the 5 s a link has to invite). From many, a newcomer from a lighter address takes the
    # oldest place of the heaviest (closed by the node), so more may have been invited over the run
    # than the cap — but never held at once.
    local invited='true'
    [[ -n ${3:-} ]] || invited=".invited <= $max + .closed_by_node"
    jq -e "select(.attempted) | $invited and .held <= $max" "$OUT/rogue.out" >/dev/null \
        || fail "more than $max links held: $(tail -1 "$OUT/rogue.out")" || return 1
    hl_check_node || return 1
    hl_friend_sends "$service" "after the flood" || return 1
}

# ~1,100 invited links from one address under a 1024-descriptor limit crashed the node (SIGILL in
# libdispatch once descriptors ran out). Now one address holds at most 16 links that are not sessions.
test_hostile_links_invited_flood_from_one_address() {
    trap stop_started RETURN
    hl_invited_flood s-hl-one 16
}

# The same from 16 addresses: at most 128 links that are not sessions in all, and a newcomer (the
# friend) takes the oldest place of the address that holds the most.
test_hostile_links_invited_flood_from_many_addresses() {
    trap 'stop_started; hl_drop_sources' RETURN
    hl_invited_flood s-hl-many 128 "$(hl_sources 16)"
}

# 16 addresses × 64 connections trickling a byte every 0.4 s: nobody holds a place past the
# handshake deadline (3 s here), counted from the connection — preamble, TLS and hello together —
# and the friend still gets in.
test_hostile_links_slow_handshakes_end_at_the_deadline() {
    trap 'stop_started; hl_drop_sources' RETURN
    local rogue sources
    sources=$(hl_sources 16)
    hl_node s-hl-slow NEARBY_HANDSHAKE_DEADLINE=3 || return 1
    hl_rogue_bg "$OUT/rogue.out" --mode slow --count 64 --sources "$sources" --interval 0.4 --hold 12 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 30 "the rogue's connections" >/dev/null || return 1
    hl_friend_sends s-hl-slow "during the trickle" || return 1
    hl_check_node || return 1
    exits "$rogue" 30 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    jq -e 'select(.opened) | .never_closed == 0 and .max_held < 4' "$OUT/rogue.out" >/dev/null \
        || fail "a trickling connection outlived the 3 s deadline: $(tail -1 "$OUT/rogue.out")" || return 1
    hl_friend_sends s-hl-slow "after the trickle" || return 1
}
