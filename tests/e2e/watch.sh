# End-to-end tests of `nearby watch` (sourced by run.sh): the capture on a lab host while other
# hosts advertise, browse and misbehave (tests/e2e/mdns_peer.py builds the bad packets by hand),
# the daemon's own unicast traffic untouched, the ordinary user without the capability, and a
# capture tcpdump wrote, read back.
#
# watch needs CAP_NET_RAW: the tests give it to a copy of the binary (`setcap cap_net_raw+ep`, the
# line watch itself prints) and run that copy as the lab's ordinary user — with the bounding set a
# login shell has, unlike tests/lab/as-user, which drops every capability a file could grant.

MDNS_PEER=$ROOT/tests/e2e/mdns_peer.py

# watch_binary — a copy of $NEARBY_BIN with CAP_NET_RAW in $OUT; sets WATCH_BIN.
watch_binary() {
    WATCH_BIN=$OUT/bin/nearby
    mkdir -p "$OUT/bin" && chmod 0755 "$OUT/bin" && cp "$NEARBY_BIN" "$WATCH_BIN" && chmod 0755 "$WATCH_BIN" || {
        fail "cannot copy $NEARBY_BIN"; return 1; }
    setcap cap_net_raw+ep "$WATCH_BIN" || { fail "setcap on $WATCH_BIN"; return 1; }
}

# watch_start K NAME ARGS... — `nearby watch --json ARGS` on host K as the lab's user, through the
# capable copy; waits for `watching`. Sets WATCH_PID; output in $OUT/NAME.jsonl.
watch_start() {
    local host=$1 name=$2; shift 2
    [[ -n ${WATCH_BIN:-} ]] || watch_binary || return 1
    lab_bg "$host" "$OUT/$name.jsonl" setpriv --reuid="$LAB_USER" --regid="$LAB_USER" --init-groups --inh-caps=-all -- \
        "$WATCH_BIN" watch --json "$@" >/dev/null
    WATCH_PID=$LAB_PID
    lab_wait_line "$OUT/$name.jsonl" 'select(.event=="watching")' 15 >/dev/null || {
        fail "watch on h$host never said it was watching"; cat "$OUT/$name.jsonl" "$OUT/$name.jsonl.err" >&2; return 1; }
}

# watch_at_a_terminal [ROWS] — `nearby watch --interface nb0` on h1 as the lab's user under a
# 160-column pty of ROWS rows (40), its screen in $OUT/screen.txt; waits for the first table. Sets WATCH_PID.
watch_at_a_terminal() {
    watch_binary || return 1
    lab_bg 1 "$OUT/screen.txt" python3 "$ROOT/tests/e2e/pty_run.py" --columns 160 --rows "${1:-40}" -- \
        setpriv --reuid="$LAB_USER" --regid="$LAB_USER" --init-groups --inh-caps=-all -- "$WATCH_BIN" watch --interface nb0 >/dev/null
    WATCH_PID=$LAB_PID
    local waited
    for ((waited = 0; waited < 100; waited++)); do grep -q "HOSTS" "$OUT/screen.txt" 2>/dev/null && return 0; sleep 0.1; done
    fail "watch at a terminal drew no table"; return 1
}

# watch_stop NAME — SIGINT: exit 0 with a summary.
watch_stop() {
    local status
    kill -INT "$WATCH_PID" 2>/dev/null
    lab_wait_pid "$WATCH_PID" 10; status=$?
    expect_eq "$status" 0 "watch's exit status after SIGINT" || { cat "$OUT/$1.jsonl.err" >&2; return 1; }
    expect_json "$OUT/$1.jsonl" 'select(.event=="summary" and .packets > 0 and .exit_status == 0)' "a summary as watch ends"
}

