# shellcheck shell=bash
# send-file --web serves only what it listed (issue 51, 1): someone who can write in the shared
# folder swaps a file for a symbolic link to a file outside, a subdirectory for a link to another
# directory, a file for a FIFO. Each is a 410 in words and a `skipped` event; no byte of what the
# link names leaves the node; nothing hangs; the friend's file is still served.

test_web_serves_only_what_was_listed() {
    mkdir -p "$OUT/share/album/sub" "$OUT/outside" "$OUT/got"
    printf 'SECRET-OUTSIDE\n' >"$OUT/outside/secret.txt"
    printf 'SECRET-PHOTO\n' >"$OUT/outside/photo.jpg"
    head -c 300000 /dev/urandom >"$OUT/share/friend.bin"
    printf 'linked later\n' >"$OUT/share/swapped.txt"
    printf 'a fifo later\n' >"$OUT/share/fifo.txt"
    printf 'a photo\n' >"$OUT/share/album/sub/photo.jpg"
    printf 'kept\n' >"$OUT/share/album/kept.txt"
    chmod -R a+rX "$OUT"
    web_start 1 "$OUT/send.jsonl" -- send-file --web --keep "$OUT/share/friend.bin" "$OUT/share/swapped.txt" \
        "$OUT/share/fifo.txt" "$OUT/share/album" || return 1
    # The swaps, after the listing.
    rm "$OUT/share/swapped.txt" && ln -s "$OUT/outside/secret.txt" "$OUT/share/swapped.txt"
    rm "$OUT/share/fifo.txt" && mkfifo -m 666 "$OUT/share/fifo.txt"
    rm -r "$OUT/share/album/sub" && ln -s "$OUT/outside" "$OUT/share/album/sub"
    local code
    code=$(lab_run 2 curl -sS -m 20 -o "$OUT/got/swapped" -w '%{http_code}' "${WEB_URL}1/swapped.txt")
    expect_eq "$code" 410 "the file swapped for a link" || return 1
    ! grep -q SECRET "$OUT/got/swapped" || { fail "the link's target was served"; return 1; }
    grep -q 'symbolic link' "$OUT/got/swapped" || { fail "the 410 does not say why"; cat "$OUT/got/swapped" >&2; return 1; }
    # A FIFO: answered at once (a download that waits for a writer would hit curl's 20 s).
    code=$(lab_run 2 curl -sS -m 20 -o "$OUT/got/fifo" -w '%{http_code}' "${WEB_URL}2/fifo.txt")
    expect_eq "$code" 410 "the file swapped for a FIFO" || return 1
    grep -q 'FIFO' "$OUT/got/fifo" || { fail "the 410 does not name the FIFO"; cat "$OUT/got/fifo" >&2; return 1; }
    # The zip leaves out what the swapped subdirectory now holds, and keeps the rest.
    code=$(lab_run 2 curl -sS -m 20 -o "$OUT/got/album.zip" -w '%{http_code}' "${WEB_URL}3/album.zip")
    expect_eq "$code" 200 "the album's zip" || return 1
    ! grep -q SECRET "$OUT/got/album.zip" || { fail "the zip holds a file from outside the share"; return 1; }
    unzip -l "$OUT/got/album.zip" >"$OUT/unzip-l.txt" 2>&1 || { fail "unzip refuses the zip"; cat "$OUT/unzip-l.txt" >&2; return 1; }
    grep -q 'album/kept.txt' "$OUT/unzip-l.txt" || { fail "the zip lost the file that was not swapped"; cat "$OUT/unzip-l.txt" >&2; return 1; }
    ! grep -q 'sub/photo.jpg' "$OUT/unzip-l.txt" || { fail "the zip holds the swapped directory's file"; return 1; }
    # The friend, served.
    code=$(lab_run 3 curl -sS -m 20 -o "$OUT/got/friend.bin" -w '%{http_code}' "${WEB_URL}0/friend.bin")
    expect_eq "$code" 200 "the friend's download" || return 1
    cmp "$OUT/share/friend.bin" "$OUT/got/friend.bin" || { fail "the friend's file differs"; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="skipped" and .path=="swapped.txt" and (.reason|test("symbolic link")))' "a skipped event for the link" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="skipped" and .path=="fifo.txt" and (.reason|test("FIFO")))' "a skipped event for the FIFO" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="skipped" and .path=="album/sub/photo.jpg")' "a skipped event for the zip's swapped entry" || return 1
    kill -0 "$WEB_PID" || { fail "send-file --web died"; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep ends with Ctrl-C" || return 1
}

