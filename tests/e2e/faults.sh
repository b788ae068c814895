# Faults end-to-end tests (issue 41): a `send-file` that rides out its link going down (the
# sender's interface taken down mid-transfer, alone and through a running node), the receiving
# node SIGKILLed and started again (on another port: discovery finds it), and the bound after which
# it gives up (exit 5, resumable). A tbf qdisc slows the sender's link so that the cut lands
# mid-transfer (this kernel has no netem). A receiver that leaves on purpose is not waited for. Sourced by run.sh; uses the helpers of sessions.sh and
# files.sh (files_done, files_later, files_random, files_parts …).
# shellcheck shell=bash

# faults_slow K RATE: host K sends at most RATE (tbf on its interface), undone when the test ends.
faults_slow() {
    files_later lab_run "$1" tc qdisc del dev nb0 root
    lab_run "$1" tc qdisc replace dev nb0 root tbf rate "$2" burst 64kb latency 300ms \
        || fail "cannot shape h$1's link (tc tbf)"
}

# faults_down K: host K's interface down, brought up again when the test ends whatever happens.
faults_down() {
    files_later lab_run "$1" ip link set nb0 up
    lab_run "$1" ip link set nb0 down || fail "cannot take h$1's link down"
}

# faults_resumed FILE SIZE WHAT: the sender said `reconnecting`, then `resumed` from a prefix the
# receiver kept, then `file-sent`, and no `file-failed`. Prints the resumed offset.
faults_resumed() {
    local file=$1 size=$2 what=$3 resumed
    expect_json "$file" 'select(.event=="reconnecting" and .attempt>=1 and .retry_for>0)' "$what: reconnecting" || return 1
    resumed=$(jq -c 'select(.event=="resumed")' "$file" | tail -1)
    [[ -n $resumed ]] || { fail "$what: no resumed event"; show "$file"; return 1; }
    local offset; offset=$(jq -r .offset <<<"$resumed")
    (( offset > 0 && offset < size )) || { fail "$what: resumed at $offset of $size (nothing kept?)"; show "$file"; return 1; }
    expect_json "$file" "select(.event==\"file-sent\" and .skipped==$offset)" "$what: file-sent after the resume" || return 1
    expect_eq "$(count_json "$file" 'select(.event=="file-failed")')" 0 "$what: file-failed events of attempts that were made good" || return 1
    printf '%s\n' "$offset"
}

# faults_begin SIZE: h1's ID in ID1, a save directory ($OUT/save) and SIZE random bytes in
# $OUT/src/big.bin, all removed when the test ends (the test's first line is `trap files_done RETURN`).
faults_begin() {
    ID1=$(id_of 1) || return 1
    mkdir -p "$OUT/save"
    files_later rm -rf "$OUT/src" "$OUT/save"
    [[ -z ${1:-} ]] || files_random "$OUT/src/big.bin" "$1"
}

test_faults_send_file_rides_out_a_link_outage() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src size=16000000 way sender t_down t_up offset
    faults_begin || return 1; id1=$ID1
    start_node 1 s-fl-down --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    faults_slow 2 16mbit || return 1
    for way in alone node; do
        # Through a node: h2's node sends, with the same options and the same events.
        [[ $way == node ]] && { start_node 2 s-fl-down || return 1; }
        files_random "$src/$way.bin" "$size"
        nb_bg 2 "$OUT/$way.jsonl" send-file "$id1" "$src/$way.bin" --service s-fl-down --retry-for 90; sender=$PID
        await "$adv" "select(.event==\"progress\" and .direction==\"receive\" and .path==\"$way.bin\" and .bytes >= $((size * 3 / 10)))" 60 \
            "h1 receiving ($way) past 30%" >/dev/null || return 1
        faults_down 2 || return 1; t_down=$(now_ms)
        # Down until the sender has noticed (liveness: seconds of silence) and tried again at least once.
        await "$OUT/$way.jsonl" 'select(.event=="reconnecting" and .attempt>=2)' 60 "reconnecting ($way)" >/dev/null || return 1
        lab_run 2 ip link set nb0 up; t_up=$(now_ms)
        exits "$sender" 120 0 "send-file ($way) through the outage" || { show "$OUT/$way.jsonl"; return 1; }
        printf '    %-5s link down %d ms; file complete %d ms after it came back' "$way" $((t_up - t_down)) $(( $(now_ms) - t_up ))
        offset=$(faults_resumed "$OUT/$way.jsonl" "$size" "$way") || return 1
        printf ', resumed at %d of %d bytes\n' "$offset" "$size"
        cmp -s "$src/$way.bin" "$dir/$way.bin" || { fail "$way.bin is not byte-exact after the outage"; return 1; }
        files_no_parts "$dir" "after the outage ($way)" || return 1
    done
}