test_watch_shows_an_announcement_and_a_question_with_their_sources() {
    trap 'kill -INT ${WATCH_PID:-} ${ADV_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    advertise 2 wt-seen || return 1
    local id2
    id2=$(id_of 2) || return 1
    lab_run 3 "$NEARBY" browse --service wt-seen --timeout 3 >"$OUT/browse.jsonl" 2>&1
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$id2\")" "h3 found h2" || return 1
    # h2's announcement, from h2's address, in DNS-SD terms; h3's question, from h3's.
    lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"10.99.0.2\" and .kind==\"response\"
        and any(.meaning[]; .kind==\"announced\" and .service==\"_wt-seen._tcp.local.\" and (.name|startswith(\"$id2.\"))))" 10 >/dev/null || {
        fail "no announcement from 10.99.0.2"; cat "$OUT/watch.jsonl" >&2; return 1; }
    expect_json "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.3" and .kind=="query" and .interface=="nb0"
        and any(.questions[]; .name=="_wt-seen._tcp.local." and .type=="PTR"))' "h3's question, from 10.99.0.3 on nb0" || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.answers[], .additional[]; .type=="SRV" and .cache_flush))' \
        "h2's SRV record, with the cache-flush bit" || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="packet" and any(.meaning[]; .kind=="address" and .host=="h2.local." and (.addresses|index("10.99.0.2"))))' \
        "h2's address" || return 1
    stop "$ADV_PID" >/dev/null
    # The goodbye: the instance withdrawn.
    lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"10.99.0.2\" and any(.meaning[]; .kind==\"withdrawn\" and (.name|startswith(\"$id2.\"))))" 10 >/dev/null || {
        fail "no goodbye from 10.99.0.2"; return 1; }
    watch_stop watch || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="summary" and any(.hosts[]; .address=="10.99.0.2" and .packets > 0))' "h2 counted in the summary"
}

# A second socket on 5353 would take unicast datagrams meant for the daemon; watch's packet socket
# only copies them. h2 asks h1's daemon directly (legacy unicast queries to 10.99.0.1:5353) while
# watch runs on h1: every one is answered, and watch shows both ways. Nothing of watch's is bound
# to 5353 (ss lists only avahi-daemon).
test_watch_leaves_the_daemons_unicast_packets_to_it() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch || return 1
    local answer port
    answer=$(lab_run 2 python3 "$MDNS_PEER" query --to 10.99.0.1 --name h1.local --count 10) || { fail "the query script failed"; return 1; }
    echo "    queries from h2 to h1's daemon while watch runs: $answer"
    expect_eq "$(jq -r .answered <<<"$answer")" 10 "unicast queries h1's daemon answered" || return 1
    port=$(jq -r .port <<<"$answer")
    lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"10.99.0.1\" and .destination==\"10.99.0.2\" and .destination_port==$port
        and any(.answers[]; .name==\"h1.local.\" and .data==\"10.99.0.1\"))" 10 >/dev/null || {
        fail "watch did not show h1's unicast answers"; cat "$OUT/watch.jsonl" >&2; return 1; }
    expect_eq "$(count_json "$OUT/watch.jsonl" "select(.event==\"packet\" and .destination==\"10.99.0.1\" and .source_port==$port)")" 10 \
        "the queries watch saw arrive at 10.99.0.1" || return 1
    local bound users
    bound=$(lab_run 1 ss -H -lupn 'sport = :5353')
    echo "$bound" | sed 's/^/    ss: /'
    [[ $bound == *avahi-daemon* && $bound != *nearby* ]] || { fail "something other than avahi-daemon holds UDP 5353 on h1"; return 1; }
    # watch joined the groups itself (behind IGMP/MLD snooping it needs to): one member more than
    # avahi-daemon alone, on IPv4 (224.0.0.251 is FB0000E0 in /proc/net/igmp) and IPv6.
    local users6
    users=$(lab_run 1 awk '$1=="FB0000E0" {print $2; exit}' /proc/net/igmp)
    users6=$(lab_run 1 awk '$3=="ff0200000000000000000000000000fb" {print $4; exit}' /proc/net/igmp6)
    echo "    members of 224.0.0.251 on h1: $users, of ff02::fb: $users6 (avahi-daemon and watch)"
    expect_eq "$users $users6" "2 2" "members of the mDNS groups while watch runs" || return 1
    watch_stop watch
    expect_eq "$(lab_run 1 awk '$1=="FB0000E0" {print $2; exit}' /proc/net/igmp)" 1 "members once watch stopped" || return 1
}

