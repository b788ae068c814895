# Every word a person reads is right (issue 47): errors on a terminal wrapped to its width and never
# cut, no library text in any line, names near the one typed as a person mistypes them, and a final
# `error` event for every usage error. Sourced by run.sh; uses the helpers of sessions.sh,
# terminal.sh, doctor.sh and explain.sh. Captures of terminals are *.txt.
# shellcheck shell=bash

# What no line for people or programs may hold: NIO's and Swift's words instead of ours.
WORDS_LIBRARY_TEXT='SingleConnectionFailure|NIOConnectionError|connectionErrors|NIOCore|NIOPosix|NIOSSL|ChannelError|IOError|errno|Optional\(|[A-Za-z]Error\('

# An error on a terminal is wrapped between words to its width, never cut: the hint at its end is
# what a person acts on.
test_words_an_error_on_a_terminal_is_wrapped_never_cut() {
    local status query="Somebody With A Rather Long Display Name Nobody Has"
    term_run 1 "$OUT/tty.txt" --columns 80 -- send --service s-wd-cut --timeout 2 "$query" hi; status=$?
    expect_eq "$status" 2 "send to nobody on a terminal" || { show "$OUT/tty.txt"; return 1; }
    plain "$OUT/tty.txt" >"$OUT/plain.txt"
    (( $(LC_ALL=C.UTF-8 wc -L <"$OUT/plain.txt") < 80 )) || { fail "a line wider than the terminal"; show "$OUT/plain.txt"; return 1; }
    ! grep -q "…" "$OUT/plain.txt" || { fail "the error was cut"; show "$OUT/plain.txt"; return 1; }
    # The lines joined again: the whole sentence, its hint and its code.
    tr -s ' \n' ' ' <"$OUT/plain.txt" >"$OUT/joined.txt"
    ex_says "$OUT/joined.txt" "next: \`nearby doctor --service s-wd-cut '$query'\` (peer-not-found, exit 2)" "the whole hint" || return 1
}

# `doctor HOST:PORT` where nothing listens says so, in send's words, and blames no firewall.
test_words_doctor_says_nothing_listens_on_a_refused_port() {
    doctor 1 "$(lab_addr 2):9"
    expect_eq "$STATUS" 5 "doctor exit status for a port nothing listens on" || { show "$OUT/doctor.jsonl"; return 1; }
    check_is connect fail "$(lab_addr 2): refused the connection (nothing listens on that port)" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="connect" and (.hint|contains("nothing listens on port 9"))
        and (.hint|contains("firewall")|not))' "a hint that nothing listens, not a firewall" || return 1
    ! grep -E "$WORDS_LIBRARY_TEXT" "$OUT/doctor.jsonl" "$OUT/doctor.err" || fail "library text in doctor's words" || return 1
}

# "Bobs Pi" or a letter off for "Bob's Pi": near, in the `looking` event within 2 s and in the error.
test_words_near_names_are_what_a_person_mistypes() {
    trap stop_started RETURN
    local status id1 query
    id1=$(id_of 1) || return 1
    start_node 1 s-wd-typo --name "Bob's Pi" || return 1
    for query in "Bobs Pi" "bob's pj"; do
        nb 2 send --service s-wd-typo --timeout 4 "$query" hi >"$OUT/typo.jsonl" 2>"$OUT/typo.err"; status=$?
        expect_error "$OUT/typo.jsonl" 2 "$status" peer-not-found "send '$query'" || { show "$OUT/typo.jsonl"; return 1; }
        expect_json "$OUT/typo.jsonl" 'select(.event=="looking" and .seconds <= 2.5 and (.near|map(.id)|index("'"$id1"'")) != null)' \
            "'Bob's Pi' near '$query' in the looking event, within 2 s" || return 1
        expect_json "$OUT/typo.jsonl" 'select(.event=="error" and (.near|map(.id)|index("'"$id1"'")) != null)' \
            "'Bob's Pi' near '$query' in the error" || return 1
        ex_says "$OUT/typo.err" "'Bob's Pi'" "the near name in the sentence ('$query')" || return 1
    done
}

