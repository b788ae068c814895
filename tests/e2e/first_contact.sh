# End-to-end tests of what a newcomer meets first (issue 57): a daemon that is not running said in
# words with the command that starts it on this system, a mistyped name met with the near one, a
# stream nobody listens for said on both sides at once, an invitation that says what it offers.

# The command that starts SERVICE here, by the rules nearby follows (DaemonWords.start).
fc_start_command() {
    if [[ -d /run/systemd/system ]]; then echo "sudo systemctl start $1"
    elif [[ -x /usr/sbin/service || -x /sbin/service ]] && [[ -e /etc/init.d/$1 ]]; then echo "sudo service $1 start"
    elif [[ $1 == dbus ]]; then echo "sudo dbus-daemon --system --fork"
    else echo "sudo avahi-daemon --daemonize"; fi
}

# No library number in any sentence: avahi-daemon stopped, then D-Bus gone (no system bus socket),
# each named for what it is, with its start command on this system.
test_first_contact_daemon_says_how_to_start_it() {
    local avahi dbus status
    avahi=$(fc_start_command avahi-daemon); dbus=$(fc_start_command dbus)
    lab_stop_avahi 5
    lab_run 5 "$NEARBY" send --service fc1 somebody hello --timeout 30 </dev/null >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
    lab_start_avahi 5
    expect_eq "$status" 7 "exit status without avahi-daemon" || return 1
    cat "$OUT/err.txt"
    grep -qF "avahi-daemon is not running: start it with \`$avahi\`" "$OUT/err.txt" || fail "no start command '$avahi' in the sentence" || return 1
    expect_json "$OUT/out.jsonl" "select(.event==\"error\" and .code==\"daemon-unavailable\" and (.message | contains(\"$avahi\")))" "the error event names the start command" || return 1
    # D-Bus itself missing: the bus's socket is not there.
    lab_run 5 env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$OUT/no-bus.sock" "$NEARBY" browse --service fc1 --timeout 5 \
        </dev/null >"$OUT/out2.jsonl" 2>"$OUT/err2.txt"; status=$?
    cat "$OUT/err2.txt"
    expect_eq "$status" 7 "exit status without D-Bus" || return 1
    grep -qF "D-Bus is not running (no system bus at $OUT/no-bus.sock), and avahi-daemon needs it: start D-Bus with \`$dbus\`" "$OUT/err2.txt" \
        || fail "no D-Bus sentence with '$dbus'" || return 1
    ! grep -qE 'error -?[0-9]|-6553[0-9]|-655[4-6][0-9]' "$OUT/err.txt" "$OUT/err2.txt" "$OUT/out.jsonl" "$OUT/out2.jsonl" || fail "a library number in a sentence" || return 1
}

# A mistyped name at a terminal: asked at once whether the near name is meant, and "y" sends there
# — long before the --timeout of 30 s. (tests/e2e/pty_run.py types the answer.)
test_first_contact_near_name_at_a_terminal_asks() {
    start_node 2 fc2 --name "Bob's Pi" --auto-accept || return 1
    local started ms status
    started=$(now_ms)
    term_run 1 "$OUT/send.txt" --answer "[y/N]" y -- send --service fc2 'Bobs Pi' "hi there" --timeout 30; status=$?
    ms=$(( $(now_ms) - started ))
    echo "    send 'Bobs Pi' at a terminal, answered y: exit $status after $ms ms"
    expect_eq "$status" 0 "exit status after taking the near name" || { show "$OUT/send.txt"; return 1; }
    term_has "$OUT/send.txt" "did you mean 'Bob's Pi' \([0-9a-z]{8}\)\? \[y/N\]" "the question" || return 1
    (( ms < 20000 )) || fail "the answer took $ms ms: the lookup ran to its timeout" || return 1
    lab_wait_line "$ADV" 'select(.event=="message" and .text=="hi there")' 10 >/dev/null || fail "Bob's Pi got no message" || return 1
}

# In a pipe nothing is asked and nothing guessed: the name stays exact, the lookup waits its
# --timeout, and the final error of every command that takes a PEER gives the corrected command
# (not doctor).
test_first_contact_near_name_in_a_pipe_gives_the_corrected_command() {
    start_node 2 fc4 --name "Bob's Pi" || return 1
    local file=$OUT/notes.txt started ms status command expected
    echo notes >"$file"
    local -a commands=(
        "send --service fc4 NAME hi --timeout 3"
        "invite --service fc4 NAME --timeout 3"
        "send-file --service fc4 NAME $file --timeout 3"
        "stream --service fc4 NAME --timeout 3"
    )
    for command in "${commands[@]}"; do
        local -a words=()
        read -r -a words <<<"$command"
        words=("${words[@]/#NAME/Bobs Pi}")
        started=$(now_ms)
        lab_run 1 "$NEARBY" "${words[@]}" </dev/null >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
        ms=$(( $(now_ms) - started ))
        expected="nearby ${command/NAME/\"Bob\'s Pi\"}"
        echo "    nearby ${words[0]}: exit $status after $ms ms"
        expect_eq "$status" 2 "exit status of '${words[0]}' for a near name in a pipe" || { cat "$OUT/err.txt" >&2; return 1; }
        (( ms >= 3000 )) || fail "'${words[0]}' ended after $ms ms, before its --timeout" || return 1
        # stream prints its events on stderr (stdout carries the bytes).
        cat "$OUT/out.jsonl" "$OUT/err.txt" | grep '^{' >"$OUT/events.jsonl"
        expect_json "$OUT/events.jsonl" "select(.event==\"error\" and .code==\"peer-not-found\" and .hint==$(jq -Rn --arg h "$expected" '$h'))" \
            "'${words[0]}': the hint is the corrected command" || return 1
        grep -qF "did you mean \`$expected\`?" "$OUT/err.txt" || { fail "'${words[0]}': no corrected command in the sentence"; cat "$OUT/err.txt" >&2; return 1; }
        ! grep -q "doctor" "$OUT/err.txt" || fail "'${words[0]}' still suggests doctor" || return 1
        ! grep -q "y/N" "$OUT/err.txt" || fail "'${words[0]}' asked a question in a pipe" || return 1
    done
}