# A host claims h2's name (a crafted answer from h3: h2.local is at 10.99.0.3, cache-flush): a
# conflict finding naming both addresses. h2's daemon is restarted first (it announces its name
# while watch looks) and after (it may have re-probed its name: the next tests get it back whole).
test_watch_names_a_conflict() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null; lab_stop_avahi 2; lab_start_avahi 2' EXIT
    watch_start 1 watch || return 1
    lab_stop_avahi 2 && lab_start_avahi 2 || { fail "restarting h2's avahi-daemon"; return 1; }
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.meaning[]; .kind=="address" and .host=="h2.local."))' 15 >/dev/null || {
        fail "h2 never announced its name"; return 1; }
    lab_run 3 python3 "$MDNS_PEER" claim --from 10.99.0.3 --name h2.local --address 10.99.0.3 --count 3 --every 0.3 || { fail "the claim script failed"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="conflict" and .name=="h2.local.")' 10) || {
        fail "no conflict finding"; cat "$OUT/watch.jsonl" >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    expect_eq "$(jq -r .host <<<"$line")" 10.99.0.3 "the host the finding names" || return 1
    [[ $(jq -r .evidence <<<"$line") == *10.99.0.2* ]] || { fail "the evidence does not name h2's own address"; return 1; }
    # Only the name h3 took: h2 renaming itself (h2-2, over IPv4 and IPv6) is a rename, not a conflict.
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="conflict" and .name!="h2.local.")')" 0 "other conflict findings" || return 1
    watch_stop watch
}

test_watch_names_a_chatty_querier() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch || return 1
    lab_run 3 python3 "$MDNS_PEER" chatty --from 10.99.0.3 --name _chatty._tcp.local --every 0.1 --count 30 || { fail "the chatty script failed"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="chatty-querier")' 10) || {
        fail "no chatty-querier finding"; cat "$OUT/watch.jsonl" >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    expect_eq "$(jq -r '"\(.host) \(.name)"' <<<"$line")" "10.99.0.3 _chatty._tcp.local." "who asked what" || return 1
    # h1's own daemon, browsing as RFC 6762 asks, is never named.
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="chatty-querier" and .host!="10.99.0.3")')" 0 "other chatty queriers" || return 1
    watch_stop watch
}

# The ordinary user, no capability: one sentence with the setcap and sudo lines, exit 14, and an
# error event.
test_watch_without_the_capability_says_what_it_needs() {
    lab_run 1 "$NEARBY" watch --json --timeout 5 >"$OUT/watch.jsonl" 2>"$OUT/watch.err"
    local status=$?
    expect_eq "$status" 14 "exit status without CAP_NET_RAW" || { cat "$OUT/watch.jsonl" "$OUT/watch.err" >&2; return 1; }
    sed 's/^/    stderr: /' "$OUT/watch.err"
    grep -qF 'sudo setcap cap_net_raw+ep "$(command -v nearby)"' "$OUT/watch.err" || { fail "no setcap line on stderr"; return 1; }
    grep -qF 'sudo nearby watch' "$OUT/watch.err" || { fail "no sudo line on stderr"; return 1; }
    expect_eq "$(wc -l <"$OUT/watch.err")" 1 "lines on stderr" || return 1
    expect_eq "$(tail -n 1 "$OUT/watch.jsonl" | jq -r '"\(.event) \(.code) \(.exit_status)"')" "error capture-not-permitted 14" "the last event"
}

