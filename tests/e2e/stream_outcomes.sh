# Stream outcomes a script can trust (issue 24): a listener that left is gone from its node at once,
# a stream cut mid-way exits non-zero on both sides with the same sentence, code and final events
# with or without a running node, and a listener whose stdin is a terminal sends nothing.
# Sourced by run.sh; uses the helpers of sessions.sh, streams.sh (st_*) and terminal.sh (term_*).
# Each test uses its own service type.
# shellcheck shell=bash

# so_attached PID: the client PID holds its connection to the node's control socket (5 s at most).
so_attached() {
    local deadline=$(( $(now_ms) + 5000 ))
    until ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'socket:'; do
        (( $(now_ms) < deadline )) || { fail "pid $1 did not connect to its node"; return 1; }
        sleep 0.05
    done
}

# so_nearby PID: the nearby process that is PID or under it, once it runs (5 s at most).
so_nearby() {
    local deadline=$(( $(now_ms) + 5000 ))
    until st_nearby_pid "$1"; do (( $(now_ms) < deadline )) || return 1; sleep 0.05; done
}

# so_error FILE: the code, exit status and message of the error event of an .events file.
so_error() { grep -a '^{' "$1" | jq -r 'select(.event=="error") | "\(.code) \(.exit_status) \(.message)"' | tail -1; }
# so_sentence FILE: the "nearby: error: …" line of an .events file.
so_sentence() { grep -a '^nearby: ' "$1" | tail -1; }
# so_closed FILE: the reason of the last stream-closed event of an .events (or .jsonl) file.
so_closed() { grep -a '^{' "$1" | jq -r 'select(.event=="stream-closed") | .reason' | tail -1; }
# so_last FILE: the kind of the last event of an .events file.
so_last() { grep -a '^{' "$1" | jq -r .event | tail -1; }

# so_cut_ok FILE STATUS WHAT: a command that ended a cut stream: exit 5, an error event with code
# connection-lost, its message on stderr, and a stream-closed before it that says "was cut".
so_cut_ok() {
    local file=$1 status=$2 what=$3 error
    expect_eq "$status" 5 "$what: exit status" || { show "$file"; return 1; }
    error=$(so_error "$file")
    [[ $error == "connection-lost 5 "*" was cut: "* ]] || fail "$what: error event '$error', expected connection-lost 5 '… was cut: …'" || { show "$file"; return 1; }
    expect_eq "$(so_sentence "$file")" "nearby: error: ${error#connection-lost 5 }" "$what: the sentence on stderr" || return 1
    [[ $(so_closed "$file") == *" was cut: "* ]] || fail "$what: stream-closed reason '$(so_closed "$file")'" || return 1
    expect_eq "$(so_last "$file")" error "$what: the last event" || return 1
}

# --- 1. a listener that left is gone at once ------------------------------------------------------

test_stream_stale_listener_is_dropped_and_the_fresh_one_gets_the_stream() {
    trap st_done RETURN
    local id1 adv1 pid1 stale fresh opener a=3000000
    id1=$(id_of 1) || return 1
    head -c $a /dev/urandom >"$OUT/A.bin" || return 1
    start_node 1 s-so-stale --auto-accept || return 1; adv1=$ADV pid1=$ADV_PID
    # A listener attached to h1's node, Ctrl-C'd while it waits.
    st_nb 1 stale : stream --listen --service s-so-stale || return 1; stale=$PID
    # (Whether the node has read its request yet or not, its leaving must take the listener away.)
    so_attached "$stale" || return 1
    kill -INT "$stale"
    exits "$stale" 10 130 "the interrupted listener" || { show "$OUT/stale.events"; return 1; }
    # A fresh listener, then a stream from h2: it reaches the fresh one, byte-exact.
    st_nb 1 fresh : stream --listen --service s-so-stale || return 1; fresh=$PID
    so_attached "$fresh" || return 1
    st_nb 2 open 'cat "$O/A.bin"' stream "$id1" --service s-so-stale || return 1; opener=$PID
    exits "$opener" 30 0 "the opener" || { show "$OUT/open.events" "$adv1"; return 1; }
    exits "$fresh" 10 0 "the fresh listener" || { show "$OUT/fresh.events" "$adv1"; return 1; }
    st_same "$OUT/fresh.out" "$OUT/A.bin" "the fresh listener's stdout" || return 1
    expect_eq "$(stat -c %s "$OUT/stale.out")" 0 "bytes the stale listener got" || return 1
    expect_json "$adv1" "select(.event==\"stream-closed\" and .received==$a and .reason==\"done\")" "stream-closed (done) on h1's node" || return 1
    ! grep -qi "closed channel" "$adv1" "$adv1.err" || fail "h1's node used the dead listener's connection" || { show "$adv1"; return 1; }
    still_running "$pid1" "h1's node" || return 1
}

