# End-to-end tests of the node's resource budget (docs/security.md, "What a session peer can make
# a node hold"): strangers let in by --auto-accept (tests/e2e/rogue_files.py on host 2, plaintext)
# open files and leave partial files in a drop box's --save-dir on host 1, under a 1024-descriptor
# limit, while a friend on host 3 (--accept-from) sends files. Each test checks the node is alive,
# its descriptors against the budget (768 of 1024), the partial files against the quota, and the
# friend's send during and after. Sourced by run.sh; uses the helpers of sessions.sh, security.sh,
# files.sh, bounds.sh and hostile_links.sh.
# shellcheck shell=bash

# bu_node SERVICE DIR ENV...: a drop box on host 1 (--auto-accept --save-dir DIR, host 3 accepted
# by name as a friend) under `prlimit --nofile=1024`; sets NODE, NODE_OUT and PORT.
bu_node() {
    local service=$1 dir=$2 friend; shift 2
    friend=$(id_of 3) || return 1
    mkdir -p "$dir"
    NODE_OUT=$OUT/node.jsonl
    spawn 1 "$NODE_OUT" env "$@" prlimit --nofile=1024 "$NEARBY" advertise --auto-accept --accept-from "$friend" \
        --save-dir "$dir" --encryption none --service "$service" || return 1
    NODE=$PID
    PORT=$(sec_port "$NODE_OUT") || return 1
    expect_eq "$(awk '/Max open files/ {print $4}' "/proc/$NODE/limits")" 1024 "the node's descriptor limit"
}

# bu_friend_sends SERVICE DIR NAME: host 3 sends a 2 MB file NAME to the node, which saves it whole.
bu_friend_sends() {
    local service=$1 dir=$2 name=$3 status
    head -c 2000000 /dev/urandom >"$OUT/$name"
    nb 3 send-file "$(lab_addr 1):$PORT" "$OUT/$name" --service "$service" --encryption none --timeout 10 \
        >"$OUT/$name.jsonl" 2>"$OUT/$name.err"; status=$?
    expect_eq "$status" 0 "the friend's send-file ($name)" || { show "$OUT/$name.jsonl" "$OUT/$name.err"; return 1; }
    cmp -s "$OUT/$name" "$dir/$name" || fail "the friend's $name did not arrive whole"
}

# bu_show FILE...: the last lines of each (a node under attack writes thousands).
bu_show() { local f; for f in "$@"; do [[ -s $f ]] && tail -n 5 "$f" | sed "s#^#      $(basename "$f") | #" >&2; done; return 0; }

# bu_check NODE DIR MAX_PARTS: alive, descriptors below the budget, no EMFILE said anywhere, at most
# MAX_PARTS partial files in DIR.
bu_check() {
    local fds parts
    still_running "$NODE" "the node" || { bu_show "$NODE_OUT" "$NODE_OUT.err"; return 1; }
    fds=$(bounds_fds "$NODE")
    parts=$(files_parts "$2" | wc -l)
    printf '    node: %s descriptors (budget 768 of 1024), %s partial files\n' "$fds" "$parts"
    (( fds < 768 )) || fail "the node holds $fds descriptors (budget 768)" || return 1
    (( parts <= $3 )) || fail "$parts partial files in the save directory (quota $3)" || return 1
    ! grep -qi "too many open files" "$NODE_OUT" "$NODE_OUT.err" || fail "the node ran out of descriptors (EMFILE)"
}

