# Session end-to-end tests: invitations and their answers, messages, disconnects, vanishing peers,
# encryption, identity checks, the one-node-per-identity lock, and a node with many peers.
# Sourced by run.sh. Each test uses its own service type, so tests never see each other's nodes.
# shellcheck shell=bash

# --- helpers ------------------------------------------------------------------------------------
# Every background process a test starts goes through `spawn` (or `start_node`) and is recorded in STARTED.
# A test's first line is `trap stop_started RETURN`: however the test returns, everything it started
# is stopped (SIGCONT for the SIGSTOPped, SIGINT, then SIGKILL after 5 s) before the next test runs.
STARTED=()
stop_started() {
    trap - RETURN
    local p
    for p in "${STARTED[@]}"; do kill -CONT "$p"; kill -INT "$p"; done 2>/dev/null
    for p in "${STARTED[@]}"; do
        lab_wait_pid "$p" 5 >/dev/null
        [[ $? == 124 ]] && kill -KILL "$p" 2>/dev/null
    done
    STARTED=()
}

# spawn K FILE CMD...: CMD on host K in the background (stdout FILE, stderr FILE.err); sets PID.
spawn() { lab_bg "$@" >/dev/null || return 1; PID=$LAB_PID; STARTED+=("$PID"); }
# nb_bg K FILE ARGS...: `nearby ARGS` on host K in the background; sets PID.
nb_bg() { local host=$1 file=$2; shift 2; spawn "$host" "$file" "$NEARBY" "$@"; }
# nb K ARGS...: `nearby ARGS` on host K in the foreground; returns its status.
nb() { local host=$1; shift; lab_run "$host" "$NEARBY" "$@"; }

# start_node K SERVICE ARGS...: `nearby advertise` on host K (run.sh's advertise), recorded; sets ADV
# (its output file), ADV_PID and ADV_PORT.
start_node() {
    local status
    ADV_PID=
    advertise "$@"; status=$?
    [[ -n $ADV_PID ]] && STARTED+=("$ADV_PID")
    ADV=$OUT/adv-h$1-$2.jsonl
    return "$status"
}

# show FILE...: the files (and their .err companions) on stderr, for failure reports.
show() {
    local f
    for f in "$@"; do
        [[ -s $f ]] && sed "s#^#      $(basename "$f") | #" "$f" >&2
        [[ -s $f.err ]] && sed "s#^#      $(basename "$f").err | #" "$f.err" >&2
    done
    return 0
}

# await FILE FILTER TIMEOUT WHAT: wait for a line of FILE that satisfies the jq filter and print it;
# on timeout fail with WHAT and show the file.
await() {
    lab_wait_line "$1" "$2" "$3" && return 0
    fail "$4: nothing within $3 s (filter: $2)"; show "$1"; return 1
}

# exits PID TIMEOUT EXPECTED WHAT: the background process exits with EXPECTED within TIMEOUT.
exits() {
    local status
    lab_wait_pid "$1" "$2"; status=$?
    [[ $status == 124 ]] && { fail "$4: still running after $2 s"; return 1; }
    expect_eq "$status" "$3" "$4"
}

# still_running PID WHAT
still_running() { lab_wait_pid "$1" 0.2 >/dev/null; [[ $? == 124 ]] || fail "$2 exited"; }

