# shellcheck shell=bash
# Issue 59: LocalSend with a person holding a phone. Against tests/e2e/rogue_localsend_person.py,
# a phone written from the official app's source (1.18): it answers announcements only by
# POST /register over a connection it keeps, its person taps Accept when they do and unticks
# files. Uses localsend.sh's ls_setup/ls_teardown and localsend_phone.sh's lsp_cert.

LPS_PEER="$ROOT/tests/e2e/rogue_localsend_person.py"

# lps_phone K ALIAS ARGS...: the phone on host K (sets LPS_PID), its lines in $OUT/person.out.
lps_phone() {
    local host=$1 alias=$2; shift 2
    mkdir -p "$OUT/phone"
    lsp_cert phone || return 1
    lab_bg "$host" "$OUT/person.out" python3 "$LPS_PEER" phone "$alias" 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" "$@" >/dev/null
    LPS_PID=$LAB_PID
    LS_PIDS+=("$LPS_PID")
    lab_wait_line "$OUT/person.out" 'select(.listening)' 15 >/dev/null || {
        fail "no phone on h$host"; cat "$OUT/person.out.err" >&2; return 1; }
}

lps_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( 10#$t / 1000 )); }

# By name as fast as by address plus a round trip: the phone's /register is the sighting, and
# nothing waits for that connection (which the phone keeps open) to close. 3 runs of each.
test_localsend_person_by_name_as_fast_as_by_address() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lps_phone 1 "Pia's phone" || return 1
    head -c 1000 /dev/urandom >"$OUT/a.bin"
    local run t0 by_name by_address
    for run in 1 2 3; do
        t0=$(lps_ms)
        lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >/dev/null 2>"$OUT/addr.err" || {
            fail "by address"; cat "$OUT/addr.err" >&2; return 1; }
        by_address=$(( $(lps_ms) - t0 ))
        t0=$(lps_ms)
        lab_run 2 "$NEARBY" send-file --localsend "Pia's phone" "$OUT/a.bin" >"$OUT/name.jsonl" 2>"$OUT/name.err" || {
            fail "by name"; cat "$OUT/name.err" >&2; return 1; }
        by_name=$(( $(lps_ms) - t0 ))
        echo "run $run: by name $by_name ms, by address $by_address ms"
        (( by_name <= 1500 )) || { fail "by name took $by_name ms (by address $by_address ms)"; return 1; }
    done
    expect_json "$OUT/person.out" 'select(.register=="10.99.0.2" and .status==200)' "the phone registered" || return 1
    expect_json "$OUT/name.jsonl" "select(.event==\"file-sent\" and .peer.name==\"Pia's phone\")" "sent by name" || return 1
}

# A person's pace and choice, with default flags: the phone's person answers after a while (3 s
# here; the sender's default limit is checked to exceed 40 s, and was run by hand at 40 s) and
# ticks one of two files. The sender says it waits for them, the file taken arrives, the other is
# named as left out, exit 0.
test_localsend_person_answers_late_and_takes_one_of_two() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    local after=${LPS_ANSWER_AFTER:-3}
    lps_phone 1 "Pia's phone" --answer-after "$after" --take 1 || return 1
    head -c 5000 /dev/urandom >"$OUT/a.bin"
    head -c 5000 /dev/urandom >"$OUT/b.bin"
    lab_run 2 "$NEARBY" send-file --localsend "Pia's phone" "$OUT/a.bin" "$OUT/b.bin" >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "one of two taken, after $after s" || { cat "$OUT/send.err" "$OUT/person.out" >&2; return 1; }
    cmp -s "$OUT/a.bin" "$OUT/phone/a.bin" || { fail "a.bin did not arrive"; return 1; }
    [[ ! -e $OUT/phone/b.bin ]] || { fail "b.bin arrived"; return 1; }
    expect_json "$OUT/send.jsonl" "select(.event==\"waiting\" and .for==\"answer\" and .peer.name==\"Pia's phone\" and .seconds > 40
        and (.reason|startswith(\"waiting for Pia's phone to accept\")))" "the wait said, longer than 40 s" || { cat "$OUT/send.jsonl" >&2; return 1; }
    expect_json "$OUT/send.jsonl" "select(.event==\"skipped\" and .path==\"b.bin\" and (.reason|contains(\"left out by Pia's phone\")))" \
        "b.bin named as left out" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="file-sent" and .path=="a.bin")' "a.bin sent" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="error")')" 0 "no error event" || return 1
}

