# shellcheck shell=bash
# Issue 50, row IPv6: LocalSend discovery on a link with IPv6 alone, as the official app 1.18 does it
# (ff12::fd3a:e420, port 53317, answers by HTTP /register to the announcer's scoped address). The
# hosts' IPv4 addresses are taken away for the test (each keeps its link-local fe80::/64 on nb0,
# which the lab gives every host) and given back after it. Against nearby itself and against
# tests/e2e/rogue_localsend_v6.py, a peer written from the app's source. Uses localsend.sh's
# ls_setup/ls_teardown and localsend_phone.sh's lsp_cert.

LSV6_HOSTS=()

# lsv6_only K...: host K keeps only IPv6 on nb0 (lsv6_restore gives its IPv4 address back).
lsv6_only() {
    local k
    for k in "$@"; do
        ip -n "$(lab_ns "$k")" addr del "$(lab_addr "$k")/24" dev "$LAB_IFACE" || return 1
        LSV6_HOSTS+=("$k")
    done
}

lsv6_restore() {
    local k
    for k in "${LSV6_HOSTS[@]}"; do ip -n "$(lab_ns "$k")" addr add "$(lab_addr "$k")/24" dev "$LAB_IFACE" 2>/dev/null; done
    LSV6_HOSTS=()
}

# lsv6_addr K: host K's link-local address on nb0.
lsv6_addr() {
    ip -n "$(lab_ns "$1")" -6 -o addr show dev "$LAB_IFACE" scope link | awk '{ sub("/.*", "", $4); print $4; exit }'
}

# send-file --localsend NAME finds a nearby node over IPv6 alone and uploads to its link-local
# address (with its zone); the file arrives whole.
test_localsend_ipv6_only_link_send_by_name() {
    ls_setup || return 1
    trap 'lsv6_restore; ls_teardown; trap - RETURN' RETURN
    lsv6_only 1 2 || { fail "could not take the IPv4 addresses away"; return 1; }
    local bob
    bob=$(lsv6_addr 2)
    [[ $bob == fe80:* ]] || { fail "h2 has no link-local IPv6 address"; return 1; }
    mkdir -p "$OUT/in"
    head -c 300000 /dev/urandom >"$OUT/photo.jpg"
    nearby_ls_node 2 "$OUT/node.jsonl" advertise --name "Bob Six" --auto-accept --save-dir "$OUT/in" || return 1
    lab_run 1 "$NEARBY" send-file --localsend "Bob Six" "$OUT/photo.jpg" --timeout 20 >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send-file --localsend 'Bob Six' over IPv6" || { cat "$OUT/send.err" "$OUT/node.jsonl.err" >&2; return 1; }
    cmp -s "$OUT/photo.jpg" "$OUT/in/photo.jpg" || { fail "photo.jpg did not arrive whole"; return 1; }
    # Where it was found: its link-local address, with the zone of h1's interface.
    lab_run 1 "$NEARBY" browse --localsend --count 1 --timeout 20 >"$OUT/browse.jsonl" 2>"$OUT/browse.err"
    expect_eq "$?" 0 "browse --localsend" || { cat "$OUT/browse.err" >&2; return 1; }
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.name==\"Bob Six\" and .host==\"$bob%$LAB_IFACE\" and .port==53317)" \
        "Bob Six at its link-local address" || return 1
    # And by that address, as a person would type it.
    head -c 1000 /dev/urandom >"$OUT/second.bin"
    lab_run 1 "$NEARBY" send-file --localsend "[$bob%$LAB_IFACE]:53317" "$OUT/second.bin" --timeout 20 >"$OUT/send2.jsonl" 2>"$OUT/send2.err"
    expect_eq "$?" 0 "send-file --localsend '[$bob%$LAB_IFACE]:53317'" || { cat "$OUT/send2.err" >&2; return 1; }
    cmp -s "$OUT/second.bin" "$OUT/in/second.bin" || { fail "second.bin did not arrive whole"; return 1; }
    stop "$NODE_PID" >/dev/null
}

