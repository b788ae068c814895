# A folder of many small files (issue 43): many files in flight at once, each still reported once on
# each side and placed only once its SHA-256 matches; an interrupted folder resumes; a peer that
# offers more files at once than a session allows is refused with the reason. Sourced by run.sh;
# uses the helpers of sessions.sh, files.sh and security.sh.
# shellcheck shell=bash

# small_tree DIR COUNT: COUNT files of 1–8 KiB of random bytes in DIR, 100 a subdirectory, and one
# empty file.
small_tree() {
    python3 - "$1" "$2" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    os.makedirs(f"{root}/s{i // 100}", exist_ok=True)
    with open(f"{root}/s{i // 100}/f{i}.bin", "wb") as f:
        f.write(os.urandom(1024 + i * 37 % 7168))
open(f"{root}/s0/empty.bin", "wb").close()
PY
}

# 1,500 files (the lab's debug build: a few seconds): byte-exact, one file-sent and one file-received
# for each, several in flight at once on the receiver, one session throughout, nothing left behind;
# in bundles (the default between two nodes of this version) and each file on a channel of its own.
test_folder_of_many_small_files_arrives_byte_exact() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src status count=1501 most
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    small_tree "$src/many" 1500
    expect_eq "$(find "$src/many" -type f | wc -l)" "$count" "files in the folder (test setup)" || return 1
    start_node 1 s-many --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    (cd "$src" && nb 2 send-file "$id1" many --service s-many >"$OUT/send.jsonl" 2>"$OUT/send.err"); status=$?
    expect_eq "$status" 0 "send-file of 1,501 small files" || { show "$OUT/send.err"; return 1; }
    expect_eq "$(jq -r 'select(.event=="file-sent") | .path' "$OUT/send.jsonl" | sort -u | wc -l)" "$count" "distinct file-sent paths" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")')" "$count" "file-sent events (one per file)" || return 1
    await "$adv" "select(.event==\"file-received\")" 10 "file-received on h1" >/dev/null || return 1
    for _ in $(seq 50); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge $count ]] && break; sleep 0.1; done
    expect_eq "$(count_json "$adv" 'select(.event=="file-received")')" "$count" "file-received events (one per file)" || return 1
    expect_eq "$(jq -r 'select(.event=="file-received") | .path' "$adv" | sort -u | wc -l)" "$count" "distinct file-received paths" || return 1
    diff -r "$src/many" "$dir/many" >&2 || { fail "the received folder differs (diff -r above)"; return 1; }
    files_no_parts "$dir" "after the folder" || return 1
    # One session from start to end: 32 files offered at once still open their channels in order
    # (a peer ends the link on "open on channel N, which is not the peer's next"), so nothing broke
    # the protocol and the sender never had to reconnect.
    expect_eq "$(count_json "$adv" 'select(.event=="error")')" 0 "error events on h1 (a protocol violation ends the link)" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="reconnecting")')" 0 "reconnections of the sender" || return 1
    # Files in flight at once: the most files the receiver had started and not yet received.
    most=$(jq -s '[.[] | select(.direction=="receive" and .event=="file-started" or .event=="file-received")
        | if .event=="file-started" then 1 else -1 end] | reduce .[] as $d ({n: 0, max: 0}; .n += $d | .max = ([.max, .n] | max)) | .max' "$adv")
    printf '    at most %s files in flight on the receiver\n' "$most"
    (( most > 1 )) || { fail "the files went one at a time (at most $most in flight)"; return 1; }
    # Bundles carried the small files above; NEARBY_BUNDLES=0 sends each on a channel of its own, many
    # at once (what a receiver that takes no bundles gets), and with NEARBY_FILES_IN_FLIGHT=1 one
    # after another, as before.
    rm -rf "${dir:?}/many"
    (cd "$src" && lab_run 2 env NEARBY_BUNDLES=0 "$NEARBY" send-file "$id1" many --service s-many >"$OUT/send0.jsonl" 2>"$OUT/send0.err"); status=$?
    expect_eq "$status" 0 "send-file without bundles" || { show "$OUT/send0.err"; return 1; }
    expect_eq "$(count_json "$OUT/send0.jsonl" 'select(.event=="file-sent")')" "$count" "file-sent events without bundles" || return 1
    diff -r "$src/many" "$dir/many" >&2 || { fail "the folder sent without bundles differs"; return 1; }
    rm -rf "${dir:?}/many"
    (cd "$src" && lab_run 2 env NEARBY_BUNDLES=0 NEARBY_FILES_IN_FLIGHT=1 "$NEARBY" send-file "$id1" many/s0 --service s-many >/dev/null 2>"$OUT/send1.err"); status=$?
    expect_eq "$status" 0 "send-file with one file in flight" || { show "$OUT/send1.err"; return 1; }
    diff -r "$src/many/s0" "$dir/s0" >&2 || { fail "the folder sent one file at a time differs"; return 1; }
}