# A file or stream invitation says what it offers: names, count and total bytes; a stream's name —
# in the event and on the terminal.
test_first_contact_invitation_says_what_is_offered() {
    start_node 2 fc3 || return 1
    local id2 sender
    id2=$(id_of 2)
    printf 'hello\n' >"$OUT/a.txt"; head -c 2000 /dev/zero >"$OUT/b.bin"
    spawn 1 "$OUT/send.jsonl" "$NEARBY" send-file --service fc3 "$id2" "$OUT/a.txt" "$OUT/b.bin" --timeout 30 || return 1; sender=$PID
    lab_wait_line "$ADV" 'select(.event=="invitation" and .offer.files==2 and .offer.bytes==2006 and .offer.names==["a.txt","b.bin"])' 15 >/dev/null \
        || { fail "no invitation offering a.txt and b.bin (2006 bytes)"; show "$ADV"; return 1; }
    stop "$sender" >/dev/null
    printf 'x' | lab_run 1 "$NEARBY" stream --service fc3 "$id2" --stream backup --timeout 3 >/dev/null 2>"$OUT/stream.err" &
    local streamer=$!
    lab_wait_line "$ADV" 'select(.event=="invitation" and .offer.stream=="backup")' 15 >/dev/null \
        || { fail "no invitation offering the stream backup"; show "$ADV"; return 1; }
    wait "$streamer"
    # The terminal line of the same invitation, from `accept` (which answers it at once).
    mkdir -p "$OUT/save"
    spawn 3 "$OUT/accept.txt" "$NEARBY" accept --human --service fc3b --save-dir "$OUT/save" || return 1
    local id3
    id3=$(id_of 3)
    nb 1 send-file --service fc3b "$id3" "$OUT/a.txt" "$OUT/b.bin" --timeout 20 >/dev/null 2>&1
    grep -qE "invitation from .* — offers 2 files, 2.0 KiB: a.txt, b.bin" "$OUT/accept.txt" || { fail "the terminal line does not say what is offered"; show "$OUT/accept.txt"; return 1; }
}

# A stream to a node with no listener by that name is said on both sides at once, each stating the
# grace (NEARBY_STREAM_WAIT); a listener that starts a moment later still takes it.
test_first_contact_stream_without_a_listener_is_said_at_once() {
    local adv=$OUT/adv-h2-fc5.jsonl opener started ms status
    lab_bg 2 "$adv" env NEARBY_STREAM_WAIT=20 "$NEARBY" advertise --service fc5 --name "Bob's Pi" --auto-accept >/dev/null || return 1
    STARTED+=("$LAB_PID")
    lab_wait_line "$adv" 'select(.event=="advertising")' 10 >/dev/null || fail "no advertising from h2" || return 1
    local id2
    id2=$(id_of 2)
    started=$(now_ms)
    printf 'hi\n' >"$OUT/in.txt"
    spawn 1 "$OUT/opener.out" sh -c "exec \"\$0\" stream --service fc5 $id2 --stream backup --timeout 30 <\"\$1\"" "$NEARBY" "$OUT/in.txt" || return 1
    opener=$PID
    lab_wait_line "$OUT/opener.out.err" 'select(.event=="waiting" and .for=="stream" and (.reason | test("no listener for a stream named .backup. on Bob.s Pi yet: it holds the stream 20 s")))' 10 >/dev/null \
        || { fail "the opener was not told at once that nobody listens"; show "$OUT/opener.out"; return 1; }
    ms=$(( $(now_ms) - started ))
    echo "    the opener heard 'no listener' after $ms ms"
    lab_wait_line "$adv" 'select(.event=="waiting" and .for=="stream" and (.reason | test("offers the stream .backup. and nobody listens for it here: held 20 s")))' 10 >/dev/null \
        || { fail "Bob's node said nothing about the attempt"; show "$adv"; return 1; }
    # A listener a moment later takes it.
    lab_run 2 timeout 20 "$NEARBY" stream --listen --service fc5 --stream backup </dev/null >"$OUT/got.txt" 2>"$OUT/listen.err"; status=$?
    expect_eq "$status" 0 "the late listener's exit status" || { cat "$OUT/listen.err" >&2; return 1; }
    expect_eq "$(cat "$OUT/got.txt")" "hi" "what the late listener got" || return 1
    lab_wait_pid "$opener" 15; status=$?
    expect_eq "$status" 0 "the opener's exit status" || { show "$OUT/opener.out"; return 1; }
}
