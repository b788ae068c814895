# Wide-area DNS-SD as a user meets it (widearea.sh's lab and helpers): truthful ends against a dead
# or refusing server, a running node and a command's --domain, one node on the link and in a domain.

# A dead server is exit 11 and a refusing one exit 13, whatever --now or a short --timeout say.
test_widearea_dead_server_is_never_nothing_found() {
    wa_setup || return 1
    local status t0 t1 how
    for how in "--now" "--timeout 1"; do
        # shellcheck disable=SC2086 # $how is two words on purpose
        wa 1 browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A:5309" $how >"$OUT/dead.jsonl" 2>"$OUT/dead.err"; status=$?
        expect_eq "$status" 11 "browse $how against a dead server" || { cat "$OUT/dead.jsonl" "$OUT/dead.err" >&2; return 1; }
        expect_json "$OUT/dead.jsonl" 'select(.event=="error" and .code=="dns-unreachable")' "the error event ($how)" || return 1
        expect_eq "$(count_json "$OUT/dead.jsonl" 'select(.event=="nothing-found")')" 0 "no nothing-found ($how)" || return 1
        # shellcheck disable=SC2086
        wa 1 browse --service wa --domain elsewhere.test --dns-server "$LAB_ROUTER_A" $how >"$OUT/refused.jsonl" 2>"$OUT/refused.err"; status=$?
        expect_eq "$status" 13 "browse $how in a zone the server refuses" || { cat "$OUT/refused.jsonl" "$OUT/refused.err" >&2; return 1; }
    done
    # Not found: the sentence names where it looked, and the doctor it suggests looks there too.
    wa 1 send --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 2 Nobody hi >"$OUT/nf.jsonl" 2>"$OUT/nf.err"; status=$?
    expect_eq "$status" 2 "send to nobody in lab.test" || { cat "$OUT/nf.jsonl" "$OUT/nf.err" >&2; return 1; }
    expect_json "$OUT/nf.jsonl" 'select(.event=="error" and (.message|test("lab\\.test\\.")) and (.hint|test("--domain lab\\.test")))' "not-found names lab.test and the doctor's --domain" || { cat "$OUT/nf.jsonl" >&2; return 1; }
}

# A running node that does not serve the domain refuses a command's --domain at once (exit 64).
test_widearea_running_node_refuses_a_domain_it_does_not_serve() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local status t0 t1
    wa_bg 1 "$OUT/node.jsonl" advertise --service wa; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/node.jsonl" 'select(.event=="advertising")' 10 >/dev/null || { fail "no node"; return 1; }
    t0=${EPOCHREALTIME/[.,]/}
    wa 1 send --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" Far hi >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    t1=${EPOCHREALTIME/[.,]/}
    echo "    send --domain through a node without it: exit $status in $(( (t1 - t0) / 1000 )) ms"
    expect_eq "$status" 64 "send --domain through a node that does not serve it" || { cat "$OUT/send.jsonl" "$OUT/send.err" >&2; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="error" and (.message|test("--domain lab\\.test")))' "the refusal names the option and the fix" || { cat "$OUT/send.jsonl" >&2; return 1; }
    (( (t1 - t0) / 1000 < 5000 )) || fail "the refusal took $(( (t1 - t0) / 1000 )) ms" || return 1
}