# --- 2. truncation is never success ---------------------------------------------------------------

# so_receiver_killed MODE: h1 listens (no node) into a pipe nobody reads, h2 streams a zero file
# either through its node (MODE node) or on its own (MODE oneshot); the listener is SIGKILLed once
# the window has filled. Leaves the opener's events in $OUT/open-MODE.events and its status in SO_STATUS.
so_receiver_killed() {
    local mode=$1 id1 listener opener service=s-so-cut-${1:0:1} adv2=
    id1=$(id_of 1) || return 1
    spawn 1 "$OUT/listen-$mode.sh.log" env N="$NEARBY" O="$OUT" S="$service" bash -c \
        'exec "$N" stream --listen --service "$S" </dev/null 2>"$O/listen-$S.events" | sleep 120' || return 1
    listener=$PID
    st_listening "$OUT/listen-$service.events" || return 1
    if [[ $mode == node ]]; then start_node 2 "$service" || return 1; adv2=$ADV; fi
    # A pipe, not a file: through the node, the client copies it over the control connection.
    st_nb 2 "open-$mode" 'head -c 500M /dev/zero' stream "$id1" --service "$service" || return 1; opener=$PID
    await "$OUT/listen-$service.events" 'select(.event=="stream-opened")' 15 "stream-opened on h1 ($mode)" >/dev/null || return 1
    await "$OUT/open-$mode.events" 'select(.event=="stream-opened")' 5 "stream-opened on h2 ($mode)" >/dev/null || return 1
    still_running "$opener" "the opener before the kill ($mode)" || { show "$OUT/open-$mode.events"; return 1; }
    kill -KILL "$(so_nearby "$listener")"
    lab_wait_pid "$opener" 15; SO_STATUS=$?
    [[ $SO_STATUS == 124 ]] && { fail "the opener ($mode) still runs 15 s after the receiver was killed"; show "$OUT/open-$mode.events" $adv2; return 1; }
    if [[ $mode == node ]]; then
        await "$adv2" 'select(.event=="stream-closed")' 5 "stream-closed on h2's node" >/dev/null || return 1
        [[ $(so_closed "$adv2") == *" was cut: the session ended"* ]] \
            || fail "h2's node: stream-closed reason '$(so_closed "$adv2")', expected '… was cut: the session ended …'" || { show "$adv2"; return 1; }
        expect_json "$adv2" 'select(.event=="stream-closed" and .sent < 524288000)' "h2's node sent less than the whole input" || return 1
    fi
    return 0
}

# so_cause: a cut stream's sentence without the words for how its session's end was noticed.
so_cause() { sed 's/: the session ended: .*/: the session ended/; s/ (.*//'; }

test_stream_receiver_killed_the_opener_exits_5_with_or_without_a_node() {
    trap st_done RETURN
    local node_status oneshot_status
    so_receiver_killed node || return 1; node_status=$SO_STATUS
    so_cut_ok "$OUT/open-node.events" "$node_status" "the opener through its node" || return 1
    so_receiver_killed oneshot || return 1; oneshot_status=$SO_STATUS
    so_cut_ok "$OUT/open-oneshot.events" "$oneshot_status" "the one-shot opener" || return 1
    printf '    through the node: %s\n    one-shot:         %s\n' "$(so_sentence "$OUT/open-node.events")" "$(so_sentence "$OUT/open-oneshot.events")"
    # Both modes: the same status, code and sentence, up to how the session's end was noticed (a read
    # that met a reset, a write that failed: a race between the two ends, not a difference of modes).
    expect_eq "$(so_sentence "$OUT/open-node.events" | so_cause)" "$(so_sentence "$OUT/open-oneshot.events" | so_cause)" "the sentence, through the node and one-shot" || return 1
    expect_eq "$(so_error "$OUT/open-node.events" | cut -d' ' -f1-2)" "$(so_error "$OUT/open-oneshot.events" | cut -d' ' -f1-2)" "code and status, through the node and one-shot" || return 1
}

