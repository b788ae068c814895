# End-to-end tests of remembered addresses (sourced by run.sh): a peer reached once is connected to
# at its remembered address before discovery answers; a remembered address that fails, or where
# another identity answers, is forgotten and discovery decides; NEARBY_REMEMBER=0 turns it off.
# shellcheck shell=bash

# remembered_entry K ID SERVICE: host K's recent-peers.json entry for ID on SERVICE (JSON, or nothing).
remembered_entry() {
    jq -c --arg id "$2" --arg s "$3" '.peers[] | select(.id==$id and .service==$s)' \
        "$LAB_DIR/h$1/home/recent-peers.json" 2>/dev/null
}

test_a_remembered_peer_is_reached_without_discovery() {
    trap stop_started RETURN
    local id1 entry status
    id1=$(id_of 1) || return 1
    start_node 1 s-mem1 --auto-accept || return 1
    nb 2 send "Alice Box" first --service s-mem1 >"$OUT/first.jsonl" 2>"$OUT/first.err"; status=$?
    expect_eq "$status" 0 "the first send (through discovery)" || { show "$OUT/first.jsonl"; return 1; }
    entry=$(remembered_entry 2 "$id1" s-mem1)
    [[ $(jq -r '.port' <<<"$entry") == "$ADV_PORT" && $(jq -r '.addresses[0]' <<<"$entry") == 10.99.0.1 ]] \
        || { fail "h2 did not remember where it reached h1: '$entry'"; return 1; }
    # With h2's own daemon gone, only the remembered address can lead to h1.
    lab_stop_avahi 2
    nb 2 send "Alice Box" second --service s-mem1 >"$OUT/second.jsonl" 2>"$OUT/second.err"; status=$?
    lab_start_avahi 2
    expect_eq "$status" 0 "a send by name to a remembered peer without this host's daemon" || { show "$OUT/second.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="second")' 5 "the message sent through the remembered address" >/dev/null || return 1
    expect_json "$OUT/second.jsonl" "select(.event==\"connecting\" and .address==\"10.99.0.1:$ADV_PORT\" and .peer.id==\"$id1\")" \
        "connecting to the remembered address" || return 1
    # Turned off: the same command needs discovery, and says the daemon is missing.
    lab_stop_avahi 2
    lab_run 2 env NEARBY_REMEMBER=0 "$NEARBY" send "Alice Box" third --service s-mem1 --timeout 5 >"$OUT/off.jsonl" 2>"$OUT/off.err"; status=$?
    lab_start_avahi 2
    expect_eq "$status" 7 "NEARBY_REMEMBER=0 without the daemon" || { show "$OUT/off.jsonl"; return 1; }
}

test_a_stale_or_forged_remembered_address_is_forgotten() {
    trap stop_started RETURN
    local id1 id3 port1 port3 status entry file
    id1=$(id_of 1) && id3=$(id_of 3) || return 1
    start_node 3 s-mem2 --auto-accept || return 1; port3=$ADV_PORT; local adv3=$ADV
    start_node 1 s-mem2 --auto-accept || return 1; port1=$ADV_PORT
    nb 2 send "$id1" first --service s-mem2 >"$OUT/first.jsonl" 2>"$OUT/first.err" || { fail "the first send failed"; show "$OUT/first.jsonl"; return 1; }
    # Forged: h1's name and ID remembered at h3's node. h3 answers with its own identity: the send
    # still reaches h1 (through discovery), h3 gets nothing, and the forged address is forgotten.
    file=$LAB_DIR/h2/home/recent-peers.json
    jq --arg id "$id1" --argjson p "$port3" '(.peers[] | select(.id==$id)) |= (.addresses=["10.99.0.3"] | .port=$p)' "$file" >"$file.new" && mv "$file.new" "$file"
    nb 2 send "Alice Box" forged --service s-mem2 >"$OUT/forged.jsonl" 2>"$OUT/forged.err"; status=$?
    expect_eq "$status" 0 "a send through a forged remembered address" || { show "$OUT/forged.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="forged")' 5 "the message at h1" >/dev/null || return 1
    [[ $(count_json "$adv3" 'select(.event=="message")') == 0 ]] || { fail "h3 got a message meant for h1"; show "$adv3"; return 1; }
    entry=$(remembered_entry 2 "$id1" s-mem2)
    expect_eq "$(jq -r .port <<<"$entry")" "$port1" "the remembered port after the forged one failed" || return 1
    # Stale: h1's node restarts on another port; the remembered one is refused, discovery finds the new.
    kill -INT "$ADV_PID"; lab_wait_pid "$ADV_PID" 10 >/dev/null
    start_node 1 s-mem2 --auto-accept || return 1
    [[ $ADV_PORT != "$port1" ]] || { echo "    (the new node got the same port; nothing stale to test)"; return 0; }
    nb 2 send "Alice Box" stale --service s-mem2 >"$OUT/stale.jsonl" 2>"$OUT/stale.err"; status=$?
    expect_eq "$status" 0 "a send after the peer moved to another port" || { show "$OUT/stale.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="stale")' 5 "the message at h1's new node" >/dev/null || return 1
    entry=$(remembered_entry 2 "$id1" s-mem2)
    expect_eq "$(jq -r .port <<<"$entry")" "$ADV_PORT" "the remembered port after the peer moved" || return 1
}
