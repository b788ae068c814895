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
