# File transfer end-to-end tests: `nearby send-file` to a node's --save-dir — a 1 GiB file, directory
# trees, name collisions, several senders at once, missing files, a hostile sender (rogue_sender.py),
# senders and receivers killed mid-transfer and the resume after, SIGINT, a full disk, sending through
# a running node, messages that keep flowing beside a big transfer, and (extra) one node sending the
# same file twice at once. Sourced by run.sh. Needs ~3 GiB free under /tmp (the 1 GiB tests delete
# their data when done), mount(8) for a tmpfs, and python3 with `cryptography` for rogue_sender.py.
# Each test uses its own service type and its own save directory under $OUT.
# Uses the helpers of sessions.sh (spawn, nb_bg, nb, start_node, await, exits, show, stop_started …),
# which run.sh sources into the same shell.
# shellcheck shell=bash

# --- helpers ------------------------------------------------------------------------------------
# A test's first line is `trap files_done RETURN`: stop_started (everything it started is stopped),
# then the undo commands it queued with files_later (unmounting, deleting big data), in order.
FILES_LATER=()
files_later() { FILES_LATER+=("$(printf '%q ' "$@")"); }
files_done() {
    trap - RETURN
    stop_started
    local undo
    for undo in "${FILES_LATER[@]}"; do eval "$undo" >/dev/null 2>&1; done
    FILES_LATER=()
}

# jq: an event's time in milliseconds since the epoch.
FILES_JQ_MS='def ms: (.time[0:19] + "Z" | fromdateiso8601) * 1000 + (.time[20:23] | tonumber);'

files_sha() { sha256sum "$1" | cut -d' ' -f1; }
# files_random PATH BYTES
files_random() { mkdir -p "$(dirname "$1")" && head -c "$2" /dev/urandom >"$1"; }
# files_parts DIR: the partial files (*.nearby-part) anywhere under DIR, one a line.
files_parts() { find "$1" -name '*.nearby-part' 2>/dev/null; }
files_no_parts() {
    local left; left=$(files_parts "$1")
    [[ -z $left ]] || fail "$2: partial files left behind: $left"
}
# files_only_part DIR NAME WHAT: exactly one partial file for NAME in DIR; prints its size.
files_only_part() {
    local parts; mapfile -t parts < <(files_parts "$1")
    [[ ${#parts[@]} == 1 && $(basename "${parts[0]}") == ".$2."*".nearby-part" ]] \
        || { fail "$3: expected one hidden .$2.KEY.nearby-part in $1, found: ${parts[*]:-none} ($(ls -A "$1" | tr '\n' ' '))"; return 1; }
    stat -c %s "${parts[0]}"
}

# files_check_progress FILE DIRECTION TOTAL WHAT: the progress events of one side of one transfer
# (the first file-started of DIRECTION in FILE and the progress after it): bytes strictly increasing,
# the last equal to the total, at most ~10 a second (count against elapsed time, and in any 1 s
# window). Prints "COUNT SPAN_MS".
files_check_progress() {
    local file=$1 direction=$2 total=$3 what=$4 summary
    summary=$(jq -sc --arg d "$direction" "$FILES_JQ_MS"'
        (map(select(.event == "file-started" and .direction == $d)) | first) as $start
        | map(select(.event == "progress" and .direction == $d and .transfer == $start.transfer)) as $p
        | ($p | map(ms)) as $ts
        | { count: ($p | length),
            increasing: ([range(1; $p | length) as $i | $p[$i].bytes > $p[$i - 1].bytes] | all),
            last: ($p | last | .bytes), totals: ($p | map(.total) | unique),
            span: (($ts | last) - ($start | ms)),
            window: ([range(0; $ts | length) as $i | [$ts[] | select(. >= $ts[$i] and . < $ts[$i] + 1000)] | length] | max) }' "$file" 2>&1) \
        || { fail "$what: cannot read the progress events: $summary"; return 1; }
    local count last totals span window increasing
    read -r count last totals span window increasing < <(jq -r '"\(.count) \(.last) \(.totals|map(tostring)|join(",")) \(.span) \(.window) \(.increasing)"' <<<"$summary")
    (( count >= 1 )) || { fail "$what: no progress events"; return 1; }
    expect_eq "$increasing" true "$what: progress bytes strictly increasing ($summary)" || return 1
    expect_eq "$last" "$total" "$what: bytes of the last progress event" || return 1
    expect_eq "$totals" "$total" "$what: total of every progress event" || return 1
    (( count <= span / 100 + 3 )) || { fail "$what: $count progress events in $span ms: more than ~10 a second"; return 1; }
    (( window <= 12 )) || { fail "$what: $window progress events within one second"; return 1; }
    printf '%s %s\n' "$count" "$span"
}

# The rogue peer needs Python 3 with `cryptography`; prints the interpreter's real path (a pyenv shim
# would not work under the lab's HOME).
files_python() {
    local py
    for py in /usr/bin/python3 python3; do
        command -v "$py" >/dev/null 2>&1 || continue
        "$py" -c 'import cryptography, sys; print(sys.executable)' 2>/dev/null && return 0
    done
    fail "no python3 with the cryptography package"
}

# --- 1. a 1 GiB file --------------------------------------------------------------------------------

test_file_of_one_gib_arrives_byte_exact() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src size=1073741824 avail sha status t0 ms sent received progress
    id1=$(id_of 1) || return 1
    mkdir -p "$dir" "$src"
    avail=$(df -B1 --output=avail "$OUT" | tail -1)
    (( avail > 3 * size )) || { fail "only $avail bytes free under $OUT (df): 3 GiB needed"; df -h "$OUT" >&2; return 1; }
    files_later rm -f "$src/big.bin" "$dir/big.bin"
    files_random "$src/big.bin" "$size"
    sha=$(files_sha "$src/big.bin")
    start_node 1 s-f-big --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    t0=$(now_ms)
    (cd "$src" && nb 2 send-file "$id1" big.bin --service s-f-big >"$OUT/send.jsonl" 2>"$OUT/send.err"); status=$?
    ms=$(( $(now_ms) - t0 ))
    expect_eq "$status" 0 "send-file exit status" || { show "$OUT/send.jsonl"; return 1; }
    received=$(await "$adv" 'select(.event=="file-received")' 5 "file-received on h1") || return 1
    sent=$(jq -c 'select(.event=="file-sent")' "$OUT/send.jsonl")
    [[ -n $sent ]] || { fail "no file-sent event"; show "$OUT/send.jsonl"; return 1; }
    expect_eq "$(jq -r .path <<<"$received")" "$dir/big.bin" "file-received path" || return 1
    expect_eq "$(files_sha "$dir/big.bin")" "$sha" "sha256sum of the received file" || return 1
    expect_eq "$(jq -r .sha256 <<<"$sent")" "$sha" "file-sent sha256" || return 1
    expect_eq "$(jq -r .sha256 <<<"$received")" "$sha" "file-received sha256" || return 1
    expect_eq "$(jq -r '"\(.bytes) \(.skipped) \(.path)"' <<<"$sent")" "$size 0 big.bin" "file-sent bytes, skipped, path" || return 1
    expect_eq "$(jq -r '"\(.bytes) \(.skipped)"' <<<"$received")" "$size 0" "file-received bytes, skipped" || return 1
    expect_eq "$(jq -r .transfer <<<"$received")" "$(jq -r .transfer <<<"$sent")" "transfer ID on both sides" || return 1
    expect_json "$OUT/send.jsonl" "select(.event==\"file-started\" and .direction==\"send\" and .bytes==$size and .skipped==0 and .path==\"big.bin\")" "file-started on h2" || return 1
    expect_json "$adv" "select(.event==\"file-started\" and .direction==\"receive\" and .bytes==$size and .skipped==0 and .path==\"big.bin\")" "file-started on h1" || return 1

    progress=$(files_check_progress "$OUT/send.jsonl" send "$size" "sender") || return 1
    printf '    sender:   %s progress events in %s ms\n' $progress
    progress=$(files_check_progress "$adv" receive "$size" "receiver") || return 1
    printf '    receiver: %s progress events in %s ms\n' $progress
    files_no_parts "$dir" "after the transfer" || return 1
    jq -r --argjson size "$size" --argjson ms "$ms" \
        '"    1 GiB in \(.seconds*1000|round) ms (file-sent.seconds): \($size / .seconds / 1e6 | .*10|round/10) MB/s; the whole command \($ms) ms"' <<<"$sent"
}

# --- 2. a directory tree and a loose file -------------------------------------------------------------

test_file_directory_tree_and_a_loose_file() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src status n f expected got
    id1=$(id_of 1) || return 1
    mkdir -p "$dir" "$src"
    # 20 files: nested directories, an empty file, spaces and non-ASCII in names, a dotfile, one file
    # over the 8 MiB flow-control window.
    files_random "$src/tree/top.txt" 1000
    : >"$src/tree/empty.txt"
    files_random "$src/tree/with spaces and ünïcödé ✓ 日本語.txt" 3000
    files_random "$src/tree/.hidden" 100
    files_random "$src/tree/a/one.bin" 100000
    files_random "$src/tree/a/b/two.bin" 1000000
    files_random "$src/tree/a/b/c/three.bin" 5000000
    for n in $(seq -w 1 10); do files_random "$src/tree/a/b/c/n$n.txt" $((RANDOM % 5000 + 1)); done
    files_random "$src/tree/docs/deep er/ünï cödé/read me.md" 777
    files_random "$src/tree/docs/NOTES" 50
    files_random "$src/tree/x.tar.gz" 20000
    files_random "$src/loose file.dat" 50000
    # Empty directories are part of the tree as sent (issue 33, row 12).
    mkdir -p "$src/tree/empty/deeper empty" "$src/tree/a/also-empty"
    expect_eq "$(find "$src/tree" -type f | wc -l)" 20 "files in the tree (test setup)" || return 1
    start_node 1 s-f-tree --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    (cd "$src" && nb 2 send-file "$id1" tree "loose file.dat" --service s-f-tree >"$OUT/send.jsonl" 2>"$OUT/send.err"); status=$?
    expect_eq "$status" 0 "send-file of a tree and a file" || { show "$OUT/send.jsonl"; return 1; }
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")')" 21 "file-sent events" || { show "$OUT/send.jsonl"; return 1; }
    for _ in $(seq 20); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge 21 ]] && break; sleep 0.1; done
    expect_eq "$(count_json "$adv" 'select(.event=="file-received")')" 21 "file-received events on h1" || { show "$adv"; return 1; }
    expected=$( (cd "$src" && find tree -type f && echo "loose file.dat") | sed "s#^#$dir/#" | LC_ALL=C sort)
    got=$(jq -r 'select(.event=="file-received") | .path' "$adv" | LC_ALL=C sort)
    expect_eq "$got" "$expected" "file-received paths (one per file, relative paths kept under 'tree/')" || return 1
    expect_eq "$(jq -r 'select(.event=="file-sent") | .path' "$OUT/send.jsonl" | LC_ALL=C sort)" \
        "$( (cd "$src" && find tree -type f && echo "loose file.dat") | LC_ALL=C sort)" "file-sent paths (relative)" || return 1
    diff -r "$src/tree" "$dir/tree" >&2 || { fail "the received tree differs from the sent one (diff -r above; empty directories too)"; return 1; }
    cmp "$src/loose file.dat" "$dir/loose file.dat" || { fail "the loose file differs"; return 1; }
    expect_eq "$(find "$dir" -maxdepth 1 -mindepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' '|')" "loose file.dat|tree|" "top level of the save dir" || return 1
    # Every file-received carries the SHA-256 of what is on disk.
    while IFS=$'\t' read -r f n; do
        expect_eq "$(files_sha "$f")" "$n" "sha256 of $f vs its file-received" || return 1
    done < <(jq -r 'select(.event=="file-received") | [.path, .sha256] | @tsv' "$adv")
    files_no_parts "$dir" "after the transfer" || return 1
}