# Both directions with a peer in the official app's IPv6 format: nearby finds it (its register
# answer reaches the peer over IPv6, so it is confirmed), and it finds nearby (its register to
# nearby's announced port is answered 200). A peer that serves no HTTP gets nearby's answer by UDP
# on the group.
test_localsend_ipv6_only_link_finds_and_is_found_by_an_official_format_peer() {
    ls_setup || return 1
    trap 'lsv6_restore; ls_teardown; trap - RETURN' RETURN
    lsv6_only 1 3 || { fail "could not take the IPv4 addresses away"; return 1; }
    local alice phone
    alice=$(lsv6_addr 1) phone=$(lsv6_addr 3)
    lsp_cert phone6 || return 1
    lab_bg 3 "$OUT/phone.out" python3 "$ROOT/tests/e2e/rogue_localsend_v6.py" peer "$LAB_IFACE" "Pixel Six" "$OUT/phone6.pem" "$OUT/phone6.key" 40 >/dev/null
    local peer=$LAB_PID
    LS_PIDS+=("$peer")
    lab_wait_line "$OUT/phone.out" 'select(.listening)' 15 >/dev/null || { fail "no IPv6 peer"; cat "$OUT/phone.out.err" >&2; return 1; }
    lab_bg 1 "$OUT/browse.jsonl" "$NEARBY" browse --localsend --timeout 40 >/dev/null
    local browse=$LAB_PID
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.name==\"Pixel Six\")" 20 >/dev/null || {
        fail "browse --localsend did not find the peer"; cat "$OUT/browse.jsonl" "$OUT/browse.jsonl.err" "$OUT/phone.out" >&2; stop "$browse" >/dev/null; return 1; }
    # Its announcement was answered by HTTP (nearby's register reached it over IPv6), and nearby's
    # announcement by its register, answered 200 by the port nearby announced.
    lab_wait_line "$OUT/phone.out" "select(.registered==\"$alice\" and .alias==\"Alice Box\")" 15 >/dev/null || {
        fail "nearby's register did not reach the peer"; cat "$OUT/phone.out" >&2; stop "$browse" >/dev/null; return 1; }
    lab_wait_line "$OUT/phone.out" "select(.register==\"$alice\" and .status==200)" 15 >/dev/null || {
        fail "the peer's register to nearby was not answered 200"; cat "$OUT/phone.out" >&2; stop "$browse" >/dev/null; return 1; }
    stop "$browse"
    expect_eq "$?" 0 "browse --localsend on SIGINT" || return 1
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.name==\"Pixel Six\" and .host==\"$phone%$LAB_IFACE\" and .port==53317)" \
        "the peer, found at its link-local address with its zone" || return 1
    expect_json "$OUT/phone.out" "select(.heard==\"$alice\" and .announce==true)" "the peer heard nearby's announcement on ff12::fd3a:e420" || return 1
    kill -INT "$peer" 2>/dev/null; lab_wait_pid "$peer" 5 >/dev/null
    # A peer without HTTP: nearby's register fails, its answer goes by UDP to the IPv6 group.
    lab_bg 3 "$OUT/deaf.out" python3 "$ROOT/tests/e2e/rogue_localsend_v6.py" deaf "$LAB_IFACE" "Deaf Six" "$OUT/phone6.pem" "$OUT/phone6.key" 40 >/dev/null
    peer=$LAB_PID
    LS_PIDS+=("$peer")
    lab_wait_line "$OUT/deaf.out" 'select(.listening)' 15 >/dev/null || { fail "no deaf IPv6 peer"; return 1; }
    lab_bg 1 "$OUT/browse2.jsonl" "$NEARBY" browse --localsend --timeout 30 >/dev/null
    local browse=$LAB_PID
    lab_wait_line "$OUT/deaf.out" "select(.heard==\"$alice\" and .announce==false and .alias==\"Alice Box\")" 20 >/dev/null || {
        fail "no UDP answer from nearby on the IPv6 group"; cat "$OUT/deaf.out" "$OUT/browse2.jsonl" >&2; stop "$browse" >/dev/null; return 1; }
    expect_json "$OUT/browse2.jsonl" "select(.event==\"found\" and .peer.name==\"Deaf Six\" and .host==\"$phone%$LAB_IFACE\")" \
        "the deaf peer, found by its announcement" || { stop "$browse" >/dev/null; return 1; }
    stop "$browse" >/dev/null
}
