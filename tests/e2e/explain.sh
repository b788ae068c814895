# Every failure to find a peer says what was seen and what to do next (issue 25): usage errors
# that name the fix, a browse that says when it found nothing, a lookup that says "still looking"
# and, at the end, what it found instead. Sourced by run.sh; uses the helpers of sessions.sh,
# terminal.sh and doctor.sh. Captures of terminals are *.txt (the schema test reads every *.jsonl).
# shellcheck shell=bash

# ex_says FILE TEXT WHAT: FILE holds TEXT (fixed string).
ex_says() {
    grep -qF -- "$2" "$1" && return 0
    fail "$3: no '$2'"; sed 's/^/      | /' "$1" >&2; return 1
}

# `nearby` alone, `nearby help nosuch` and `nearby sned`: usage on stderr, exit 64, the fix named.
test_explain_no_subcommand_or_an_unknown_one_is_a_usage_error() {
    local status
    nb 1 >"$OUT/none.out" 2>"$OUT/none.err"; status=$?
    expect_eq "$status" 64 "nearby with no arguments" || return 1
    ex_says "$OUT/none.err" "Usage: nearby" "usage on stderr" || return 1
    # In a pipe, the final error event of every usage error.
    expect_error "$OUT/none.out" 64 "$status" invalid-argument "nearby with no arguments" || return 1
    nb 1 help nosuch >"$OUT/help.out" 2>"$OUT/help.err"; status=$?
    expect_eq "$status" 64 "nearby help nosuch" || return 1
    ex_says "$OUT/help.err" "unknown subcommand 'nosuch'" "help of an unknown subcommand" || return 1
    nb 1 sned hi >"$OUT/sned.out" 2>"$OUT/sned.err"; status=$?
    expect_eq "$status" 64 "nearby sned" || return 1
    ex_says "$OUT/sned.err" "unknown subcommand 'sned'; did you mean 'send'?" "a typo" || return 1
    nb 1 help send >"$OUT/help-send.out" 2>&1 || fail "nearby help send exited $?" || return 1
    ex_says "$OUT/help-send.out" "USAGE: nearby send" "help of a real subcommand" || return 1
}

# --service _chat._tcp (what avahi-browse shows) on commands that take a service name.
test_explain_a_full_dns_sd_type_names_the_service_to_use() {
    local status command
    for command in "send --service _chat._tcp Bob hi" "advertise --service _chat._tcp" "doctor --service _chat._tcp"; do
        # shellcheck disable=SC2086
        nb 1 $command >"$OUT/type.jsonl" 2>"$OUT/type.err"; status=$?
        expect_error "$OUT/type.jsonl" 64 "$status" invalid-service-type "$command" || return 1
        ex_says "$OUT/type.err" 'use `--service chat`' "$command" || return 1
    done
}

# browse --now: what is there now, then exit 0 once the answers stop; nothing there says so.
test_explain_browse_now_lists_what_is_there_and_exits() {
    trap stop_started RETURN
    local status t0 elapsed
    start_node 1 s-ex-now --name "Now Box" || return 1
    t0=$(now_ms)
    nb 2 browse --service s-ex-now --now >"$OUT/now.jsonl" 2>"$OUT/now.err"; status=$?
    elapsed=$(( $(now_ms) - t0 ))
    expect_eq "$status" 0 "browse --now" || return 1
    expect_json "$OUT/now.jsonl" 'select(.event=="found" and .peer.name=="Now Box")' "the peer that is there" || return 1
    (( elapsed < 8000 )) || fail "browse --now took $elapsed ms" || return 1
    nb 2 browse --service s-ex-empty --now >"$OUT/empty.jsonl" 2>"$OUT/empty.err"; status=$?
    expect_eq "$status" 0 "browse --now with nothing there" || return 1
    expect_json "$OUT/empty.jsonl" 'select(.event=="nothing-found" and .service=="_s-ex-empty._tcp"
        and .hint=="nearby doctor --service s-ex-empty")' "a nothing-found event" || return 1
    ex_says "$OUT/empty.err" 'nothing found on _s-ex-empty._tcp' "the sentence on stderr" || return 1
}