# nearby keeps a file's modification time, to the nanosecond (issue 50): a file on a channel of its
# own (`open`'s `modified`) and small files in a bundle (each record's, with `dates`); a file made
# before 1970 keeps the time it was written at.
test_file_keeps_its_modification_time() {
    trap files_done RETURN
    local id1 dir=$OUT/save src=$OUT/src status f
    id1=$(id_of 1) || return 1
    mkdir -p "$dir" "$src/album"
    files_random "$src/big.jpg" 300000
    for f in a b c; do files_random "$src/album/$f.jpg" 2000; done
    touch -d '2001-02-03 04:05:06.123456789 UTC' "$src/big.jpg" "$src/album/a.jpg" "$src/album/b.jpg"
    touch -d '1969-12-31 23:00:00 UTC' "$src/album/c.jpg"
    start_node 1 s-f-dates --auto-accept --save-dir "$dir" || return 1
    (cd "$src" && nb 2 send-file "$id1" big.jpg album --service s-f-dates >"$OUT/send.jsonl" 2>"$OUT/send.err"); status=$?
    expect_eq "$status" 0 "send-file of a file and a folder" || { show "$OUT/send.err"; return 1; }
    for f in big.jpg album/a.jpg album/b.jpg; do
        expect_eq "$(stat -c %y "$dir/$f")" "$(stat -c %y "$src/$f")" "modification time of $f on the receiver" || return 1
    done
    # Before 1970: not sent; the file is dated when it was written, not 1969.
    [[ $(stat -c %Y "$dir/album/c.jpg") -gt 0 ]] || { fail "c.jpg got a time before 1970: $(stat -c %y "$dir/album/c.jpg")"; return 1; }
    cmp "$src/big.jpg" "$dir/big.jpg" || { fail "big.jpg differs"; return 1; }
}

# --- 3. name collisions --------------------------------------------------------------------------------