# 16 fresh identities each open 64 file channels (the per-link cap), send start and 1 byte on each,
# and hold. Was: descriptors at 1,024, SIGILL in half the runs, file-failed "Too many open files",
# the friend's send failing, 981 partial files and 16 empty directories left.
test_budget_strangers_holding_files_cannot_exhaust_descriptors() {
    trap stop_started RETURN
    local dir=$OUT/save rogue line
    bu_node s-bu-hold "$dir" || return 1
    rogue_bg rogue_files.py 2 "$OUT/rogue.out" "$(lab_addr 1)" "$PORT" --identities 16 --channels 64 --hold 10 || return 1; rogue=$PID
    line=$(await "$OUT/rogue.out" 'select(.progress)' 90 "the strangers' files") || return 1
    printf '    %s\n' "$line"
    bu_check "$NODE" "$dir" 256 || return 1
    # Strangers hold at most 192 files (a quarter of 768), 16 per link; the rest are refused with a reason.
    jq -e '.held_channels <= 192 and .resets.busy > 0 and (.reasons | any(test("files open")))' <<<"$line" >/dev/null \
        || fail "the strangers held more than their share, or were refused without the reason: $line" || return 1
    bu_friend_sends s-bu-hold "$dir" during.bin || return 1
    exits "$rogue" 30 0 "the strangers" || { bu_show "$OUT/rogue.out" "$OUT/rogue.out.err"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    bu_check "$NODE" "$dir" 256 || return 1
    bu_friend_sends s-bu-hold "$dir" after.bin || return 1
    lab_wait_line "$NODE_OUT" 'select(.event=="file-failed" and .code=="busy")' 5 >/dev/null || fail "no file-failed event with code busy" || return 1
    # Each refused channel is told, at most 3 a second per stranger, the rest counted in `suppressed`
    # events that name the stranger (was: 832 file-failed lines).
    local refused shown counted
    refused=$(tail -1 "$OUT/rogue.out" | jq '.resets.busy')
    for _ in $(seq 1 50); do
        shown=$(jq -s '[.[] | select(.event=="file-failed" and .code=="busy")] | length' "$NODE_OUT")
        counted=$(jq -s '[.[] | select(.event=="suppressed" and .of=="file-failed" and .code=="busy" and .peer.id) | .count] | add // 0' "$NODE_OUT")
        (( shown + counted >= refused )) && break
        sleep 0.1
    done
    printf '    refused channels: %s; file-failed lines: %s, counted in suppressed: %s\n' "$refused" "$shown" "$counted"
    expect_eq "$((shown + counted))" "$refused" "refused channels told or counted" || return 1
    (( shown <= 16 * 3 * 10 )) || fail "$shown file-failed lines for $refused refused channels"
}

# Strangers' partial files count against a quota (here 20 files, 100,000 bytes, a lifetime of 4 s):
# past it the oldest partial of the heaviest stranger goes; a resume within the lifetime works;
# then every partial expires, with the directories the strangers' paths made. The friend's partial
# (a pinned peer) is not touched.
test_budget_strangers_partials_stay_within_the_quota_and_expire() {
    trap stop_started RETURN
    local dir=$OUT/save rogue line left dirs
    bu_node s-bu-quota "$dir" NEARBY_PARTIAL_FILES=20 NEARBY_PARTIAL_BYTES=100000 NEARBY_PARTIAL_LIFETIME=4 || return 1
    # An empty directory of the user's: never removed.
    mkdir -p "$dir/mine"
    rogue_bg rogue_files.py 2 "$OUT/rogue.out" "$(lab_addr 1)" "$PORT" --identities 4 --channels 16 --bytes 8000 \
        --hold 1 --resume-after 1 || return 1; rogue=$PID
    line=$(await "$OUT/rogue.out" 'select(.progress)' 60 "the strangers' files") || return 1
    printf '    %s\n' "$line"
    bu_check "$NODE" "$dir" 20 || return 1
    exits "$rogue" 30 0 "the strangers" || { bu_show "$OUT/rogue.out" "$OUT/rogue.out.err"; return 1; }
    line=$(jq -c 'select(.resume)' "$OUT/rogue.out")
    printf '    %s\n' "$line"
    jq -e '.resume.accept and .resume.offset == 8000' <<<"$line" >/dev/null \
        || fail "a stranger coming back within the lifetime could not resume: $line" || return 1
    bu_friend_sends s-bu-quota "$dir" after.bin || return 1
    # Within the lifetime (4 s) and a sweep (1 s), nothing of the strangers is left.
    for _ in $(seq 1 150); do
        left=$(files_parts "$dir" | wc -l)
        dirs=$(find "$dir" -mindepth 1 -type d -empty 2>/dev/null | grep -vc '/mine$')
        (( left == 0 && dirs == 0 )) && break
        sleep 0.1
    done
    printf '    after the lifetime: %s partial files, %s empty directories the strangers made\n' "$left" "$dirs"
    expect_eq "$left" 0 "strangers' partial files after their lifetime" || { find "$dir" >&2; return 1; }
    expect_eq "$dirs" 0 "empty directories the strangers made, after the lifetime" || { find "$dir" -type d >&2; return 1; }
    [[ -d $dir/mine ]] || fail "a directory the strangers did not make was removed" || return 1
    bu_check "$NODE" "$dir" 0
}

# A file sent 400 bytes short with the SHA-256 of those 400 bytes is told by its byte count (was:
# "SHA-256 a5e6… ≠ a5e6…"); a legal 240-byte file name arrives (was: "File name too long", the
# partial's name adding ~47 bytes).
test_budget_short_file_and_long_name() {
    trap stop_started RETURN
    local dir=$OUT/save py status name line ok=0
    py=$(files_python) || return 1
    bu_node s-bu-names "$dir" || return 1
    lab_run 2 "$py" "$ROOT/tests/e2e/rogue_sender.py" "$(lab_addr 1)" "$PORT" '[{"path":"short.bin","size":1000,"mode":"short","sent":400}]' \
        >"$OUT/short.out" 2>"$OUT/short.err"; status=$?
    expect_eq "$status" 0 "the rogue sender (short file)" || { show "$OUT/short.out" "$OUT/short.err"; return 1; }
    line=$(jq -c 'select(.end) | .end' "$OUT/short.out")
    printf '    short: %s\n' "$line"
    jq -e '.frame == "reset" and .code == "integrity" and (.reason | test("sent 400 of 1,000 bytes"))' <<<"$line" >/dev/null \
        || fail "the short file was not told by its byte count: $line" || ok=1
    lab_wait_line "$NODE_OUT" 'select(.event=="file-failed" and (.reason | test("sent 400 of 1,000 bytes")))' 5 >/dev/null \
        || fail "the node's file-failed does not give the byte count" || ok=1
    name=$(printf 'n%.0s' $(seq 1 236)).txt
    expect_eq "${#name}" 240 "the name's length"
    echo "a long name" >"$OUT/$name"
    nb 3 send-file "$(lab_addr 1):$PORT" "$OUT/$name" --service s-bu-names --encryption none --timeout 10 >"$OUT/long.jsonl" 2>"$OUT/long.err"; status=$?
    expect_eq "$status" 0 "send-file of a 240-byte name" || { show "$OUT/long.jsonl" "$OUT/long.err"; return 1; }
    cmp -s "$OUT/$name" "$dir/$name" || fail "the file with a 240-byte name did not arrive" || return 1
    return $ok
}

# Strangers' partial files that an earlier run of the node left are found again when it starts
# (their names say whose they are), so they expire too; a friend's partial stays.
test_budget_strangers_partials_of_an_earlier_run_expire() {
    trap stop_started RETURN
    local dir=$OUT/save rogue left friend_part
    bu_node s-bu-again "$dir" || return 1
    rogue_bg rogue_files.py 2 "$OUT/rogue.out" "$(lab_addr 1)" "$PORT" --identities 2 --channels 4 --bytes 100 --hold 0.5 || return 1; rogue=$PID
    exits "$rogue" 60 0 "the strangers" || { bu_show "$OUT/rogue.out" "$OUT/rogue.out.err"; return 1; }
    left=$(files_parts "$dir" | wc -l)
    expect_eq "$left" 8 "strangers' partial files left by the first run" || return 1
    friend_part="$dir/.friend.bin.0123456789abcdef0123456789abcdef.nearby-part"
    echo "a friend's unfinished file" >"$friend_part"
    stop "$NODE" >/dev/null
    bu_node s-bu-again "$dir" NEARBY_PARTIAL_LIFETIME=2 || return 1
    for _ in $(seq 1 100); do
        left=$(files_parts "$dir" | grep -vc '/\.friend\.bin\.')
        (( left == 0 )) && break
        sleep 0.1
    done
    printf '    after a restart with a lifetime of 2 s: %s strangers'"'"' partial files\n' "$left"
    expect_eq "$left" 0 "strangers' partial files of the earlier run" || { files_parts "$dir" >&2; return 1; }
    [[ -f $friend_part ]] || fail "a friend's partial file was deleted"
}

# Strangers offer thousands of empty directories (8 identities × 500, then 20 paths 32 levels deep
# each): every level a stranger makes counts against the quota on strangers' directories (64 per
# stranger, 256 per node); past it the channel is refused with code `quota` and a reason the sender
# prints, and nothing is made. The node stays alive, the friend's send works during and after (a
# tree with an empty directory: a friend's directories are not counted). A restarted node finds the
# strangers' directories in its record and removes them once their lifetime is over; the user's own
# empty directory and the friend's stay. Was: all 4,160 offers made, 4,649 directories in --save-dir.
test_budget_strangers_empty_directories_are_counted() {
    trap stop_started RETURN
    local dir=$OUT/save rogue line dirs left
    bu_node s-bu-dirs "$dir" || return 1
    mkdir -p "$dir/mine"
    rogue_bg rogue_files.py 2 "$OUT/rogue.out" "$(lab_addr 1)" "$PORT" --identities 8 --directories 500 --deep 20 || return 1; rogue=$PID
    bu_friend_sends s-bu-dirs "$dir" during.bin || return 1
    exits "$rogue" 180 0 "the strangers" || { bu_show "$OUT/rogue.out" "$OUT/rogue.out.err"; return 1; }
    line=$(jq -c 'select(.directories) | .directories' "$OUT/rogue.out")
    dirs=$(find "$dir" -mindepth 1 -type d | wc -l)
    printf '    %s\n    %s directories in the save directory\n' "$line" "$dirs"
    jq -e '.made <= 256 and .made > 0 and .refused.quota > 0 and (.reasons | any(test("empty directories")))' <<<"$line" >/dev/null \
        || fail "the strangers made more directories than the quota, or were refused without the reason: $line" || return 1
    (( dirs <= 256 + 1 )) || fail "$dirs directories in the save directory (quota 256, and the user's own)" || return 1
    bu_check "$NODE" "$dir" 0 || return 1
    mkdir -p "$OUT/tree/empty" && echo "a friend's file" >"$OUT/tree/file.txt"
    nb 3 send-file "$(lab_addr 1):$PORT" "$OUT/tree" --service s-bu-dirs --encryption none --timeout 10 >"$OUT/tree.jsonl" 2>"$OUT/tree.err" \
        || { show "$OUT/tree.jsonl" "$OUT/tree.err"; fail "the friend's tree after the strangers"; return 1; }
    diff -r "$OUT/tree" "$dir/tree" || fail "the friend's tree did not arrive whole" || return 1
    stop "$NODE" >/dev/null
    bu_node s-bu-dirs "$dir" NEARBY_PARTIAL_LIFETIME=2 || return 1
    for _ in $(seq 1 100); do
        left=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'r[0-9]*' | wc -l)
        (( left == 0 )) && break
        sleep 0.1
    done
    printf '    after a restart with a lifetime of 2 s: %s directories of the strangers\n' "$left"
    expect_eq "$left" 0 "the strangers' directories of the earlier run" || { find "$dir" -maxdepth 2 -type d >&2; return 1; }
    [[ -d $dir/mine && -d $dir/tree/empty ]] || fail "a directory the strangers did not make was removed"
}
