# shellcheck shell=bash
# LocalSend (--localsend) against an independent implementation: localsend-cli from PyPI, in the
# venv scripts/install-deps makes (NEARBY_VENV, default /opt/nearby-venv). LocalSend programs send
# to the multicast group by the routing table, so each host gets a route for 224.0.0.0/4 on its
# link (harmless to the other tests: Avahi names its interface itself).

LS_VENV=${NEARBY_VENV:-/opt/nearby-venv}

# Each test calls ls_setup first and ends with ls_teardown (a RETURN trap): the routes go, and so
# does every localsend-cli it started.
ls_setup() {
    [[ -x $LS_VENV/bin/localsend-cli ]] || { fail "localsend-cli is not installed in $LS_VENV (scripts/install-deps)"; return 1; }
    LS_PIDS=()
    local k
    for k in 1 2 3; do
        ip -n "$(lab_ns "$k")" route replace 224.0.0.0/4 dev "$LAB_IFACE" || return 1
    done
}

ls_teardown() {
    local k pid
    for pid in "${LS_PIDS[@]}"; do kill -INT "$pid" 2>/dev/null; done
    for k in 1 2 3; do ip -n "$(lab_ns "$k")" route del 224.0.0.0/4 dev "$LAB_IFACE" 2>/dev/null; done
    return 0
}

# ls_receive K DIR [ARGS...]: localsend-cli receiving on host K into DIR; sets LS_PID, waits for 'ready'.
ls_receive() {
    local host=$1 dir=$2; shift 2
    mkdir -p "$dir"
    lab_bg "$host" "$OUT/lscli-h$host.out" "$LS_VENV/bin/localsend-cli" receive --output "$dir" "$@" >/dev/null
    LS_PID=$LAB_PID
    LS_PIDS+=("$LS_PID")
    lab_wait_line "$OUT/lscli-h$host.out" 'select(.event=="ready")' 15 >/dev/null || {
        fail "localsend-cli did not start on h$host"; cat "$OUT/lscli-h$host.out.err" >&2; return 1; }
}

# ls_wait_connected K PID: until PID on host K holds a Unix socket connection (accept --localsend
# asking a running node), at most 10 s.
ls_wait_connected() {
    local deadline=$((SECONDS + 10))
    until ip netns exec "$(lab_ns "$1")" ss -xp 2>/dev/null | grep -q "pid=$2,"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

ls_alias() { printf 'localsend-cli@%s' "$(hostname)"; }

# localsend-cli (requests) would verify the receiver's certificate against a CA bundle named in the
# environment, whatever it says itself: run it without one.
ls_cli() { local host=$1; shift; lab_run "$host" env -u REQUESTS_CA_BUNDLE -u CURL_CA_BUNDLE "$LS_VENV/bin/localsend-cli" "$@"; }

test_localsend_browse_finds_and_is_found() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
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
    lab_run 2 "$LS_VENV/bin/localsend-cli" scan --json --timeout 4 >"$OUT/scan.out" 2>"$OUT/scan.err"
    stop "$pid" >/dev/null
    expect_json "$OUT/scan.out" 'select(.alias=="Alice Box" and .ip=="10.99.0.1")' "localsend-cli scan sees nearby" || {
        cat "$OUT/scan.out" "$OUT/scan.err" >&2; return 1; }
}

test_localsend_send_file_byte_exact() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
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
    expect_json "$OUT/text.jsonl" "select(.event==\"sent\" and .bytes==17 and .peers[0].name==\"$(ls_alias)\")" "sent, to the alias /info gave" || return 1
    lab_wait_line "$OUT/lscli-h2.out" 'select(.event=="text" and .text=="hello from nearby")' 5 >/dev/null || {
        fail "localsend-cli did not show the text"; return 1; }
    kill -INT "$LS_PID" 2>/dev/null
    return 0
}

test_localsend_pin_and_decline() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
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
    return 0
}

test_localsend_fingerprint_must_match() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
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
    trap 'ls_teardown; trap - RETURN' RETURN
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

# nearby_ls_node K FILE ARGS...: `nearby advertise|accept --localsend ARGS` on host K; waits for 'advertising'.
nearby_ls_node() {
    local host=$1 file=$2; shift 2
    lab_bg "$host" "$file" "$NEARBY" "$@" --localsend >/dev/null
    NODE_PID=$LAB_PID
    # 30 s: on a loaded machine (load 10-24, three labs at once) a node's first start took 15-16 s.
    lab_wait_line "$file" 'select(.event=="advertising" and .service=="localsend")' 30 >/dev/null || {
        fail "no advertising event from h$host"; cat "$file" "$file.err" >&2; return 1; }
}