# Line number of the first event of kind $2 in file $1 (0 when none).
line_of() { jq -r .event "$1" | grep -nxm1 "$2" | cut -d: -f1 | grep . || echo 0; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; printf '%d' $((10#$t / 1000)); }
# overhead_ms K ARGS...: the ms `nearby ARGS` takes on host K, run with a --timeout of 0.1 s in ARGS:
# what starting and ending that command costs on this machine right now. Bounds on commands that
# keep to their --timeout add it to a fixed margin, which alone failed under three labs on two
# cores (accept --timeout 2: 4.7 s, with the process alone taking 2 s to start and stop).
overhead_ms() { local t0; t0=$(now_ms); nb "$@" >/dev/null 2>&1; printf '%d' $(( $(now_ms) - t0 )); }

# expect_error FILE STATUS ACTUAL CODE WHAT: exit status and the error event that goes with it.
expect_error() {
    expect_eq "$3" "$2" "$5: exit status" || { show "$1"; return 1; }
    expect_json "$1" "select(.event==\"error\" and .code==\"$4\" and .exit_status==$2)" "$5: error event with code $4"
}

# --- 1. invitations answered from another shell --------------------------------------------------

test_invitation_answered_with_accept_from_another_shell() {
    trap stop_started RETURN
    local id1 id2 adv adv_pid inviter line invitation code status t0
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-invite || return 1; adv=$ADV adv_pid=$ADV_PID
    nb_bg 2 "$OUT/invite.jsonl" invite "Alice Box" --service s-invite --context "build logs" --timeout 20; inviter=$PID

    line=$(await "$adv" 'select(.event=="invitation")' 10 "invitation event on h1") || return 1
    jq -e --arg id2 "$id2" '.peer.id==$id2 and .context=="build logs" and (.invitation|length) > 0
        and (.verification_code|test("^[0-9]{3} [0-9]{3}$"))
        and ((.expires|sub("\\.[0-9]+Z$";"Z")|fromdateiso8601) - (.time|sub("\\.[0-9]+Z$";"Z")|fromdateiso8601)
             | . >= 18 and . <= 21)' <<<"$line" >/dev/null \
        || fail "invitation event lacks peer h2, context, a 'ddd ddd' code or an expiry 20 s ahead: $line" || return 1
    invitation=$(jq -r .invitation <<<"$line") code=$(jq -r .verification_code <<<"$line")
    still_running "$inviter" "the invite waiting for an answer" || return 1

    nb 1 accept --service s-invite >"$OUT/accept.jsonl" 2>"$OUT/accept.err"; status=$?
    expect_eq "$status" 0 "nearby accept (through the node) exit status" || { show "$OUT/accept.jsonl"; return 1; }
    expect_json "$OUT/accept.jsonl" "select(.event==\"accepted\" and .invitation==\"$invitation\" and .peer.id==\"$id2\" and .by==\"nearby accept\")" "accept prints accepted" || return 1
    expect_json "$OUT/accept.jsonl" "select(.event==\"connected\" and .peer.id==\"$id2\" and .verification_code==\"$code\" and .peers==1)" "accept prints connected" || return 1

    await "$OUT/invite.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\" and .peer.name==\"Alice Box\" and .verification_code==\"$code\")" 5 "connected on h2 with h1's code" >/dev/null || return 1
    expect_json "$OUT/invite.jsonl" "select(.event==\"connecting\" and .peer.id==\"$id1\")" "invite prints connecting" || return 1
    expect_json "$OUT/invite.jsonl" "select(.event==\"invited\" and .invitation==\"$invitation\" and .peer.id==\"$id1\" and .verification_code==\"$code\" and .encrypted==true)" "invite prints invited with the same code" || return 1
    expect_eq "$(jq -r .event "$OUT/invite.jsonl" | tr '\n' ' ')" "connecting invited connected " "the inviter's events so far" || return 1
    expect_json "$adv" "select(.event==\"connected\" and .peer.id==\"$id2\" and .verification_code==\"$code\")" "h1's node prints connected" || return 1

    # The invite stays in the session until the peer leaves.
    still_running "$inviter" "the invite, while in the session," || return 1
    kill -INT "$adv_pid"; t0=$(now_ms)
    await "$OUT/invite.jsonl" "select(.event==\"disconnected\" and .peer.id==\"$id1\" and (.reason|test(\"left\")))" 2 "disconnected (peer left) on h2" >/dev/null || return 1
    printf '    h2 saw disconnected %d ms after SIGINT on h1\n' $(( $(now_ms) - t0 ))
    exits "$adv_pid" 10 0 "advertise exit status after SIGINT" || return 1
    exits "$inviter" 5 0 "invite exit status after the peer left" || return 1
}

# --- 2. decline ------------------------------------------------------------------------------------

test_declined_invitation_exits_3() {
    trap stop_started RETURN
    local id1 id2 adv inviter status
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-decline || return 1; adv=$ADV
    nb_bg 2 "$OUT/invite.jsonl" invite "$id1" --service s-decline --timeout 20; inviter=$PID
    await "$adv" "select(.event==\"invitation\" and .peer.id==\"$id2\")" 10 "invitation on h1" >/dev/null || return 1

    nb 1 accept --decline --service s-decline >"$OUT/decline.jsonl" 2>"$OUT/decline.err"; status=$?
    expect_json "$OUT/decline.jsonl" "select(.event==\"declined\" and .peer.id==\"$id2\")" "accept --decline prints declined" || return 1

    exits "$inviter" 5 3 "invite exit status when declined" || { show "$OUT/invite.jsonl"; return 1; }
    expect_json "$OUT/invite.jsonl" "select(.event==\"declined\" and .peer.id==\"$id1\")" "declined event on h2" || return 1
    expect_json "$OUT/invite.jsonl" 'select(.event=="error" and .code=="declined" and .exit_status==3)' "error event, code declined" || return 1
    [[ $(count_json "$OUT/invite.jsonl" 'select(.event=="connected")') == 0 ]] || fail "h2 printed connected" || return 1
    expect_json "$adv" "select(.event==\"declined\" and .peer.id==\"$id2\")" "h1's node prints declined" || return 1
    [[ $(count_json "$adv" 'select(.event=="connected")') == 0 ]] || fail "h1 printed connected" || return 1

    # Without a node, `nearby accept --decline` advertises, declines the first invitation, exits 0.
    local decliner
    nb_bg 1 "$OUT/decliner.jsonl" accept --decline --service s-decline2; decliner=$PID
    await "$OUT/decliner.jsonl" 'select(.event=="advertising")' 10 "accept --decline advertises" >/dev/null || return 1
    nb 2 invite "$id1" --service s-decline2 --timeout 10 >"$OUT/invite2.jsonl" 2>"$OUT/invite2.err"; local status2=$?
    expect_error "$OUT/invite2.jsonl" 3 "$status2" declined "invite to a node-less accept --decline" || return 1
    exits "$decliner" 5 0 "node-less accept --decline" || { show "$OUT/decliner.jsonl"; return 1; }
    expect_json "$OUT/decliner.jsonl" "select(.event==\"declined\" and .peer.id==\"$id2\")" "node-less accept --decline prints declined" || return 1

    # Declining is what was asked: success, as it is for `nearby accept --decline` without a node.
    expect_eq "$status" 0 "exit status of 'nearby accept --decline' through the node" || { show "$OUT/decline.jsonl"; return 1; }
}

# --- 3. invitation timeout ----------------------------------------------------------------------

test_unanswered_invitation_times_out_and_the_node_stays_healthy() {
    trap stop_started RETURN
    local id1 id2 adv first status t0 ms sender ref
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-timeout || return 1; adv=$ADV
    ref=$(overhead_ms 2 invite nobody-here --service s-timeout --timeout 0.1)
    t0=$(now_ms)
    nb 2 invite "$id1" --service s-timeout --timeout 2 >"$OUT/invite.jsonl" 2>"$OUT/invite.err"; status=$?
    ms=$(( $(now_ms) - t0 ))
    expect_error "$OUT/invite.jsonl" 4 "$status" invitation-timeout "invite --timeout 2 with nobody answering" || return 1
    (( ms >= 1900 && ms < 4000 + ref )) || fail "invite --timeout 2 took $ms ms (--timeout 0.1: $ref ms)" || return 1
    grep -q "did not answer" "$OUT/invite.err" || fail "stderr does not say the peer did not answer: $(cat "$OUT/invite.err")" || return 1
    first=$(await "$adv" "select(.event==\"invitation\" and .peer.id==\"$id2\")" 1 "invitation on h1") || return 1
    first=$(jq -r .invitation <<<"$first")
    await "$adv" "select(.event==\"declined\" and .invitation==\"$first\" and (.reason|test(\"withdrawn|expired\")))" 3 "h1 reports the invitation withdrawn" >/dev/null || return 1

    # Still healthy: the next invitation is answered with `nearby accept` and the message arrives.
    nb_bg 2 "$OUT/send.jsonl" send "$id1" again --service s-timeout --timeout 10; sender=$PID
    await "$adv" "select(.event==\"invitation\" and .peer.id==\"$id2\" and .invitation!=\"$first\")" 10 "second invitation on h1" >/dev/null || return 1
    nb 1 accept --service s-timeout >"$OUT/accept.jsonl" 2>"$OUT/accept.err"; status=$?
    expect_eq "$status" 0 "accept exit status" || { show "$OUT/accept.jsonl"; return 1; }
    exits "$sender" 10 0 "send exit status after accept" || { show "$OUT/send.jsonl"; return 1; }
    await "$adv" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"again\")" 2 "the message after accept" >/dev/null || return 1
}

# --- 4. auto-accept ---------------------------------------------------------------------------------

test_auto_accept_and_a_one_shot_send() {
    trap stop_started RETURN
    local id1 id2 adv status c s d
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-auto --auto-accept || return 1; adv=$ADV
    nb 2 send "$id1" hello --service s-auto >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "one-shot send exit status" || { show "$OUT/send.jsonl"; return 1; }
    expect_json "$OUT/send.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\" and .peers==1)" "send prints connected" || return 1
    expect_json "$OUT/send.jsonl" "select(.event==\"sent\" and .bytes==5 and .peers==[{\"id\":\"$id1\",\"name\":\"Alice Box\"}])" "send prints sent" || return 1
    expect_json "$OUT/send.jsonl" "select(.event==\"disconnected\" and .peer.id==\"$id1\")" "send prints disconnected" || return 1
    c=$(line_of "$OUT/send.jsonl" connected) s=$(line_of "$OUT/send.jsonl" sent) d=$(line_of "$OUT/send.jsonl" disconnected)
    (( c < s && s < d )) || fail "send's events out of order: $(jq -r .event "$OUT/send.jsonl" | tr '\n' ' ')" || return 1

    await "$adv" "select(.event==\"disconnected\" and .peer.id==\"$id2\")" 2 "h1 prints disconnected" >/dev/null || return 1
    expect_json "$adv" "select(.event==\"invitation\" and .peer.id==\"$id2\")" "invitation on h1" || return 1
    expect_json "$adv" "select(.event==\"accepted\" and .peer.id==\"$id2\" and .by==\"--auto-accept\")" "accepted by --auto-accept" || return 1
    expect_json "$adv" "select(.event==\"connected\" and .peer.id==\"$id2\")" "connected on h1" || return 1
    expect_json "$adv" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"hello\" and .bytes==5 and .data==null)" "message on h1" || return 1
    expect_eq "$(jq -r 'select(.event!="advertising") | .event' "$adv" | tr '\n' ' ')" "invitation accepted connected message disconnected " "h1's events" || return 1
}

# --- 5. accept-from ---------------------------------------------------------------------------------

test_accept_from_admits_only_that_peer() {
    trap stop_started RETURN
    local id1 id2 id3 adv status
    id1=$(id_of 1) && id2=$(id_of 2) && id3=$(id_of 3) || return 1
    start_node 1 s-from --accept-from "${id2:0:6}" || return 1; adv=$ADV
    nb 2 send "$id1" "from h2" --service s-from --timeout 10 >"$OUT/h2.jsonl" 2>"$OUT/h2.err"; status=$?
    expect_eq "$status" 0 "send from the admitted peer" || { show "$OUT/h2.jsonl"; return 1; }
    expect_json "$adv" "select(.event==\"accepted\" and .peer.id==\"$id2\" and .by==\"--accept-from\")" "h2 accepted by --accept-from" || return 1
    await "$adv" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"from h2\")" 2 "h2's message" >/dev/null || return 1

    nb 3 send "$id1" x --service s-from --timeout 3 >"$OUT/h3.jsonl" 2>"$OUT/h3.err"; status=$?
    expect_error "$OUT/h3.jsonl" 4 "$status" invitation-timeout "send from a peer not in --accept-from" || return 1
    expect_json "$adv" "select(.event==\"invitation\" and .peer.id==\"$id3\")" "h3's invitation shown on h1" || return 1
    await "$adv" "select(.event==\"declined\" and .peer.id==\"$id3\")" 2 "h3's invitation withdrawn on h1" >/dev/null || return 1
    [[ $(count_json "$adv" "select((.event==\"accepted\" or .event==\"connected\" or .event==\"message\") and .peer.id==\"$id3\")") == 0 ]] \
        || { fail "h3 got in"; show "$adv"; return 1; }
}

# --- 6. messages both ways ---------------------------------------------------------------------------

test_messages_both_ways_text_binary_and_all() {
    trap stop_started RETURN
    local id1 id2 id3 adv1 adv2 adv3 status
    id1=$(id_of 1) && id2=$(id_of 2) && id3=$(id_of 3) || return 1
    start_node 1 s-msg --auto-accept || return 1; adv1=$ADV
    start_node 2 s-msg --auto-accept || return 1; adv2=$ADV
    start_node 3 s-msg --auto-accept || return 1; adv3=$ADV

    nb 1 send "$id2" "to bob" --service s-msg >"$OUT/to-bob.jsonl" 2>"$OUT/to-bob.err"; status=$?
    expect_eq "$status" 0 "send from h1's node to h2" || { show "$OUT/to-bob.jsonl"; return 1; }
    expect_json "$OUT/to-bob.jsonl" "select(.event==\"sent\" and .bytes==6 and (.peers|map(.id))==[\"$id2\"])" "sent event to the client" || return 1
    await "$adv2" "select(.event==\"message\" and .peer.id==\"$id1\" and .text==\"to bob\")" 2 "message on h2" >/dev/null || return 1

    nb 2 send "$id1" "to alice" --service s-msg >"$OUT/to-alice.jsonl" 2>"$OUT/to-alice.err"; status=$?
    expect_eq "$status" 0 "send from h2's node back to h1" || { show "$OUT/to-alice.jsonl"; return 1; }
    await "$adv1" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"to alice\")" 2 "message on h1" >/dev/null || return 1
    expect_eq "$(count_json "$adv1" "select(.event==\"connected\" and .peer.id==\"$id2\")")" 1 "sessions h1-h2 (the reply reuses the session)" || return 1

    # Binary (not UTF-8: starts with 0xFF) arrives as base64 data.
    { printf '\377'; head -c 63 /dev/urandom; } >"$OUT/random.bin"
    nb 2 send "$id1" --service s-msg <"$OUT/random.bin" >"$OUT/binary.jsonl" 2>"$OUT/binary.err"; status=$?
    expect_eq "$status" 0 "binary send from stdin" || { show "$OUT/binary.jsonl"; return 1; }
    await "$adv1" "select(.event==\"message\" and .data==\"$(base64 -w0 "$OUT/random.bin")\" and .bytes==64 and .text==null)" 2 "binary message as base64 data" >/dev/null || return 1

    nb 2 send "$id1" "héllo ✓" --service s-msg >/dev/null 2>&1 || fail "UTF-8 send exited $?" || return 1
    await "$adv1" 'select(.event=="message" and .text=="héllo ✓" and .bytes==10)' 2 "UTF-8 message as text" >/dev/null || return 1

    printf 'line1\nline2' | nb 2 send "$id1" --service s-msg >/dev/null 2>&1 || fail "stdin send exited $?" || return 1
    await "$adv1" 'select(.event=="message" and .text=="line1\nline2")' 2 "two lines from stdin, one message" >/dev/null || return 1

    # --all from h1's node reaches every connected peer.
    nb 1 invite "$id3" --service s-msg >"$OUT/invite-h3.jsonl" 2>"$OUT/invite-h3.err" || fail "h1 inviting h3 exited $?" || return 1
    nb 1 send --all "to everyone" --service s-msg >"$OUT/all.jsonl" 2>"$OUT/all.err"; status=$?
    expect_eq "$status" 0 "send --all" || { show "$OUT/all.jsonl"; return 1; }
    expect_json "$OUT/all.jsonl" "select(.event==\"sent\" and ((.peers|map(.id)|sort)==([\"$id2\",\"$id3\"]|sort)))" "sent to both peers" || return 1
    await "$adv2" "select(.event==\"message\" and .peer.id==\"$id1\" and .text==\"to everyone\")" 2 "--all message on h2" >/dev/null || return 1
    await "$adv3" "select(.event==\"message\" and .peer.id==\"$id1\" and .text==\"to everyone\")" 2 "--all message on h3" >/dev/null || return 1
    [[ $(count_json "$adv1" 'select(.event=="message" and .text=="to everyone")') == 0 ]] || fail "the sender received its own --all message" || return 1
}

# --- 7. one-off: `nearby accept` on one side, `nearby send` on the other --------------------------

test_accept_without_node_takes_a_one_shot_send() {
    trap stop_started RETURN
    local id1 id2 acceptor status
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    nb_bg 1 "$OUT/accept.jsonl" accept --service s-oneoff; acceptor=$PID
    await "$OUT/accept.jsonl" "select(.event==\"advertising\" and .peer.id==\"$id1\")" 10 "accept advertises" >/dev/null || return 1
    nb 2 send "$id1" hi --service s-oneoff --timeout 10 >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "one-shot send exit status" || { show "$OUT/send.jsonl"; return 1; }
    exits "$acceptor" 5 0 "accept exit status after the sender left" || { show "$OUT/accept.jsonl"; return 1; }
    expect_json "$OUT/accept.jsonl" "select(.event==\"accepted\" and .peer.id==\"$id2\")" "accepted" || return 1
    expect_json "$OUT/accept.jsonl" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"hi\")" "message hi" || return 1
    expect_json "$OUT/accept.jsonl" "select(.event==\"disconnected\" and .peer.id==\"$id2\")" "disconnected" || return 1
}

# --- 8. disconnect ----------------------------------------------------------------------------------

test_disconnect_is_seen_by_the_peer_at_once() {
    trap stop_started RETURN
    local id1 id2 adv1 adv2 status t0
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-disc --auto-accept || return 1; adv1=$ADV
    start_node 2 s-disc --auto-accept || return 1; adv2=$ADV
    nb 2 send "$id1" hello --service s-disc >/dev/null 2>&1 || fail "send exited $?" || return 1

    t0=$(now_ms)
    nb 2 disconnect "$id1" --service s-disc >"$OUT/disconnect.jsonl" 2>"$OUT/disconnect.err"; status=$?
    expect_eq "$status" 0 "disconnect exit status" || { show "$OUT/disconnect.jsonl"; return 1; }
    expect_json "$OUT/disconnect.jsonl" "select(.event==\"disconnected\" and .peer.id==\"$id1\")" "disconnect prints disconnected" || return 1
    await "$adv1" "select(.event==\"disconnected\" and .peer.id==\"$id2\" and (.reason|test(\"disconnected\")) and .peers==0)" 2 "h1 sees disconnected" >/dev/null || return 1
    printf '    h1 saw disconnected %d ms after the disconnect command started\n' $(( $(now_ms) - t0 ))
    await "$adv2" "select(.event==\"disconnected\" and .peer.id==\"$id1\")" 1 "h2's node prints disconnected" >/dev/null || return 1

    # --all, after connecting again.
    nb 2 send "$id1" again --service s-disc >/dev/null 2>&1 || fail "second send exited $?" || return 1
    nb 2 disconnect --all --service s-disc >"$OUT/all.jsonl" 2>"$OUT/all.err"; status=$?
    expect_eq "$status" 0 "disconnect --all exit status" || { show "$OUT/all.jsonl"; return 1; }
    for _ in $(seq 20); do
        [[ $(count_json "$adv1" "select(.event==\"disconnected\" and .peer.id==\"$id2\")") == 2 ]] && break
        sleep 0.1
    done
    expect_eq "$(count_json "$adv1" "select(.event==\"disconnected\" and .peer.id==\"$id2\")")" 2 "disconnected events on h1 after --all" || return 1

    # No node: nothing to disconnect.
    nb 3 disconnect x --service s-disc >"$OUT/none.jsonl" 2>"$OUT/none.err"; status=$?
    expect_error "$OUT/none.jsonl" 6 "$status" no-node "disconnect with no node running" || return 1
    grep -q "no node is running" "$OUT/none.err" || fail "stderr: $(cat "$OUT/none.err")" || return 1
}

# --- 9. peers that vanish ----------------------------------------------------------------------------

test_vanished_peer_is_reported_disconnected() {
    trap stop_started RETURN
    local id1 id2 id3 adv killed stopped t0 ms status line
    id1=$(id_of 1) && id2=$(id_of 2) && id3=$(id_of 3) || return 1
    start_node 1 s-vanish --auto-accept || return 1; adv=$ADV

    # (a) SIGKILL: the kernel closes the socket, the node notices at once.
    nb_bg 2 "$OUT/killed.jsonl" invite "$id1" --service s-vanish --timeout 10; killed=$PID
    await "$OUT/killed.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\")" 10 "h2 connected" >/dev/null || return 1
    await "$adv" "select(.event==\"connected\" and .peer.id==\"$id2\")" 2 "h1 connected to h2" >/dev/null || return 1
    kill -KILL "$killed"; t0=$(now_ms)
    line=$(await "$adv" "select(.event==\"disconnected\" and .peer.id==\"$id2\")" 2 "disconnected after SIGKILL of the peer") || return 1
    printf '    SIGKILL: disconnected after %d ms, reason: %s\n' $(( $(now_ms) - t0 )) "$(jq -r .reason <<<"$line")"

    # (b) "cable pulled": the peer's process is frozen, its kernel still ACKs; keepalives notice.
    nb_bg 3 "$OUT/stopped.jsonl" invite "$id1" --service s-vanish --timeout 10; stopped=$PID
    await "$OUT/stopped.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\")" 10 "h3 connected" >/dev/null || return 1
    await "$adv" "select(.event==\"connected\" and .peer.id==\"$id3\")" 2 "h1 connected to h3" >/dev/null || return 1
    kill -STOP "$stopped"; t0=$(now_ms)
    # Waits up to 20 s to tell "late" from "never"; the contract is 10 s.
    await "$adv" "select(.event==\"disconnected\" and .peer.id==\"$id3\" and (.reason|test(\"connection lost\")))" 20 "disconnected (connection lost) after SIGSTOP of the peer" >/dev/null || return 1
    ms=$(( $(now_ms) - t0 ))
    printf '    SIGSTOP: disconnected after %d ms\n' "$ms"
    (( ms <= 10000 )) || fail "a frozen peer was reported disconnected after $ms ms, more than 10 s" || return 1
    kill -CONT "$stopped"
    # Thawed, it finds its session gone and ends.
    lab_wait_pid "$stopped" 5; status=$?
    [[ $status != 124 ]] || fail "the thawed invite did not notice that its session is gone" || return 1
    printf '    the thawed invite exited %d\n' "$status"
}

# --- 10. SIGINT says goodbye ---------------------------------------------------------------------

test_interrupted_node_says_goodbye() {
    trap stop_started RETURN
    local id1 id2 adv1 adv2 pid1 t0
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    start_node 1 s-bye --auto-accept || return 1; adv1=$ADV pid1=$ADV_PID
    start_node 2 s-bye --auto-accept || return 1; adv2=$ADV
    nb 2 send "$id1" hi --service s-bye >/dev/null 2>&1 || fail "send exited $?" || return 1
    await "$adv2" "select(.event==\"connected\" and .peer.id==\"$id1\")" 1 "h2's node connected" >/dev/null || return 1
    kill -INT "$pid1"; t0=$(now_ms)
    await "$adv2" "select(.event==\"disconnected\" and .peer.id==\"$id1\" and (.reason|test(\"stopped\")))" 2 "h2 sees disconnected (stopped)" >/dev/null || return 1
    printf '    h2 saw disconnected %d ms after SIGINT on h1\n' $(( $(now_ms) - t0 ))
    exits "$pid1" 5 0 "h1's advertise after SIGINT" || return 1
    expect_json "$adv1" "select(.event==\"disconnected\" and .peer.id==\"$id2\")" "h1 reports its own disconnection" || return 1
}

# --- 11. simultaneous invitations ----------------------------------------------------------------

test_crossed_invitations_make_one_session() {
    trap stop_started RETURN
    local id1 id2 adv adv1 adv2 pid1 pid2 i1 i2 round service
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    for round in 1 2 3; do
        service=s-cross$round
        start_node 1 "$service" || return 1; adv1=$ADV pid1=$ADV_PID
        start_node 2 "$service" || return 1; adv2=$ADV pid2=$ADV_PID
        nb_bg 1 "$OUT/invite-h1-$round.jsonl" invite "$id2" --service "$service" --timeout 10; i1=$PID
        nb_bg 2 "$OUT/invite-h2-$round.jsonl" invite "$id1" --service "$service" --timeout 10; i2=$PID
        exits "$i1" 15 0 "round $round: h1's invite" || { show "$OUT/invite-h1-$round.jsonl" "$adv1" "$OUT/invite-h2-$round.jsonl" "$adv2"; return 1; }
        exits "$i2" 15 0 "round $round: h2's invite" || { show "$OUT/invite-h1-$round.jsonl" "$adv1" "$OUT/invite-h2-$round.jsonl" "$adv2"; return 1; }
        expect_json "$OUT/invite-h1-$round.jsonl" "select(.event==\"connected\" and .peer.id==\"$id2\")" "round $round: h1's invite prints connected" || return 1
        expect_json "$OUT/invite-h2-$round.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\")" "round $round: h2's invite prints connected" || return 1
        sleep 0.5   # a late second session would show up now
        expect_eq "$(count_json "$adv1" "select(.event==\"connected\" and .peer.id==\"$id2\" and .peers==1)")" 1 "round $round: connected events for h2 on h1" || { show "$adv1"; return 1; }
        expect_eq "$(count_json "$adv2" "select(.event==\"connected\" and .peer.id==\"$id1\" and .peers==1)")" 1 "round $round: connected events for h1 on h2" || { show "$adv2"; return 1; }
        expect_eq "$(count_json "$adv1" 'select(.event=="connected" or .event=="disconnected")')" 1 "round $round: session events on h1" || { show "$adv1"; return 1; }
        expect_eq "$(count_json "$adv2" 'select(.event=="connected" or .event=="disconnected")')" 1 "round $round: session events on h2" || { show "$adv2"; return 1; }
        # No invitation is left waiting for `nearby accept` on either side.
        for adv in "$adv1" "$adv2"; do
            expect_eq "$(jq -rs '[.[] | select(.event=="invitation") | .invitation] - [.[] | select(.event=="accepted" or .event=="declined") | .invitation] | join(" ")' "$adv")" "" \
                "round $round: invitations left unanswered on $(basename "$adv" .jsonl)" || { show "$adv"; return 1; }
        done
        # The session works.
        nb 1 send "$id2" "round $round" --service "$service" >/dev/null 2>&1 || fail "round $round: send exited $?" || return 1
        await "$adv2" "select(.event==\"message\" and .text==\"round $round\")" 2 "round $round: message" >/dev/null || return 1
        kill -INT "$pid1" "$pid2"
        exits "$pid1" 10 0 "round $round: h1's advertise" || return 1
        exits "$pid2" 10 0 "round $round: h2's advertise" || return 1
    done
}

# --- 12. encryption preferences ---------------------------------------------------------------------

test_encryption_preferences_follow_mpc_rules() {
    trap stop_started RETURN
    local id1 none req status
    id1=$(id_of 1) || return 1
    start_node 1 s-enc-none --auto-accept --encryption none || return 1; none=$ADV

    nb 2 send "$id1" x --service s-enc-none >"$OUT/required.jsonl" 2>"$OUT/required.err"; status=$?
    expect_error "$OUT/required.jsonl" 5 "$status" encryption-mismatch "required (default) against none" || return 1
    expect_json "$OUT/required.jsonl" 'select(.event=="error" and (.message|test("required")) and (.message|test("none")) and (.message|test("refuse")))' "the message says required and none refuse each other" || return 1
    grep -q "refuse each other" "$OUT/required.err" || fail "stderr: $(cat "$OUT/required.err")" || return 1
    await "$none" 'select(.event=="rejected" and .code=="encryption-mismatch" and (.address|startswith("10.99.0.2:")))' 2 "rejected event on the none side" >/dev/null || return 1

    nb 2 send "$id1" y --service s-enc-none --encryption optional >"$OUT/optional.jsonl" 2>"$OUT/optional.err"; status=$?
    expect_eq "$status" 0 "optional against none" || { show "$OUT/optional.jsonl"; return 1; }
    expect_json "$OUT/optional.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\" and .encrypted==false)" "connected, encrypted false" || return 1
    await "$none" 'select(.event=="message" and .text=="y")' 2 "plaintext message" >/dev/null || return 1
    expect_json "$none" 'select(.event=="connected" and .encrypted==false)' "h1 connected, encrypted false" || return 1

    start_node 1 s-enc-req --auto-accept || return 1; req=$ADV
    nb 2 send "$id1" z --service s-enc-req >"$OUT/default.jsonl" 2>"$OUT/default.err"; status=$?
    expect_eq "$status" 0 "default against default" || { show "$OUT/default.jsonl"; return 1; }
    expect_json "$OUT/default.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\" and .encrypted==true)" "connected, encrypted true" || return 1
    expect_json "$OUT/default.jsonl" 'select(.event=="invited" and .encrypted==true)' "invited, encrypted true" || return 1
    await "$req" 'select(.event=="message" and .text=="z")' 2 "encrypted message" >/dev/null || return 1

    nb 2 send "$id1" w --service s-enc-req --encryption none >"$OUT/none.jsonl" 2>"$OUT/none.err"; status=$?
    expect_error "$OUT/none.jsonl" 5 "$status" encryption-mismatch "none against required" || return 1
    await "$req" 'select(.event=="rejected" and .code=="encryption-mismatch")' 2 "rejected event on the required side" >/dev/null || return 1
}

# --- 13. identity checks -------------------------------------------------------------------------

test_spoofed_advertisement_and_changed_key_are_refused() {
    trap stop_started RETURN
    local id1 id3 real pin status known saved fake
    id1=$(id_of 1) && id3=$(id_of 3) || return 1
    # h3 advertises h1's ID on s-spoof, pointing at its own node.
    start_node 3 s-spoof-real --port 47123 --auto-accept || return 1; real=$ADV
    spawn 3 "$OUT/publish.txt" avahi-publish -s "$id1" _s-spoof._tcp 47123 "_d=Alice Box" "_nb=1" || return 1
    nb 2 send "$id1" x --service s-spoof --timeout 5 >"$OUT/spoof.jsonl" 2>"$OUT/spoof.err"; status=$?
    expect_error "$OUT/spoof.jsonl" 9 "$status" identity-mismatch "send to a spoofed advertisement" || return 1
    expect_json "$OUT/spoof.jsonl" "select(.event==\"error\" and (.message|contains(\"$id1\")) and (.message|contains(\"$id3\")))" "the error names both IDs" || return 1
    [[ -s $OUT/spoof.err ]] || fail "nothing on stderr" || return 1
    [[ $(count_json "$OUT/spoof.jsonl" 'select(.event=="connected" or .event=="sent")') == 0 ]] || fail "connected to the impostor" || return 1
    [[ $(count_json "$real" 'select(.event=="message")') == 0 ]] || fail "the impostor got the message" || return 1

    # A pinned key that changes.
    start_node 1 s-pin --auto-accept || return 1; pin=$ADV
    nb 2 send "$id1" first --service s-pin >/dev/null 2>&1 || fail "first send exited $?" || return 1
    known=$LAB_DIR/h2/home/known_peers
    grep -q "^$id1 " "$known" || fail "h2's known_peers has no line for h1" || return 1
    saved=$(cat "$known")
    fake=$(openssl ecparam -name prime256v1 -genkey 2>/dev/null | openssl ec -pubout -outform DER 2>/dev/null | base64 -w0)
    [[ -n $fake ]] || fail "could not make a key" || return 1
    awk -v id="$id1" -v key="$fake" '$1 == id { $2 = key } { print }' <<<"$saved" >"$known"
    nb 2 send "$id1" second --service s-pin >"$OUT/changed.jsonl" 2>"$OUT/changed.err"; status=$?
    local after; after=$(grep "^$id1 " "$known")
    printf '%s\n' "$saved" >"$known"   # restore before anything can fail
    expect_error "$OUT/changed.jsonl" 9 "$status" key-changed "send to a peer whose key changed" || return 1
    grep -q "known_peers" "$OUT/changed.err" || fail "stderr does not mention known_peers: $(cat "$OUT/changed.err")" || return 1
    [[ $after == "$id1 $fake "* ]] || fail "the pinned key was replaced: $after" || return 1
    [[ $(count_json "$pin" 'select(.event=="message" and .text=="second")') == 0 ]] || fail "the message went out anyway" || return 1
}

# --- 14. one node per identity and service -------------------------------------------------------

test_second_node_is_refused_and_a_stale_lock_is_recovered() {
    trap stop_started RETURN
    local first second status
    start_node 6 s-lock || return 1; first=$ADV_PID
    nb_bg 6 "$OUT/second.jsonl" advertise --service s-lock; second=$PID
    exits "$second" 10 10 "second advertise on the same identity and service" || { show "$OUT/second.jsonl"; return 1; }
    expect_json "$OUT/second.jsonl" "select(.event==\"error\" and .code==\"node-running\" and .exit_status==10 and (.message|contains(\"pid $first\")) and (.message|contains(\".sock\")))" "node-running error naming the pid and socket" || return 1
    [[ $(count_json "$OUT/second.jsonl" 'select(.event=="advertising")') == 0 ]] || fail "the second one advertised" || return 1
    still_running "$first" "the first advertise" || return 1
    nb 6 disconnect --all --service s-lock >"$OUT/control.jsonl" 2>"$OUT/control.err"; status=$?
    expect_eq "$status" 0 "the first node still answers on its control socket" || { show "$OUT/control.jsonl"; return 1; }

    kill -KILL "$first"
    exits "$first" 5 137 "first advertise after SIGKILL" || return 1
    nb 6 disconnect --all --service s-lock >"$OUT/stale.jsonl" 2>"$OUT/stale.err"; status=$?
    expect_error "$OUT/stale.jsonl" 6 "$status" no-node "a client facing the dead node's socket" || return 1
    start_node 6 s-lock || return 1
    nb 6 disconnect --all --service s-lock >"$OUT/new.jsonl" 2>"$OUT/new.err"; status=$?
    expect_eq "$status" 0 "the new node answers on its control socket" || { show "$OUT/new.jsonl"; return 1; }
}

# --- 15. unknown and ambiguous peers ---------------------------------------------------------------

test_unknown_and_ambiguous_peers() {
    trap stop_started RETURN
    local id4 id5 name4 name5 adv4 adv5 status t0 ms ref
    ref=$(overhead_ms 2 send nosuchpeer x --service s-twin --timeout 0.1)
    t0=$(now_ms)
    nb 2 send nosuchpeer x --service s-twin --timeout 2 >"$OUT/missing.jsonl" 2>"$OUT/missing.err"; status=$?
    ms=$(( $(now_ms) - t0 ))
    expect_error "$OUT/missing.jsonl" 2 "$status" peer-not-found "send to a peer nobody advertises" || return 1
    (( ms < 4000 + ref )) || fail "--timeout 2 took $ms ms (--timeout 0.1: $ref ms)" || return 1
    grep -q "nosuchpeer" "$OUT/missing.err" || fail "stderr does not name the peer: $(cat "$OUT/missing.err")" || return 1

    id4=$(id_of 4) && id5=$(id_of 5) || return 1
    name4=$(nb 4 identity | jq -r .peer.name) name5=$(nb 5 identity | jq -r .peer.name)
    nb 4 identity --rename Twin >/dev/null && nb 5 identity --rename Twin >/dev/null || fail "rename failed" || return 1
    start_node 4 s-twin --auto-accept; status=$?
    [[ $status == 0 ]] && { adv4=$ADV; start_node 5 s-twin --auto-accept; status=$?; adv5=$ADV; }
    # Names back for later tests, once the nodes are stopped (renaming under a running node is refused).
    SESS_NAMES_BACK="nb 4 identity --rename $(printf '%q' "$name4") >/dev/null; nb 5 identity --rename $(printf '%q' "$name5") >/dev/null"
    trap 'stop_started; eval "$SESS_NAMES_BACK"' RETURN
    [[ $status == 0 ]] || return 1

    nb 2 send Twin x --service s-twin --timeout 5 >"$OUT/twin.jsonl" 2>"$OUT/twin.err"; status=$?
    expect_error "$OUT/twin.jsonl" 2 "$status" peer-ambiguous "send to a name two peers share" || return 1
    expect_json "$OUT/twin.jsonl" "select(.event==\"error\" and (.message|contains(\"$id4\")) and (.message|contains(\"$id5\")))" "the error lists both IDs" || return 1
    grep -q "$id4" "$OUT/twin.err" && grep -q "$id5" "$OUT/twin.err" || fail "stderr does not list both IDs: $(cat "$OUT/twin.err")" || return 1
    [[ $(count_json "$adv4" 'select(.event=="invitation")') == 0 && $(count_json "$adv5" 'select(.event=="invitation")') == 0 ]] \
        || fail "an ambiguous name was invited anyway" || return 1

    nb 2 send "${id4:0:5}" "just you" --service s-twin --timeout 5 >"$OUT/prefix.jsonl" 2>"$OUT/prefix.err"; status=$?
    expect_eq "$status" 0 "send to an unambiguous ID prefix" || { show "$OUT/prefix.jsonl"; return 1; }
    await "$adv4" 'select(.event=="message" and .text=="just you")' 2 "message on h4" >/dev/null || return 1
    [[ $(count_json "$adv5" 'select(.event=="message")') == 0 ]] || fail "h5 got the message too" || return 1
}

# --- 16. message size limit --------------------------------------------------------------------------

test_message_over_one_mib_is_refused() {
    trap stop_started RETURN
    local id1 adv status
    id1=$(id_of 1) || return 1
    start_node 1 s-big --auto-accept || return 1; adv=$ADV
    lab_run 2 sh -c 'head -c 1048577 /dev/zero | "$0" send "$1" --service s-big' "$NEARBY" "$id1" >"$OUT/over.jsonl" 2>"$OUT/over.err"; status=$?
    expect_error "$OUT/over.jsonl" 64 "$status" message-too-large "1 MiB + 1 byte" || return 1
    grep -q "1048576" "$OUT/over.err" || fail "stderr does not give the limit: $(cat "$OUT/over.err")" || return 1
    [[ $(count_json "$OUT/over.jsonl" 'select(.event!="error")') == 0 ]] || fail "it went on the network" || return 1
    lab_run 2 sh -c 'head -c 1048576 /dev/zero | tr "\0" a | "$0" send "$1" --service s-big' "$NEARBY" "$id1" >"$OUT/limit.jsonl" 2>"$OUT/limit.err"; status=$?
    expect_eq "$status" 0 "exactly 1 MiB" || { show "$OUT/limit.jsonl"; return 1; }
    expect_json "$OUT/limit.jsonl" 'select(.event=="sent" and .bytes==1048576)' "sent 1048576 bytes" || return 1
    await "$adv" 'select(.event=="message" and .bytes==1048576 and (.text|length)==1048576)' 5 "the 1 MiB message on h1" >/dev/null || return 1
    expect_eq "$(count_json "$adv" 'select(.event=="invitation")')" 1 "invitations on h1 (the refused one never went out)" || return 1
}

# --- 17. something that is not nearby on our port -----------------------------------------------

test_foreign_client_is_rejected_and_the_node_carries_on() {
    trap stop_started RETURN
    local id1 adv t0 ms
    id1=$(id_of 1) || return 1
    start_node 1 s-foreign --auto-accept || return 1; adv=$ADV
    t0=$(now_ms)
    printf 'GET / HTTP/1.0\r\n\r\n' | lab_run 2 socat -t 5 - "TCP:$(lab_addr 1):$ADV_PORT" >"$OUT/http.out" 2>&1
    ms=$(( $(now_ms) - t0 ))
    await "$adv" 'select(.event=="rejected" and .code=="not-a-nearby-peer" and (.address|startswith("10.99.0.2:")))' 2 "rejected HTTP client" >/dev/null || return 1
    (( ms < 4000 )) || fail "the node kept the HTTP client's connection open ($ms ms)" || return 1
    head -c 300 /dev/urandom >"$OUT/garbage.bin"
    lab_run 2 socat -t 5 - "TCP:$(lab_addr 1):$ADV_PORT" <"$OUT/garbage.bin" >"$OUT/garbage.out" 2>&1
    for _ in $(seq 20); do [[ $(count_json "$adv" 'select(.event=="rejected")') == 2 ]] && break; sleep 0.1; done
    expect_eq "$(count_json "$adv" 'select(.event=="rejected" and .code=="not-a-nearby-peer")')" 2 "rejected events after HTTP and random bytes" || { show "$adv"; return 1; }
    # A TLS ClientHello, as an MPC app's session would start.
    printf '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' | lab_run 2 socat -t 5 - "TCP:$(lab_addr 1):$ADV_PORT" >/dev/null 2>&1
    await "$adv" 'select(.event=="rejected" and (.reason|test("TLS")))' 2 "rejected TLS client, said to be TLS" >/dev/null || return 1
    nb 2 send "$id1" "still here" --service s-foreign >/dev/null 2>&1 || fail "send after the foreign clients exited $?" || return 1
    await "$adv" 'select(.event=="message" and .text=="still here")' 2 "message after the foreign clients" >/dev/null || return 1
}

# --- 18. many peers on one node ---------------------------------------------------------------------

test_sixteen_peers_on_one_node() {
    trap stop_started RETURN
    local adv pid1 n pids=() status
    start_node 1 s-many --auto-accept || return 1; adv=$ADV pid1=$ADV_PID
    for n in $(seq 16); do
        mkdir -p "$LAB_DIR/h2/peer$n"
        spawn 2 "$OUT/peer$n.jsonl" env "NEARBY_HOME=$LAB_DIR/h2/peer$n" "$NEARBY" invite "$(lab_addr 1):$ADV_PORT" --service s-many --timeout 20 || return 1
        pids+=("$PID")
    done
    await "$adv" 'select(.event=="connected" and .peers==16)' 20 "16th connected on h1" >/dev/null || return 1
    expect_eq "$(count_json "$adv" 'select(.event=="connected")')" 16 "connected events on h1" || return 1
    expect_eq "$(jq -r 'select(.event=="connected") | .peer.id' "$adv" | sort -u | wc -l)" 16 "distinct peers" || return 1
    for n in $(seq 16); do
        await "$OUT/peer$n.jsonl" 'select(.event=="connected")' 5 "peer $n connected" >/dev/null || return 1
    done

    nb 1 send --all "hi all" --service s-many >"$OUT/all.jsonl" 2>"$OUT/all.err"; status=$?
    expect_eq "$status" 0 "send --all" || { show "$OUT/all.jsonl"; return 1; }
    expect_json "$OUT/all.jsonl" 'select(.event=="sent" and (.peers|length)==16)' "sent to 16 peers" || return 1
    for n in $(seq 16); do
        await "$OUT/peer$n.jsonl" 'select(.event=="message" and .text=="hi all")' 5 "peer $n got the message" >/dev/null || return 1
    done

    kill -INT "$pid1"
    exits "$pid1" 10 0 "h1's advertise after SIGINT" || return 1
    for n in $(seq 16); do
        exits "${pids[n-1]}" 5 0 "peer $n's invite after h1 left" || { show "$OUT/peer$n.jsonl"; return 1; }
    done
}
