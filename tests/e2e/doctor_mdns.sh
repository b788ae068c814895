# `nearby doctor`'s mDNS checks (issue 49, item 4), each fault made in the lab with real daemons and
# `nearby` run as the ordinary user: a second mDNS responder beside avahi-daemon (mdns-stacks),
# multicast dropped on the switch (multicast-path), an advertised address nobody can reach
# (addresses), a host-name conflict and another host answering for the peer (conflicts), a peer
# whose host died (ghost).
# Helpers of doctor.sh (doctor, check_is), sessions.sh (spawn, start_node, stop_started, nb).
# shellcheck shell=bash

# dm_pid_of K NAME: the pid of host K's NAME daemon (avahi, dbus), as the lab recorded it.
dm_pid_of() { local pid; read -r pid <"$(_lab_hostdir "$1")/$2.pid" && printf '%s' "$pid"; }

# dm_no_check_says WORDS...: no check's detail or hint says any of WORDS.
dm_no_check_says() {
    local words
    for words in "$@"; do
        [[ $(count_json "$OUT/doctor.jsonl" "select(.event==\"check\" and (((.detail // \"\") + (.hint // \"\"))|contains(\"$words\")))") == 0 ]] \
            || { fail "a check says '$words': $(grep -F "$words" "$OUT/doctor.jsonl")"; return 1; }
    done
}

# A second responder on h1 (python, as python-zeroconf binds: 0.0.0.0:5353 with SO_REUSEPORT,
# joined to 224.0.0.251) beside h1's avahi-daemon. Both run as root: the ordinary user cannot read
# their /proc/PID/fd, yet the check fails, counts the sockets and names avahi-daemon; as root it
# names both; a responder of the user's own is named as the user.
test_doctor_mdns_a_second_responder_on_this_host() {
    trap 'stop_started' RETURN
    local avahi python
    avahi=$(dm_pid_of 1 avahi) || return 1
    doctor 1
    check_is mdns-stacks ok "IPv4: 1 socket" || return 1
    spawn 1 "$OUT/second.txt" /usr/bin/python3 "$ROOT/tests/e2e/second_responder.py" "$(lab_addr 1)" 120 || return 1; python=$PID
    lab_wait_line "$OUT/second.txt" '. == "bound"' 10 >/dev/null 2>&1 || grep -q bound "$OUT/second.txt" \
        || { fail "the second responder did not bind 5353"; show "$OUT/second.txt"; return 1; }
    doctor 1
    expect_eq "$STATUS" 1 "doctor exit status with two mDNS responders" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is mdns-stacks fail "more than one mDNS responder on this host (IPv4)" || return 1
    check_is mdns-stacks fail "IPv4: 2 sockets of uid 0 (root) whose process this user cannot see; responders of that user in this network: avahi-daemon pid $avahi" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="mdns-stacks" and (.hint|contains("sudo ss -lupn sport = :5353")))' "how to name them all" || return 1
    # No other host's avahi-daemon is named (every lab host shares the machine's /proc).
    local other
    for other in 2 3; do
        ! grep -q "avahi-daemon pid $(dm_pid_of "$other" avahi)[^0-9]" "$OUT/doctor.jsonl" || { fail "h$other's avahi-daemon named on h1"; return 1; }
    done
    DOCTOR_AS=root doctor 1
    check_is mdns-stacks fail "IPv4: avahi-daemon pid $avahi and python3 pid $python" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="mdns-stacks" and (.hint|contains("python3 binds 5353 beside avahi-daemon")))' "the hint" || return 1
    stop_started
    # The same responder run by this user: the user reads its own /proc/PID/fd and names it.
    spawn 1 "$OUT/second-user.txt" "$ROOT/tests/lab/as-user" /usr/bin/python3 "$ROOT/tests/e2e/second_responder.py" "$(lab_addr 1)" 120 || return 1; python=$PID
    lab_wait_line "$OUT/second-user.txt" '. == "bound"' 10 >/dev/null 2>&1 || grep -q bound "$OUT/second-user.txt" \
        || { fail "the user's responder did not bind 5353"; show "$OUT/second-user.txt"; return 1; }
    doctor 1
    check_is mdns-stacks fail "python3 pid $python and 1 socket of uid 0 (root)" || return 1
    check_is mdns-stacks fail "avahi-daemon pid $avahi" || return 1
}