# so_sender_killed MODE: h2 streams zeros to a listener on h1 that writes them to a file — attached
# to h1's node (MODE node) or on its own (MODE oneshot); the one-shot opener is SIGKILLed mid-stream.
# Sets SO_STATUS to the listener's exit status.
so_sender_killed() {
    local mode=$1 id1 listener opener service=s-so-lcut-${1:0:1} adv1=
    id1=$(id_of 1) || return 1
    if [[ $mode == node ]]; then
        start_node 1 "$service" --auto-accept || return 1; adv1=$ADV
        ST_OUT=/dev/null st_nb 1 "listen-$mode" : stream --listen --service "$service" || return 1; listener=$PID
        so_attached "$listener" || return 1
    else
        ST_OUT=/dev/null st_nb 1 "listen-$mode" : stream --listen --service "$service" || return 1; listener=$PID
        st_listening "$OUT/listen-$mode.events" || return 1
    fi
    ST_OUT=/dev/null st_nb 2 "open-$mode" 'head -c 5G /dev/zero' stream "$id1" --service "$service" || return 1; opener=$PID
    await "$OUT/listen-$mode.events" 'select(.event=="stream-opened")' 15 "stream-opened on the listener ($mode)" >/dev/null || return 1
    kill -KILL "$opener"
    lab_wait_pid "$listener" 15; SO_STATUS=$?
    [[ $SO_STATUS == 124 ]] && { fail "the listener ($mode) still runs 15 s after the opener was killed"; show "$OUT/listen-$mode.events" $adv1; return 1; }
    if [[ $mode == node ]]; then
        [[ $(so_closed "$adv1") == *" was cut: the session ended"* ]] \
            || fail "h1's node: stream-closed reason '$(so_closed "$adv1")'" || { show "$adv1"; return 1; }
    fi
    return 0
}

test_stream_sender_killed_the_listener_exits_5_with_or_without_a_node() {
    trap st_done RETURN
    local node_status oneshot_status
    so_sender_killed node || return 1; node_status=$SO_STATUS
    so_cut_ok "$OUT/listen-node.events" "$node_status" "the listener attached to its node" || return 1
    so_sender_killed oneshot || return 1; oneshot_status=$SO_STATUS
    so_cut_ok "$OUT/listen-oneshot.events" "$oneshot_status" "the one-shot listener" || return 1
    expect_eq "$(so_sentence "$OUT/listen-node.events" | so_cause)" "$(so_sentence "$OUT/listen-oneshot.events" | so_cause)" "the sentence, through the node and one-shot" || return 1
}

# A client of a running node killed mid-stream is the client leaving, not the end of its input: the
# node resets the stream, and the listener on the other side exits 5 (it used to get a clean end).
test_stream_client_killed_through_its_node_is_cut_for_the_peer() {
    trap st_done RETURN
    local id1 adv2 listener opener status error
    id1=$(id_of 1) || return 1
    ST_OUT=/dev/null st_nb 1 listen : stream --listen --service s-so-ckill || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1
    start_node 2 s-so-ckill || return 1; adv2=$ADV
    ST_OUT=/dev/null st_nb 2 open 'head -c 5G /dev/zero' stream "$id1" --service s-so-ckill || return 1; opener=$PID
    await "$OUT/listen.events" 'select(.event=="stream-opened")' 15 "stream-opened on h1" >/dev/null || return 1
    kill -KILL "$opener"
    lab_wait_pid "$listener" 15; status=$?
    [[ $status == 124 ]] && { fail "the listener still runs 15 s after the opener's client was killed"; show "$OUT/listen.events" "$adv2"; return 1; }
    expect_eq "$status" 5 "the listener's exit status" || { show "$OUT/listen.events"; return 1; }
    error=$(so_error "$OUT/listen.events")
    [[ $error == "stream-reset 5 "*" was cut: the peer reset it"* ]] || fail "the listener's error event: '$error'" || { show "$OUT/listen.events"; return 1; }
    [[ $(so_closed "$OUT/listen.events") == *" was cut: "* ]] || fail "the listener's stream-closed: '$(so_closed "$OUT/listen.events")'" || return 1
    await "$adv2" 'select(.event=="stream-closed")' 5 "stream-closed on h2's node" >/dev/null || return 1
    expect_json "$adv2" 'select(.event=="stream-closed" and .reason=="the stream cancelled")' "h2's node: the stream cancelled by its client leaving" || return 1
}