test_localsend_receive_from_localsend_cli() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --save-dir "$OUT/in" || return 1
    head -c 2000000 /dev/urandom >"$OUT/video.mp4"
    ls_cli 2 send 10.99.0.1 "$OUT/video.mp4" --json >"$OUT/lssend.out" 2>"$OUT/lssend.err"
    expect_eq "$?" 0 "localsend-cli send" || { cat "$OUT/lssend.out" "$OUT/lssend.err" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 10
    expect_eq "$?" 0 "accept --localsend after one transfer" || { cat "$OUT/accept.jsonl.err" >&2; return 1; }
    cmp -s "$OUT/video.mp4" "$OUT/in/video.mp4" || { fail "video.mp4 differs"; return 1; }
    expect_json "$OUT/accept.jsonl" 'select(.event=="invitation" and .kind=="localsend" and (.peer.name|startswith("localsend-cli@")))' "invitation" || return 1
    expect_json "$OUT/accept.jsonl" 'select(.event=="file-received" and .bytes==2000000 and (.path|endswith("/in/video.mp4")))' "file-received" || return 1
    [[ -z $(find "$OUT/in" -name '*.nearby-part') ]] || { fail "a partial file was left"; return 1; }
    # The same name again: name (1).ext, nothing overwritten.
    nearby_ls_node 1 "$OUT/accept2.jsonl" accept --save-dir "$OUT/in" || return 1
    ls_cli 2 send 10.99.0.1 "$OUT/video.mp4" --json >/dev/null 2>&1
    lab_wait_pid "$NODE_PID" 10 >/dev/null
    cmp -s "$OUT/video.mp4" "$OUT/in/video (1).mp4" || { fail "no 'video (1).mp4'"; ls "$OUT/in" >&2; return 1; }
}

test_localsend_receive_consent_and_pin() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    printf 'hello' >"$OUT/a.bin"
    # No --save-dir: refused, on both sides.
    nearby_ls_node 1 "$OUT/nodir.jsonl" advertise --auto-accept || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >"$OUT/nodir-send.jsonl" 2>"$OUT/nodir-send.err"
    expect_eq "$?" 3 "a file to a node without --save-dir" || return 1
    grep -q "save-dir" "$OUT/nodir-send.err" || { fail "the sender was not told why: $(cat "$OUT/nodir-send.err")"; return 1; }
    expect_json "$OUT/nodir.jsonl" 'select(.event=="declined" and (.reason|contains("--save-dir")))' "declined" || return 1
    stop "$NODE_PID" >/dev/null
    # Without --auto-accept / --accept-from a person answers, with nearby accept from another shell.
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/nopolicy.jsonl" advertise --save-dir "$OUT/in" --pin 2468 || return 1
    printf 'asked' >"$OUT/asked.bin"
    lab_bg 2 "$OUT/asked-send.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/asked.bin" --pin 2468 >/dev/null
    local asked=$LAB_PID
    lab_wait_line "$OUT/nopolicy.jsonl" 'select(.event=="invitation" and .kind=="localsend" and (has("answered_by")|not))' 15 >/dev/null || {
        fail "no invitation waiting for an answer"; return 1; }
    lab_run 1 "$NEARBY" accept --localsend --decline >"$OUT/decline.jsonl" 2>"$OUT/decline.err"
    expect_eq "$?" 0 "accept --localsend --decline through the node" || { cat "$OUT/decline.err" >&2; return 1; }
    expect_json "$OUT/decline.jsonl" 'select(.event=="declined")' "the declined event, for the accept command" || return 1
    lab_wait_pid "$asked" 10
    expect_eq "$?" 3 "the sender, declined by a person" || return 1
    # Waiting for the next one, then accepting it.
    lab_bg 1 "$OUT/accepting.jsonl" "$NEARBY" accept --localsend >/dev/null
    local accepting=$LAB_PID
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/asked.bin" --pin 2468 >/dev/null 2>"$OUT/asked2.err"
    expect_eq "$?" 0 "the sender, accepted by a waiting nearby accept" || { cat "$OUT/asked2.err" >&2; return 1; }
    lab_wait_pid "$accepting" 10
    expect_eq "$?" 0 "accept --localsend through the node" || return 1
    expect_json "$OUT/accepting.jsonl" 'select(.event=="accepted" and .by=="nearby accept")' "the accepted event" || return 1
    cmp -s "$OUT/asked.bin" "$OUT/in/asked.bin" || { fail "asked.bin did not arrive"; return 1; }
    # A waiting accept that is interrupted answers nothing later.
    lab_bg 1 "$OUT/gone.jsonl" "$NEARBY" accept --localsend >/dev/null
    local gone=$LAB_PID
    ls_wait_connected 1 "$gone" || { fail "accept did not reach the node"; return 1; }
    kill -INT "$gone"; lab_wait_pid "$gone" 10 >/dev/null
    lab_bg 2 "$OUT/late.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/asked.bin" --pin 2468 --timeout 3 >/dev/null
    lab_wait_pid "$LAB_PID" 20
    expect_eq "$?" 4 "a transfer nobody answers" || return 1
    stop "$NODE_PID" >/dev/null
    # --accept-from by alias, and --pin: wrong, then right; nearby to nearby over LocalSend.
    nearby_ls_node 1 "$OUT/pin.jsonl" advertise --save-dir "$OUT/in" --pin 2468 --accept-from "Bob Box" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" --name "Bob Box" --pin 1 >/dev/null 2>"$OUT/wrong.err"
    expect_eq "$?" 3 "a wrong PIN" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" --name "Bob Box" --pin 2468 >"$OUT/right.jsonl" 2>"$OUT/right.err"
    expect_eq "$?" 0 "the right PIN" || { cat "$OUT/right.err" >&2; return 1; }
    cmp -s "$OUT/a.bin" "$OUT/in/a.bin" || { fail "a.bin did not arrive"; return 1; }
    # A text, shown as a message.
    lab_run 2 "$NEARBY" send --localsend 10.99.0.1 "hi there" --name "Bob Box" --pin 2468 >/dev/null 2>&1 || { fail "send text"; return 1; }
    lab_wait_line "$OUT/pin.jsonl" 'select(.event=="message" and .text=="hi there")' 5 >/dev/null || { fail "no message event"; return 1; }
    stop "$NODE_PID"
    expect_eq "$?" 0 "advertise --localsend on SIGINT" || return 1
}