test_faults_send_file_rides_out_a_receiver_restart() {
    trap files_done RETURN
    local id1 dir=$OUT/save src=$OUT/src size=16000000 sender node t_kill t_back offset first
    faults_begin "$size" || return 1; id1=$ID1
    start_node 1 s-fl-restart --auto-accept --save-dir "$dir" || return 1; node=$ADV_PID first=$ADV_PORT
    faults_slow 2 16mbit || return 1
    nb_bg 2 "$OUT/send.jsonl" send-file "$id1" "$src/big.bin" --service s-fl-restart --retry-for 90; sender=$PID
    await "$ADV" "select(.event==\"progress\" and .direction==\"receive\" and .bytes >= $((size * 3 / 10)))" 60 "h1 past 30%" >/dev/null || return 1
    kill -KILL "$node"; t_kill=$(now_ms)
    exits "$node" 5 137 "h1's node after SIGKILL" || return 1
    await "$OUT/send.jsonl" 'select(.event=="reconnecting")' 30 "reconnecting after the receiver died" >/dev/null || return 1
    mv "$ADV" "$OUT/adv-h1-first.jsonl"
    start_node 1 s-fl-restart --auto-accept --save-dir "$dir" || return 1; t_back=$(now_ms)
    exits "$sender" 120 0 "send-file through the receiver's restart" || { show "$OUT/send.jsonl"; return 1; }
    printf '    node killed; back %d ms later on port %s (was %s); file complete %d ms after that' \
        $((t_back - t_kill)) "$ADV_PORT" "$first" $(( $(now_ms) - t_back ))
    offset=$(faults_resumed "$OUT/send.jsonl" "$size" "restart") || return 1
    printf ', resumed at %d of %d bytes\n' "$offset" "$size"
    await "$ADV" "select(.event==\"file-received\" and .skipped==$offset)" 5 "file-received on the restarted node" >/dev/null || return 1
    cmp -s "$src/big.bin" "$dir/big.bin" || { fail "big.bin is not byte-exact after the restart"; return 1; }
    files_no_parts "$dir" "after the restart" || return 1
}