# The same file sent again while its complete copy is there: "already there", no second copy; the
# same name with other bytes still gets a copy of its own (issue 25).
test_file_sent_again_is_already_there() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src status
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    start_node 1 s-f-again --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    files_random "$src/mid.bin" 300000
    nb 2 send-file "$id1" "$src/mid.bin" --service s-f-again >"$OUT/first.jsonl" 2>"$OUT/first.err"; status=$?
    expect_eq "$status" 0 "the first send" || return 1
    nb 2 send-file "$id1" "$src/mid.bin" --service s-f-again >"$OUT/again.jsonl" 2>"$OUT/again.err"; status=$?
    expect_eq "$status" 0 "the same file again" || return 1
    expect_json "$OUT/again.jsonl" 'select(.event=="file-sent" and .already_there==true)' "the sender hears it was there" || return 1
    for _ in $(seq 50); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge 2 ]] && break; sleep 0.1; done
    expect_json "$adv" 'select(.event=="file-received" and .already_there==true and .path=="'"$dir/mid.bin"'")' \
        "the receiver kept its copy" || return 1
    expect_eq "$(find "$dir" -mindepth 1 | wc -l)" 1 "files in the save dir after the same file twice" || { ls -la "$dir" >&2; return 1; }
    # On a terminal's summary line, the words.
    nb 2 send-file --human "$id1" "$src/mid.bin" --service s-f-again >"$OUT/human.txt" 2>&1 || fail "the human send failed" || return 1
    grep -q "already there" "$OUT/human.txt" || { fail "no 'already there' for people"; show "$OUT/human.txt"; return 1; }
    # Other bytes under the same name: a copy of their own, as before.
    files_random "$src/mid.bin" 300000
    nb 2 send-file "$id1" "$src/mid.bin" --service s-f-again >"$OUT/other.jsonl" 2>"$OUT/other.err"; status=$?
    expect_eq "$status" 0 "other bytes, same name" || return 1
    [[ $(count_json "$OUT/other.jsonl" 'select(.already_there)') == 0 ]] || fail "other bytes called already there" || return 1
    for _ in $(seq 50); do [[ -e "$dir/mid (1).bin" ]] && break; sleep 0.1; done
    cmp -s "$src/mid.bin" "$dir/mid (1).bin" || { fail "the other bytes are not in 'mid (1).bin'"; ls -la "$dir" >&2; return 1; }
    files_no_parts "$dir" "after the sends" || return 1
}

# What a sent directory holds that is not a file (a FIFO, a socket, a link) is reported with why,
# both through a running node and without one; the rest arrives and the command succeeds.
# Paths given that are symbolic links are followed (docs: "followed for the paths given"): a linked
# directory arrives with what it holds, a linked file with its own bytes (the listing through
# FileManager sent the one empty and announced the other with the link's size).
test_file_links_given_are_followed() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src status
    id1=$(id_of 1) || return 1
    mkdir -p "$dir" "$src"
    files_random "$src/real/a.txt" 1500
    files_random "$src/real/sub/b.txt" 70000
    files_random "$src/file.txt" 3333
    ln -s real "$src/linked" && ln -s file.txt "$src/linked.txt"
    start_node 1 s-f-links --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    (cd "$src" && nb 2 send-file "$id1" linked linked.txt --service s-f-links >"$OUT/send.jsonl" 2>"$OUT/send.err"); status=$?
    expect_eq "$status" 0 "send-file of two links" || { show "$OUT/send.jsonl"; cat "$OUT/send.err" >&2; return 1; }
    for _ in $(seq 20); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge 3 ]] && break; sleep 0.1; done
    cmp "$src/real/a.txt" "$dir/linked/a.txt" && cmp "$src/real/sub/b.txt" "$dir/linked/sub/b.txt" && cmp "$src/file.txt" "$dir/linked.txt" \
        || { fail "the linked directory's files and the linked file did not arrive as they are"; show "$adv"; return 1; }
}

test_file_directory_entries_not_sent_are_reported() {
    trap files_done RETURN
    local id1 dir=$OUT/save src=$OUT/src status mode
    id1=$(id_of 1) || return 1
    mkdir -p "$dir" "$src/tree/sub"
    start_node 1 s-f-skip --auto-accept --save-dir "$dir" || return 1
    echo "kept" >"$src/tree/sub/kept.txt"
    mkfifo "$src/tree/pipe"
    python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$src/tree/sock"
    ln -s sub/kept.txt "$src/tree/link"
    for mode in alone node; do
        if [[ $mode == node ]]; then start_node 2 s-f-skip || return 1; fi
        nb 2 send-file "$id1" "$src/tree" --service s-f-skip >"$OUT/$mode.jsonl" 2>"$OUT/$mode.err"; status=$?
        expect_eq "$status" 0 "$mode: send-file of a tree with a FIFO in it" || { show "$OUT/$mode.err"; return 1; }
        expect_json "$OUT/$mode.jsonl" 'select(.event=="skipped" and .path=="tree/pipe" and (.reason|startswith("a FIFO")))' "$mode: the FIFO" || return 1
        expect_json "$OUT/$mode.jsonl" 'select(.event=="skipped" and .path=="tree/sock" and (.reason|startswith("a socket")))' "$mode: the socket" || return 1
        expect_json "$OUT/$mode.jsonl" 'select(.event=="skipped" and .path=="tree/link" and (.reason|contains("symbolic link")))' "$mode: the link" || return 1
        expect_json "$OUT/$mode.jsonl" 'select(.event=="file-sent" and .path=="tree/sub/kept.txt")' "$mode: the file beside them" || return 1
    done
    cmp -s "$src/tree/sub/kept.txt" "$dir/tree/sub/kept.txt" || fail "kept.txt did not arrive" || return 1
    nb 2 send-file --human "$id1" "$src/tree" --service s-f-skip >"$OUT/human.txt" 2>&1
    grep -q "skipped tree/pipe: a FIFO, not a regular file" "$OUT/human.txt" || { fail "no skipped line for people"; show "$OUT/human.txt"; return 1; }
}

test_file_name_collisions_never_overwrite() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src status round line
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    start_node 1 s-f-clash --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    # A file the user already has is not overwritten either.
    echo "the user's own notes" >"$dir/notes.txt"
    for round in 1 2 3; do
        files_random "$src/$round/report.txt" $((1000 + round))
        files_random "$src/$round/README" $((500 + round))
        nb 2 send-file "$id1" "$src/$round/report.txt" "$src/$round/README" --service s-f-clash >"$OUT/send$round.jsonl" 2>"$OUT/send$round.err"; status=$?
        expect_eq "$status" 0 "round $round: send-file exit status" || { show "$OUT/send$round.jsonl"; return 1; }
    done
    files_random "$src/notes.txt" 300
    nb 2 send-file "$id1" "$src/notes.txt" --service s-f-clash >"$OUT/notes.jsonl" 2>"$OUT/notes.err"; status=$?
    expect_eq "$status" 0 "send-file notes.txt" || { show "$OUT/notes.jsonl"; return 1; }
    for _ in $(seq 20); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge 7 ]] && break; sleep 0.1; done

    # The files of one send-file travel side by side (up to 16 in flight), so within a round they
    # may land in either order; the rounds, and so the numbers, follow one another.
    expect_eq "$(jq -r 'select(.event=="file-received") | .path' "$adv" | sort | tr '\n' '|')" \
        "$(printf '%s\n' "$dir/report.txt" "$dir/README" "$dir/report (1).txt" "$dir/README (1)" "$dir/report (2).txt" \
            "$dir/README (2)" "$dir/notes (1).txt" | sort | tr '\n' '|')" \
        "file-received paths" || { show "$adv"; return 1; }
    cmp "$src/1/report.txt" "$dir/report.txt" && cmp "$src/2/report.txt" "$dir/report (1).txt" && cmp "$src/3/report.txt" "$dir/report (2).txt" \
        || { fail "report.txt, report (1).txt, report (2).txt are not rounds 1, 2, 3"; return 1; }
    cmp "$src/1/README" "$dir/README" && cmp "$src/2/README" "$dir/README (1)" && cmp "$src/3/README" "$dir/README (2)" \
        || { fail "README, README (1), README (2) are not rounds 1, 2, 3"; return 1; }
    expect_eq "$(cat "$dir/notes.txt")" "the user's own notes" "the user's notes.txt" || return 1
    cmp "$src/notes.txt" "$dir/notes (1).txt" || { fail "the sent notes.txt is not in 'notes (1).txt'"; return 1; }
    expect_eq "$(find "$dir" -mindepth 1 | wc -l)" 8 "entries in the save dir" || { ls -la "$dir" >&2; return 1; }
    # The sender learns nothing about the receiver's renaming: its paths stay the names it sent
    # (in either order: the two files travel side by side).
    line=$(jq -r 'select(.event=="file-sent") | .path' "$OUT/send3.jsonl" | sort | tr '\n' '|')
    expect_eq "$line" "README|report.txt|" "file-sent paths in round 3" || return 1
}

