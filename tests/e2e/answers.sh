# Who answers an invitation, said as it is (issue 25): a command that accepts for itself does not
# tell its user to run `nearby accept`, and names itself, not a flag nobody passed; a listener
# attached to a node that does not accept by itself shows the invitation and how to accept it.
# Sourced by run.sh; uses the helpers of sessions.sh.
# shellcheck shell=bash

# an_says FILE TEXT WHAT / an_lacks FILE TEXT WHAT: FILE holds (or does not hold) TEXT.
an_says() { grep -qF -- "$2" "$1" && return 0; fail "$3: no '$2'"; sed 's/^/      | /' "$1" >&2; return 1; }
an_lacks() { ! grep -qF -- "$2" "$1" && return 0; fail "$3: '$2' is there"; sed 's/^/      | /' "$1" >&2; return 1; }

test_answer_a_nodeless_accept_says_it_accepted_itself() {
    trap stop_started RETURN
    local status accept
    spawn 1 "$OUT/accept.jsonl" "$NEARBY" accept --service s-an-acc --name "Acc Box" || return 1; accept=$PID
    lab_wait_line "$OUT/accept.jsonl" 'select(.event=="advertising")' 10 >/dev/null || fail "accept did not advertise" || return 1
    nb 2 send --service s-an-acc "Acc Box" hi >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "send to a node-less accept" || return 1
    lab_wait_pid "$accept" 15 >/dev/null
    expect_json "$OUT/accept.jsonl" 'select(.event=="invitation" and .answered_by=="nearby accept")' "the invitation, answered at once" || return 1
    expect_json "$OUT/accept.jsonl" 'select(.event=="accepted" and .by=="nearby accept")' "accepted by nearby accept" || return 1

    # The same for people: one line, no "accept: nearby accept …" and no expiry for an invitation
    # already taken.
    spawn 1 "$OUT/accept.txt" "$NEARBY" accept --human --service s-an-acc2 --name "Acc Two" || return 1; accept=$PID
    lab_wait_text "$OUT/accept.txt" "advertising" || return 1
    nb 2 send --service s-an-acc2 "Acc Two" hi >/dev/null 2>&1 || fail "send to the human accept failed" || return 1
    lab_wait_pid "$accept" 15 >/dev/null
    an_says "$OUT/accept.txt" "answered by nearby accept" "the invitation line" || return 1
    an_lacks "$OUT/accept.txt" "accept:  nearby accept" "a hint to run what runs" || return 1
    an_lacks "$OUT/accept.txt" "expires in" "an expiry for a taken invitation" || return 1
}

test_answer_a_nodeless_listener_names_itself() {
    trap stop_started RETURN
    local status listener
    spawn 1 "$OUT/listen.out" "$NEARBY" stream --listen --json --service s-an-lis --name "Lis Box" || return 1; listener=$PID
    lab_wait_line "$OUT/listen.out.err" 'select(.event=="advertising")' 10 >/dev/null || fail "the listener did not advertise" || return 1
    echo payload | nb 2 stream --service s-an-lis "Lis Box" >/dev/null 2>"$OUT/open.err"; status=$?
    expect_eq "$status" 0 "stream to a node-less listener" || return 1
    lab_wait_pid "$listener" 15 >/dev/null
    expect_json "$OUT/listen.out.err" 'select(.event=="accepted" and .by=="nearby stream --listen")' "accepted by the listener" || return 1
    expect_json "$OUT/listen.out.err" 'select(.event=="invitation" and .answered_by=="nearby stream --listen")' "the invitation, answered at once" || return 1
    [[ $(count_json "$OUT/listen.out.err" 'select(.by=="--auto-accept" or .answered_by=="--auto-accept")') == 0 ]] \
        || fail "a flag nobody passed is named" || return 1
}

# lab_wait_text FILE TEXT: until FILE holds TEXT (10 s).
lab_wait_text() {
    local deadline=$(( $(now_ms) + 10000 ))
    until grep -qF -- "$2" "$1" 2>/dev/null; do
        (( $(now_ms) < deadline )) || { fail "no '$2' in $1 within 10 s"; return 1; }
        sleep 0.05
    done
}

# A listener attached to a node that does not accept by itself: the opener's invitation waits for
# `nearby accept`, and the listener shows it with that command; accepted, the stream flows.
test_answer_an_attached_listener_shows_the_invitation_to_accept() {
    trap stop_started RETURN
    local status listener opener
    start_node 1 s-an-att --name "Att Box" || return 1
    spawn 1 "$OUT/listen.out" "$NEARBY" stream --listen --human --service s-an-att || return 1; listener=$PID
    lab_wait_text "$OUT/listen.out.err" "waiting" || return 1
    printf 'through the door\n' >"$OUT/payload"
    spawn 2 "$OUT/open.out" sh -c "exec '$NEARBY' stream --service s-an-att --timeout 20 'Att Box' <'$OUT/payload'" || return 1; opener=$PID
    lab_wait_text "$OUT/listen.out.err" "accept:  nearby accept --service s-an-att" || return 1
    an_says "$OUT/listen.out.err" "verification code" "the code to compare" || return 1
    nb 1 accept --service s-an-att >"$OUT/accept.jsonl" 2>"$OUT/accept.err"; status=$?
    expect_eq "$status" 0 "nearby accept from another shell" || return 1
    lab_wait_pid "$opener" 15 >/dev/null; status=$?
    expect_eq "$status" 0 "the opener, once accepted" || return 1
    lab_wait_pid "$listener" 15 >/dev/null; status=$?
    expect_eq "$status" 0 "the listener" || return 1
    cmp -s "$OUT/payload" "$OUT/listen.out" || fail "the listener got other bytes" || return 1
}