# A client killed mid-stream whose node reads its stdin and writes its stdout itself (passed pipes):
# the node ends the stream (cut, for the peer too) and closes both descriptors: it holds no more
# than before the stream.
test_stream_client_killed_while_its_node_holds_its_pipes_leaks_nothing() {
    trap st_done RETURN
    local id1 adv2 node2 fds opener listener
    id1=$(id_of 1) || return 1
    start_node 1 s-so-pkill --auto-accept || return 1
    start_node 2 s-so-pkill --verbose || return 1; adv2=$ADV; node2=$(st_nearby_pid "$ADV_PID") || return 1
    # The session first: what it holds is no stream's.
    nb 2 send "$id1" hello --service s-so-pkill >"$OUT/send.jsonl" 2>&1 || { fail "the first send"; show "$OUT/send.jsonl"; return 1; }
    sleep 0.5
    fds=$(find "/proc/$node2/fd" -mindepth 1 -maxdepth 1 | wc -l)
    ST_OUT=/dev/null st_nb 1 listen 'head -c 5G /dev/zero' stream --listen --service s-so-pkill || return 1; listener=$PID
    sleep 0.5
    spawn 2 "$OUT/open.sh.log" env N="$NEARBY" O="$OUT" ID="$id1" bash -c \
        'head -c 5G /dev/zero | "$N" stream "$ID" --service s-so-pkill 2>"$O/open.events" | cat >/dev/null' || return 1
    opener=$PID
    await "$adv2" 'select(.event=="stream-opened")' 15 "stream-opened on h2's node" >/dev/null || return 1
    grep -q "passed its stdin and stdout" "$adv2.err" || { fail "h2's node was not passed the client's pipes"; show "$adv2"; return 1; }
    sleep 0.5
    kill -KILL "$(st_nearby_pid "$opener")" || { fail "no opener process"; return 1; }
    await "$adv2" 'select(.event=="stream-closed" and .reason!="done")' 10 "h2's node ends the stream of the killed client" >/dev/null || return 1
    exits "$listener" 15 5 "the listener (its peer's client was killed)" || { show "$OUT/listen.events"; return 1; }
    local i
    for ((i = 0; i < 50; i++)); do (( $(find "/proc/$node2/fd" -mindepth 1 -maxdepth 1 | wc -l) <= fds )) && break; sleep 0.1; done
    expect_eq "$(find "/proc/$node2/fd" -mindepth 1 -maxdepth 1 | wc -l)" "$fds" "descriptors of h2's node after the killed client's stream" || { ls -l "/proc/$node2/fd" >&2; return 1; }
    still_running "$node2" "h2's node" || return 1
}

# --- 3. a listener whose stdin is a terminal -------------------------------------------------------