# Nothing taken is a decline (exit 3); --timeout bounds the person's wait for scripts (exit 4), and
# the limit is said; Ctrl-C while the person decides withdraws the offer (/cancel).
test_localsend_person_none_taken_timeout_and_ctrl_c() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lps_phone 1 "Pia's phone" --take 0 || return 1
    head -c 5000 /dev/urandom >"$OUT/a.bin"
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >"$OUT/none.jsonl" 2>"$OUT/none.err"
    expect_eq "$?" 3 "none taken: declined" || { cat "$OUT/none.err" >&2; return 1; }
    grep -q "it took none of the 1 file" "$OUT/none.err" || { fail "not said: $(cat "$OUT/none.err")"; return 1; }
    kill "$LPS_PID" && lab_wait_pid "$LPS_PID" 10 >/dev/null
    lps_phone 1 "Pia's phone" --answer-after 30 || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" --timeout 2 >"$OUT/bounded.jsonl" 2>"$OUT/bounded.err"
    expect_eq "$?" 4 "--timeout 2 bounds the person's wait" || { cat "$OUT/bounded.err" >&2; return 1; }
    expect_json "$OUT/bounded.jsonl" 'select(.event=="waiting" and .seconds==2 and (.reason|contains("up to 2 s")))' "the limit said" || {
        cat "$OUT/bounded.jsonl" >&2; return 1; }
    lab_bg 2 "$OUT/ctrlc.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >/dev/null
    local sender=$LAB_PID
    lab_wait_line "$OUT/ctrlc.jsonl" 'select(.event=="waiting" and .for=="answer")' 15 >/dev/null || { fail "no waiting event"; return 1; }
    kill -INT "$sender"
    lab_wait_pid "$sender" 10 >/dev/null
    lab_wait_line "$OUT/person.out" 'select(.cancel != null)' 10 >/dev/null || { fail "no /cancel at the phone"; cat "$OUT/person.out" >&2; return 1; }
}

# Every command a node prints works as printed: a LocalSend transfer held for a person shows its
# accept and decline lines on the node's terminal; each, run verbatim in a shell, answers it. No
# sentence about a verification code where there is none.
test_localsend_person_printed_commands_work_as_printed() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" && chmod 777 "$OUT/in"
    head -c 5000 /dev/urandom >"$OUT/a.bin"
    term_bg 1 "$OUT/node.txt" -- advertise --localsend --save-dir "$OUT/in"
    LS_PIDS+=("$PID")
    term_wait "$OUT/node.txt" "advertising" "the LocalSend node" || return 1
    local shell_path verb line sender rc n=0 deadline
    shell_path="$(dirname "$NEARBY"):$PATH"
    for verb in accept decline; do
        n=$((n + 1))
        lab_bg 2 "$OUT/send-$verb.jsonl" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" --name "Alice laptop" >/dev/null
        sender=$LAB_PID
        LS_PIDS+=("$sender")
        # The n-th invitation's lines.
        deadline=$(( $(now_ms) + 15000 ))
        until (( $(plain "$OUT/node.txt" | grep -cE "^ +$verb: +nearby accept") >= n )); do
            (( $(now_ms) < deadline )) || { fail "no $verb line for invitation $n"; show "$OUT/node.txt"; return 1; }
            sleep 0.1
        done
        line=$(plain "$OUT/node.txt" | sed -n "s/^ *$verb: *//p" | tail -1)
        lab_run 1 env PATH="$shell_path" bash -c "$line" >"$OUT/$verb.out" 2>"$OUT/$verb.err"
        rc=$?
        expect_eq "$rc" 0 "'$line' as printed" || { cat "$OUT/$verb.err" >&2; return 1; }
        lab_wait_pid "$sender" 15 >/dev/null
    done
    cmp -s "$OUT/a.bin" "$OUT/in/a.bin" || { fail "accepted as printed: a.bin did not arrive"; return 1; }
    expect_json "$OUT/send-accept.jsonl" 'select(.event=="file-sent")' "the accepted send" || return 1
    expect_json "$OUT/send-decline.jsonl" 'select(.event=="error" and .exit_status==3)' "the declined send" || return 1
    plain "$OUT/node.txt" | grep -q "inviter's screen" && { fail "a code sentence where there is no code"; show "$OUT/node.txt"; return 1; }
    return 0
}