# Issue 51, 2: the strangers' quota bounds the disk. 8 uploads of 15 MB each that then trickle a
# byte every 2 s, against a 20 MB quota: the partials the quota takes back are closed at once, so
# the save directory's file system (a tmpfs of its own, measured with df, not by listing the
# directory) holds about the quota, not 8 × 15 MB; a friend's upload still lands.
test_web_quota_bounds_the_disk() {
    local dir=$OUT/box used staller=0 code
    mkdir -p "$dir" "$OUT/up"
    mount -t tmpfs -o size=200m tmpfs "$dir" || { fail "cannot mount a tmpfs on $dir"; return 1; }
    trap 'trap - RETURN; kill "$staller" "$WEB_PID" 2>/dev/null; umount -l "$dir"' RETURN
    chmod 777 "$dir"
    printf 'a friend after the flood\n' >"$OUT/up/after.txt"
    web_start 1 "$OUT/accept.jsonl" NEARBY_PARTIAL_BYTES=20000000 -- accept --web --save-dir "$dir" || return 1
    lab_bg 2 "$OUT/stall.json" python3 "$ROOT/tests/e2e/rogue_web_load.py" stall-uploads "$WEB_URL" 8 15 60 >/dev/null
    staller=$LAB_PID
    lab_wait_line "$OUT/stall.json" 'select(.sent_whole)' 60 >/dev/null || { fail "the uploads did not get their 15 MB in"; show "$OUT/stall.json.err"; return 1; }
    # The file system's use, in MB, until it is within the quota and some (20 MB + 4 MB of slack).
    for _ in $(seq 1 100); do
        used=$(df -m --output=used "$dir" | tail -1 | tr -d ' ')
        (( used <= 24 )) && break
        sleep 0.2
    done
    echo "    the save directory's file system holds ${used} MB with 8 × 15 MB sent against a 20 MB quota" >&2
    (( used <= 24 )) || { fail "the save directory's file system holds $used MB, over the 20 MB quota"; ls -la "$dir" >&2; return 1; }
    expect_json "$OUT/accept.jsonl" 'select(.event=="file-failed" and .code=="quota")' "uploads taken back by the quota" || return 1
    code=$(lab_run 3 curl -sS -m 20 -H 'Expect:' -F "file=@$OUT/up/after.txt" -o /dev/null -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 200 "the friend's upload" || return 1
    cmp "$OUT/up/after.txt" "$dir/after.txt" || { fail "the friend's file differs"; return 1; }
    kill "$staller" 2>/dev/null
    stop "$WEB_PID"
    true
}

# Issue 51, 3: downloads bounded by the budget. 128 downloads of a 50 MB file that read 100 bytes
# and stop (8 addresses on h2 × 16) hold at most a block each: the node's peak RSS stays under
# 100 MB (printed), and a friend on h3 gets the whole file meanwhile.
test_web_stalled_downloads_stay_bounded() {
    local i sources=() staller=0 hwm code
    for ((i = 1; i <= 8; i++)); do
        ip -n "$(lab_ns 2)" addr add "10.99.0.$((200 + i))/24" dev nb0 2>/dev/null
        sources+=("10.99.0.$((200 + i))")
    done
    trap 'trap - RETURN; kill "$staller" "$WEB_PID" 2>/dev/null; for ((i = 1; i <= 8; i++)); do ip -n "$(lab_ns 2)" addr del "10.99.0.$((200 + i))/24" dev nb0 2>/dev/null; done' RETURN
    mkdir -p "$OUT/share" "$OUT/got"
    head -c 50000000 /dev/urandom >"$OUT/share/big.bin"
    web_start 1 "$OUT/send.jsonl" NEARBY_WEB_TOTAL=200 -- send-file --web --keep "$OUT/share/big.bin" || return 1
    lab_bg 2 "$OUT/stall.json" python3 "$ROOT/tests/e2e/rogue_web_load.py" stall-downloads "${WEB_URL}0/big.bin" 128 60 "${sources[@]}" >/dev/null
    staller=$LAB_PID
    lab_wait_line "$OUT/stall.json" 'select(.downloads==128)' 60 >/dev/null || { fail "128 downloads did not start"; show "$OUT/stall.json" "$OUT/stall.json.err"; return 1; }
    code=$(lab_run 3 curl -sS -m 60 -o "$OUT/got/big.bin" -w '%{http_code}' "${WEB_URL}0/big.bin")
    expect_eq "$code" 200 "the friend's download beside 128 stalled ones" || return 1
    cmp "$OUT/share/big.bin" "$OUT/got/big.bin" || { fail "the friend's file differs"; return 1; }
    hwm=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$WEB_PID/status")
    echo "    node peak RSS ${hwm} MB with 128 stalled downloads of a 50 MB file" >&2
    (( hwm < $(mem_mb 100) )) || { fail "node peak RSS $hwm MB with 128 stalled downloads (limit $(mem_mb 100))"; return 1; }
    kill "$staller" 2>/dev/null
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep ends with Ctrl-C" || return 1
}

# Issue 51, 4: a page on another site that knows the URL cannot post into the drop box (Origin or
# Sec-Fetch-Site not the page's own: 403, nothing lands), nor fetch the pages with its Origin; the
# page's own Origin and no Origin at all (curl, a link typed) are answered. The browser's own form
# (which sends its Origin) is test_web_upload_in_a_browser_byte_exact.
test_web_cross_site_posts_refused() {
    mkdir -p "$OUT/save" "$OUT/up"
    printf 'from another site\n' >"$OUT/up/evil.txt"
    printf 'from the page\n' >"$OUT/up/own.txt"
    printf 'from curl\n' >"$OUT/up/plain.txt"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    local own code
    own=$(sed -E 's#^(http://[^/]+)/.*#\1#' <<<"$WEB_URL")
    code=$(lab_run 2 curl -sS -m 20 -H 'Expect:' -H 'Origin: http://evil.example' -F "file=@$OUT/up/evil.txt" -o "$OUT/evil.out" -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 403 "an upload with another site's Origin" || return 1
    grep -q 'another site' "$OUT/evil.out" || { fail "the 403 does not say why"; cat "$OUT/evil.out" >&2; return 1; }
    code=$(lab_run 2 curl -sS -m 20 -H 'Expect:' -H 'Sec-Fetch-Site: cross-site' -F "file=@$OUT/up/evil.txt" -o /dev/null -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 403 "an upload with Sec-Fetch-Site: cross-site" || return 1
    code=$(lab_run 2 curl -sS -m 20 -H 'Origin: null' -o /dev/null -w '%{http_code}' "$WEB_URL")
    expect_eq "$code" 403 "the page fetched with Origin: null" || return 1
    [[ ! -e $OUT/save/evil.txt ]] || { fail "a cross-site upload landed"; return 1; }
    code=$(lab_run 3 curl -sS -m 20 -H 'Expect:' -H "Origin: $own" -H 'Sec-Fetch-Site: same-origin' -F "file=@$OUT/up/own.txt" -o /dev/null -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 200 "an upload with the page's own Origin" || return 1
    code=$(lab_run 3 curl -sS -m 20 -H 'Expect:' -F "file=@$OUT/up/plain.txt" -o /dev/null -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 200 "an upload with no Origin" || return 1
    cmp "$OUT/up/own.txt" "$OUT/save/own.txt" && cmp "$OUT/up/plain.txt" "$OUT/save/plain.txt" || { fail "the friends' files differ"; return 1; }
    expect_eq "$(find "$OUT/save" -type f | wc -l)" 2 "files in the save directory" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "accept --web ends with Ctrl-C" || return 1
}