# One node on its link and in lab.test at once: a plain browse on its link sees it, a browse
# --domain across the router sees it; a peer found in both is one peer; send --domain works through
# a running node that serves the domain; --no-link keeps a node off mDNS.
test_widearea_one_node_on_the_link_and_in_the_domain() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR id1 id2 status
    id1=$(id_of 1) || return 1
    id2=$(id_of 2) || return 1
    wa_advertise 1 --name "Both Places" --auto-accept || return 1
    expect_json "$WA_ADV" 'select(.event=="advertising" and .domain=="local.")' "advertising on the link" || return 1
    expect_json "$WA_ADV" 'select(.event=="advertising" and .domain=="lab.test.")' "advertising in lab.test." || return 1
    # A plain browse on h1's link (h2, mDNS only) ...
    lab_run 2 "$NEARBY" browse --service wa --peer "$id1" --timeout 5 >"$OUT/link.jsonl" 2>/dev/null \
        || { fail "plain browse on the link did not see the node"; return 1; }
    expect_json "$OUT/link.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\" and .domain==null)" "found on the link" || return 1
    # ... and a browse --domain across the router (the far host) both see it.
    wa "$far" browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_B" --peer "$id1" --timeout 5 >"$OUT/far.jsonl" 2>/dev/null \
        || { fail "browse --domain across the router did not see the node"; return 1; }
    expect_json "$OUT/far.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\" and .domain==\"lab.test.\")" "found in lab.test. across the router" || return 1
    expect_json "$OUT/far.jsonl" 'select(.event=="browsing" and .domain=="local.")' "the far browse also browses its link" || return 1
    # h2 sees h1 in both places: one found, not two.
    wa 2 browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --now >"$OUT/both.jsonl" 2>/dev/null
    expect_eq "$(count_json "$OUT/both.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\")")" 1 "found events for a peer in two places" || return 1
    # A running node on h2 that serves lab.test takes send --domain, and finds h1.
    wa_bg 2 "$OUT/node2.jsonl" advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A"; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/node2.jsonl" 'select(.event=="advertising" and .domain=="lab.test.")' 15 >/dev/null || { fail "no node on h2"; return 1; }
    wa 2 send --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 10 "Both Places" "through the node" >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "send --domain through a node that serves it" || { cat "$OUT/send.jsonl" "$OUT/send.err" >&2; return 1; }
    lab_wait_line "$WA_ADV" 'select(.event=="message" and .text=="through the node")' 5 >/dev/null || fail "message not received" || return 1
    # ... but not --no-link: that node is on the link too.
    wa 2 send --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --no-link "Both Places" hi >"$OUT/nolink-send.jsonl" 2>/dev/null; status=$?
    expect_eq "$status" 64 "send --no-link through a node on the link" || { cat "$OUT/nolink-send.jsonl" >&2; return 1; }
    # --no-link: registered in lab.test, absent from the link.
    wa_bg "$far" "$OUT/nolink.jsonl" advertise --service wa2 --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_B" --no-link; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/nolink.jsonl" 'select(.event=="advertising")' 15 >/dev/null || { fail "no --no-link node"; return 1; }
    expect_eq "$(count_json "$OUT/nolink.jsonl" 'select(.event=="advertising" and .domain=="local.")')" 0 "--no-link advertises on the link" || return 1
    expect_eq "$(count_json "$OUT/nolink.jsonl" 'select(.event=="advertising" and .domain=="lab.test.")')" 1 "--no-link advertises in lab.test." || return 1
    # (avahi-browse on a host lists the host's own services: h1's node, which is on its link, shows.)
    (( $(lab_run 1 avahi-browse -ptr _wa._tcp 2>/dev/null | grep -c "^=.*;$id1;") > 0 )) || fail "avahi-browse does not list h1's own node" || return 1
    expect_eq "$(lab_run "$far" avahi-browse -ptr _wa2._tcp 2>/dev/null | grep -c '^=')" 0 "--no-link node resolved by avahi on its own host" || return 1
}

# doctor --domain looks for PEER where a node lives: on the link and in each domain. A peer only on
# the link is found there (it used to be "not found" in the domain alone); --no-link leaves the link.
test_widearea_doctor_looks_on_the_link_too() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local id1 status
    id1=$(id_of 1) || return 1
    wa_bg 1 "$OUT/linkonly.jsonl" advertise --service wa3; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/linkonly.jsonl" 'select(.event=="advertising")' 15 >/dev/null || { fail "no node on h1"; return 1; }
    wa 2 doctor --service wa3 --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 5 "$id1" >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"; status=$?
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="daemon" and .status=="ok")' "doctor --domain checks the link's daemon" || return 1
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"peer\" and .status==\"ok\" and (.detail|contains(\"$id1\")))" \
        "doctor --domain finds a peer on the link" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="identity" and .status=="ok")' "its identity checked" || return 1
    expect_eq "$status" 0 "doctor --domain for a peer on the link" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    wa 2 doctor --service wa3 --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --no-link --timeout 3 "$id1" >"$OUT/nolink.jsonl" 2>/dev/null; status=$?
    expect_eq "$status" 2 "doctor --domain --no-link for a peer only on the link" || { cat "$OUT/nolink.jsonl" >&2; return 1; }
    [[ $(count_json "$OUT/nolink.jsonl" 'select(.event=="check" and .check=="daemon")') == 0 ]] || fail "--no-link ran the daemon check" || return 1
}