# A phone whose server requires a client certificate (1.18's does): nearby shows its own, found by
# name and sent to; with no certificate at all the handshake is refused (the peer is strict).
test_localsend_person_a_phone_that_requires_a_client_certificate() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lab_run 2 "$NEARBY" browse --localsend --timeout 1 >/dev/null 2>&1
    local home
    home=$(lab_run 2 sh -c 'echo "${NEARBY_HOME:-$HOME/.nearby}"')
    jq -r .certificate "$home/localsend.json" >"$OUT/nearby.pem" || { fail "no localsend.json in $home"; return 1; }
    lps_phone 1 "Pia's phone" --require-cert "$OUT/nearby.pem" || return 1
    head -c 5000 /dev/urandom >"$OUT/a.bin"
    lab_run 2 "$NEARBY" send-file --localsend "Pia's phone" "$OUT/a.bin" >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "sent to a phone that requires a client certificate" || { cat "$OUT/send.err" "$OUT/person.out" >&2; return 1; }
    cmp -s "$OUT/a.bin" "$OUT/phone/a.bin" || { fail "a.bin did not arrive"; return 1; }
    lab_run 2 timeout 5 openssl s_client -connect 10.99.0.1:53317 </dev/null >/dev/null 2>&1
    lab_wait_line "$OUT/person.out" 'select(.handshake_failed)' 10 >/dev/null || { fail "a client with no certificate was taken"; return 1; }
}

# The other way: the phone's person sends to nearby as 1.18's client does, showing its own
# self-signed certificate and each body chunked with no Content-Length. An offer of no files first
# is answered 400, as the app's receiver answers it, and ends nothing: the real offer is taken.
test_localsend_person_a_phone_sends_with_its_certificate_and_chunked_bodies() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    lsp_cert phone || return 1
    head -c 300000 /dev/urandom >"$OUT/a.bin"
    head -c 5000 /dev/urandom >"$OUT/b.bin"
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --save-dir "$OUT/in" || return 1
    lab_run 2 python3 "$LPS_PEER" send "Pia's phone" 10.99.0.1 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/a.bin" "$OUT/b.bin" \
        >"$OUT/send.out" 2>"$OUT/send.err"
    expect_eq "$?" 0 "the phone sent two files, chunked" || { cat "$OUT/send.out" "$OUT/send.err" "$OUT/accept.jsonl" >&2; return 1; }
    expect_json "$OUT/send.out" 'select(.empty_offer==400)' "an empty offer is 400" || { cat "$OUT/send.out" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 15
    expect_eq "$?" 0 "accept --localsend after the transfer" || { cat "$OUT/accept.jsonl.err" >&2; return 1; }
    cmp -s "$OUT/a.bin" "$OUT/in/a.bin" && cmp -s "$OUT/b.bin" "$OUT/in/b.bin" || { fail "a file differs"; ls -l "$OUT/in" >&2; return 1; }
    expect_json "$OUT/accept.jsonl" "select(.event==\"invitation\" and .peer.name==\"Pia's phone\")" "the phone's invitation" || return 1
    expect_eq "$(count_json "$OUT/accept.jsonl" 'select(.event=="file-received")')" 2 "two files received" || return 1
}
