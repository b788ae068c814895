# One PEER, one rule (issue 33): PEER is checked once (`PeerQuery`: an empty one is a usage error at
# once) and matched by the same rule in every command, `browse --peer` included; the sentences say
# the peer as the user typed it, the events carry its ID. Helpers of sessions.sh and explain.sh.
# shellcheck shell=bash

# An empty PEER: exit 64 with an `invalid-argument` error at once, whatever the command, with a node
# running or without one.
test_peer_empty_is_refused_at_once() {
    trap stop_started RETURN
    local status t0 ms args
    printf 'x\n' >"$OUT/f.txt"
    for args in 'send|hi' 'send-file|'"$OUT/f.txt" 'invite' 'stream' 'browse --peer' 'doctor' 'accept --from' 'disconnect'; do
        IFS='|' read -r -a words <<<"$args"
        read -r -a cmd <<<"${words[0]}"
        t0=$(now_ms)
        nb 2 "${cmd[@]}" "" ${words[1]:+"${words[1]}"} --service s-pq-empty >"$OUT/empty.jsonl" 2>"$OUT/empty.err" </dev/null; status=$?
        ms=$(( $(now_ms) - t0 ))
        # stream's stdout carries the stream: its events are on stderr.
        [[ ${words[0]} == stream ]] && grep -a '^{' "$OUT/empty.err" >"$OUT/empty.jsonl"
        expect_error "$OUT/empty.jsonl" 64 "$status" invalid-argument "nearby ${words[0]} ''" || { show "$OUT/empty.jsonl"; return 1; }
        (( ms < 3000 )) || fail "nearby ${words[0]} '' took $ms ms" || return 1
        ex_says "$OUT/empty.err" "the peer is empty" "the sentence for ${words[0]}" || return 1
    done
    start_node 2 s-pq-empty || return 1
    nb 2 send "" hi --service s-pq-empty >"$OUT/node.jsonl" 2>"$OUT/node.err"; status=$?
    expect_error "$OUT/node.jsonl" 64 "$status" invalid-argument "send '' with a node running" || return 1
}