test_localsend_receive_bounds() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    local rogue="python3 $ROOT/tests/e2e/rogue_localsend_sender.py 10.99.0.1 53317" c
    for c in cut big-json deep-json many-files huge-header overrun bad-token; do
        # shellcheck disable=SC2086
        lab_run 2 $rogue "$c" >>"$OUT/rogue.out" 2>>"$OUT/rogue.err"
    done
    expect_json "$OUT/rogue.out" 'select(.case=="big-json" and .status==413)' "a 300 KB body: 413" || { cat "$OUT/rogue.out" >&2; return 1; }
    expect_json "$OUT/rogue.out" 'select(.case=="deep-json" and .status==400)' "5,000 deep: 400" || return 1
    expect_json "$OUT/rogue.out" 'select(.case=="many-files" and .status==413)' "10,001 files: 413" || return 1
    expect_json "$OUT/rogue.out" 'select(.case=="huge-header" and (.status==431 or .status==400 or .status=="closed"))' "a 40 KB header refused" || return 1
    expect_json "$OUT/rogue.out" 'select(.case=="overrun" and (.status==400 or .status=="closed"))' "more than announced" || return 1
    expect_json "$OUT/rogue.out" 'select(.case=="bad-token" and .status==403)' "a wrong token: 403" || return 1
    # The cut upload: a file-failed, nothing under its final name, no partial file left.
    lab_wait_line "$OUT/node.jsonl" 'select(.event=="file-failed" and .path=="victim.bin")' 35 >/dev/null || { fail "no file-failed for the cut upload"; return 1; }
    [[ ! -e $OUT/in/victim.bin && ! -e $OUT/in/over.bin && ! -e $OUT/in/token.bin ]] || { fail "a broken upload left a file"; ls -la "$OUT/in" >&2; return 1; }
    [[ -z $(find "$OUT/in" -name '*.nearby-part') ]] || { fail "a partial file was left"; return 1; }
    # Still serving.
    printf 'ok' >"$OUT/after.bin"
    lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/after.bin" >/dev/null 2>"$OUT/after.err" || { fail "the node stopped serving"; cat "$OUT/after.err" >&2; return 1; }
    stop "$NODE_PID" >/dev/null
}

test_localsend_ctrl_c_mid_upload() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --save-dir "$OUT/in" || return 1
    truncate -s 2G "$OUT/big.iso"
    lab_bg 2 "$OUT/send.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/big.iso" >/dev/null
    local sender=$LAB_PID
    lab_wait_line "$OUT/send.jsonl" 'select(.event=="progress")' 60 >/dev/null || { fail "no progress"; cat "$OUT/send.jsonl.err" >&2; return 1; }
    kill -INT "$sender"
    lab_wait_pid "$sender" 10
    expect_eq "$?" 130 "the sender, interrupted" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="error" and .code=="cancelled")' "the sender's error event" || return 1
    lab_wait_pid "$NODE_PID" 10
    local rc=$?
    expect_eq "$rc" 5 "accept --localsend after a cancelled transfer" || return 1
    expect_json "$OUT/accept.jsonl" 'select(.event=="file-failed" and .path=="big.iso")' "file-failed on the receiver" || return 1
    [[ -z $(ls -A "$OUT/in") ]] || { fail "something was left in the save directory"; ls -la "$OUT/in" >&2; return 1; }
}