# browse --timeout that finds nothing ends with a line saying so and what to try (JSON and TTY).
test_explain_browse_timeout_with_nothing_found_says_so() {
    local status
    nb 2 browse --service s-ex-void --timeout 1 >"$OUT/void.jsonl" 2>"$OUT/void.err"; status=$?
    expect_eq "$status" 0 "browse --timeout finding nothing" || return 1
    expect_json "$OUT/void.jsonl" 'select(.event=="nothing-found" and .service=="_s-ex-void._tcp" and .seconds>=1)' "nothing-found" || return 1
    [[ $(jq -c . "$OUT/void.jsonl" | wc -l) == $(wc -l <"$OUT/void.jsonl") ]] || fail "stdout is not JSON only" || return 1
    ex_says "$OUT/void.err" 'try `nearby doctor --service s-ex-void`' "the hint on stderr" || return 1
    term_run 2 "$OUT/void.txt" -- browse --timeout 1; status=$?
    expect_eq "$status" 0 "browse --timeout on a terminal" || return 1
    # Services an earlier test of this lab left in the daemon's cache are named too (on the link: …).
    term_has "$OUT/void.txt" 'nothing found on _nearby\._tcp in 1(\.[0-9])? s(; on the link: .*)? — try `nearby doctor`' "the sentence on the terminal" || return 1
}

# browse --types and --service _TYPE._tcp show the real type; a web server is not an MPC app.
test_explain_browse_shows_real_types_and_marks_foreign_services() {
    local status pub
    spawn_publish 3 "$OUT/publish.txt" -s "Plain Web" _ex-web._tcp 8080 "path=/" || return 1
    pub=$PUBLISH_PID
    term_run 2 "$OUT/raw.txt" -- browse --service _ex-web._tcp --count 1 --timeout 10; status=$?
    expect_eq "$status" 0 "browse --service _ex-web._tcp" || { kill "$pub"; return 1; }
    term_has "$OUT/raw.txt" 'browsing for _ex-web\._tcp in local\.' "the type as given" || { kill "$pub"; return 1; }
    ! plain "$OUT/raw.txt" | grep -q '__ex-web' || { fail "a doubled underscore"; show "$OUT/raw.txt"; kill "$pub"; return 1; }
    term_run 2 "$OUT/types.txt" -- browse --types --count 1 --timeout 10
    term_has "$OUT/types.txt" 'browsing for _services\._dns-sd\._udp in' "the meta-query as it is" || { kill "$pub"; return 1; }
    nb 2 browse --service ex-web --count 1 --timeout 10 >"$OUT/short.jsonl" 2>"$OUT/short.err"
    expect_json "$OUT/short.jsonl" 'select(.event=="found" and .peer.id=="Plain Web" and .kind=="other" and .peer.name==null)' \
        "a web server is kind other" || { kill "$pub"; return 1; }
    term_run 2 "$OUT/short.txt" -- browse --service ex-web --count 1 --timeout 10
    term_has "$OUT/short.txt" 'found Plain Web .*not an MPC service' "not shown as an MPC app" || { kill "$pub"; return 1; }
    kill "$pub"; lab_wait_pid "$pub" 5 >/dev/null
}

# A peer named almost right, or on another service type: "still looking" on a terminal, then what
# was seen instead and the corrected command (issue 57; `nearby doctor NAME` where nothing near was
# seen) — as fields of the error event in JSON.
test_explain_peer_not_found_says_what_was_seen_instead() {
    trap stop_started RETURN
    local status id1 id3
    id1=$(id_of 1) && id3=$(id_of 3) || return 1
    start_node 1 s-ex-nf --name "Bob's Pi" || return 1
    start_node 3 s-ex-chat --name "Carol" || return 1
    nb 2 send --service s-ex-nf --timeout 4 "bob's pi" hi >"$OUT/case.jsonl" 2>"$OUT/case.err"; status=$?
    expect_error "$OUT/case.jsonl" 2 "$status" peer-not-found "a name in the wrong case" || return 1
    expect_json "$OUT/case.jsonl" 'select(.event=="error" and (.near|map(.id)|index("'"$id1"'")) != null
        and .hint == "nearby send --service s-ex-nf --timeout 4 \"Bob'"'"'s Pi\" hi")' "the near name, and the corrected command as the hint" || return 1
    ex_says "$OUT/case.err" "'Bob's Pi'" "the near name in the sentence" || return 1
    nb 2 send --service s-ex-nf --timeout 4 Carol hi >"$OUT/other.jsonl" 2>"$OUT/other.err"; status=$?
    expect_error "$OUT/other.jsonl" 2 "$status" peer-not-found "a peer on another type" || return 1
    expect_json "$OUT/other.jsonl" 'select(.event=="error" and any(.elsewhere[]; .service=="_s-ex-chat._tcp" and .peer.id=="'"$id3"'"))' \
        "the peer on the other type" || return 1
    ex_says "$OUT/other.err" 'add `--service s-ex-chat`' "the option to add" || return 1
    term_run 2 "$OUT/tty.txt" NEARBY_LOOKING_AFTER_MS=500 -- send --service s-ex-nf --timeout 3 "bob's pi" hi; status=$?
    expect_eq "$status" 2 "not found on a terminal" || return 1
    term_has "$OUT/tty.txt" "still looking for 'bob's pi' on _s-ex-nf\._tcp" "still looking" || return 1
    term_has "$OUT/tty.txt" "did you mean 'Bob's Pi' \\(" "the question at a terminal" || return 1
    term_has "$OUT/tty.txt" "did you mean .nearby send --service s-ex-nf --timeout 3" "the corrected command" || return 1
}