# After --retry-for seconds of outage the transfer fails as before: exit 5, one file-failed
# (resumable), one sentence naming the bound; sending again once the link is back resumes.
test_faults_send_file_gives_up_after_retry_for() {
    trap files_done RETURN
    local id1 dir=$OUT/save src=$OUT/src size=16000000 sender t_down ms status
    faults_begin "$size" || return 1; id1=$ID1
    start_node 1 s-fl-bound --auto-accept --save-dir "$dir" || return 1
    faults_slow 2 16mbit || return 1
    nb_bg 2 "$OUT/send.jsonl" send-file "$id1" "$src/big.bin" --service s-fl-bound --retry-for 3; sender=$PID
    await "$ADV" "select(.event==\"progress\" and .direction==\"receive\" and .bytes >= $((size * 3 / 10)))" 60 "h1 past 30%" >/dev/null || return 1
    faults_down 2 || return 1; t_down=$(now_ms)
    exits "$sender" 60 5 "send-file after 3 s of outage" || { show "$OUT/send.jsonl"; return 1; }
    ms=$(( $(now_ms) - t_down ))
    printf '    gave up %d ms after the link went down (liveness ~6-7 s + --retry-for 3)\n' "$ms"
    expect_error "$OUT/send.jsonl" 5 5 connection-lost "after --retry-for" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="file-failed" and .resumable and .code=="connection-lost")')" 1 \
        "one resumable file-failed" || { show "$OUT/send.jsonl"; return 1; }
    grep -q -- "--retry-for" "$OUT/send.jsonl.err" || fail "stderr does not name --retry-for: $(cat "$OUT/send.jsonl.err")" || return 1
    lab_run 2 ip link set nb0 up
    lab_run 2 tc qdisc del dev nb0 root
    nb 2 send-file "$id1" "$src/big.bin" --service s-fl-bound >"$OUT/again.jsonl" 2>"$OUT/again.err"; status=$?
    expect_eq "$status" 0 "send-file again once the link is back" || { show "$OUT/again.jsonl"; return 1; }
    expect_json "$OUT/again.jsonl" 'select(.event=="file-started" and .skipped>0)' "the second run resumes" || return 1
    cmp -s "$src/big.bin" "$dir/big.bin" || { fail "big.bin is not byte-exact"; return 1; }
}