test_localsend_doctor() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    ls_receive 2 "$OUT/recv" --json || return 1
    local first=$LS_PID
    lab_run 1 "$NEARBY" doctor --localsend "$(ls_alias)" --timeout 10 >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"
    local rc=$?
    expect_eq "$rc" 0 "doctor --localsend PEER" || { cat "$OUT/doctor.jsonl" "$OUT/doctor.err" >&2; return 1; }
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="multicast-group" and .status=="ok" and (.detail|contains("nb0")))' "group joined on nb0" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="info" and .status=="ok")' "info answers" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="certificate" and .status=="ok")' "certificate matches" || return 1
    # By address, within --timeout: every check shares one deadline, the devices leaving the
    # device asked by address half of it (1 s of margin for the process on a loaded machine).
    local t0 ms ref
    ref=$(overhead_ms 1 doctor --localsend 10.99.0.2 --timeout 0.1)
    t0=${EPOCHREALTIME/[.,]/}
    lab_run 1 "$NEARBY" doctor --localsend 10.99.0.2 --timeout 3 >"$OUT/doctor-addr.jsonl" 2>"$OUT/doctor-addr.err"; rc=$?
    ms=$(( (${EPOCHREALTIME/[.,]/} - t0) / 1000 ))
    echo "    doctor --localsend 10.99.0.2 --timeout 3: exit $rc after $ms ms"
    expect_eq "$rc" 0 "doctor --localsend HOST" || { cat "$OUT/doctor-addr.jsonl" "$OUT/doctor-addr.err" >&2; return 1; }
    expect_json "$OUT/doctor-addr.jsonl" 'select(.event=="check" and .check=="info" and .status=="ok")' "info answers (by address)" || return 1
    (( ms <= 4000 + ref )) || fail "doctor --localsend HOST took $ms ms with --timeout 3 (--timeout 0.1: $ref ms)" || return 1
    # An announcement whose fingerprint is not the certificate's: exit 9, said.
    lab_bg 3 "$OUT/rogue.out" python3 "$ROOT/tests/e2e/rogue_localsend.py" impostor Impostor "$(printf '%064d' 7)" 53317 >/dev/null
    local rogue=$LAB_PID
    ls_receive 3 "$OUT/recv3" --json || return 1
    local second=$LS_PID
    lab_run 1 "$NEARBY" doctor --localsend Impostor --timeout 10 >"$OUT/impostor.jsonl" 2>"$OUT/impostor.err"
    rc=$?
    kill "$rogue" "$second" 2>/dev/null
    expect_eq "$rc" 9 "doctor --localsend on an impostor" || { cat "$OUT/impostor.jsonl" >&2; return 1; }
    expect_json "$OUT/impostor.jsonl" 'select(.event=="check" and .check=="certificate" and .status=="fail")' "certificate fails" || return 1
    kill -INT "$first" 2>/dev/null
    return 0
}

test_localsend_scan_finds_a_silent_device() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    # h2 cannot send multicast (no route for it): only the /24 sweep finds it.
    ip -n "$(lab_ns 2)" route del 224.0.0.0/4 dev "$LAB_IFACE"
    ls_receive 2 "$OUT/recv" --json || return 1
    lab_run 1 "$NEARBY" browse --localsend --timeout 4 >"$OUT/plain.jsonl" 2>/dev/null
    expect_eq "$(count_json "$OUT/plain.jsonl" 'select(.event=="found")')" 0 "found without --scan" || return 1
    lab_run 1 "$NEARBY" browse --localsend --scan --count 1 --timeout 30 >"$OUT/scan.jsonl" 2>"$OUT/scan.err"
    expect_eq "$?" 0 "browse --localsend --scan" || return 1
    expect_json "$OUT/scan.jsonl" "select(.event==\"found\" and .host==\"10.99.0.2\" and .peer.name==\"$(ls_alias)\" and (.info.fingerprint|length)==64)" "found by the sweep" || return 1
    lab_run 1 "$NEARBY" browse --scan --timeout 1 >/dev/null 2>&1
    expect_eq "$?" 64 "--scan without --localsend" || return 1
}