# tcpdump writes a capture on h1 (Ethernet, then Linux cooked v2 on every interface) while h2
# advertises; watch --read, as the ordinary user, reads every packet of it. A file that is not a
# capture: exit 8, bad-capture-file.
test_watch_reads_what_tcpdump_wrote() {
    trap 'kill -INT ${ADV_PID:-} ${DUMP1:-} ${DUMP2:-} 2>/dev/null' EXIT
    lab_bg 1 "$OUT/tcpdump1.out" tcpdump -U -n -i nb0 -w "$OUT/eth.pcap" udp port 5353 >/dev/null; DUMP1=$LAB_PID
    lab_bg 1 "$OUT/tcpdump2.out" tcpdump -U -n -i any -y LINUX_SLL2 -w "$OUT/sll2.pcap" udp port 5353 >/dev/null; DUMP2=$LAB_PID
    local waited
    for ((waited = 0; waited < 100; waited++)); do
        grep -q listening "$OUT/tcpdump1.out.err" && grep -q listening "$OUT/tcpdump2.out.err" && break
        sleep 0.1
    done
    advertise 2 wt-read || return 1
    lab_run 3 "$NEARBY" browse --service wt-read --timeout 2 >/dev/null 2>&1
    stop "$ADV_PID" >/dev/null
    kill -INT "$DUMP1" "$DUMP2"; lab_wait_pid "$DUMP1" 10; lab_wait_pid "$DUMP2" 10
    chmod 0644 "$OUT"/*.pcap
    local file expected
    for file in eth sll2; do
        expected=$(tcpdump -n -r "$OUT/$file.pcap" 2>/dev/null | wc -l)
        lab_run 1 "$NEARBY" watch --read "$OUT/$file.pcap" --json >"$OUT/read-$file.jsonl" 2>"$OUT/read-$file.err"
        expect_eq "$?" 0 "watch --read $file.pcap exit status" || { cat "$OUT/read-$file.err" >&2; return 1; }
        echo "    $file.pcap: tcpdump reads $expected packets; watch: $(jq -r 'select(.event=="summary") | "\(.packets) packets, \(.malformed) malformed"' "$OUT/read-$file.jsonl")"
        ((expected > 0)) || { fail "tcpdump captured nothing"; return 1; }
        expect_eq "$(count_json "$OUT/read-$file.jsonl" 'select(.event=="packet")')" "$expected" "packet events from $file.pcap" || return 1
        expect_json "$OUT/read-$file.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.meaning[]; .kind=="announced" and .service=="_wt-read._tcp.local."))' \
            "h2's announcement in $file.pcap" || return 1
    done
    expect_json "$OUT/read-sll2.jsonl" 'select(.event=="packet" and (.interface|type)=="string")' "interfaces in the cooked v2 capture" || return 1
    echo "not a capture" >"$OUT/text.pcap"
    lab_run 1 "$NEARBY" watch --read "$OUT/text.pcap" --json >"$OUT/bad.jsonl" 2>"$OUT/bad.err"
    expect_eq "$?" 8 "watch --read on a text file" || return 1
    expect_eq "$(tail -n 1 "$OUT/bad.jsonl" | jq -r .code)" bad-capture-file "its error code" || return 1
    sed 's/^/    stderr: /' "$OUT/bad.err"
}

# A person at a terminal (a pty): the table of hosts, services and questions drawn in place (the
# cursor sent home, lines cleared to their end), the packets below it, and on Ctrl-C the summary.
test_watch_at_a_terminal_draws_the_table() {
    trap 'kill -INT ${WATCH_PID:-} ${ADV_PID:-} 2>/dev/null' EXIT
    watch_at_a_terminal || return 1
    local waited
    advertise 2 wt-screen || return 1
    lab_run 3 "$NEARBY" browse --service wt-screen --timeout 2 >/dev/null 2>&1
    for ((waited = 0; waited < 100; waited++)); do grep -q "_wt-screen._tcp.local. PTR" "$OUT/screen.txt" 2>/dev/null && break; sleep 0.1; done
    stop "$ADV_PID" >/dev/null
    kill -INT "$WATCH_PID"
    lab_wait_pid "$WATCH_PID" 10
    expect_eq "$?" 0 "watch's exit status after Ctrl-C at a terminal" || { cat -v "$OUT/screen.txt" | tail -n 30 >&2; return 1; }
    local screen
    screen=$(tr -d '\r' <"$OUT/screen.txt")
    local want
    for want in $'\e[H' 'HOSTS' 'SERVICES' 'QUESTIONS' 'h2.local.' '_wt-screen._tcp.local. PTR' 'answered' '(nb0)' '→ h2.local.:' 'packets (0 malformed)' '10.99.0.2:'; do
        [[ $screen == *"$want"* ]] || { fail "the screen lacks '$want'"; tail -n 40 "$OUT/screen.txt" | cat -v >&2; return 1; }
    done
    # Nothing for programs on a terminal: no JSON.
    [[ $screen != *'"event":'* ]] || { fail "JSON lines on the terminal"; return 1; }
}

# A real fault, read at a terminal (the picture in docs/watch.md): h3's avahi-daemon is configured
# with h2's host name. h2 defends it, h3 renames itself to h2-2; watch on h1 names the rename in
# its FINDINGS while both hosts' packets scroll below the table.
test_watch_at_a_terminal_names_a_daemons_rename() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null; lab_avahi_restore 3; trap - RETURN' RETURN
    watch_at_a_terminal || return 1
    local waited
    lab_avahi_reconfigure 3 's/^host-name=h3$/host-name=h2/' || { fail "h3's avahi-daemon did not start"; return 1; }
    for ((waited = 0; waited < 150; waited++)); do grep -q "finding rename on 10.99.0.3" "$OUT/screen.txt" 2>/dev/null && break; sleep 0.1; done
    kill -INT "$WATCH_PID"
    lab_wait_pid "$WATCH_PID" 10
    expect_eq "$?" 0 "watch's exit status after Ctrl-C" || return 1
    local screen want
    screen=$(tr -d '\r' <"$OUT/screen.txt")
    for want in 'FINDINGS' 'finding rename on 10.99.0.3' 'h2-2.local.' 'h2.local.' '10.99.0.2' 'findings: rename'; do
        [[ $screen == *"$want"* ]] || { fail "the screen lacks '$want'"; tail -n 40 "$OUT/screen.txt" | cat -v >&2; return 1; }
    done
    # h2, which kept its name, is blamed for nothing.
    [[ $screen != *"on 10.99.0.2"* ]] || { fail "a finding names h2"; grep -a "on 10.99.0.2" "$OUT/screen.txt" | head -3 | cat -v >&2; return 1; }
}

# A broken responder on h3 (packets built by hand, as a broken one sends them): a malformed packet,
# a 10-day TTL, a response with the TC bit, an answer over the link's MTU (IP fragments). Each is
# named once, on h3; the daemons' own traffic on the link is named for nothing.
test_watch_names_a_broken_responders_packets() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch || return 1
    local kind rule line
    for kind in malformed ttl truncated oversize; do
        lab_run 3 python3 "$MDNS_PEER" broken --from 10.99.0.3 --kind "$kind" --name "broken-$kind.local" >/dev/null \
            || { fail "the $kind packet could not be sent"; return 1; }
        rule=$kind
        line=$(lab_wait_line "$OUT/watch.jsonl" "select(.event==\"finding\" and .rule==\"$rule\")" 10) || {
            fail "no $rule finding"; tail -n 5 "$OUT/watch.jsonl" >&2; return 1; }
        echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
        expect_eq "$(jq -r .host <<<"$line")" 10.99.0.3 "the host the $rule finding names" || return 1
    done
    [[ $(jq -r 'select(.event=="finding" and .rule=="oversize") | .evidence' "$OUT/watch.jsonl") == "a response of 3057 bytes, sent in IP fragments"* ]] \
        || { fail "the oversize finding does not say a response came in fragments"; return 1; }
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .host!="10.99.0.3")')" 0 "findings about other hosts" || return 1
    watch_stop watch || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="summary" and .malformed >= 1 and .rules.ttl == 1 and .rules.truncated == 1 and .rules.oversize == 1)' "the summary counts them"
}

# A service that restarts in a loop: nearby advertise on h2 started and stopped (cleanly: goodbyes)
# three times. watch names the flapping instance on h2.
test_watch_names_a_flapping_service() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch || return 1
    local round id2 line
    id2=$(id_of 2) || return 1
    for round in 1 2 3; do
        advertise 2 wt-flap || return 1
        lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"10.99.0.2\" and any(.meaning[]; .kind==\"announced\" and (.name|startswith(\"$id2\"))))" 15 >/dev/null \
            || { fail "round $round: no announcement seen"; return 1; }
        stop "$ADV_PID" >/dev/null
        lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"10.99.0.2\" and any(.meaning[]; .kind==\"withdrawn\" and (.name|startswith(\"$id2\"))))" 15 >/dev/null \
            || { fail "round $round: no goodbye seen"; return 1; }
        [[ $round == 3 ]] || sleep 0.2
    done
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="flapping")' 5) || {
        fail "no flapping finding"; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    # h2's daemon says goodbye over IPv4 and IPv6: either of its addresses.
    local h2v6
    h2v6=$(ip -n "$(lab_ns 2)" -6 -o addr show dev "$LAB_IFACE" scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
    local named
    named=$(jq -r .host <<<"$line")
    [[ $named == 10.99.0.2 || $named == "$h2v6" ]] || { fail "the host the finding names: $(jq -r .host <<<"$line"), not h2"; return 1; }
    [[ $(jq -r .name <<<"$line") == "$id2._wt-flap._tcp.local." ]] || { fail "the instance named: $(jq -r .name <<<"$line")"; return 1; }
    watch_stop watch
}

# A reflector, for real: h3 gets a second link, nb1, to h1 (a veth pair, 10.98.7.0/24), and its
# avahi-daemon is restarted with enable-reflector=yes on both links. h2 advertises on the lab's
# link; h3's daemon repeats it onto nb1; watch on h1 (every interface) sees the same records from
# h2 on nb0 and from h3 on nb1 and names the echo — on h3, the reflector, not on h2.
test_watch_names_a_reflector_echo() {
    trap 'kill -INT ${WATCH_PID:-} ${ADV_PID:-} 2>/dev/null; ip -n "$(lab_ns 3)" link del nb1 2>/dev/null
          lab_avahi_restore 3; trap - RETURN' RETURN
    ip -n "$(lab_ns 3)" link add nb1 type veth peer name nb1 netns "$(lab_ns 1)" || { fail "the second link"; return 1; }
    ip -n "$(lab_ns 3)" addr add 10.98.7.3/24 dev nb1 && ip -n "$(lab_ns 1)" addr add 10.98.7.1/24 dev nb1 \
        && ip -n "$(lab_ns 3)" link set nb1 multicast on up && ip -n "$(lab_ns 1)" link set nb1 multicast on up \
        || { fail "addresses on the second link"; return 1; }
    lab_avahi_reconfigure 3 's/^allow-interfaces=.*/allow-interfaces=nb0,nb1/; s/^enable-reflector=no/enable-reflector=yes/' \
        || { fail "h3's avahi-daemon did not start as a reflector"; return 1; }
    watch_start 1 watch || return 1
    advertise 2 wt-echo || return 1
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="reflector-echo")' 20 | head -n 1)
    [[ -n $line ]] || {
        fail "no reflector-echo finding"; jq -c 'select(.event=="packet" and .interface=="nb1") | [.source, .meaning]' "$OUT/watch.jsonl" | head -5 >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host) (\(.interface)): \(.evidence)"' <<<"$line")"
    # h3 repeats over IPv4 and IPv6: either of its addresses on nb1.
    local h3v6 named
    h3v6=$(ip -n "$(lab_ns 3)" -6 -o addr show dev nb1 scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
    named=$(jq -r '"\(.host) \(.interface)"' <<<"$line")
    [[ $named == "10.98.7.3 nb1" || $named == "$h3v6 nb1" ]] || { fail "the finding names $named, not h3 on nb1"; return 1; }
    [[ $(jq -r .evidence <<<"$line") == *"from 10.99.0.2 on nb0"* ]] || { fail "the evidence does not name h2 on nb0"; return 1; }
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="reflector-echo" and (.host|startswith("10.99.0.2")))')" 0 "echo findings naming h2" || return 1
    watch_stop watch
}
