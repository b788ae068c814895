# shellcheck shell=bash
# Issue 43, item 4: folders over LocalSend. A folder goes in one prepare-upload, as the official
# app sends one (relative fileNames under the folder's name); nearby's receiver keeps its shape
# inside --save-dir and reads the list as it arrives, within bounds a stranger cannot abuse
# (tests/e2e/rogue_localsend_folder.py, written from the official app's source). Uses
# localsend.sh's ls_setup/ls_teardown and nearby_ls_node.

LSF_PEER="$ROOT/tests/e2e/rogue_localsend_folder.py"

# lsf_tree DIR FILES: FILES small files of random bytes (0–1,500 bytes) in nested folders, an
# empty file and names with spaces among them.
lsf_tree() {
    python3 - "$1" "$2" <<'EOF'
import os, random, sys
root, count = sys.argv[1], int(sys.argv[2])
rnd = random.Random(43)
for i in range(count):
    sub = os.path.join(root, f"d{i % 25}", f"e {i % 4}") if i % 3 else os.path.join(root, f"d{i % 25}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"f{i}.bin"), "wb") as f:
        f.write(rnd.randbytes(0 if i == 7 else rnd.randint(1, 1500)))
EOF
}

test_localsend_a_folder_of_5000_files_goes_nearby_to_nearby_with_its_shape() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" "$OUT/src"
    lsf_tree "$OUT/src/trip" 5000
    mkdir -p "$OUT/src/trip/empty"
    # A stranger's folder (--auto-accept): over the quota's 256 unfinished files, within its bytes.
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    local started=$SECONDS
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/src/trip" >"$OUT/send.jsonl" 2>"$OUT/send.err"
    local rc=$? took=$((SECONDS - started))
    expect_eq "$rc" 0 "send-file --localsend of a 5,000-file folder" || { tail -5 "$OUT/send.err" >&2; return 1; }
    echo "    5,000 files nearby -> nearby over LocalSend: ${took} s"
    diff -r "$OUT/src/trip" "$OUT/in/trip" >"$OUT/diff.out" 2>&1
    # LocalSend carries no empty folder: only that differs.
    expect_eq "$(cat "$OUT/diff.out")" "Only in $OUT/src/trip: empty" "diff -r of the folder" || { head "$OUT/diff.out" >&2; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="skipped" and .path=="trip/empty" and (.reason|contains("empty folder")))' "the empty folder, said" || return 1
    expect_eq "$(grep -c '"event":"file-sent"' "$OUT/send.jsonl")" 5000 "one file-sent a file" || return 1
    expect_eq "$(grep -c '"event":"file-received"' "$OUT/node.jsonl")" 5000 "one file-received a file" || return 1
    [[ -z $(find "$OUT/in" -name '*.nearby-part') ]] || { fail "a partial file was left"; return 1; }
    # Sent again: nothing is overwritten, the second copy's files take free names beside the first.
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/src/trip/d3" >/dev/null 2>"$OUT/again.err" || { fail "sent again"; return 1; }
    cmp -s "$OUT/src/trip/d3/f3.bin" "$OUT/in/d3/f3.bin" || { fail "d3 did not arrive"; return 1; }
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/src/trip/d3" >/dev/null 2>"$OUT/again.err" || { fail "sent a third time"; return 1; }
    cmp -s "$OUT/src/trip/d3/f3.bin" "$OUT/in/d3/f3 (1).bin" || { fail "the second copy did not take a free name"; ls "$OUT/in/d3" | head >&2; return 1; }
    stop "$NODE_PID" >/dev/null
}