# --- 4. several senders at once ---------------------------------------------------------------------------

test_files_from_several_senders_at_once() {
    trap files_done RETURN
    local id1 id2 id3 id4 adv dir=$OUT/save src=$OUT/src p2 p3 p4 host path f in_flight
    id1=$(id_of 1) && id2=$(id_of 2) && id3=$(id_of 3) && id4=$(id_of 4) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    # h2 and h3 send files of the same name at the same time; h4 sends four files in one command.
    files_random "$src/h2/data.bin" 150000000
    files_random "$src/h3/data.bin" 150000000
    files_random "$src/h4/m1.bin" 20000000
    files_random "$src/h4/m2.txt" 1000
    : >"$src/h4/m3.empty"
    files_random "$src/h4/m4.bin" 5000000
    start_node 1 s-f-many --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    nb_bg 2 "$OUT/h2.jsonl" send-file "$id1" "$src/h2/data.bin" --service s-f-many; p2=$PID
    nb_bg 3 "$OUT/h3.jsonl" send-file "$id1" "$src/h3/data.bin" --service s-f-many; p3=$PID
    nb_bg 4 "$OUT/h4.jsonl" send-file "$id1" "$src/h4/m1.bin" "$src/h4/m2.txt" "$src/h4/m3.empty" "$src/h4/m4.bin" --service s-f-many; p4=$PID
    exits "$p2" 60 0 "h2's send-file" || { show "$OUT/h2.jsonl"; return 1; }
    exits "$p3" 60 0 "h3's send-file" || { show "$OUT/h3.jsonl"; return 1; }
    exits "$p4" 60 0 "h4's send-file" || { show "$OUT/h4.jsonl"; return 1; }
    for _ in $(seq 20); do [[ $(count_json "$adv" 'select(.event=="file-received")') -ge 6 ]] && break; sleep 0.1; done
    expect_eq "$(count_json "$adv" 'select(.event=="file-received")')" 6 "file-received events on h1" || { show "$adv"; return 1; }

    # Each sender's data.bin is intact under one of the two names.
    for host in 2 3; do
        local var=id$host id; id=${!var}
        path=$(jq -r --arg id "$id" 'select(.event=="file-received" and .peer.id==$id) | .path' "$adv")
        [[ $path == "$dir/data.bin" || $path == "$dir/data (1).bin" ]] || { fail "h$host's data.bin landed at '$path'"; return 1; }
        cmp "$src/h$host/data.bin" "$path" || { fail "h$host's data.bin differs at $path"; return 1; }
    done
    expect_eq "$(jq -r 'select(.event=="file-received" and (.path|test("/data")) ) | .path' "$adv" | sort | tr '\n' '|')" \
        "$dir/data (1).bin|$dir/data.bin|" "the two data.bin files" || return 1
    for f in m1.bin m2.txt m3.empty m4.bin; do
        cmp "$src/h4/$f" "$dir/$f" || { fail "h4's $f differs or is missing"; return 1; }
        expect_json "$adv" "select(.event==\"file-received\" and .peer.id==\"$id4\" and .path==\"$dir/$f\")" "file-received of $f from h4" || return 1
    done
    files_no_parts "$dir" "after the transfers" || return 1
    # Were they really concurrent? The most transfers in flight at once on h1.
    in_flight=$(jq -s '[.[] | select(.event=="file-started" or .event=="file-received" or .event=="file-failed")
        | if .event=="file-started" then 1 else -1 end] | reduce .[] as $d ({n:0,max:0}; .n += $d | .max = ([.max,.n]|max)) | .max' "$adv")
    printf '    at most %s transfers in flight at once on h1\n' "$in_flight"
    (( in_flight >= 2 )) || fail "the transfers never overlapped: the test did not test concurrency" || return 1
}

# --- 5. a missing file ---------------------------------------------------------------------------------

test_file_missing_is_refused_before_connecting() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save status t0 ms
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    start_node 1 s-f-missing --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    t0=$(now_ms)
    nb 2 send-file "$id1" "$OUT/nosuchfile" --service s-f-missing >"$OUT/missing.jsonl" 2>"$OUT/missing.err"; status=$?
    ms=$(( $(now_ms) - t0 ))
    expect_error "$OUT/missing.jsonl" 8 "$status" io-error "send-file of a missing file" || return 1
    expect_json "$OUT/missing.jsonl" 'select(.event=="error" and (.message|contains("nosuchfile")))' "the error names the file" || return 1
    grep -q nosuchfile "$OUT/missing.err" || fail "stderr does not name the file: $(cat "$OUT/missing.err")" || return 1
    expect_eq "$(jq -r .event "$OUT/missing.jsonl" | tr '\n' ' ')" "error " "events of send-file nosuchfile (no connecting)" || return 1
    (( ms < 3000 )) || fail "refusing a missing file took $ms ms" || return 1

    # One good file and one missing: nothing is sent at all.
    echo hello >"$OUT/good.txt"
    nb 2 send-file "$id1" "$OUT/good.txt" "$OUT/nosuchfile" --service s-f-missing >"$OUT/mixed.jsonl" 2>"$OUT/mixed.err"; status=$?
    expect_error "$OUT/mixed.jsonl" 8 "$status" io-error "send-file of a good and a missing file" || return 1
    expect_eq "$(count_json "$OUT/mixed.jsonl" 'select(.event!="error")')" 0 "events other than error (good + missing)" || { show "$OUT/mixed.jsonl"; return 1; }

    sleep 0.5
    expect_eq "$(count_json "$adv" 'select(.event!="advertising")')" 0 "events on h1 (no invitation, no file)" || { show "$adv"; return 1; }
    expect_eq "$(find "$dir" -mindepth 1 | wc -l)" 0 "entries in the save dir" || return 1
}

# --- 6. a hostile sender --------------------------------------------------------------------------------