# ArgumentParser's refusals (unknown option, missing argument, bad value) end as every other usage
# error: a final `error` event on stdout in a pipe, exit 64, the words on stderr.
test_words_every_usage_error_ends_with_an_error_event() {
    local status command
    for command in "browse --tiemout 3" "send-file" "advertise --port x" "doctor --timeout soon" "invite" \
        "identity --nosuch" "accept --from" "" "sned hi"; do
        # shellcheck disable=SC2086
        nb 1 $command >"$OUT/usage.jsonl" 2>"$OUT/usage.err"; status=$?
        expect_error "$OUT/usage.jsonl" 64 "$status" invalid-argument "nearby $command" || { show "$OUT/usage.jsonl"; return 1; }
        expect_eq "$(tail -n 1 "$OUT/usage.jsonl" | jq -r .event)" error "the last line of nearby $command" || return 1
        [[ -s $OUT/usage.err ]] || fail "nearby $command: nothing on stderr" || return 1
    done
    # On a terminal for people, the words on stderr say it once.
    term_run 1 "$OUT/tty.txt" -- browse --tiemout 3; status=$?
    expect_eq "$status" 64 "browse --tiemout 3 on a terminal" || return 1
    ! grep -q '"event"' "$OUT/tty.txt" || { fail "JSON on a terminal"; show "$OUT/tty.txt"; return 1; }
}

# `browse --service` of a type nobody advertises names the types that are on the link, as send does.
test_words_browse_of_a_wrong_service_names_the_types_there() {
    trap stop_started RETURN
    local status
    start_node 1 s-wd-chat || return 1
    nb 2 browse --service s-wd-caht --timeout 3 >"$OUT/browse.jsonl" 2>"$OUT/browse.err"; status=$?
    expect_eq "$status" 0 "browse of a type nobody advertises" || { show "$OUT/browse.jsonl"; return 1; }
    expect_json "$OUT/browse.jsonl" 'select(.event=="nothing-found" and .service=="_s-wd-caht._tcp" and (.types|index("_s-wd-chat._tcp")) != null)' \
        "the type on the link in the nothing-found event" || return 1
    ex_says "$OUT/browse.err" 'on the link: ' "the types on the link in the sentence" || return 1
    ex_says "$OUT/browse.err" '_s-wd-chat._tcp (add `--service s-wd-chat`)' "the option to use" || return 1
}


# A peer remembered at a port it has left, while discovery shows where it listens now (a running
# node browses all along): the port discovery shows is tried, not the stale remembered one first.
test_words_discovery_wins_over_a_stale_remembered_port() {
    trap stop_started RETURN
    local status first
    start_node 2 s-wd-port || return 1
    start_node 1 s-wd-port --auto-accept --port 40411 || return 1; first=$ADV_PID
    nb 2 send --service s-wd-port "Alice Box" first >"$OUT/first.jsonl" 2>"$OUT/first.err" \
        || { fail "the first send (exit $?)"; show "$OUT/first.jsonl"; return 1; }
    kill -INT "$first"; lab_wait_pid "$first" 10 >/dev/null
    start_node 1 s-wd-port --auto-accept --port 40412 || return 1
    # h2's node hears of the new port from its browse.
    sleep 2
    nb 2 send --service s-wd-port "Alice Box" second >"$OUT/second.jsonl" 2>"$OUT/second.err"; status=$?
    expect_eq "$status" 0 "a send after the peer moved to another port" || { show "$OUT/second.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="second")' 5 "the message at h1's new node" >/dev/null || return 1
    expect_json "$OUT/second.jsonl" 'select(.event=="connecting" and (.address|endswith(":40412")))' "connecting at the port discovery shows" || return 1
    [[ $(count_json "$OUT/second.jsonl" 'select(.event=="connecting" and (.address|endswith(":40411")))') == 0 ]] \
        || { fail "the stale remembered port was tried"; show "$OUT/second.jsonl"; return 1; }
}

# No line the suite produced — events on stdout, sentences and logs on stderr, of every test (with
# E2E_JOBS, every lab's) — holds NIO's or Swift's words instead of ours. Runs last, as the schema test.
test_every_line_is_free_of_library_text() {
    local dir=${E2E_SCHEMA_DIR:-$LAB_DIR/out} hits count
    count=$(find "$dir" -mindepth 2 -maxdepth 2 \( -name '*.jsonl' -o -name '*.err' \) | wc -l)
    ((count > 0)) || fail "no output to check" || return 1
    hits=$(find "$dir" -mindepth 2 -maxdepth 2 \( -name '*.jsonl' -o -name '*.err' \) -print0 | xargs -0 grep -HnE "$WORDS_LIBRARY_TEXT")
    echo "    $count files checked"
    [[ -z $hits ]] || { fail "library text:"; head -n 40 <<<"$hits" | sed 's/^/      | /' >&2; return 1; }
}