# dm_drop_multicast / dm_pass_multicast: the switch (the bridge's namespace) drops mDNS multicast
# between its ports, unicast untouched.
dm_drop_multicast() {
    ip netns exec "${LAB_PREFIX}br" nft -f - <<'EOF_NFT' || fail "nft on the bridge"
table bridge dmmcast {
    chain forward {
        type filter hook forward priority 0;
        ip daddr 224.0.0.251 udp dport 5353 drop
        ip6 daddr ff02::fb udp dport 5353 drop
    }
}
EOF_NFT
}
dm_pass_multicast() { ip netns exec "${LAB_PREFIX}br" nft delete table bridge dmmcast 2>/dev/null; }

# Multicast dropped on the switch, both ways, unicast passing: h2's node is up, its responder
# answers a question sent to it, not the one sent by multicast. By address and by name (h1 saw it
# before, so its daemon may still list it from its cache): multicast-path fails in those words,
# and no check says the peer is absent, its daemon is down, or one-way multicast.
test_doctor_mdns_multicast_filtered_on_the_switch() {
    trap 'dm_pass_multicast; stop_started' RETURN
    local id2
    id2=$(id_of 2) || return 1
    NEARBY_PROBE_WAIT=2 start_node 2 dm-mcast --name "Bob" || return 1
    nb 1 browse --service dm-mcast --peer "$id2" --timeout 10 >/dev/null || { fail "h1 does not find h2 before the rule"; return 1; }
    dm_drop_multicast || return 1
    DOCTOR_TIMEOUT=8 doctor 1 --service dm-mcast "$(lab_addr 2):$ADV_PORT"
    expect_eq "$STATUS" 1 "doctor exit status by address" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is multicast-path fail "multicast is filtered between this host and $(lab_addr 2):$ADV_PORT: its responder at $(lab_addr 2) answers a question sent to it directly" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="multicast-path" and (.hint|contains("client (AP) isolation")) and (.hint|contains("IGMP")))' \
        "the hint names isolation and IGMP snooping" || return 1
    check_is connect ok || return 1
    check_is identity ok || return 1
    check_is peer-sees-us skip "multicast-path found multicast filtered" || return 1
    dm_no_check_says "not found" "one-way multicast" "its DNS-SD daemon does not answer" || return 1
    cp "$OUT/doctor.jsonl" "$OUT/by-address.jsonl"
    DOCTOR_TIMEOUT=8 doctor 1 --service dm-mcast "$id2"
    [[ $STATUS != 0 ]] || { fail "doctor by name exits 0"; return 1; }
    check_is multicast-path fail "multicast is filtered between this host and Bob" || return 1
    # Listed from the cache (peer ok), or not listed but its responder lists it: never "absent".
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer" and (.status=="ok" or (.detail|contains("is advertised"))))' \
        "the peer check does not claim Bob is absent" || return 1
    dm_no_check_says "not found" "one-way multicast" || return 1
    # h1's daemon forgets Bob (a restart): not found by multicast, yet not called absent — its
    # node answers at its last-known address and its responder lists it when asked directly.
    lab_stop_avahi 1; lab_start_avahi 1 || { fail "h1's avahi-daemon did not restart"; return 1; }
    DOCTOR_TIMEOUT=8 doctor 1 --service dm-mcast "$id2"
    check_is peer fail "Bob ($id2) is advertised — its responder at $(lab_addr 2) lists it when asked directly — but its announcements do not reach this host by multicast" || return 1
    check_is multicast-path fail "multicast is filtered between this host and Bob" || return 1
    dm_no_check_says "one-way multicast" "is 'nearby advertise" || return 1
}

# An IPv6-only link (h1's and h2's IPv4 addresses taken away, each keeps its link-local fe80::/64):
# doctor asks h2's responder at its link-local address, by the interface its zone names, directly
# and by multicast to ff02::fb — ok; with ff02::fb dropped on the switch, multicast-path fails in
# the same words as over IPv4. (It said `skip`, "doctor asks over IPv4", before.)
test_doctor_mdns_an_ipv6_only_link() {
    trap 'dm_pass_multicast; stop_started; lsv6_restore' RETURN
    local id2 v6
    id2=$(id_of 2) || return 1
    lsv6_only 1 2 || { fail "taking the IPv4 addresses away"; return 1; }
    v6=$(lsv6_addr 2)
    start_node 2 dm-v6 --name "Bob" || return 1
    local deadline=$((SECONDS + 20))
    until nb 1 browse --service dm-v6 --peer "$id2" --timeout 5 2>/dev/null | jq -e 'select(.event=="found")' >/dev/null; do
        (( SECONDS < deadline )) || { fail "h1 never found h2 over IPv6"; return 1; }
    done
    DOCTOR_TIMEOUT=8 doctor 1 --service dm-v6 "$id2"
    check_is multicast-path ok "responder at $v6%$LAB_IFACE answers" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    dm_no_check_says "doctor asks its responder over IPv4" || return 1
    dm_drop_multicast || return 1
    DOCTOR_TIMEOUT=8 doctor 1 --service dm-v6 "$id2"
    check_is multicast-path fail "multicast is filtered between this host and Bob: its responder at $v6%$LAB_IFACE answers a question sent to it directly" || return 1
    check_is multicast-path fail "sent by multicast to ff02::fb" || return 1
}