# A host that publishes the node's instance name (its peer ID) first does not keep it down: the
# node advertises under the daemon's alternative name and says so (`advertising` with `instance`),
# and a friend reaches it by ID and by display name — the squatter's record, which claims the same
# ID, is passed over when its host does not prove the identity.
test_faults_a_squatted_name_does_not_keep_the_node_down() {
    trap stop_started RETURN
    local id1 name1 instance status i
    id1=$(id_of 1) || return 1
    name1=$(nb 1 identity | jq -r .peer.name)
    # h3 squats: h1's ID as its instance name, nearby's TXT, a port where nothing listens.
    spawn 3 "$OUT/squat.out" avahi-publish -s "$id1" _s-fl-squat._tcp 9 "_d=$name1" "_nb=2" || return 1
    for ((i = 0; i < 100; i++)); do
        lab_run 1 avahi-browse -ptr _s-fl-squat._tcp 2>/dev/null | grep -q "^=.*;$id1;" && break
        sleep 0.1
    done
    (( i < 100 )) || { fail "h1 never saw the squatter's record"; show "$OUT/squat.out"; return 1; }
    start_node 1 s-fl-squat --auto-accept || return 1
    instance=$(jq -r 'select(.event=="advertising") | .instance // empty' "$ADV" | head -1)
    [[ -n $instance && $instance != "$id1" && $instance == "$id1"* ]] \
        || { fail "the node did not say it advertises under another name (instance: '$instance')"; show "$ADV"; return 1; }
    printf '    squatted: the node advertises as "%s"\n' "$instance"
    nb 2 send "$id1" "by id" --service s-fl-squat --timeout 20 >"$OUT/by-id.jsonl" 2>"$OUT/by-id.err"; status=$?
    expect_eq "$status" 0 "send by ID to the squatted node" || { show "$OUT/by-id.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="by id")' 5 "the message sent by ID" >/dev/null || return 1
    nb 4 send "$name1" "by name" --service s-fl-squat --timeout 20 >"$OUT/by-name.jsonl" 2>"$OUT/by-name.err"; status=$?
    expect_eq "$status" 0 "send by display name to the squatted node" || { show "$OUT/by-name.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="by name")' 5 "the message sent by display name" >/dev/null || return 1
}

# Sending to this machine is refused at once (exit 64, "that is this machine"), by ID, ID prefix
# or display name (run.sh names h1 "Alice Box": a name with a space), with or without a node
# running — not after --timeout.
test_faults_sending_to_yourself_is_refused_at_once() {
    trap stop_started RETURN
    local id1 name1 target way status t0 ms
    id1=$(id_of 1) || return 1
    name1=$(nb 1 identity | jq -r .peer.name)
    [[ -n $name1 && $name1 != null ]] || { fail "h1 has no display name"; return 1; }
    for way in alone node; do
        [[ $way == node ]] && { start_node 1 s-fl-self || return 1; }
        for target in "$id1" "${id1:0:8}" "$name1"; do
            t0=$(now_ms)
            nb 1 send "$target" hi --service s-fl-self --timeout 30 >"$OUT/self.jsonl" 2>"$OUT/self.err"; status=$?
            ms=$(( $(now_ms) - t0 ))
            expect_eq "$status" 64 "send to this machine ($way, '$target')" || { show "$OUT/self.jsonl"; return 1; }
            grep -q "that is this machine" "$OUT/self.err" || fail "stderr ($way): $(cat "$OUT/self.err")" || return 1
            (( ms < 3000 )) || fail "refused after $ms ms ($way, '$target')" || return 1
            printf '    %-5s %-28s refused in %d ms\n' "$way" "'$target'" "$ms"
        done
    done
}

# A peer in session with the running node (it invited us) is named through the node by its ID, an
# ID prefix or its display name, and the message goes at once — no lookup on the network.
test_faults_a_peer_in_session_is_found_by_any_name_at_once() {
    trap stop_started RETURN
    local id1 id2 name2 target status t0 ms
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    name2=$(nb 2 identity | jq -r .peer.name)
    start_node 1 s-fl-known --auto-accept || return 1
    nb_bg 2 "$OUT/inviter.jsonl" invite "$(lab_addr 1):$ADV_PORT" --service s-fl-known --timeout 10 || return 1
    await "$OUT/inviter.jsonl" "select(.event==\"connected\" and .peer.id==\"$id1\")" 15 "h2 in session with h1" >/dev/null || return 1
    for target in "$id2" "${id2:0:6}" "$name2"; do
        t0=$(now_ms)
        nb 1 send "$target" "to $target" --service s-fl-known --timeout 30 >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
        ms=$(( $(now_ms) - t0 ))
        expect_eq "$status" 0 "send '$target' through h1's node" || { show "$OUT/send.jsonl"; return 1; }
        await "$OUT/inviter.jsonl" "select(.event==\"message\" and .text==\"to $target\")" 5 "h2 got the message" >/dev/null || return 1
        (( ms < 3000 )) || fail "sending to '$target' took $ms ms" || return 1
        printf '    %-28s sent in %d ms\n' "'$target'" "$ms"
    done
}

# `doctor PEER --timeout 5` for a peer that is not there: every check shares one deadline from the
# command's start (the lookup runs beside this host's own checks), so the run ends by its --timeout
# (it took 11 s, then 5.1 s). The margin is for the process's start and exit on a loaded machine
# (measured: 0.1-0.5 s), not for any check.
test_faults_doctor_keeps_to_its_timeout() {
    trap stop_started RETURN
    local t0 ms ref
    ref=$(overhead_ms 2 doctor nobody-here --service s-fl-doctor --timeout 0.1)
    t0=$(now_ms)
    nb 2 doctor nobody-here --service s-fl-doctor --timeout 5 >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"
    ms=$(( $(now_ms) - t0 ))
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer" and .status=="fail")' "the peer check failed (not found)" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="summary" and .exit_status==2)' "the summary (exit 2: not found)" || return 1
    printf '    doctor nobody-here --timeout 5: %d ms (--timeout 0.1: %d ms)\n' "$ms" "$ref"
    (( ms <= 6000 + ref )) || fail "doctor took $ms ms with --timeout 5 (at most 6 s and what --timeout 0.1 took)" || return 1
    # The connection checks share it too: an address where no host answers (ARP gives up after
    # about 3 s) is not a connection failure when --timeout ends first, and the run still ends by it.
    local far
    far="$(lab_addr 1)"; far="${far%.*}.250:4000"
    t0=$(now_ms)
    nb 2 doctor "$far" --service s-fl-doctor --timeout 1.5 >"$OUT/doctor-far.jsonl" 2>"$OUT/doctor-far.err"
    ms=$(( $(now_ms) - t0 ))
    printf '    doctor %s --timeout 1.5: %d ms\n' "$far" "$ms"
    expect_json "$OUT/doctor-far.jsonl" 'select(.event=="check" and .check=="connect" and .status=="warn" and (.detail|contains("--timeout ran out")))' \
        "the connect check cut short by --timeout (a warning, not a failure)" || { show "$OUT/doctor-far.jsonl"; return 1; }
    (( ms <= 2500 + ref )) || fail "doctor $far took $ms ms with --timeout 1.5 (at most 2.5 s and what --timeout 0.1 took)" || return 1
}

# A receiver that leaves on purpose in the middle of a file (Ctrl-C on a one-shot `accept`, SIGINT
# to a node) says goodbye, and the sender takes it as that: it ends at once (exit 5, the peer left),
# without a `reconnecting` and without waiting out --retry-for (docs/faults.md). The leaving node
# gives the sender half a second to read the goodbye and close before it closes its side.
test_faults_a_receiver_that_leaves_mid_file_is_not_waited_for() {
    trap files_done RETURN
    local id1 dir=$OUT/save src=$OUT/src size=16000000 way receiver sender t0 ms
    faults_begin "$size" || return 1; id1=$ID1
    faults_slow 2 16mbit || return 1
    for way in accept node; do
        if [[ $way == accept ]]; then
            nb_bg 1 "$OUT/recv-$way.jsonl" accept --service s-fl-leave --save-dir "$dir"; receiver=$PID
            await "$OUT/recv-$way.jsonl" 'select(.event=="advertising")' 20 "accept advertising" >/dev/null || return 1
        else
            start_node 1 s-fl-leave --auto-accept --save-dir "$dir" || return 1; receiver=$ADV_PID
            ln -sf "$ADV" "$OUT/recv-$way.jsonl"
        fi
        nb_bg 2 "$OUT/$way.jsonl" send-file "$id1" "$src/big.bin" --service s-fl-leave --retry-for 60; sender=$PID
        await "$OUT/recv-$way.jsonl" 'select(.event=="progress" and .direction=="receive" and .bytes >= '"$((size / 5))"')' 60 \
            "h1 receiving ($way)" >/dev/null || return 1
        kill -INT "$receiver"; t0=$(now_ms)
        exits "$sender" 50 5 "send-file after the receiver's Ctrl-C ($way)" || { show "$OUT/$way.jsonl"; return 1; }
        ms=$(( $(now_ms) - t0 ))
        printf '    %-6s the sender ended %d ms after the receiver'"'"'s SIGINT\n' "$way" "$ms"
        expect_eq "$(count_json "$OUT/$way.jsonl" 'select(.event=="reconnecting")')" 0 \
            "reconnecting events after a goodbye ($way)" || { show "$OUT/$way.jsonl"; return 1; }
        expect_json "$OUT/$way.jsonl" 'select(.event=="file-failed" and .resumable)' "a resumable file-failed ($way)" || return 1
        grep -qi "left" "$OUT/$way.jsonl.err" || fail "stderr does not say the receiver left ($way): $(cat "$OUT/$way.jsonl.err")" || return 1
        # accept: Ctrl-C cut a file short (130); a node stopped by a signal ends well (0).
        exits "$receiver" 10 "$([[ $way == accept ]] && echo 130 || echo 0)" "the receiver ($way) after SIGINT" || return 1
        rm -f "$dir"/*
    done
}