# A folder interrupted (the sender killed while its big file, 1 GB, is on the way, after some small files
# arrived) and sent again: the small files already there are kept (`already_there`, no copies), the
# big one resumes from its partial file, the rest arrive; the folder is byte-exact.
test_folder_interrupted_resumes() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src sender status first part resumed
    id1=$(id_of 1) || return 1
    files_later rm -rf "$src" "$dir"
    mkdir -p "$dir"
    small_tree "$src/album" 300
    files_random "$src/album/zz-big.bin" 1000000000
    start_node 1 s-many-resume --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    nb_bg 2 "$OUT/send1.jsonl" send-file "$id1" "$src/album" --service s-many-resume; sender=$PID
    await "$OUT/send1.jsonl" 'select(.event=="progress" and (.path | endswith("zz-big.bin")) and .bytes >= 30000000)' 60 \
        "the big file under way" >/dev/null || return 1
    kill -KILL "$sender"
    exits "$sender" 5 137 "send-file after SIGKILL" || return 1
    await "$adv" 'select(.event=="file-failed" and .direction=="receive")' 10 "file-failed on h1 after the sender died" >/dev/null || return 1
    first=$(count_json "$adv" 'select(.event=="file-received")')
    part=$(files_only_part "$dir/album" zz-big.bin "after the sender died") || return 1
    printf '    killed with %s files received and %s bytes of the big one\n' "$first" "$part"
    (( first > 0 )) || { fail "no file had arrived before the kill"; return 1; }

    nb 2 send-file "$id1" "$src/album" --service s-many-resume >"$OUT/send2.jsonl" 2>"$OUT/send2.err"; status=$?
    expect_eq "$status" 0 "send-file again" || { show "$OUT/send2.err"; return 1; }
    resumed=$(jq -r 'select(.event=="file-sent" and (.path | endswith("zz-big.bin"))) | .skipped' "$OUT/send2.jsonl")
    (( resumed > 0 )) || { fail "the big file did not resume (skipped $resumed)"; return 1; }
    expect_eq "$(count_json "$OUT/send2.jsonl" 'select(.event=="file-sent")')" 302 "file-sent events of the second run" || return 1
    expect_eq "$(count_json "$OUT/send2.jsonl" 'select(.event=="file-sent" and .already_there==true)')" "$first" \
        "files the first run delivered, already there" || return 1
    diff -r "$src/album" "$dir/album" >&2 || { fail "the folder differs after the resume (diff -r above: no copies either)"; return 1; }
    files_no_parts "$dir" "after the resume" || return 1
}

# A peer that offers more files at once than a session allows (64 channels, both directions): every
# offer past the cap is refused with the reason, nothing is made for it, and the node carries on.
test_files_past_the_channel_cap_are_refused_with_the_reason() {
    trap files_done RETURN
    local adv out
    mkdir -p "$OUT/save"
    start_node 1 s-many-cap --auto-accept --save-dir "$OUT/save" --encryption none || return 1; adv=$ADV
    rogue_bg rogue_files.py 2 "$OUT/rogue.out" "$(lab_addr 1)" "$ADV_PORT" --identities 1 --channels 80 --bytes 1000 --hold 1 || return 1
    exits "$PID" 60 0 "rogue_files.py" || { show "$OUT/rogue.out.err"; return 1; }
    out=$(tail -1 "$OUT/rogue.out")
    printf '    %s\n' "$out"
    # 64 accepted (of which a stranger may keep 16 files open: the rest are reset `busy`), 16 refused.
    expect_eq "$(jq -r .accepted <<<"$out")" 64 "offers accepted (the cap)" || return 1
    expect_eq "$(jq -r '.refused | to_entries | map(select(.key | test("too many channels"))) | map(.value) | add' <<<"$out")" 16 \
        "offers refused for too many channels, with the reason" || return 1
    nb 2 send "$(id_of 1)" "still here" --service s-many-cap --encryption none >/dev/null 2>&1 \
        || { fail "the node did not carry on after the refused offers"; return 1; }
}