# dm_resolves SERVICE ID ADDRESS...: waits (15 s at most) until h1's browse finds peer ID with
# every ADDRESS among its addresses.
dm_resolves() {
    local service=$1 id=$2 deadline=$((SECONDS + 15)); shift 2
    local wanted; wanted=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
    until nb 1 browse --service "$service" --peer "$id" --timeout 5 2>/dev/null \
            | jq -e --argjson w "$wanted" 'select(.event=="found") | .addresses as $a | all($w[]; . as $x | $a | index($x))' >/dev/null; do
        (( SECONDS < deadline )) || { fail "h1 never resolved $* for h2"; return 1; }
    done
}

# h2 has an address in docker's default range on its interface: its daemon announces it, h1 has
# no route to it. `addresses` names it and the range; the reachable one still connects.
# An address added under a running avahi-daemon is announced alone with the cache-flush bit: h1's
# avahi drops h2's other A record a second later (RFC 6762 §10.2), and from then on each query that
# lists one as known brings back only the other. doctor takes every address given in its first
# moment (addressGather); without that it saw only 172.17.0.2 one run in ten (CI, stop 65).
test_doctor_mdns_an_unreachable_advertised_address() {
    trap 'lab_run 2 ip addr del 172.17.0.2/16 dev "$LAB_IFACE" 2>/dev/null; stop_started' RETURN
    local id2
    id2=$(id_of 2) || return 1
    lab_run 2 ip addr add 172.17.0.2/16 dev "$LAB_IFACE" || { fail "the docker-range address on h2"; return 1; }
    start_node 2 dm-addr || return 1
    # h1 has heard of 172.17.0.2 before doctor runs.
    dm_resolves dm-addr "$id2" 172.17.0.2 || return 1
    DOCTOR_TIMEOUT=6 doctor 1 --service dm-addr "$id2"
    check_is addresses warn "advertises addresses this host cannot reach: 172.17.0.2 (docker's default bridge (docker0), on none of this host's subnets)" || return 1
    check_is addresses warn "reachable: $(lab_addr 2)" || return 1
    # The peer's responder is asked at the address on this host's subnet, not the unreachable one.
    check_is multicast-path ok "responder at $(lab_addr 2) answers" || return 1
    check_is ghost ok || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="addresses" and (.hint|contains("allow-interfaces=")))' "the hint restricts the peer's daemon" || return 1
    check_is identity ok || return 1
}

# h2 had four more addresses on the link and gave them up: h1's daemon still lists them for h2, ahead
# of the one it has. doctor asked h2's responder at the first and, with no answer there, called a
# healthy peer a ghost (seen after an HTTP test left h2's addresses behind). It asks at each of
# h2's addresses on this host's subnets, and the responder answers at the one it has.
test_doctor_mdns_a_given_up_address_is_no_ghost() {
    trap 'for k in 30 31 32 33; do lab_run 2 ip addr del "10.99.0.$k/24" dev "$LAB_IFACE" 2>/dev/null; done; stop_started' RETURN
    local id2 k
    id2=$(id_of 2) || return 1
    for k in 30 31 32 33; do lab_run 2 ip addr add "10.99.0.$k/24" dev "$LAB_IFACE" || { fail "address 10.99.0.$k on h2"; return 1; }; done
    start_node 2 dm-gone || return 1
    dm_resolves dm-gone "$id2" 10.99.0.30 10.99.0.33 || return 1
    for k in 30 31 32 33; do lab_run 2 ip addr del "10.99.0.$k/24" dev "$LAB_IFACE"; done
    DOCTOR_TIMEOUT=6 doctor 1 --service dm-gone "$id2"
    # What makes the case: h1's daemon still gives them (it did in every run here).
    check_is peer ok "10.99.0.33" || return 1
    check_is ghost ok || return 1
    check_is multicast-path ok "responder at $(lab_addr 2) answers" || return 1
}