test_localsend_a_folder_from_an_official_format_peer_keeps_its_shape() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" "$OUT/src"
    lsf_tree "$OUT/src/Photos 2024" 300
    # A receiver that takes fewer files refuses the list in words, to either sender.
    NEARBY_LOCALSEND_FILES=250 nearby_ls_node 1 "$OUT/small.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 python3 "$LSF_PEER" official 10.99.0.1 53317 "$OUT/src/Photos 2024" >"$OUT/refused.out" 2>&1
    expect_json "$OUT/refused.out" 'select(.prepare==413 and (.said|contains("at most 250 files in one transfer")))' "413 in words" || {
        cat "$OUT/refused.out" >&2; return 1; }
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/src/Photos 2024" >/dev/null 2>"$OUT/refused.err"
    expect_eq "$?" 3 "nearby's sender, refused" || return 1
    grep -q "at most 250 files in one transfer" "$OUT/refused.err" || { fail "no sentence: $(cat "$OUT/refused.err")"; return 1; }
    ! grep -q "HTTP 413" "$OUT/refused.err" || { fail "a status number for words: $(cat "$OUT/refused.err")"; return 1; }
    stop "$NODE_PID" >/dev/null
    [[ -z $(ls -A "$OUT/in") ]] || { fail "a refused list left something"; return 1; }
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 python3 "$LSF_PEER" official 10.99.0.1 53317 "$OUT/src/Photos 2024" >"$OUT/peer.out" 2>&1
    expect_json "$OUT/peer.out" 'select(.prepare==200 and .accepted==300 and (.failed|length)==0)' "the official-format folder's uploads" || {
        cat "$OUT/peer.out" >&2; return 1; }
    diff -r "$OUT/src/Photos 2024" "$OUT/in/Photos 2024" || { fail "the folder differs"; return 1; }
    stop "$NODE_PID" >/dev/null
}

test_localsend_hostile_file_lists_are_refused_while_a_friend_is_served() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in" "$OUT/friend"
    lsf_tree "$OUT/friend/pals" 40
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    local c pids=()
    for c in million gigabyte paths; do
        lab_bg 2 "$OUT/$c.out" python3 "$LSF_PEER" "$c" 10.99.0.1 53317 >/dev/null
        pids+=("$LAB_PID")
    done
    # The friend's folder, from another address, while they run.
    lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/friend/pals" >/dev/null 2>"$OUT/friend.err"
    expect_eq "$?" 0 "the friend's folder during the attacks" || { cat "$OUT/friend.err" >&2; return 1; }
    diff -r "$OUT/friend/pals" "$OUT/in/pals" || { fail "the friend's folder differs"; return 1; }
    local pid
    for pid in "${pids[@]}"; do lab_wait_pid "$pid" 120 >/dev/null; done
    # A million entries: refused at entry 10,001, after at most the body bound, the drain (4 + 4 MiB) and what the sockets buffer.
    expect_json "$OUT/million.out" 'select((.status==413 or .status=="closed") and .sent < 30000000)' "a million entries refused early" || {
        cat "$OUT/million.out" >&2; return 1; }
    expect_json "$OUT/gigabyte.out" 'select((.status==413 or .status=="closed") and .sent < 30000000)' "a 1 GB list refused early" || {
        cat "$OUT/gigabyte.out" >&2; return 1; }
    expect_json "$OUT/paths.out" 'select(.prepare==200 and (.uploads|all(.==200)))' "hostile paths, each placed" || { cat "$OUT/paths.out" >&2; return 1; }
    [[ ! -e /tmp/escaped.bin && ! -e /etc/absolute.bin && ! -e $OUT/windows.bin ]] || { fail "a file landed outside --save-dir"; return 1; }
    local placed want
    placed=$(cd "$OUT/in" && find . -type f -name '*.bin' ! -path './pals/*' | sort)
    want=$(printf '%s\n' ./tmp/escaped.bin ./etc/absolute.bin ./windows.bin "./$(printf 'd/%.0s' {1..31})deep.bin" ./ok/x/fine.bin \
        ./dots/_.../three.bin | sort)
    expect_eq "$placed" "$want" "each path kept inside --save-dir, at most 32 deep" || return 1
    kill -0 "$NODE_PID" 2>/dev/null || { fail "the node died"; return 1; }
    stop "$NODE_PID" >/dev/null
    # A list must come at 16 KiB/s after a 3 s grace here (the default grace is 60 s; on its own
    # node, as the grace also bounds the other senders' sessions).
    NEARBY_LOCALSEND_GRACE_MS=3000 nearby_ls_node 1 "$OUT/node2.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 python3 "$LSF_PEER" trickle 10.99.0.1 53317 >"$OUT/trickle.out" 2>&1
    expect_json "$OUT/trickle.out" 'select(.status==408 and .seconds < 40)' "a trickled list ended" || { cat "$OUT/trickle.out" >&2; return 1; }
    stop "$NODE_PID" >/dev/null
}