# Bundles (docs/protocol.md): a peer's bundle, well formed — each file placed and answered once, paths
# that climb out kept inside — or breaking one of its bounds: a file over 64 KiB, bytes past the
# offer, a 65th file, a path that is not UTF-8, a key over 64 bytes, a close in the middle of a
# record. Each breaking one ends that link with a protocol violation and leaves nothing behind;
# the node goes on and a friend's folder still arrives (test peer: rogue_bundle.py).
test_folder_bundles_from_a_hostile_peer_are_bounded() {
    trap files_done RETURN
    local id1 save=$OUT/save src=$OUT/src case n=0 node adv port
    id1=$(id_of 1) || return 1
    mkdir -p "$save"
    start_node 1 s-bundle --auto-accept --save-dir "$save" --encryption optional || return 1
    node=$ADV_PID adv=$ADV port=$ADV_PORT
    rogue rogue_bundle.py 3 "$OUT/ok.out" "$(lab_addr 1)" "$port" --case ok || { show "$OUT/ok.out.err"; return 1; }
    expect_json "$OUT/ok.out" 'select(.closed and (.results | map(.[1]) == [0,0,0,0,0]))' "every file of the bundle placed and answered once" || { show "$OUT/ok.out"; return 1; }
    expect_eq "$(cat "$save/a/one.txt")" hello "a/one.txt" || return 1
    [[ -f $save/a/empty && ! -s $save/a/empty ]] || { fail "a/empty (0 bytes) not there"; return 1; }
    expect_eq "$(cat "$save/escape.txt")" "stay inside" "../../escape.txt, kept inside" || return 1
    expect_eq "$(cat "$save/abs/y.txt")" absolute "/abs/y.txt, kept inside" || return 1
    [[ ! -e $OUT/escape.txt ]] || { fail "a bundle's path climbed out of the save directory"; return 1; }
    for case in too-big past-offer many bad-path bad-key short-close; do
        n=$((n + 1))
        rogue rogue_bundle.py 3 "$OUT/$case.out" "$(lab_addr 1)" "$port" --case "$case" --hold 8 || { show "$OUT/$case.out.err"; return 1; }
        expect_json "$OUT/$case.out" 'select(.closed_by_node)' "the node cut the link of the bundle ($case)" || return 1
        # Its link ends as a protocol violation (the error events themselves are rate-limited: a
        # `suppressed` event counts those past the first few).
        for _ in $(seq 50); do
            (( $(count_json "$adv" 'select(.event=="disconnected" and (.reason | test("protocol violation: malformed bundle")))') >= n )) && break
            sleep 0.1
        done
        expect_eq "$(count_json "$adv" 'select(.event=="disconnected" and (.reason | test("protocol violation: malformed bundle")))')" "$n" \
            "links ended for a malformed bundle after $case" || return 1
        still_running "$node" "the node" || return 1
    done
    files_no_parts "$save" "after the hostile bundles" || return 1
    [[ ! -e $save/big.bin && ! -e $save/p.bin && ! -e $save/s.bin ]] || { fail "a broken bundle left a file"; return 1; }
    small_tree "$src/friend" 150
    (cd "$src" && nb 2 send-file "$id1" friend --service s-bundle >"$OUT/send.jsonl" 2>"$OUT/send.err") || { fail "the friend's folder"; show "$OUT/send.err"; return 1; }
    diff -r "$src/friend" "$save/friend" >&2 || { fail "the friend's folder differs"; return 1; }
}

# Bundles, the other way: a receiver that takes a bundle and answers it wrongly (a file answered twice,
# a file the bundle does not have, a result of no known kind, a close before every file was
# answered; test peer: rogue_bundle_receiver.py). The sender never reports a file it cannot
# vouch for: each file of the bundle not answered well fails with code `protocol`, the command ends at once (not
# after --retry-for: a protocol break is not an outage) with a non-zero exit and one sentence.
test_folder_bundles_to_a_hostile_receiver_fail_in_words() {
    trap files_done RETURN
    local src=$OUT/src case rc started took
    mkdir -p "$src/few"
    for n in 1 2 3; do head -c $((n * 1000)) /dev/urandom >"$src/few/f$n.bin"; done
    for case in twice unknown bad-status close-early; do
        rogue_bg rogue_bundle_receiver.py 1 "$OUT/$case.out" 47400 --case "$case" || return 1
        lab_wait_line "$OUT/$case.out" '.ready' 10 >/dev/null || { fail "the bad receiver ($case) did not listen"; show "$OUT/$case.out.err"; return 1; }
        started=$(now_ms)
        (cd "$src" && nb 2 send-file --encryption none "$(lab_addr 1):47400" few --retry-for 30 >"$OUT/$case.jsonl" 2>"$OUT/$case.err"); rc=$?
        took=$(( $(now_ms) - started ))
        printf '    %s: exit %s after %s ms: %s\n' "$case" "$rc" "$took" "$(tail -1 "$OUT/$case.err")"
        (( rc != 0 )) || { fail "send-file to a receiver that answers a bundle wrongly ($case) exited 0"; return 1; }
        (( took < 15000 )) || { fail "send-file ($case) took $took ms: a protocol break was retried"; return 1; }
        # A close after file 0's answer: file 0 was placed (it is reported sent), the two others fail.
        local sent=0; [[ $case == close-early ]] && sent=1
        expect_eq "$(count_json "$OUT/$case.jsonl" 'select(.event=="file-sent")')" "$sent" "files reported sent ($case)" || return 1
        expect_eq "$(count_json "$OUT/$case.jsonl" 'select(.event=="file-failed" and .code=="protocol")')" $((3 - sent)) "files failed with code protocol ($case)" || { show "$OUT/$case.jsonl"; return 1; }
        expect_eq "$(wc -l <"$OUT/$case.err")" 1 "lines on stderr ($case)" || { show "$OUT/$case.err"; return 1; }
        lab_wait_line "$OUT/$case.out" '.case' 15 >/dev/null || { fail "the bad receiver ($case) did not finish"; show "$OUT/$case.out.err"; return 1; }
        expect_json "$OUT/$case.out" 'select(.files == 3 and .closed_by_sender)' "the bad receiver read 3 files and the sender left ($case)" || return 1
    done
}