test_localsend_accept_from_waits_for_its_sender() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    printf 'one' >"$OUT/one.bin"
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --from "Bob Box" --save-dir "$OUT/in" || return 1
    # Someone else first: declined, and accept waits on.
    lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/one.bin" --name "Mallory" >/dev/null 2>&1
    expect_eq "$?" 3 "a sender --from does not name" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/one.bin" --name "Bob Box" >/dev/null 2>"$OUT/bob.err"
    expect_eq "$?" 0 "the sender --from names" || { cat "$OUT/bob.err" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 10
    expect_eq "$?" 0 "accept --localsend --from" || return 1
    cmp -s "$OUT/one.bin" "$OUT/in/one.bin" || { fail "one.bin did not arrive"; return 1; }
    # Bob again, with another fingerprint (another LocalSend identity), where the alias itself is
    # what was trusted (--from NAME): refused loudly, exit 9. (Trust is by fingerprint: without
    # --from it would be another device, taken with a fingerprint-changed warning.)
    nearby_ls_node 1 "$OUT/accept2.jsonl" accept --from "Bob Box" --save-dir "$OUT/in" || return 1
    lab_run 3 env NEARBY_HOME="$LAB_DIR/h3/home2" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/one.bin" --name "Bob Box" >/dev/null 2>&1
    expect_eq "$?" 3 "an alias with another fingerprint, for the sender" || return 1
    lab_wait_pid "$NODE_PID" 10
    expect_eq "$?" 9 "accept --localsend, for the receiver" || return 1
    grep -q "LOCALSEND FINGERPRINT CHANGED" "$OUT/accept2.jsonl.err" || { fail "not said loudly"; cat "$OUT/accept2.jsonl.err" >&2; return 1; }
}

test_localsend_port_taken_moves_and_is_announced() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in1" "$OUT/in2"
    nearby_ls_node 1 "$OUT/first.jsonl" advertise --save-dir "$OUT/in1" --auto-accept || return 1
    local first=$NODE_PID
    # A second receiver on the same host, another identity: 53317 is taken, so another port, said.
    lab_bg 1 "$OUT/second.jsonl" env NEARBY_HOME="$LAB_DIR/h1/home-second" "$NEARBY" advertise --localsend --name Second \
        --save-dir "$OUT/in2" --auto-accept >/dev/null
    local second=$LAB_PID
    local line
    line=$(lab_wait_line "$OUT/second.jsonl" 'select(.event=="advertising")' 15) || { fail "no advertising"; cat "$OUT/second.jsonl.err" >&2; return 1; }
    local port
    port=$(jq -r .port <<<"$line")
    [[ $port != 53317 && $port -gt 0 ]] || { fail "the second receiver is on port $port"; return 1; }
    grep -q "53317 is taken" "$OUT/second.jsonl.err" || { fail "the move was not said"; return 1; }
    # Found by its alias at the announced port, and it receives there.
    printf 'moved' >"$OUT/m.bin"
    lab_run 2 "$NEARBY" send-file --localsend Second "$OUT/m.bin" --timeout 20 >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send to the receiver on the other port" || { cat "$OUT/send.err" >&2; return 1; }
    cmp -s "$OUT/m.bin" "$OUT/in2/m.bin" || { fail "m.bin did not arrive at the second receiver"; return 1; }
    stop "$second" >/dev/null
    stop "$first" >/dev/null
    return 0
}

test_localsend_device_that_goes_away_is_lost() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    ls_receive 2 "$OUT/recv" --json || return 1
    lab_bg 1 "$OUT/browse.jsonl" "$NEARBY" browse --localsend --timeout 90 >/dev/null
    local browse=$LAB_PID
    lab_wait_line "$OUT/browse.jsonl" 'select(.event=="found" and .kind=="localsend")' 20 >/dev/null || { fail "not found"; return 1; }
    kill -INT "$LS_PID"
    # LocalSend has no goodbye: lost once it has not answered for 35 s.
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"lost\" and .peer.name==\"$(ls_alias)\" and .service==\"localsend\")" 50 >/dev/null || {
        fail "no lost event"; stop "$browse" >/dev/null; return 1; }
    stop "$browse"
    expect_eq "$?" 0 "browse --localsend on SIGINT" || return 1
}