# `nearby stream --listen | tar xz` typed at a terminal: the listener's stdin is the terminal, which
# never ends; the listener must send nothing, so both sides end when the opener's bytes do.
test_stream_listener_on_a_terminal_sends_nothing() {
    trap st_done RETURN
    local id1 listener opener a=2000000 mode
    id1=$(id_of 1) || return 1
    head -c $a /dev/urandom >"$OUT/A.bin" || return 1
    for mode in oneshot node; do
        if [[ $mode == node ]]; then
            start_node 1 s-so-tty-${mode:0:1} --auto-accept || return 1
            term_bg 1 "$OUT/listen-$mode.txt" --stdout "$OUT/listen-$mode.out" -- stream --listen --json --service s-so-tty-${mode:0:1} || return 1
            listener=$PID
            so_attached "$(so_nearby "$listener")" || return 1
        else
            term_bg 1 "$OUT/listen-$mode.txt" --stdout "$OUT/listen-$mode.out" -- stream --listen --json --service s-so-tty-${mode:0:1} || return 1
            listener=$PID
            term_wait "$OUT/listen-$mode.txt" '"event":"advertising"' "the listener on a terminal advertises" || return 1
        fi
        st_nb 2 "open-$mode" 'cat "$O/A.bin"' stream "$id1" --service s-so-tty-${mode:0:1} || return 1; opener=$PID
        exits "$opener" 20 0 "the opener ($mode)" || { show "$OUT/open-$mode.events" "$OUT/listen-$mode.txt"; return 1; }
        exits "$listener" 10 0 "the listener on a terminal ($mode)" || { show "$OUT/listen-$mode.txt"; return 1; }
        st_same "$OUT/listen-$mode.out" "$OUT/A.bin" "the listener's stdout ($mode)" || return 1
        expect_eq "$(stat -c %s "$OUT/open-$mode.out")" 0 "bytes the opener received ($mode)" || return 1
        st_json "$OUT/open-$mode.events" "select(.event==\"stream-closed\" and .sent==$a and .received==0 and .reason==\"done\")" "the opener's stream-closed ($mode)" || return 1
        grep -q '"event":"stream-closed".*"reason":"done"' "$OUT/listen-$mode.txt" || fail "the listener's stream-closed ($mode)" || { show "$OUT/listen-$mode.txt"; return 1; }
    done
}

# --- 3. the listener's disk fills -------------------------------------------------------------------

# A listener writing into a 5 MB tmpfs, 20 MB coming: its stdout fails with ENOSPC. Both ends exit
# non-zero with one sentence, never a finished stream, whether the listener runs its own node or is
# attached to h1's, and whether the opener goes through h2's node or not (issue 24's matrix).
test_stream_listener_disk_full_fails_both_ends() {
    trap 'st_done; umount -l "$OUT/full" 2>/dev/null; trap - RETURN' RETURN
    local id1 mode listener opener ls os service
    id1=$(id_of 1) || return 1
    mkdir -p "$OUT/full"
    mount -t tmpfs -o size=5m tmpfs "$OUT/full" || { fail "cannot mount a 5 MB tmpfs"; return 1; }
    for mode in alone node; do
        service=s-so-full-${mode:0:1}
        rm -f "$OUT/full/out.bin"
        if [[ $mode == node ]]; then
            start_node 1 "$service" --auto-accept || return 1
            start_node 2 "$service" || return 1
        fi
        ST_OUT=$OUT/full/out.bin st_nb 1 "flisten-$mode" : stream --listen --service "$service" || return 1; listener=$PID
        if [[ $mode == node ]]; then so_attached "$listener" || return 1; else st_listening "$OUT/flisten-$mode.events" || return 1; fi
        st_nb 2 "fopen-$mode" 'head -c 20M /dev/zero' stream "$id1" --service "$service" || return 1; opener=$PID
        lab_wait_pid "$listener" 20; ls=$?
        lab_wait_pid "$opener" 20; os=$?
        expect_eq "$ls" 8 "the listener whose disk filled ($mode)" || { show "$OUT/flisten-$mode.events"; return 1; }
        [[ $os == 5 ]] || { fail "the opener ($mode) exited $os, expected 5"; show "$OUT/fopen-$mode.events"; return 1; }
        [[ $(so_last "$OUT/flisten-$mode.events") == error && $(so_last "$OUT/fopen-$mode.events") == error ]] \
            || { fail "($mode) the last event of each end is not an error"; return 1; }
        [[ $(so_closed "$OUT/fopen-$mode.events") != done && $(so_closed "$OUT/flisten-$mode.events") != done ]] \
            || { fail "($mode) a stream-closed says done"; return 1; }
        printf '    %-5s listener: %s\n          opener:   %s\n' "$mode" "$(so_sentence "$OUT/flisten-$mode.events")" "$(so_sentence "$OUT/fopen-$mode.events")"
    done
    # The listener says the same with and without a node; no NIO words reach either end.
    expect_eq "$(so_sentence "$OUT/flisten-node.events")" "$(so_sentence "$OUT/flisten-alone.events")" "the listener's sentence, attached and alone" || return 1
    if grep -qh "I/O on closed channel" "$OUT"/f*-*.events; then fail "NIO's words reached a user"; return 1; fi
}