# Two peers of one name: `browse --peer NAME` refuses it as `send NAME` does, both candidates listed;
# a name in the wrong case: the same near names, other types and hint as `send`.
test_peer_browse_follows_the_rule_send_does() {
    trap stop_started RETURN
    local id4 id5 id3 status which
    id3=$(id_of 3) && id4=$(id_of 4) && id5=$(id_of 5) || return 1
    start_node 4 s-pq-twin --name "Bob's Pi" || return 1
    start_node 5 s-pq-twin --name "Bob's Pi" || return 1
    start_node 3 s-pq-other --name "Bob's Pi" || return 1
    # The rule, not the race: both twins are on h2's daemon before anyone asks (on a loaded machine
    # the second record could come after a lookup has settled on the first).
    local i listed
    for ((i = 0; i < 100; i++)); do
        listed=$(lab_run 2 avahi-browse -rpt _s-pq-twin._tcp 2>/dev/null | grep -c -e "^=;[^;]*;[^;]*;$id4;" -e "^=;[^;]*;[^;]*;$id5;")
        ((listed >= 2)) && break
        sleep 0.1
    done
    for which in browse send; do
        if [[ $which == browse ]]; then
            nb 2 browse --service s-pq-twin --peer "Bob's Pi" --timeout 5 >"$OUT/$which.jsonl" 2>"$OUT/$which.err"; status=$?
        else
            nb 2 send --service s-pq-twin --timeout 5 "Bob's Pi" hi >"$OUT/$which.jsonl" 2>"$OUT/$which.err"; status=$?
        fi
        expect_error "$OUT/$which.jsonl" 2 "$status" peer-ambiguous "$which to a name two peers share" || return 1
        expect_json "$OUT/$which.jsonl" "select(.event==\"error\" and (.message|contains(\"$id4\")) and (.message|contains(\"$id5\")))" \
            "$which: the error lists both IDs" || return 1
    done
    for which in browse send; do
        if [[ $which == browse ]]; then
            nb 2 browse --service s-pq-twin --peer "bob's pi" --timeout 3 >"$OUT/near-$which.jsonl" 2>"$OUT/near-$which.err"; status=$?
        else
            nb 2 send --service s-pq-twin --timeout 3 "bob's pi" hi >"$OUT/near-$which.jsonl" 2>"$OUT/near-$which.err"; status=$?
        fi
        expect_error "$OUT/near-$which.jsonl" 2 "$status" peer-not-found "$which: a name in the wrong case" || return 1
        expect_json "$OUT/near-$which.jsonl" 'select(.event=="error" and (.near|map(.id)|index("'"$id4"'")) != null
            and any(.elsewhere[]; .service=="_s-pq-other._tcp" and .peer.id=="'"$id3"'")
            and (.hint|startswith("nearby doctor --service s-pq-twin ")))' "$which: near names, other types and the hint" || return 1
        ex_says "$OUT/near-$which.err" 'add `--service s-pq-other`' "$which: the option to add" || return 1
    done
    # doctor follows the same rule: a name two peers share is no peer to examine.
    nb 2 doctor --service s-pq-twin --timeout 5 "Bob's Pi" >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"; status=$?
    expect_eq "$status" 2 "doctor on a name two peers share" || { show "$OUT/doctor.jsonl"; return 1; }
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"peer\" and .status==\"fail\"
        and (.detail|contains(\"$id4\")) and (.detail|contains(\"$id5\")) and (.hint|contains(\"nearby doctor --service s-pq-twin $id4\")))" \
        "doctor: the peer check lists both, and how to name one" || return 1
    [[ $(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="connect")') == 0 ]] || fail "doctor connected to one of two same-named peers" || return 1
    # A prefix of the ID names one of them: found, exit 0.
    nb 2 browse --service s-pq-twin --peer "${id4:0:6}" --timeout 5 >"$OUT/prefix.jsonl" 2>"$OUT/prefix.err"; status=$?
    expect_eq "$status" 0 "browse --peer ID-prefix" || { show "$OUT/prefix.jsonl"; return 1; }
    expect_json "$OUT/prefix.jsonl" "select(.event==\"found\" and .peer.id==\"$id4\")" "found h4" || return 1
}

# The README's "wait, then send" recipe, under `set -euo pipefail`: a peer that never appears ends
# the script non-zero before anything is sent; a peer that is there gets the message.
test_peer_readme_recipe_under_pipefail() {
    trap stop_started RETURN
    local status script
    script=$(awk '/^A script that waits for a peer/{on=1} on && /^```sh$/{getline; while ($0 != "```") {print; getline}; exit}' "$ROOT/README.md")
    grep -q 'pipefail' <<<"$script" || fail "the README's recipe does not set pipefail" || return 1
    script=${script//\"Bob\'s Pi\"/\"\$PEER_NAME\"}
    script=${script//--timeout 60/--timeout \$WAIT}
    script=${script//\$(git rev-parse --short HEAD)/abc}
    # The recipe as written, with `nearby` the binary under test on this test's service type.
    { printf 'nearby() { "$NEARBY" "$@" --service s-pq-recipe; }\n'; printf '%s\n' "$script"; } >"$OUT/recipe.sh"
    grep -q 'PEER_NAME' "$OUT/recipe.sh" || fail "could not adapt the recipe: $(cat "$OUT/recipe.sh")" || return 1
    lab_run 2 env NEARBY="$NEARBY" PEER_NAME=Nobody WAIT=2 bash "$OUT/recipe.sh" >"$OUT/none.out" 2>"$OUT/none.err"; status=$?
    expect_eq "$status" 2 "the recipe when the peer never appears (browse's status)" || { show "$OUT/none.out"; return 1; }
    ! grep -q "sent" "$OUT/none.out" || fail "it sent anyway" || return 1
    start_node 1 s-pq-recipe --name "Recipe Peer" --auto-accept || return 1
    lab_run 2 env NEARBY="$NEARBY" PEER_NAME="Recipe Peer" WAIT=10 bash "$OUT/recipe.sh" >"$OUT/ok.out" 2>"$OUT/ok.err"; status=$?
    expect_eq "$status" 0 "the recipe with the peer there" || { show "$OUT/ok.out"; return 1; }
    grep -q "^sent [0-9]* bytes" "$OUT/ok.out" || fail "no 'sent N bytes': $(cat "$OUT/ok.out")" || return 1
    await "$ADV" 'select(.event=="message" and (.text|startswith("build abc")))' 5 "the message" >/dev/null || return 1
}

# "Carol declined the invitation", "Carol did not answer …": the peer as the user named it; the
# events keep its ID.
test_peer_sentences_say_the_name_typed() {
    trap stop_started RETURN
    local id3 status acc
    id3=$(id_of 3) || return 1
    nb_bg 3 "$OUT/accept.jsonl" accept --decline --name Carol --service s-pq-say; acc=$PID
    await "$OUT/accept.jsonl" 'select(.event=="advertising")' 10 "accept --decline advertises" >/dev/null || return 1
    nb 2 invite --service s-pq-say --timeout 10 Carol >"$OUT/declined.jsonl" 2>"$OUT/declined.err"; status=$?
    expect_error "$OUT/declined.jsonl" 3 "$status" declined "invite Carol, declined" || return 1
    ex_says "$OUT/declined.err" "Carol declined the invitation" "the name typed" || return 1
    ! grep -q "$id3" "$OUT/declined.err" || fail "the sentence names the ID: $(cat "$OUT/declined.err")" || return 1
    expect_json "$OUT/declined.jsonl" "select(.event==\"declined\" and .peer.id==\"$id3\")" "the ID in the event" || return 1
    exits "$acc" 10 0 "accept --decline" >/dev/null
    start_node 3 s-pq-say --name Carol || return 1
    nb 2 invite --service s-pq-say --timeout 3 Carol >"$OUT/late.jsonl" 2>"$OUT/late.err"; status=$?
    expect_error "$OUT/late.jsonl" 4 "$status" invitation-timeout "invite Carol, not answered" || return 1
    ex_says "$OUT/late.err" "Carol did not answer the invitation" "the name typed" || return 1
}

# One deadline per command: `--timeout` bounds the lookup, the connection (every address within
# what is left) and the answer together — a peer whose port drops every packet ends `send
# --timeout 5` in about 5 s, on its own and through a node; `accept --timeout` bounds its wait.
test_peer_timeout_bounds_the_whole_command() {
    trap 'stop_started; lab_run 1 nft delete table inet pqdrop 2>/dev/null; trap - RETURN' RETURN
    local status t0 ms where ref
    start_node 1 s-pq-drop --name Dropped --auto-accept || return 1
    nft_on 1 pqdrop input "tcp dport $ADV_PORT drop" || return 1
    for where in alone node; do
        [[ $where == node ]] && { start_node 2 s-pq-drop || return 1; }
        ref=$(overhead_ms 2 send --service s-pq-drop --timeout 0.1 Dropped hi)
        t0=$(now_ms)
        nb 2 send --service s-pq-drop --timeout 5 Dropped hi >"$OUT/$where.jsonl" 2>"$OUT/$where.err"; status=$?
        ms=$(( $(now_ms) - t0 ))
        printf '    send --timeout 5 to a dropped port (%s): exit %s after %d ms (--timeout 0.1: %d ms)\n' "$where" "$status" "$ms" "$ref"
        expect_error "$OUT/$where.jsonl" 5 "$status" connection-failed "send to a dropped port ($where)" || return 1
        (( ms < 6500 + ref )) || fail "send --timeout 5 ($where) took $ms ms" || { show "$OUT/$where.jsonl"; return 1; }
        ex_says "$OUT/$where.err" "cannot connect to 'Dropped'" "the peer as typed ($where)" || return 1
    done
    ref=$(overhead_ms 3 accept --service s-pq-drop --timeout 0.1)
    t0=$(now_ms)
    nb 3 accept --service s-pq-drop --timeout 2 >"$OUT/accept.jsonl" 2>"$OUT/accept.err"; status=$?
    ms=$(( $(now_ms) - t0 ))
    printf '    accept --timeout 2: exit %s after %d ms (--timeout 0.1: %d ms)\n' "$status" "$ms" "$ref"
    expect_error "$OUT/accept.jsonl" 4 "$status" no-invitation "accept --timeout 2, nobody invites" || return 1
    (( ms < 4000 + ref )) || fail "accept --timeout 2 took $ms ms" || return 1
    ex_says "$OUT/accept.err" "no invitation came within 2 s" "the sentence" || return 1
}

# Row 10: right after `disconnect --all`, `send` through the same node makes a new session (or
# fails with the real cause): never `connected` then `not-connected` in the same breath. The session
# is made either way round: by h1's node, and by Bob's (h1 accepting).
test_peer_send_right_after_disconnect_all_reconnects() {
    trap stop_started RETURN
    local status round bob id1
    id1=$(id_of 1) || return 1
    start_node 2 s-pq-again --name "Bob's Pi" --auto-accept || return 1; bob=$ADV
    start_node 1 s-pq-again --auto-accept || return 1
    for round in 1 2 3 4; do
        if (( round % 2 == 0 )); then
            nb 2 send --service s-pq-again "$id1" "from bob $round" >"$OUT/bob$round.jsonl" 2>&1 || { fail "h2 sends to h1, round $round"; show "$OUT/bob$round.jsonl"; return 1; }
        fi
        nb 1 send --service s-pq-again "Bob's Pi" "hi $round" >"$OUT/send$round.jsonl" 2>"$OUT/send$round.err"; status=$?
        expect_eq "$status" 0 "send, round $round" || { show "$OUT/send$round.jsonl"; return 1; }
        nb 1 disconnect --all --service s-pq-again >"$OUT/disc$round.jsonl" 2>&1; status=$?
        expect_eq "$status" 0 "disconnect --all, round $round" || { show "$OUT/disc$round.jsonl"; return 1; }
    done
    await "$bob" 'select(.event=="message" and .text=="hi 4")' 5 "the last message on h2" >/dev/null || return 1
}

# Row 14: two files with the same base name: the sender's `file-sent` events tell them apart —
# where each came from (`source`), and the name the receiver saved the second under (`saved_as`).
test_peer_same_base_names_are_told_apart() {
    trap stop_started RETURN
    local id1 status save=$OUT/save
    id1=$(id_of 1) || return 1
    mkdir -p "$save" "$OUT/dA" "$OUT/dB"
    printf 'from A\n' >"$OUT/dA/x.txt"; printf 'from B\n' >"$OUT/dB/x.txt"
    start_node 1 s-pq-twins --auto-accept --save-dir "$save" || return 1
    nb 2 send-file --service s-pq-twins "$id1" "$OUT/dA/x.txt" "$OUT/dB/x.txt" >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "send-file dA/x.txt dB/x.txt" || { show "$OUT/send.jsonl"; return 1; }
    # Files go several at once, so either may take the plain name: each event says which it got.
    local a b
    a=$(jq -r "select(.event==\"file-sent\" and .source==\"$OUT/dA/x.txt\") | .saved_as // \"x.txt\"" "$OUT/send.jsonl")
    b=$(jq -r "select(.event==\"file-sent\" and .source==\"$OUT/dB/x.txt\") | .saved_as // \"x.txt\"" "$OUT/send.jsonl")
    expect_eq "$(printf '%s\n' "$a" "$b" | sort | tr '\n' '|')" "x (1).txt|x.txt|" "the two names the files were saved as" || { show "$OUT/send.jsonl"; return 1; }
    expect_eq "$(cat "$save/$a")" "from A" "what '$a' (dA/x.txt) holds" || return 1
    expect_eq "$(cat "$save/$b")" "from B" "what '$b' (dB/x.txt) holds" || return 1
}

# Row 12: an empty directory given on its own is made on the receiving side; a node that takes no
# files refuses it as it refuses a file.
test_peer_empty_directory_is_recreated() {
    trap stop_started RETURN
    local id1 status save=$OUT/save
    id1=$(id_of 1) || return 1
    mkdir -p "$save" "$OUT/nothing here"
    start_node 1 s-pq-emptydir --auto-accept --save-dir "$save" || return 1
    nb 2 send-file --service s-pq-emptydir "$id1" "$OUT/nothing here" >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "send-file of an empty directory" || { show "$OUT/send.jsonl"; return 1; }
    [[ -d "$save/nothing here" ]] || fail "no '$save/nothing here' on h1: $(ls -A "$save")" || return 1
    local id3
    id3=$(id_of 3) || return 1
    start_node 3 s-pq-emptydir --auto-accept || return 1
    nb 2 send-file --service s-pq-emptydir "$id3" "$OUT/nothing here" >"$OUT/refused.jsonl" 2>"$OUT/refused.err"; status=$?
    expect_error "$OUT/refused.jsonl" 5 "$status" no-save-dir "an empty directory to a node that takes no files" || return 1
}