# A LocalSend sender is charged as any stranger is (issue 31's budget): with no room for strangers'
# open files the upload is refused `busy` (503), nothing is left in the save directory, and the
# node goes on; a legal 240-byte name arrives (its partial's name stays under the limit).
test_localsend_senders_are_charged_as_strangers() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" "$OUT/long"
    lab_bg 1 "$OUT/full.jsonl" env NEARBY_STRANGER_FILES=0 "$NEARBY" advertise --localsend --auto-accept --save-dir "$OUT/in" >/dev/null
    local node=$LAB_PID
    LS_PIDS+=("$node")
    lab_wait_line "$OUT/full.jsonl" 'select(.event=="advertising" and .service=="localsend")' 15 >/dev/null || { fail "no LocalSend node"; return 1; }
    head -c 100000 /dev/urandom >"$OUT/a.bin"
    ls_cli 2 send 10.99.0.1 "$OUT/a.bin" --json >"$OUT/busy.out" 2>&1
    lab_wait_line "$OUT/full.jsonl" 'select(.event=="file-failed" and .code=="busy")' 10 >/dev/null || { fail "no busy refusal"; cat "$OUT/full.jsonl" >&2; return 1; }
    [[ -z $(ls -A "$OUT/in") ]] || { fail "the refused upload left $(ls -A "$OUT/in")"; return 1; }
    kill -0 "$node" 2>/dev/null || { fail "the node died"; return 1; }
    stop "$node" >/dev/null
    local name
    name=$(printf 'n%.0s' $(seq 236)).bin
    head -c 5000 /dev/urandom >"$OUT/long/$name"
    lab_bg 1 "$OUT/long.jsonl" "$NEARBY" advertise --localsend --auto-accept --save-dir "$OUT/in" >/dev/null
    node=$LAB_PID; LS_PIDS+=("$node")
    lab_wait_line "$OUT/long.jsonl" 'select(.event=="advertising" and .service=="localsend")' 15 >/dev/null || { fail "no LocalSend node"; return 1; }
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/long/$name" >"$OUT/long-send.jsonl" 2>"$OUT/long-send.err"
    expect_eq "$?" 0 "send-file --localsend of a 240-byte name" || { cat "$OUT/long-send.err" "$OUT/long.jsonl" >&2; return 1; }
    cmp -s "$OUT/long/$name" "$OUT/in/$name" || { fail "the 240-byte name did not arrive whole"; ls "$OUT/in" >&2; return 1; }
}

# Several uploads of one session at once (the official app sends two at a time): none waits for
# another, each is charged as a stranger's open file; files are placed with the mode nearby's own
# files get (0666 less the umask), not the partial's 0600.
test_localsend_receives_uploads_at_once_and_places_them_as_nearby_does() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 python3 "$ROOT/tests/e2e/rogue_localsend_sender.py" 10.99.0.1 53317 parallel >"$OUT/rogue.out" 2>"$OUT/rogue.err"
    expect_json "$OUT/rogue.out" 'select(.case=="parallel" and .status==[200,200,200])' \
        "the 2nd and 3rd uploads answered while the 1st was half sent, then the 1st" || { cat "$OUT/rogue.out" "$OUT/rogue.err" >&2; return 1; }
    local i
    for i in 1 2 3; do
        [[ $(stat -c %s "$OUT/in/par$i.bin" 2>/dev/null) == 2000000 ]] || { fail "par$i.bin did not arrive whole"; ls -la "$OUT/in" >&2; return 1; }
        [[ -z $(tr -d "\\00$i" <"$OUT/in/par$i.bin" | head -c 1) ]] || { fail "par$i.bin has foreign bytes"; return 1; }
    done
    # nearby runs with its user's umask, 022 (tests/lab/as-user), not the test shell's.
    expect_eq "$(stat -c %a "$OUT/in/par1.bin")" "$(printf '%o' $((0666 & ~0022)))" "the mode of a received file" || return 1
    stop "$NODE_PID" >/dev/null
}