# A peer that calls itself NAME:PORT is found by that name; NAME:PORT naming neither a peer nor a
# host says how to name either, not a raw resolver error.
test_explain_a_peer_named_like_host_port_wins() {
    trap stop_started RETURN
    local status
    start_node 1 s-ex-db --name "db:5432" --auto-accept || return 1
    nb 2 send --service s-ex-db --timeout 10 db:5432 hello >"$OUT/db.jsonl" 2>"$OUT/db.err"; status=$?
    expect_eq "$status" 0 "send db:5432 to the peer of that name" || { show "$OUT/db.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="hello")' 5 "the message" >/dev/null || return 1
    nb 2 send --service s-ex-db --timeout 3 nosuchhost:5432 hello >"$OUT/none.jsonl" 2>"$OUT/none.err"; status=$?
    expect_error "$OUT/none.jsonl" 2 "$status" peer-not-found "neither a peer nor a host" || return 1
    ex_says "$OUT/none.err" "nor is 'nosuchhost' a host name" "how to name either" || return 1
    ! grep -q "SocketAddressError" "$OUT/none.err" || fail "a raw resolver error" || return 1
}

# Help on a narrow terminal breaks prose, never an example; one default per option.
test_explain_help_keeps_examples_whole() {
    local line
    term_run 1 "$OUT/help.txt" -- browse --help || fail "browse --help exited $?" || return 1
    lab_run 1 env COLUMNS=50 "$NEARBY" browse --help >"$OUT/narrow.txt" 2>&1 || fail "browse --help exited $?" || return 1
    for line in '  nearby browse --peer alice --timeout 10 >/dev/null && echo "alice is here"' \
        "  nearby browse --timeout 5 | jq -r 'select(.event==\"found\") | .peer.name'"; do
        grep -qxF -- "$line" "$OUT/narrow.txt" || { fail "example cut: $line"; show "$OUT/narrow.txt"; return 1; }
    done
    (( $(grep -v '^  nearby ' "$OUT/narrow.txt" | LC_ALL=C.UTF-8 wc -L) <= 50 )) \
        || { fail "prose wider than 50 columns"; show "$OUT/narrow.txt"; return 1; }
    nb 1 advertise --help >"$OUT/adv.txt" 2>&1
    ! grep -q "(default: 0)" "$OUT/adv.txt" || fail "advertise --help doubles the port's default" || return 1
    tr -s ' \n' ' ' <"$OUT/adv.txt" | grep -qF "(default: any free port)" || fail "advertise --help lost the default" || return 1
}

# Two new identities on hosts of one name get names people can tell apart; blank names are refused.
test_explain_default_names_differ_and_blank_names_are_refused() {
    local one two status
    one=$(lab_run 1 env NEARBY_HOME="$OUT/home1" "$NEARBY" identity | jq -r .peer.name)
    two=$(lab_run 2 env NEARBY_HOME="$OUT/home2" "$NEARBY" identity | jq -r .peer.name)
    [[ -n $one && $one != "$two" ]] || fail "default names '$one' and '$two' are not told apart" || return 1
    [[ $one == "$(lab_run 1 hostname -s)-"???? ]] || fail "default name '$one' is not host-XXXX" || return 1
    nb 1 identity --rename "   " >"$OUT/blank.jsonl" 2>"$OUT/blank.err"; status=$?
    expect_error "$OUT/blank.jsonl" 64 "$status" invalid-name "a name of spaces" || return 1
    ex_says "$OUT/blank.err" "only spaces" "why" || return 1
    nb 1 send --name " " --timeout 1 Bob hi >"$OUT/blank2.jsonl" 2>"$OUT/blank2.err"; status=$?
    expect_error "$OUT/blank2.jsonl" 64 "$status" invalid-name "--name of one space" || return 1
}

# A peer on IPv4 and IPv6 whose IPv4 port refuses: the send goes through over IPv6. With every
# address blocked, the sentence names the peer as typed and what happened at each address, in
# words, no NIO error text. (NEARBY_CONNECT_TIMEOUT_MS: a dropped address gives up in 1 s.)
test_explain_connect_tries_every_address() {
    trap 'stop_started; lab_run 1 nft delete table inet exv4 2>/dev/null; lab_run 1 nft delete table inet exall 2>/dev/null; trap - RETURN' RETURN
    local status port
    start_node 1 s-ex-v6 --name "Six Box" --auto-accept || return 1; port=$ADV_PORT
    nft_on 1 exv4 input "meta nfproto ipv4 tcp dport $port reject with tcp reset" || return 1
    nb 2 send --service s-ex-v6 --timeout 10 "Six Box" hi >"$OUT/v6.jsonl" 2>"$OUT/v6.err"; status=$?
    expect_eq "$status" 0 "send with IPv4 refused" || { show "$OUT/v6.jsonl"; show "$OUT/v6.err"; return 1; }
    expect_json "$OUT/v6.jsonl" 'select(.event=="connecting" and (.address|startswith("10.99.0.1:")))' "IPv4 tried first" || return 1
    expect_json "$OUT/v6.jsonl" 'select(.event=="connecting" and (.address|startswith("[")))' "then IPv6" || return 1
    expect_json "$OUT/v6.jsonl" 'select(.event=="sent")' "the message went over IPv6" || return 1

    nft_on 1 exall input "meta nfproto ipv6 tcp dport $port drop" || return 1
    lab_run 2 env NEARBY_CONNECT_TIMEOUT_MS=1000 "$NEARBY" send --service s-ex-v6 --timeout 10 "Six Box" hi >"$OUT/none.jsonl" 2>"$OUT/none.err"; status=$?
    expect_error "$OUT/none.jsonl" 5 "$status" connection-failed "every address blocked" || return 1
    ex_says "$OUT/none.err" "cannot connect to 'Six Box': 10.99.0.1:$port refused the connection (nothing listens on that port); [fe80:" "the peer as typed and the IPv4 address" || return 1
    ex_says "$OUT/none.err" "]:$port did not answer within 1 s" "the IPv6 address" || return 1
    if grep -qE "NIO|errno|SingleConnectionFailure" "$OUT/none.err"; then fail "raw NIO text"; show "$OUT/none.err"; return 1; fi
}

# A peer whose node restarted on another port, sent to through a node that found it before: a
# connection refused at the old port waits (2 s at most) for discovery to catch up and tries the
# new one, instead of failing. (Whether the node still held the old port is a race; the test says
# which way it went.)
test_explain_a_restarted_peer_is_found_at_its_new_port() {
    trap stop_started RETURN
    local status round old ports retried=0
    start_node 2 s-ex-re || return 1
    for round in 1 2 3; do
        start_node 1 s-ex-re --name "Re Box" --auto-accept || return 1; old=$ADV_PID
        nb 2 send --service s-ex-re --timeout 10 "Re Box" "round $round" >"$OUT/send$round.jsonl" 2>"$OUT/send$round.err"; status=$?
        expect_eq "$status" 0 "round $round: send to the restarted peer" || { show "$OUT/send$round.jsonl"; show "$OUT/send$round.err"; return 1; }
        ports=$(jq -r 'select(.event=="connecting") | .address' "$OUT/send$round.jsonl" | sed 's/.*://' | sort -u | wc -l)
        (( ports > 1 )) && retried=$((retried + 1))
        stop "$old" >/dev/null
    done
    printf '    %s of 3 sends found the old port first and retried at the new one\n' "$retried"
}
