# shellcheck shell=bash
# LocalSend (--localsend) against an independent implementation: localsend-cli from PyPI, in the
# venv scripts/install-deps makes (NEARBY_VENV, default /opt/nearby-venv). LocalSend programs send
# to the multicast group by the routing table, so each host gets a route for 224.0.0.0/4 on its
# link (harmless to the other tests: Avahi names its interface itself).

LS_VENV=${NEARBY_VENV:-/opt/nearby-venv}

ls_setup() {
    [[ -x $LS_VENV/bin/localsend-cli ]] || { fail "localsend-cli is not installed in $LS_VENV (scripts/install-deps)"; return 1; }
    local k
    for k in 1 2 3; do
        ip -n "$(lab_ns "$k")" route replace 224.0.0.0/4 dev "$LAB_IFACE" || return 1
    done
}

# ls_receive K DIR [ARGS...]: localsend-cli receiving on host K into DIR; sets LS_PID, waits for 'ready'.
ls_receive() {
    local host=$1 dir=$2; shift 2
    mkdir -p "$dir"
    lab_bg "$host" "$OUT/lscli-h$host.jsonl" "$LS_VENV/bin/localsend-cli" receive --output "$dir" "$@" >/dev/null
    LS_PID=$LAB_PID
    lab_wait_line "$OUT/lscli-h$host.jsonl" 'select(.event=="ready")' 15 >/dev/null || {
        fail "localsend-cli did not start on h$host"; cat "$OUT/lscli-h$host.jsonl.err" >&2; return 1; }
}

ls_alias() { printf 'localsend-cli@%s' "$(hostname)"; }

test_localsend_browse_finds_and_is_found() {
    ls_setup || return 1
    ls_receive 2 "$OUT/recv" --json || return 1
    # Found by its announcement: kind localsend, its alias as the name, host, port and type in info.
    lab_run 1 "$NEARBY" browse --localsend --count 1 --timeout 20 >"$OUT/browse.jsonl" 2>"$OUT/browse.err"
    local rc=$?
    kill -INT "$LS_PID" 2>/dev/null
    expect_eq "$rc" 0 "browse --localsend exit status" || return 1
    expect_json "$OUT/browse.jsonl" \
        "select(.event==\"found\" and .kind==\"localsend\" and .peer.name==\"$(ls_alias)\" and .host==\"10.99.0.2\"
         and .port==53317 and .info.device_type==\"headless\" and (.info.fingerprint|length)==64 and (.peer.id|length)==13)" \
        "a found event for localsend-cli" || return 1
    # And the other way: localsend-cli scan (its announcement) hears nearby's answer.
    lab_bg 1 "$OUT/browse2.jsonl" "$NEARBY" browse --localsend --timeout 30 >/dev/null
    local pid=$LAB_PID
    lab_wait_line "$OUT/browse2.jsonl" 'select(.event=="browsing")' 10 >/dev/null || return 1
    lab_run 2 "$LS_VENV/bin/localsend-cli" scan --json --timeout 4 >"$OUT/scan.jsonl" 2>"$OUT/scan.err"
    stop "$pid" >/dev/null
    expect_json "$OUT/scan.jsonl" 'select(.alias=="Alice Box" and .ip=="10.99.0.1")' "localsend-cli scan sees nearby" || {
        cat "$OUT/scan.jsonl" "$OUT/scan.err" >&2; return 1; }
}

test_localsend_send_file_byte_exact() {
    ls_setup || return 1
    ls_receive 2 "$OUT/recv" --json || return 1
    head -c 3000000 /dev/urandom >"$OUT/photo.jpg"
    printf 'second\n' >"$OUT/notes.txt"
    # By alias, through discovery: both files arrive byte-exact, each with file-sent.
    lab_run 1 "$NEARBY" send-file --localsend "$(ls_alias)" "$OUT/photo.jpg" "$OUT/notes.txt" --timeout 20 \
        >"$OUT/send.jsonl" 2>"$OUT/send.err"
    local rc=$?
    expect_eq "$rc" 0 "send-file --localsend exit status" || { cat "$OUT/send.err" >&2; return 1; }
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")')" 2 "file-sent events" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="progress" and .path=="photo.jpg")' "progress" || return 1
    cmp -s "$OUT/photo.jpg" "$OUT/recv/photo.jpg" || { fail "photo.jpg differs"; return 1; }
    cmp -s "$OUT/notes.txt" "$OUT/recv/notes.txt" || { fail "notes.txt differs"; return 1; }
    # By address, and a text the way LocalSend apps send one.
    lab_run 1 "$NEARBY" send --localsend 10.99.0.2 "hello from nearby" >"$OUT/text.jsonl" 2>"$OUT/text.err" || {
        fail "send --localsend failed"; cat "$OUT/text.err" >&2; return 1; }
    expect_json "$OUT/text.jsonl" 'select(.event=="sent" and .bytes==17)' "sent" || return 1
    lab_wait_line "$OUT/lscli-h2.jsonl" 'select(.event=="text" and .text=="hello from nearby")' 5 >/dev/null || {
        fail "localsend-cli did not show the text"; return 1; }
    kill -INT "$LS_PID" 2>/dev/null
}