# A sender that leaves while its transfer waits for `nearby accept` withdraws the invitation at
# once (as nearby's own do); `accept --localsend --timeout` ends as `accept --timeout` does.
test_localsend_withdrawn_invitations_and_accept_timeout() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" || return 1
    lab_bg 2 "$OUT/rogue.out" python3 "$ROOT/tests/e2e/rogue_localsend_sender.py" 10.99.0.1 53317 wait >/dev/null
    local rogue=$LAB_PID
    local line
    line=$(lab_wait_line "$OUT/node.jsonl" 'select(.event=="invitation" and .kind=="localsend" and (has("answered_by")|not))' 15) || {
        fail "no invitation waiting for an answer"; return 1; }
    kill -KILL "$rogue"
    local started=$SECONDS
    lab_wait_line "$OUT/node.jsonl" "select(.event==\"declined\" and .invitation==$(jq .invitation <<<"$line") and (.reason|startswith(\"withdrawn\")))" 10 >/dev/null || {
        fail "the invitation was not withdrawn when its sender left"; cat "$OUT/node.jsonl" >&2; return 1; }
    ((SECONDS - started < 10)) || { fail "withdrawn after $((SECONDS - started)) s"; return 1; }
    # A /cancel without a session ID from the address that asked withdraws it too (as the official app's).
    lab_run 2 python3 "$ROOT/tests/e2e/rogue_localsend_sender.py" 10.99.0.1 53317 cancel-pending >"$OUT/cancel.out" 2>"$OUT/cancel.err"
    expect_json "$OUT/cancel.out" 'select(.case=="cancel-pending" and .status==403)' "the cancelled prepare-upload: 403" || {
        cat "$OUT/cancel.out" "$OUT/cancel.err" >&2; return 1; }
    expect_json "$OUT/node.jsonl" 'select(.event=="declined" and .reason=="withdrawn: the sender cancelled")' "withdrawn by /cancel" || return 1
    # nearby's own sender, interrupted while the node asks: exit 130, and the invitation is withdrawn.
    printf 'w' >"$OUT/w.bin"
    lab_bg 2 "$OUT/ctrlc.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/w.bin" >/dev/null
    local sender=$LAB_PID
    line=$(lab_wait_line "$OUT/node.jsonl" 'select(.event=="invitation" and (.context|contains("1 file, 1 bytes")) and (has("answered_by")|not))' 15) || {
        fail "no invitation for the interrupted sender"; return 1; }
    kill -INT "$sender"
    lab_wait_pid "$sender" 10
    expect_eq "$?" 130 "the sender, interrupted while asked" || return 1
    lab_wait_line "$OUT/node.jsonl" "select(.event==\"declined\" and .invitation==$(jq .invitation <<<"$line") and (.reason|startswith(\"withdrawn\")))" 10 >/dev/null || {
        fail "the interrupted sender's invitation was not withdrawn"; return 1; }
    # accept --timeout through the running node, then with none: exit 4, no-invitation.
    lab_run 1 "$NEARBY" accept --localsend --timeout 1 >"$OUT/via.jsonl" 2>"$OUT/via.err"
    expect_eq "$?" 4 "accept --localsend --timeout 1 through the node" || { cat "$OUT/via.err" >&2; return 1; }
    expect_json "$OUT/via.jsonl" 'select(.event=="error" and .code=="no-invitation")' "no-invitation" || return 1
    stop "$NODE_PID" >/dev/null
    lab_run 1 "$NEARBY" accept --localsend --save-dir "$OUT/in" --timeout 1 >"$OUT/alone.jsonl" 2>"$OUT/alone.err"
    expect_eq "$?" 4 "accept --localsend --timeout 1 with no node" || { cat "$OUT/alone.err" >&2; return 1; }
    expect_json "$OUT/alone.jsonl" 'select(.event=="error" and .code=="no-invitation")' "no-invitation" || return 1
}

# The official app's answers (protocol v2.1 and its server code): v1's info route, cancel 200,
# 422 on a SHA-256 mismatch and a retry that lands, a client certificate that must be the
# fingerprint announced, and three wrong PINs then 429.
test_localsend_answers_as_the_official_app() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OUT/key.pem" -out "$OUT/cert.pem" \
        -days 2 -subj /CN=rogue >/dev/null 2>&1 || { fail "openssl"; return 1; }
    local rogue="python3 $ROOT/tests/e2e/rogue_localsend_sender.py 10.99.0.1 53317" c
    for c in v1-info cancel-none bad-sha; do
        # shellcheck disable=SC2086
        lab_run 2 $rogue "$c" >>"$OUT/rogue.out" 2>>"$OUT/rogue.err"
    done
    # shellcheck disable=SC2086
    lab_run 2 $rogue cert "$OUT/cert.pem" "$OUT/key.pem" >>"$OUT/rogue.out" 2>>"$OUT/rogue.err"
    expect_json "$OUT/rogue.out" 'select(.case=="v1-info" and .status[0]==200 and (.status[1]|length)>0)' "v1/info" || { cat "$OUT/rogue.out" "$OUT/rogue.err" >&2; return 1; }
    expect_json "$OUT/rogue.out" 'select(.case=="cancel-none" and .status==200)' "cancel of no session: 200" || return 1
    expect_json "$OUT/rogue.out" 'select(.case=="bad-sha" and .status==[422,200])' "422, then the retry lands" || return 1
    cmp -s <(head -c 1000 /dev/zero | tr '\0' g) "$OUT/in/sha.bin" || { fail "sha.bin is not the retried bytes"; return 1; }
    expect_json "$OUT/rogue.out" 'select(.case=="cert" and .status==403)' "a certificate that is not the fingerprint: 403" || return 1
    expect_json "$OUT/node.jsonl" 'select(.event=="declined" and (.reason|contains("certificate")))' "declined, saying why" || return 1
    [[ ! -e $OUT/in/cert.bin ]] || { fail "cert.bin arrived"; return 1; }
    stop "$NODE_PID" >/dev/null
    nearby_ls_node 1 "$OUT/pin.jsonl" advertise --save-dir "$OUT/in" --auto-accept --pin 1357 || return 1
    printf 'p' >"$OUT/p.bin"
    local n
    for n in 1 2 3; do
        lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/p.bin" --pin 1 >/dev/null 2>&1
        expect_eq "$?" 3 "wrong PIN $n" || return 1
    done
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/p.bin" --pin 1357 >/dev/null 2>"$OUT/locked.err"
    expect_eq "$?" 5 "the right PIN after three wrong ones" || return 1
    grep -q "too many wrong PINs" "$OUT/locked.err" || { fail "not said: $(cat "$OUT/locked.err")"; return 1; }
    lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/p.bin" --pin 1357 >/dev/null 2>"$OUT/other.err"
    expect_eq "$?" 0 "the right PIN from another address" || { cat "$OUT/other.err" >&2; return 1; }
    stop "$NODE_PID" >/dev/null
}