test_file_paths_from_a_hostile_sender_stay_inside() {
    trap files_done RETURN
    local py adv dir=$OUT/save port spec status marker line channel claimed sha path rel want outside new claim n=0
    py=$(files_python) || return 1
    mkdir -p "$dir"
    # Where each claim would land if taken literally ($dir/../../x is $LAB_DIR/out/x).
    outside=("$LAB_DIR/out/x" /etc/x "$LAB_DIR/out/b" "$OUT/b" "$LAB_DIR/out/win" "$OUT/x" "$OUT/win" /x /b /win)
    for path in "${outside[@]}"; do [[ ! -e $path ]] || { fail "$path exists before the test: cannot tell"; return 1; }; done
    # Were the product to write outside, do not leave it there.
    for path in "${outside[@]}"; do files_later rm -f "$path"; done
    start_node 1 s-f-rogue --auto-accept --encryption none --save-dir "$dir" || return 1; adv=$ADV port=$ADV_PORT
    marker=$OUT/marker; touch "$marker"; sleep 0.05

    # claim <TAB> the last path component it must end up with (empty: any clean name)
    local -a claims=('../../x' '/etc/x' 'a/../../../b' '..\..\win' $'ctl\x01\x07na\x1bme\n\t.txt' '../..')
    local -a names=(x x b win '' '')
    spec=$(jq -nc '$ARGS.positional | to_entries | map({path: .value, size: (1000 + .key * 517), mode: "ok"})' --args "${claims[@]}")
    lab_run 2 "$py" "$ROOT/tests/e2e/rogue_sender.py" "$(lab_addr 1)" "$port" "$spec" >"$OUT/rogue.out" 2>"$OUT/rogue.err"; status=$?
    expect_eq "$status" 0 "rogue sender (path claims)" || { show "$OUT/rogue.out" "$adv"; return 1; }
    for claim in "${claims[@]}"; do
        line=$(jq -c --arg p "$claim" 'select(.path==$p)' "$OUT/rogue.out")
        [[ -n $line ]] || { fail "the rogue sender did not report claim $(jq -Rc . <<<"$claim")"; show "$OUT/rogue.out"; return 1; }
        channel=$(jq -r .channel <<<"$line") sha=$(jq -r .sha256 <<<"$line")
        [[ $(jq -r '"\(.reply.accept) \(.end.frame)"' <<<"$line") == "true close" ]] \
            || { fail "claim $(jq -c .path <<<"$line"): not accepted and confirmed: $line"; return 1; }
        path=$(await "$adv" "select(.event==\"file-received\" and (.transfer|endswith(\"-$channel\")))" 2 "file-received for claim $(jq -c .path <<<"$line")") || return 1
        path=$(jq -r .path <<<"$path")
        rel=${path#"$dir"/}
        printf '    %-24s -> %s\n' "$(jq -c .path <<<"$line")" "$(jq -Rc . <<<"$path" | sed "s#$dir#SAVE#")"
        [[ $path == "$dir/"* && $rel != "$path" ]] || { fail "claim $(jq -c .path <<<"$line") landed at $path, outside $dir"; return 1; }
        [[ $(realpath -m "$path") == "$(realpath "$dir")/"* ]] || { fail "claim $(jq -c .path <<<"$line") resolves outside: $(realpath -m "$path")"; return 1; }
        [[ /$rel/ != */../* && /$rel/ != */./* && $rel != *\\* && $rel != *[[:cntrl:]]* ]] \
            || { fail "claim $(jq -c .path <<<"$line") kept a '..', '.', backslash or control character: $(jq -Rc . <<<"$rel")"; return 1; }
        want=${names[n]}; n=$((n + 1))
        [[ -z $want || $(basename "$path") == "$want" ]] || { fail "claim $(jq -c .path <<<"$line") landed as '$(basename "$path")', not '$want'"; return 1; }
        [[ -f $path && ! -L $path ]] || { fail "no regular file at $path"; return 1; }
        expect_eq "$(files_sha "$path")" "$sha" "sha256 of what claim $(jq -c .path <<<"$line") sent" || return 1
    done
    for path in "${outside[@]}"; do [[ ! -e $path ]] || { fail "$path was created outside the save dir"; return 1; }; done
    new=$(find "$LAB_DIR/out" -newer "$marker" ! -path "$OUT" ! -path "$dir" ! -path "$dir/*" \
        ! \( -path "$OUT/*" \( -name '*.jsonl' -o -name '*.err' -o -name '*.out' \) \) -print)
    [[ -z $new ]] || { fail "created outside the save dir: $new"; return 1; }

    # A lying SHA-256, and more data than announced: nothing under the final name, no partial file.
    spec='[{"path":"bad.bin","size":200000,"mode":"bad-sha"},{"path":"over.bin","size":1000,"mode":"oversize"}]'
    lab_run 2 "$py" "$ROOT/tests/e2e/rogue_sender.py" "$(lab_addr 1)" "$port" "$spec" >"$OUT/rogue2.out" 2>"$OUT/rogue2.err"; status=$?
    expect_eq "$status" 0 "rogue sender (bad sha256, oversize)" || { show "$OUT/rogue2.out" "$adv"; return 1; }
    expect_json "$OUT/rogue2.out" 'select(.path=="bad.bin" and .end.frame=="reset" and .end.code=="integrity")' "the rogue got a reset (integrity) for a wrong sha256" || return 1
    expect_json "$OUT/rogue2.out" 'select(.path=="over.bin" and .end.frame=="reset")' "the rogue got a reset for sending too much" || return 1
    await "$adv" 'select(.event=="file-failed" and .direction=="receive" and .path=="bad.bin" and .code=="integrity")' 2 "file-failed integrity for bad.bin" >/dev/null || return 1
    line=$(await "$adv" 'select(.event=="file-failed" and .direction=="receive" and .path=="over.bin")' 2 "file-failed for over.bin") || return 1
    printf '    oversize: file-failed code %s: %s\n' "$(jq -r .code <<<"$line")" "$(jq -r .reason <<<"$line")"
    [[ ! -e $dir/bad.bin && ! -e $dir/over.bin ]] || { fail "a failed file is under its final name: $(ls -A "$dir")"; return 1; }
    expect_eq "$(count_json "$adv" 'select(.event=="file-received" and (.path|test("bad|over")))')" 0 "file-received for bad.bin or over.bin" || return 1
    files_no_parts "$dir" "after the failed transfers" || return 1

    # The node carries on: a real peer's file arrives.
    echo "after the rogue" >"$OUT/after.txt"
    nb 3 send-file "$(lab_addr 1):$port" "$OUT/after.txt" --service s-f-rogue --encryption none >"$OUT/after.jsonl" 2>"$OUT/after.err"; status=$?
    expect_eq "$status" 0 "send-file after the rogue" || { show "$OUT/after.jsonl"; return 1; }
    cmp "$OUT/after.txt" "$dir/after.txt" || fail "after.txt did not arrive intact" || return 1
}

# --- 7. the sender killed mid-transfer, then resumed ---------------------------------------------------

test_file_resumes_after_the_sender_was_killed() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src size=300000000 sender line part status started sent received
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    files_random "$src/big.bin" "$size"
    start_node 1 s-f-killsend --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    nb_bg 2 "$OUT/send1.jsonl" send-file "$id1" "$src/big.bin" --service s-f-killsend; sender=$PID
    await "$OUT/send1.jsonl" "select(.event==\"progress\" and .bytes >= $((size * 3 / 10)))" 30 "sender past 30%" >/dev/null || return 1
    kill -KILL "$sender"
    exits "$sender" 5 137 "send-file after SIGKILL" || return 1
    line=$(await "$adv" 'select(.event=="file-failed" and .direction=="receive")' 5 "file-failed on h1 after the sender died") || return 1
    expect_eq "$(jq -r '"\(.code) \(.resumable) \(.path)"' <<<"$line")" "connection-lost true big.bin" "file-failed code, resumable, path" || { show "$adv"; return 1; }
    [[ ! -e $dir/big.bin ]] || { fail "something is under the final name after the sender died"; return 1; }
    part=$(files_only_part "$dir" big.bin "after the sender died") || return 1
    (( part > 0 && part < size )) || { fail "partial file of $part bytes"; return 1; }

    nb 2 send-file "$id1" "$src/big.bin" --service s-f-killsend >"$OUT/send2.jsonl" 2>"$OUT/send2.err"; status=$?
    expect_eq "$status" 0 "send-file again" || { show "$OUT/send2.jsonl"; return 1; }
    started=$(jq -c 'select(.event=="file-started")' "$OUT/send2.jsonl")
    sent=$(jq -c 'select(.event=="file-sent")' "$OUT/send2.jsonl")
    received=$(await "$adv" 'select(.event=="file-received")' 2 "file-received on h1") || return 1
    printf '    killed with %d of %d bytes on h1; the resend skipped %s\n' "$part" "$size" "$(jq -r .skipped <<<"$started")"
    expect_eq "$(jq -r .skipped <<<"$started")" "$part" "file-started.skipped on the resend (the partial file's size)" || { show "$OUT/send2.jsonl"; return 1; }
    expect_eq "$(jq -r .skipped <<<"$sent")" "$part" "file-sent.skipped" || return 1
    expect_eq "$(jq -r .skipped <<<"$received")" "$part" "file-received.skipped" || return 1
    expect_json "$adv" "select(.event==\"file-started\" and .direction==\"receive\" and .skipped==$part)" "h1's file-started with skipped" || return 1
    expect_eq "$(jq -r .path <<<"$received")" "$dir/big.bin" "file-received path" || return 1
    expect_eq "$(files_sha "$dir/big.bin")" "$(files_sha "$src/big.bin")" "sha256 after the resume" || return 1
    expect_eq "$(jq -r .sha256 <<<"$sent")" "$(files_sha "$src/big.bin")" "file-sent sha256 (of the whole file)" || return 1
    files_no_parts "$dir" "after the resume" || return 1
}

# --- 8. the receiver killed mid-transfer, then resumed --------------------------------------------------

test_file_resumes_after_the_receiver_was_killed() {
    trap files_done RETURN
    local id1 adv node dir=$OUT/save src=$OUT/src size=300000000 sender part status started received
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    files_random "$src/big.bin" "$size"
    start_node 1 s-f-killrecv --auto-accept --save-dir "$dir" || return 1; adv=$ADV node=$ADV_PID

    # --retry-for 0: fail at once rather than wait for the node to return (faults.sh tests that).
    nb_bg 2 "$OUT/send1.jsonl" send-file "$id1" "$src/big.bin" --service s-f-killrecv --retry-for 0; sender=$PID
    await "$adv" "select(.event==\"progress\" and .direction==\"receive\" and .bytes >= $((size * 3 / 10)))" 30 "receiver past 30%" >/dev/null || return 1
    kill -KILL "$node"
    exits "$node" 5 137 "h1's node after SIGKILL" || return 1
    exits "$sender" 15 5 "send-file after the receiver died" || { show "$OUT/send1.jsonl"; return 1; }
    expect_json "$OUT/send1.jsonl" 'select(.event=="file-failed" and .direction=="send" and .path=="big.bin" and .code=="connection-lost")' "file-failed (connection-lost) on h2" || return 1
    expect_json "$OUT/send1.jsonl" 'select(.event=="error" and .code=="connection-lost" and .exit_status==5)' "error event (connection-lost, 5)" || return 1
    [[ ! -e $dir/big.bin ]] || { fail "something is under the final name after the receiver died"; return 1; }
    part=$(files_only_part "$dir" big.bin "after the receiver died") || return 1

    mv "$adv" "$OUT/adv-h1-first.jsonl"
    start_node 1 s-f-killrecv --auto-accept --save-dir "$dir" || return 1; adv=$ADV
    nb 2 send-file "$id1" "$src/big.bin" --service s-f-killrecv >"$OUT/send2.jsonl" 2>"$OUT/send2.err"; status=$?
    expect_eq "$status" 0 "send-file to the restarted node" || { show "$OUT/send2.jsonl"; return 1; }
    started=$(jq -c 'select(.event=="file-started")' "$OUT/send2.jsonl")
    received=$(await "$adv" 'select(.event=="file-received")' 2 "file-received on the restarted node") || return 1
    printf '    killed with %d of %d bytes on h1; the resend skipped %s\n' "$part" "$size" "$(jq -r .skipped <<<"$started")"
    expect_eq "$(jq -r .skipped <<<"$started")" "$part" "file-started.skipped (the partial file's size)" || return 1
    expect_json "$OUT/send2.jsonl" "select(.event==\"file-sent\" and .skipped==$part)" "file-sent with skipped" || return 1
    expect_eq "$(jq -r '"\(.skipped) \(.path)"' <<<"$received")" "$part $dir/big.bin" "file-received skipped and path" || return 1
    expect_eq "$(files_sha "$dir/big.bin")" "$(files_sha "$src/big.bin")" "sha256 after the resume" || return 1
    files_no_parts "$dir" "after the resume" || return 1
}

# --- 9. SIGINT cancels ---------------------------------------------------------------------------------

test_file_sigint_cancels_on_both_sides() {
    trap files_done RETURN
    local id1 adv dir=$OUT/save src=$OUT/src size=300000000 sender line t0
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    files_random "$src/big.bin" "$size"
    start_node 1 s-f-sigint --auto-accept --save-dir "$dir" || return 1; adv=$ADV

    nb_bg 2 "$OUT/send.jsonl" send-file "$id1" "$src/big.bin" --service s-f-sigint; sender=$PID
    await "$OUT/send.jsonl" "select(.event==\"progress\" and .bytes >= $((size * 3 / 10)))" 30 "sender past 30%" >/dev/null || return 1
    kill -INT "$sender"; t0=$(now_ms)
    exits "$sender" 10 130 "send-file after SIGINT" || { show "$OUT/send.jsonl"; return 1; }
    printf '    send-file exited %d ms after SIGINT\n' $(( $(now_ms) - t0 ))
    expect_json "$OUT/send.jsonl" 'select(.event=="file-failed" and .direction=="send" and .code=="cancelled")' "file-failed (cancelled) on h2" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="error" and .code=="cancelled" and .exit_status==130)' "error event (cancelled, 130)" || return 1
    [[ $(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")') == 0 ]] || fail "file-sent after SIGINT" || return 1
    line=$(await "$adv" 'select(.event=="file-failed" and .direction=="receive")' 5 "file-failed on h1") || return 1
    expect_eq "$(jq -r .code <<<"$line")" cancelled "h1's file-failed code" || return 1
    [[ $(jq -r .reason <<<"$line") == *cancel* ]] || fail "h1's reason does not say cancelled: $line" || return 1
    [[ ! -e $dir/big.bin ]] || { fail "something is under the final name after SIGINT"; return 1; }
    [[ $(count_json "$adv" 'select(.event=="file-received")') == 0 ]] || fail "file-received after SIGINT" || return 1
    printf '    h1 kept %s (resumable: %s)\n' "$(files_parts "$dir" | xargs -r stat -c '%s bytes' | head -1)" "$(jq -r .resumable <<<"$line")"
}

# --- 10. a disk that fills up ----------------------------------------------------------------------------

test_file_disk_full_fails_cleanly() {
    trap files_done RETURN
    local id1 adv node dir=$OUT/tmpfs src=$OUT/src status line
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    mount -t tmpfs -o size=20m tmpfs "$dir" || { fail "cannot mount a 20 MB tmpfs on $dir"; return 1; }
    files_later umount -l "$dir"
    files_random "$src/big.bin" 30000000
    files_random "$src/small.bin" 1000000
    start_node 1 s-f-full --auto-accept --save-dir "$dir" || return 1; adv=$ADV node=$ADV_PID

    nb 2 send-file "$id1" "$src/big.bin" --service s-f-full >"$OUT/big.jsonl" 2>"$OUT/big.err"; status=$?
    expect_error "$OUT/big.jsonl" 8 "$status" io-error "30 MB to a 20 MB disk" || return 1
    expect_json "$OUT/big.jsonl" 'select(.event=="error" and (.message|test("disk is full")))' "the error says the disk is full" || return 1
    grep -q "disk is full" "$OUT/big.err" || fail "stderr does not say the disk is full: $(cat "$OUT/big.err")" || return 1
    expect_json "$OUT/big.jsonl" 'select(.event=="file-failed" and .direction=="send" and .code=="io-error")' "file-failed (io-error) on h2" || return 1
    line=$(await "$adv" 'select(.event=="file-failed" and .direction=="receive")' 2 "file-failed on h1") || return 1
    expect_eq "$(jq -r .code <<<"$line")" io-error "h1's file-failed code" || return 1
    [[ $(jq -r .reason <<<"$line") == *"disk is full"* ]] || fail "h1's reason does not say the disk is full: $line" || return 1
    expect_eq "$(find "$dir" -mindepth 1 | tr '\n' ' ')" "" "what the full disk holds afterwards (no file, no partial)" || { ls -la "$dir" >&2; return 1; }

    still_running "$node" "h1's node after the disk filled" || return 1
    nb 2 send-file "$id1" "$src/small.bin" --service s-f-full >"$OUT/small.jsonl" 2>"$OUT/small.err"; status=$?
    expect_eq "$status" 0 "1 MB after the disk was full" || { show "$OUT/small.jsonl"; return 1; }
    cmp "$src/small.bin" "$dir/small.bin" || fail "small.bin did not arrive intact" || return 1
    # `resumable` means "the receiver kept what arrived" (docs/events.md): it kept nothing here, and
    # both sides should say so.
    expect_eq "$(jq -r .resumable <<<"$line")" false "h1's file-failed resumable (nothing kept)" || return 1
    expect_eq "$(jq -r 'select(.event=="file-failed") | .resumable' "$OUT/big.jsonl")" false \
        "h2's file-failed resumable, when the receiver kept nothing" || return 1
}

# --- 11. through a running node on the sending side -------------------------------------------------

test_file_through_a_running_node() {
    trap files_done RETURN
    local id1 id2 adv1 adv2 node2 dir=$OUT/save src=$OUT/src status transfer
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    mkdir -p "$dir"
    files_random "$src/rel.bin" 20000000
    files_random "$src/second.txt" 4000
    start_node 1 s-f-via --auto-accept --save-dir "$dir" || return 1; adv1=$ADV
    start_node 2 s-f-via || return 1; adv2=$ADV node2=$ADV_PID

    # A relative path, from a directory that is not the node's.
    (cd "$src" && nb 2 send-file "$id1" rel.bin --service s-f-via >"$OUT/client.jsonl" 2>"$OUT/client.err"); status=$?
    expect_eq "$status" 0 "send-file through h2's node" || { show "$OUT/client.jsonl" "$adv2"; return 1; }
    transfer=$(jq -r 'select(.event=="file-sent" and .path=="rel.bin") | .transfer' "$OUT/client.jsonl")
    [[ -n $transfer ]] || { fail "no file-sent on the client"; show "$OUT/client.jsonl"; return 1; }
    expect_json "$OUT/client.jsonl" 'select(.event=="file-started" and .direction=="send")' "file-started on the client" || return 1
    expect_json "$adv2" "select(.event==\"file-started\" and .direction==\"send\" and .transfer==\"$transfer\")" "file-started on h2's node" || return 1
    expect_json "$adv2" "select(.event==\"file-sent\" and .transfer==\"$transfer\")" "file-sent on h2's node" || return 1
    expect_json "$adv2" "select(.event==\"connected\" and .peer.id==\"$id1\")" "h2's node connected to h1" || return 1
    await "$adv1" "select(.event==\"file-received\" and .transfer==\"$transfer\" and .path==\"$dir/rel.bin\" and .peer.id==\"$id2\")" 2 "file-received on h1" >/dev/null || return 1
    cmp "$src/rel.bin" "$dir/rel.bin" || fail "rel.bin differs" || return 1

    # The session stays with the node: a second file uses it.
    nb 2 send-file "$id1" "$src/second.txt" --service s-f-via >"$OUT/client2.jsonl" 2>"$OUT/client2.err"; status=$?
    expect_eq "$status" 0 "second send-file through h2's node" || { show "$OUT/client2.jsonl"; return 1; }
    cmp "$src/second.txt" "$dir/second.txt" || fail "second.txt differs" || return 1
    expect_eq "$(count_json "$adv1" "select(.event==\"connected\" and .peer.id==\"$id2\")")" 1 "sessions h2→h1 (the second file reuses it)" || return 1
    expect_eq "$(count_json "$adv2" 'select(.event=="disconnected")')" 0 "disconnected events on h2's node" || { show "$adv2"; return 1; }
    still_running "$node2" "h2's node" || return 1
    files_no_parts "$dir" "after the transfers" || return 1
}

# --- 12. messages beside a big transfer -------------------------------------------------------------

test_file_transfer_does_not_starve_messages() {
    trap files_done RETURN
    local id1 id3 adv1 adv3 dir=$OUT/save src=$OUT/src size=1073741824 client n busy idle ref gap
    local -A starts=()
    id1=$(id_of 1) && id3=$(id_of 3) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    files_random "$src/big.bin" "$size"
    start_node 1 s-f-chat --auto-accept --save-dir "$dir" || return 1; adv1=$ADV
    start_node 3 s-f-chat --auto-accept || return 1; adv3=$ADV
    start_node 2 s-f-chat --auto-accept || return 1
    # files_ping WORD FROM TO ID: messages "WORD N" from h2's node to the peer ID, one after
    # another, each start time in starts["WORD N"].
    files_ping() {
        local k
        for ((k = $2; k <= $3; k++)); do
            starts["$1 $k"]=$(now_ms)
            nb 2 send "$4" "$1 $k" --service s-f-chat >>"$OUT/send.jsonl" 2>>"$OUT/send.err" || { fail "send '$1 $k' exited $?"; return 1; }
        done
    }
    # files_latencies WORD FROM TO FILE: the message event's time in FILE minus when its `nearby send` started.
    files_latencies() {
        local k
        for ((k = $2; k <= $3; k++)); do
            jq -r --arg t "$1 $k" --argjson start "${starts["$1 $k"]}" "$FILES_JQ_MS"'select(.event=="message" and .text==$t) | ms - $start' "$4"
        done | jq -sc 'sort | {n: length, p50: .[length/2|floor], max: max, all: .}'
    }

    # The baseline: the same session and the same commands with no transfer running.
    files_ping warmup 1 1 "$id1" && files_ping warmup 2 2 "$id3" && files_ping idle 1 10 "$id1" || return 1
    nb_bg 2 "$OUT/client.jsonl" send-file "$id1" "$src/big.bin" --service s-f-chat; client=$PID
    await "$adv1" 'select(.event=="progress" and .direction=="receive" and .bytes >= 50000000)' 20 "the transfer under way" >/dev/null || return 1
    # Beside the transfer, to h1 (the file's session) and, in turn, to h3 (a session with no file):
    # both pay for starting `nearby send` on a machine the transfer keeps busy; only h1's share
    # a connection with the file.
    for ((n = 1; n <= 20; n++)); do
        files_ping ping "$n" "$n" "$id1" || return 1
        (( n % 4 )) || { files_ping ref "$((n / 4))" "$((n / 4))" "$id3" || return 1; }
    done
    exits "$client" 60 0 "the 1 GiB send-file" || { show "$OUT/client.jsonl"; return 1; }
    await "$adv1" 'select(.event=="file-received")' 5 "file-received on h1" >/dev/null || return 1
    expect_eq "$(count_json "$adv1" 'select(.event=="message" and (.text|startswith("ping ")))')" 20 "messages on h1 during the transfer" || return 1

    idle=$(files_latencies idle 1 10 "$adv1") busy=$(files_latencies ping 1 20 "$adv1") ref=$(files_latencies ref 1 5 "$adv3")
    printf '    message latency, no transfer (ms):          %s\n' "$idle"
    printf '    message latency, beside 1 GiB (ms):         %s\n' "$busy"
    printf '    to a peer with no file, meanwhile (ms):     %s\n' "$ref"
    expect_eq "$(jq .n <<<"$busy")" 20 "latencies measured" || return 1
    expect_eq "$(jq .n <<<"$ref")" 5 "reference latencies measured" || return 1
    # Starved messages would wait for the whole file (seconds). The bound is 2 s, or what the same
    # commands took meanwhile to a peer that shares no connection with the file (twice its slowest),
    # or 4 times the idle median: a machine busy enough makes starting `nearby send` alone take
    # long (a fixed 2 s failed under other labs' load: 2.9 s beside the file, 1.2 s idle median; so
    # did 4 times the idle median: 2.6 s, 0.5 s idle). The count of messages that came before the
    # file's end (below) still catches starvation.
    local limit; limit=$(jq -n --argjson idle "$idle" --argjson ref "$ref" '[2000, 4 * $idle.p50, 2 * $ref.max] | max')
    (( $(jq .max <<<"$busy") < limit )) || { fail "a message took $(jq .max <<<"$busy") ms beside the transfer (bound $limit ms)"; return 1; }
    # Messages arrived while the file was still on its way, not queued behind it. (Not all of them
    # need to: a fast transfer may end before the twenty `nearby send`s do.)
    gap=$(jq -s "$FILES_JQ_MS"'(map(select(.event=="file-received")) | first | ms) as $done
        | map(select(.event=="message" and (.text|startswith("ping ")) and ms < $done)) | length' "$adv1")
    printf '    %s of the 20 messages arrived before the file was complete\n' "$gap"
    (( gap >= 3 )) || { fail "messages arrived only after the transfer ended"; return 1; }
    expect_eq "$(files_sha "$dir/big.bin")" "$(files_sha "$src/big.bin")" "sha256 of the 1 GiB file" || return 1
    jq -r 'select(.event=="file-sent") | "    the 1 GiB file took \(.seconds*1000|round) ms: \(.bytes / .seconds / 1e6 | .*10|round/10) MB/s"' "$OUT/client.jsonl"
}

# --- 13. (extra) the same file twice at once from one node ------------------------------------------
# Two `send-file` clients of one node send the same file to the same peer, the second while the first
# is under way. Both arrive byte-exact, neither fails, and the second does not "resume" from the
# partial file the first is still writing; the one to finish second finds the other's complete copy
# in place, the same bytes, and says it is already there rather than making `NAME (1)` (issue 25).

test_file_same_file_twice_at_once_from_one_node() {
    trap files_done RETURN
    local id1 adv1 dir=$OUT/save src=$OUT/src size=300000000 c1 c2 s1 s2 sha
    id1=$(id_of 1) || return 1
    mkdir -p "$dir"
    files_later rm -rf "$src" "$dir"
    files_random "$src/twice.bin" "$size"
    sha=$(files_sha "$src/twice.bin")
    start_node 1 s-f-twice --auto-accept --save-dir "$dir" || return 1; adv1=$ADV
    start_node 2 s-f-twice || return 1

    nb_bg 2 "$OUT/first.jsonl" send-file "$id1" "$src/twice.bin" --service s-f-twice; c1=$PID
    await "$OUT/first.jsonl" "select(.event==\"progress\" and .bytes >= $((size * 3 / 10)))" 30 "the first send past 30%" >/dev/null || return 1
    nb_bg 2 "$OUT/second.jsonl" send-file "$id1" "$src/twice.bin" --service s-f-twice; c2=$PID
    lab_wait_pid "$c1" 60; s1=$?
    lab_wait_pid "$c2" 60; s2=$?
    printf '    second send: skipped %s; exit statuses %s and %s\n' \
        "$(jq -r 'select(.event=="file-started") | .skipped' "$OUT/second.jsonl")" "$s1" "$s2"
    expect_eq "$s1" 0 "the first send-file" || { show "$OUT/first.jsonl"; return 1; }
    expect_eq "$s2" 0 "the second send-file of the same file, started while the first ran" \
        || { jq -c 'select(.event!="progress")' "$OUT/second.jsonl" "$adv1" | sed 's/^/      | /' >&2; return 1; }
    for _ in $(seq 20); do [[ $(count_json "$adv1" 'select(.event=="file-received")') -ge 2 ]] && break; sleep 0.1; done
    expect_eq "$(jq -r 'select(.event=="file-received") | .path' "$adv1" | sort | tr '\n' '|')" "$dir/twice.bin|$dir/twice.bin|" "file-received paths" || return 1
    expect_eq "$(count_json "$adv1" 'select(.event=="file-received" and .already_there==true)')" 1 "the second, already there" || return 1
    expect_eq "$(files_sha "$dir/twice.bin")" "$sha" "sha256 of twice.bin" || return 1
    expect_eq "$(find "$dir" -mindepth 1 | wc -l)" 1 "files in the save dir" || { ls -la "$dir" >&2; return 1; }
    files_no_parts "$dir" "after both transfers" || return 1
}