test_localsend_pin_and_decline() {
    ls_setup || return 1
    ls_receive 2 "$OUT/recv" --json --pin 4711 || return 1
    printf 'x' >"$OUT/a.txt"
    lab_run 1 "$NEARBY" send-file --localsend 10.99.0.2 "$OUT/a.txt" >"$OUT/nopin.jsonl" 2>"$OUT/nopin.err"
    expect_eq "$?" 3 "without --pin" || return 1
    grep -q -- "--pin" "$OUT/nopin.err" || { fail "no sentence about --pin: $(cat "$OUT/nopin.err")"; return 1; }
    lab_run 1 "$NEARBY" send-file --localsend 10.99.0.2 "$OUT/a.txt" --pin 1234 >"$OUT/wrong.jsonl" 2>"$OUT/wrong.err"
    expect_eq "$?" 3 "a wrong --pin" || return 1
    grep -q "wrong" "$OUT/wrong.err" || { fail "no sentence about a wrong PIN: $(cat "$OUT/wrong.err")"; return 1; }
    lab_run 1 "$NEARBY" send-file --localsend 10.99.0.2 "$OUT/a.txt" --pin 4711 >"$OUT/right.jsonl" 2>"$OUT/right.err"
    expect_eq "$?" 0 "the right --pin" || { cat "$OUT/right.err" >&2; return 1; }
    cmp -s "$OUT/a.txt" "$OUT/recv/a.txt" || { fail "a.txt did not arrive"; return 1; }
    kill -INT "$LS_PID" 2>/dev/null; lab_wait_pid "$LS_PID" 5 >/dev/null
    # A receiver that asks a person, who says no (stdin is empty): declined, exit 3.
    ls_receive 3 "$OUT/recv3" --interactive-json || return 1
    lab_run 1 "$NEARBY" send-file --localsend 10.99.0.3 "$OUT/a.txt" >"$OUT/declined.jsonl" 2>"$OUT/declined.err"
    expect_eq "$?" 3 "declined" || return 1
    expect_json "$OUT/declined.jsonl" 'select(.event=="error" and .code=="declined" and .exit_status==3)' "error event" || return 1
    [[ ! -e $OUT/recv3/a.txt ]] || { fail "a declined file arrived"; return 1; }
    kill -INT "$LS_PID" 2>/dev/null
}

test_localsend_fingerprint_must_match() {
    ls_setup || return 1
    ls_receive 3 "$OUT/recv" --json || return 1
    # An announcement naming h3's address with a fingerprint that is not its certificate's.
    lab_bg 3 "$OUT/rogue.out" python3 "$ROOT/tests/e2e/rogue_localsend.py" impostor Impostor "$(printf '%064d' 7)" 53317 >/dev/null
    local rogue=$LAB_PID
    printf 'secret' >"$OUT/s.txt"
    lab_run 1 "$NEARBY" send-file --localsend Impostor "$OUT/s.txt" --timeout 10 >"$OUT/send.jsonl" 2>"$OUT/send.err"
    local rc=$?
    kill "$rogue" "$LS_PID" 2>/dev/null
    expect_eq "$rc" 9 "send to a device whose certificate is not its fingerprint" || { cat "$OUT/send.err" >&2; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="error" and .code=="identity-mismatch")' "identity-mismatch" || return 1
    [[ ! -e $OUT/recv/s.txt ]] || { fail "the file went to the impostor"; return 1; }
}

test_localsend_hostile_announcer() {
    ls_setup || return 1
    lab_bg 1 "$OUT/browse.jsonl" "$NEARBY" browse --localsend --timeout 8 >/dev/null
    local pid=$LAB_PID
    lab_wait_line "$OUT/browse.jsonl" 'select(.event=="browsing")' 10 >/dev/null || return 1
    lab_run 2 python3 "$ROOT/tests/e2e/rogue_localsend.py" flood 10000
    lab_wait_pid "$pid" 20
    expect_eq "$?" 0 "browse under a flood" || { cat "$OUT/browse.jsonl.err" >&2; return 1; }
    local found
    found=$(count_json "$OUT/browse.jsonl" 'select(.event=="found")')
    (( found > 0 && found <= 256 )) || { fail "found $found devices: expected 1..256"; return 1; }
    ! grep -q $'\x1b' "$OUT/browse.jsonl" "$OUT/browse.jsonl.err" || { fail "a raw escape reached the output"; return 1; }
    expect_json "$OUT/browse.jsonl" 'select(.event=="found" and (.peer.name|contains("owned")) and (.peer.name|length) <= 100)' \
        "the escaping alias, bounded" || return 1
    ! grep -q '"deep"' "$OUT/browse.jsonl" || { fail "the 3000-deep announcement was decoded"; return 1; }
}