# h3's avahi-daemon is configured with h1's host name: h1 defends it, h3 renames itself (h1-2).
# doctor on h3 names the conflict; h1 is not blamed for anything.
test_doctor_mdns_a_host_name_conflict() {
    local conf
    conf=$(_lab_hostdir 3)/avahi.conf
    trap 'lab_avahi_restore 3; trap - RETURN' RETURN
    lab_avahi_reconfigure 3 's/^host-name=h3$/host-name=h1/' || { fail "h3's avahi-daemon did not start"; return 1; }
    grep -q "Host name conflict" "$(_lab_hostdir 3)/avahi.log" || grep -q "h1-2" "$(_lab_hostdir 3)/avahi.log" \
        || { fail "h3's avahi did not rename"; tail -5 "$(_lab_hostdir 3)/avahi.log" >&2; return 1; }
    doctor 3
    expect_eq "$STATUS" 1 "doctor exit status after a host-name conflict" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is conflicts fail "this host's daemon announces itself as h1-2.local, not h1.local as configured (host-name=h1 in $conf)" || return 1
    check_is conflicts fail "it renamed after another host on the link claimed h1.local" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="conflicts" and (.hint|contains("avahi-resolve -n h1.local")))' "the hint" || return 1
    doctor 1
    check_is conflicts ok "announces itself as h1.local" || return 1
}

# h3 runs a responder beside its avahi-daemon that answers for h2's node as if it were its own
# (SRV → h3.local.): `conflicts` names h3 and the host the peer is really on; h2 is not blamed,
# and the peer still connects (the identity it proves tells them apart).
test_doctor_mdns_another_host_answers_for_the_peers_instance() {
    trap 'stop_started' RETURN
    local id2 squatter
    id2=$(id_of 2) || return 1
    start_node 2 dm-squat --name "Bob" || return 1
    nb 1 browse --service dm-squat --peer "$id2" --timeout 10 >/dev/null || { fail "h1 does not find h2"; return 1; }
    spawn 3 "$OUT/squat.txt" /usr/bin/python3 "$ROOT/tests/e2e/mdns_peer.py" squat --from "$(lab_addr 3)" \
        --name "$id2._dm-squat._tcp.local" --host h3.local --seconds 60 || return 1
    squatter=$PID
    local waited
    for ((waited = 0; waited < 100; waited++)); do grep -q bound "$OUT/squat.txt" 2>/dev/null && break; sleep 0.1; done
    grep -q bound "$OUT/squat.txt" || { fail "the squatter did not bind"; cat "$OUT/squat.txt.err" >&2; return 1; }
    DOCTOR_TIMEOUT=6 doctor 1 --service dm-squat "$id2"
    check_is conflicts fail "another host answers for $id2: $(lab_addr 3) (host h3.local), while the peer is on h2.local" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="conflicts" and (.hint|contains("two responders claim one instance name")))' "the hint" || return 1
    check_is peer ok || return 1
    check_is multicast-path ok || return 1
    dm_no_check_says "one-way multicast" || return 1
    kill "$squatter" 2>/dev/null
}

# h2's host dies: its avahi-daemon is SIGKILLed (no goodbye), then its node. h1's daemon still
# lists the node from its cache; nothing answers at its address: a ghost, last heard when h1's
# browse saw it. Nothing else fails on its account.
# dm_lay_ghost K SERVICE: host K's daemon back, SERVICE advertised again under the same name and
# stopped cleanly — the goodbyes take the ghost out of every cache on the link (else the next test
# in this lab finds _SERVICE._tcp still announced).
dm_lay_ghost() {
    stop_started
    lab_start_avahi "$1" 2>/dev/null
    start_node "$1" "$2" >/dev/null && stop_started
}

test_doctor_mdns_a_ghost() {
    trap 'dm_lay_ghost 2 dm-ghost; trap - RETURN' RETURN
    local id2
    id2=$(id_of 2) || return 1
    start_node 2 dm-ghost --name "Bob" || return 1
    nb 1 browse --service dm-ghost --peer "$id2" --timeout 10 >/dev/null || { fail "h1 does not find h2"; return 1; }
    kill -KILL "$(dm_pid_of 2 avahi)"
    kill -KILL "$ADV_PID"
    lab_wait_pid "$ADV_PID" 5 >/dev/null
    lab_wait_pid "$(dm_pid_of 2 avahi)" 5 >/dev/null
    DOCTOR_TIMEOUT=6 doctor 1 --service dm-ghost "$id2"
    expect_eq "$STATUS" 2 "doctor exit status for a ghost" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is peer ok || return 1
    check_is ghost fail "Bob is a ghost: this host's daemon still lists it at $(lab_addr 2), but nothing answers there" || return 1
    check_is ghost fail "last heard" || return 1
    check_is multicast-path skip "see ghost" || return 1
    check_is connect skip "is a ghost" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="summary" and .fail==1)' "one failure only" || return 1
}
