# A file the receiver already has is not sent again (issue 47, item 4): the receiver says what it
# holds at the offered name, the sender compares hashes and sends no data when they match. Measured
# as a user would: the bytes the receiver's interface took in during the second send. Sourced by
# run.sh; uses the helpers of sessions.sh and files.sh. Nothing here needs root for nearby itself.
# shellcheck shell=bash

# there_rx K: bytes host K's lab interface has received so far.
there_rx() { lab_run "$1" cat "/sys/class/net/$LAB_IFACE/statistics/rx_bytes"; }

test_file_already_there_is_not_sent_again() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src size=$((8 << 20)) status before after took
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    start_node 1 s-f-there --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    start_node 2 s-f-there || return 1
    files_random "$src/big.bin" "$size"
    nb 2 send-file "$id1" "$src/big.bin" --service s-f-there >"$OUT/first.jsonl" 2>"$OUT/first.err"; status=$?
    expect_eq "$status" 0 "the first send" || { show "$OUT/first.jsonl"; return 1; }
    await "$adv" 'select(.event=="file-received")' 10 "the first file" >/dev/null || return 1

    # The same file again: nothing but frames crosses (a few KiB), not its 8 MiB.
    before=$(there_rx 1)
    nb 2 send-file "$id1" "$src/big.bin" --service s-f-there >"$OUT/again.jsonl" 2>"$OUT/again.err"; status=$?
    after=$(there_rx 1)
    took=$((after - before))
    printf '    the second send: %s bytes into the receiver (the file: %s)\n' "$took" "$size"
    expect_eq "$status" 0 "the same file again" || { show "$OUT/again.jsonl"; return 1; }
    (( took < 256 * 1024 )) || fail "the second send moved $took bytes to the receiver: the file was sent again" || return 1
    expect_json "$OUT/again.jsonl" "select(.event==\"file-sent\" and .already_there==true and .skipped==$size and .bytes==$size)" \
        "file-sent: already there, every byte skipped" || return 1
    [[ $(count_json "$OUT/again.jsonl" 'select(.event=="progress" or .event=="file-started")') == 0 ]] \
        || fail "the second send reported data under way" || { show "$OUT/again.jsonl"; return 1; }
    await "$adv" "select(.event==\"file-received\" and .already_there==true and .skipped==$size and .path==\"$dir/big.bin\")" 10 \
        "file-received: already there, the copy kept" >/dev/null || return 1
    expect_eq "$(find "$dir" -mindepth 1 | wc -l)" 1 "files in the save dir after the same file twice" || { ls -la "$dir" >&2; return 1; }

    # For people: the words say nothing was sent.
    nb 2 send-file --human "$id1" "$src/big.bin" --service s-f-there >"$OUT/human.txt" 2>&1 || fail "the human send failed" || return 1
    grep -q "already there, nothing sent" "$OUT/human.txt" || { fail "no 'already there, nothing sent' for people"; show "$OUT/human.txt"; return 1; }

    # Other bytes of the same size under the same name: sent in full, saved beside.
    files_random "$src/big.bin" "$size"
    before=$(there_rx 1)
    nb 2 send-file "$id1" "$src/big.bin" --service s-f-there >"$OUT/other.jsonl" 2>"$OUT/other.err"; status=$?
    after=$(there_rx 1)
    expect_eq "$status" 0 "other bytes, same name and size" || { show "$OUT/other.jsonl"; return 1; }
    (( after - before >= size )) || fail "other bytes: only $((after - before)) bytes reached the receiver" || return 1
    [[ $(count_json "$OUT/other.jsonl" 'select(.already_there)') == 0 ]] || fail "other bytes called already there" || return 1
    expect_json "$OUT/other.jsonl" "select(.event==\"file-sent\" and .skipped==0 and .saved_as==\"big (1).bin\")" "other bytes saved beside" || return 1
    for _ in $(seq 50); do [[ -e "$dir/big (1).bin" ]] && break; sleep 0.1; done
    cmp -s "$src/big.bin" "$dir/big (1).bin" || { fail "the other bytes are not in 'big (1).bin'"; ls -la "$dir" >&2; return 1; }
    files_no_parts "$dir" "after the sends" || return 1
}

# An older sender (its hello lists no `there`: rogue_sender.py) is answered as before: no `held` in
# the openReply, its data taken, other bytes at the same name saved beside. A sender that lists
# `there` hears the size and SHA-256 of the copy held — and may still send its data, which is taken
# as any file's.
test_file_already_there_and_an_older_sender() {
    trap files_done RETURN
    local py adv dir=$OUT/save port status line held
    py=$(files_python) || return 1
    mkdir -p "$dir"
    files_random "$dir/old.bin" 5000
    held=$(files_sha "$dir/old.bin")
    start_node 1 s-f-there-old --auto-accept --encryption none --save-dir "$dir" || return 1; adv=$ADV port=$ADV_PORT
    lab_run 2 "$py" "$ROOT/tests/e2e/rogue_sender.py" "$(lab_addr 1)" "$port" '[{"path":"old.bin","size":5000,"mode":"ok"}]' \
        >"$OUT/old.out" 2>"$OUT/old.err"; status=$?
    expect_eq "$status" 0 "the older sender" || { show "$OUT/old.out" "$adv"; return 1; }
    line=$(jq -c 'select(.channel)' "$OUT/old.out" | head -1)
    expect_eq "$(jq -c '[.reply.accept, .reply.held, .reply.heldSHA256, .end.frame]' <<<"$line")" '[true,null,null,"close"]' \
        "an older sender's answer and end" || return 1
    await "$adv" "select(.event==\"file-received\" and .path==\"$dir/old (1).bin\")" 5 "the older sender's file beside" >/dev/null || return 1

    lab_run 2 env ROGUE_FEATURES=there "$py" "$ROOT/tests/e2e/rogue_sender.py" "$(lab_addr 1)" "$port" \
        '[{"path":"old.bin","size":5000,"mode":"ok"},{"path":"old.bin","size":4999,"mode":"ok"}]' >"$OUT/new.out" 2>"$OUT/new.err"; status=$?
    expect_eq "$status" 0 "a sender that lists there" || { show "$OUT/new.out" "$adv"; return 1; }
    expect_eq "$(jq -sc 'map(select(.channel) | [.size, .reply.held, .reply.heldSHA256, .end.frame])' "$OUT/new.out")" \
        "[[5000,5000,\"$held\",\"close\"],[4999,null,null,\"close\"]]" "what a there-sender hears, for the same size and another" || return 1
    expect_eq "$(files_sha "$dir/old.bin")" "$held" "the copy held, untouched" || return 1
    expect_eq "$(find "$dir" -mindepth 1 -name 'old*' | wc -l)" 4 "old.bin and three beside it" || { ls -la "$dir" >&2; return 1; }
}