# send-file --localsend uploads two files at once, as the official app does: a receiver that takes
# them at once (nearby) starts the second before the first is there; one that serves a connection
# at a time (localsend-cli) gets them all, byte-exact, the second waiting for the first.
test_localsend_send_file_uploads_two_at_once() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" "$OUT/files"
    head -c 40000000 /dev/urandom >"$OUT/files/one.bin"
    head -c 40000000 /dev/urandom >"$OUT/files/two.bin"
    printf 'three' >"$OUT/files/three.txt"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/files/one.bin" "$OUT/files/two.bin" "$OUT/files/three.txt" \
        >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send-file --localsend of three files to nearby" || { cat "$OUT/send.err" >&2; return 1; }
    local f
    for f in one.bin two.bin three.txt; do cmp -s "$OUT/files/$f" "$OUT/in/$f" || { fail "$f differs"; return 1; }; done
    # On the receiver: the second upload started before the first ended.
    jq -se '[.[] | select(.event=="file-started" or .event=="file-received") | .event] | .[0:2] == ["file-started","file-started"]' \
        "$OUT/node.jsonl" >/dev/null || { fail "the uploads went one after the other"; grep -E 'file-(started|received)' "$OUT/node.jsonl" >&2; return 1; }
    stop "$NODE_PID" >/dev/null
    ls_receive 3 "$OUT/recv" --json || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.3 "$OUT/files/one.bin" "$OUT/files/two.bin" "$OUT/files/three.txt" \
        >"$OUT/cli.jsonl" 2>"$OUT/cli.err"
    expect_eq "$?" 0 "send-file --localsend of three files to localsend-cli" || { cat "$OUT/cli.err" >&2; return 1; }
    for f in one.bin two.bin three.txt; do cmp -s "$OUT/files/$f" "$OUT/recv/$f" || { fail "$f differs at localsend-cli"; return 1; }; done
    expect_eq "$(count_json "$OUT/cli.jsonl" 'select(.event=="file-sent")')" 3 "file-sent events" || return 1
}

# An official app since 1.18 answers an announcement only with POST /register to the port it names
# (never over UDP) and does not announce itself while it waits: browse and send-file serve that
# route while they look, and find it by its alias.
test_localsend_found_by_its_register_answer() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OUT/key.pem" -out "$OUT/cert.pem" \
        -days 2 -subj /CN=phone >/dev/null 2>&1 || { fail "openssl"; return 1; }
    lab_bg 2 "$OUT/phone.out" python3 "$ROOT/tests/e2e/rogue_localsend.py" official "Pixel 8" "$OUT/cert.pem" "$OUT/key.pem" >/dev/null
    LS_PIDS+=("$LAB_PID")
    lab_run 1 "$NEARBY" browse --localsend --count 1 --timeout 15 >"$OUT/browse.jsonl" 2>"$OUT/browse.err"
    expect_eq "$?" 0 "browse --localsend" || { cat "$OUT/browse.err" "$OUT/phone.out" >&2; return 1; }
    expect_json "$OUT/browse.jsonl" 'select(.event=="found" and .peer.name=="Pixel 8" and .host=="10.99.0.2" and .port==53317 and .info.device_type=="mobile")' \
        "the phone, found by its register" || { cat "$OUT/browse.jsonl" "$OUT/phone.out" >&2; return 1; }
    expect_json "$OUT/phone.out" 'select(.register=="10.99.0.1" and .status==200)' "its register answered 200" || { cat "$OUT/phone.out" >&2; return 1; }
    # send-file finds it the same way (this stand-in serves no uploads: found, then not reachable, exit 5 — not 2).
    printf 'x' >"$OUT/x.bin"
    lab_run 1 "$NEARBY" send-file --localsend "Pixel 8" "$OUT/x.bin" --timeout 10 >/dev/null 2>"$OUT/send.err"
    expect_eq "$?" 5 "send-file --localsend 'Pixel 8' to the stand-in" || { cat "$OUT/send.err" >&2; return 1; }
}
