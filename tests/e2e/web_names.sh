# shellcheck shell=bash
# Names as a user expects (issue 51, 5): a collision suffix that fits in 255 bytes (the stem
# shortened, the extension kept); zip entry names cleaned as upload names are, and bidi characters
# shown escaped on the page; no server path in any answer to a browser. And (6) ranges with huge
# and signed numbers, completion per client.

test_web_long_names_fit_and_keep_their_extension() {
    mkdir -p "$OUT/save" "$OUT/up"
    local long huge code
    long=$(printf 'a%.0s' $(seq 1 251)).txt
    huge=$(printf 'b%.0s' $(seq 1 4000)).pdf
    printf 'first\n' >"$OUT/up/first.txt"
    printf 'second\n' >"$OUT/up/second.txt"
    printf 'huge\n' >"$OUT/up/huge.pdf"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    for name in first second; do
        code=$(lab_run 2 curl -sS -m 20 -H 'Expect:' -F "file=@$OUT/up/$name.txt;filename=$long" -o "$OUT/$name.out" -w '%{http_code}' "${WEB_URL}upload")
        expect_eq "$code" 200 "the $name upload of a 255-byte name" || { cat "$OUT/$name.out" >&2; return 1; }
    done
    cmp "$OUT/up/first.txt" "$OUT/save/$long" || { fail "the first long name differs"; return 1; }
    cmp "$OUT/up/second.txt" "$OUT/save/${long:0:247} (1).txt" || { fail "the second is not '${long:0:10}… (1).txt' in 255 bytes"; ls "$OUT/save" >&2; return 1; }
    code=$(lab_run 2 curl -sS -m 20 -H 'Expect:' -F "file=@$OUT/up/huge.pdf;filename=$huge" -o /dev/null -w '%{http_code}' "${WEB_URL}upload")
    expect_eq "$code" 200 "the upload of a 4,000-character name" || return 1
    cmp "$OUT/up/huge.pdf" "$OUT/save/${huge:0:251}.pdf" || { fail "the 4,000-character name lost its extension"; ls "$OUT/save" >&2; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "accept --web ends with Ctrl-C" || return 1
}

test_web_zip_names_cleaned_and_pages_escape_bidi() {
    mkdir -p "$OUT/got"
    python3 - "$OUT/share" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(root + "/tricks", exist_ok=True)
for name in ["..\\..\\evil.bat", "esc\x1b[31mred.txt", "new\nline.txt", "gpj.\u202etxt.exe", "plain.txt"]:
    with open(os.path.join(root, "tricks", name), "w") as f:
        f.write("x\n")
with open(os.path.join(root, "rtl\u202egnp.exe"), "w") as f:
    f.write("y\n")
PY
    chmod -R a+rX "$OUT/share"
    web_start 1 "$OUT/send.jsonl" -- send-file --web --keep "$OUT/share/tricks" "$OUT/share/rtl"$'\u202e'"gnp.exe" || return 1
    lab_run 2 curl -sS -m 20 -o "$OUT/got/tricks.zip" "${WEB_URL}0/tricks.zip" || { fail "no zip"; return 1; }
    python3 - "$OUT/got/tricks.zip" >"$OUT/names.txt" <<'PY' || { fail "the zip holds names an extractor could misread"; cat "$OUT/names.txt" >&2; return 1; }
import sys, zipfile, unicodedata
names = zipfile.ZipFile(sys.argv[1]).namelist()
print("\n".join(repr(n) for n in names))
bad = [n for n in names if "\\" in n or ".." in n.split("/") or any(ord(c) < 0x20 or ord(c) == 0x7f or unicodedata.category(c) == "Cf" for c in n)]
sys.exit(1 if bad or len(names) != 5 else 0)
PY
    grep -q "tricks/evil.bat" "$OUT/names.txt" || { fail "the backslash name is not tricks/evil.bat"; cat "$OUT/names.txt" >&2; return 1; }
    lab_run 2 curl -sS -m 20 -o "$OUT/page.html" "$WEB_URL" || { fail "no page"; return 1; }
    ! grep -q $'\u202e' "$OUT/page.html" || { fail "the page shows U+202E as itself"; return 1; }
    grep -qF 'rtl\u{202e}gnp.exe' "$OUT/page.html" || { fail "the page does not show U+202E escaped"; grep -a rtl "$OUT/page.html" >&2; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep ends with Ctrl-C" || return 1
}

# An upload that fails for lack of space (a 1 MB tmpfs): the browser is told why, not where.
test_web_no_server_path_in_answers() {
    local dir=$OUT/full code
    mkdir -p "$dir" "$OUT/up"
    mount -t tmpfs -o size=1m tmpfs "$dir" || { fail "cannot mount a tmpfs on $dir"; return 1; }
    trap 'trap - RETURN; kill "$WEB_PID" 2>/dev/null; umount -l "$dir"' RETURN
    chmod 777 "$dir"
    head -c 3000000 /dev/urandom >"$OUT/up/big.bin"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$dir" || return 1
    code=$(lab_run 2 curl -sS -m 30 -H 'Expect:' -H 'Accept: text/plain' -F "file=@$OUT/up/big.bin" -o "$OUT/answer.txt" -w '%{http_code}' "${WEB_URL}upload")
    [[ $code == 5* ]] || { fail "an upload to a full disk got $code"; return 1; }
    grep -q 'space' "$OUT/answer.txt" || { fail "the answer does not say the disk is full"; cat "$OUT/answer.txt" >&2; return 1; }
    ! grep -qF "$dir" "$OUT/answer.txt" && ! grep -q 'nearby-part' "$OUT/answer.txt" || { fail "the answer names a path on the server"; cat "$OUT/answer.txt" >&2; return 1; }
    expect_eq "$(find "$dir" -type f | wc -l)" 0 "files left on the full disk" || return 1
}

# Issue 51, 6 (small things): a Range end with more digits than 64 bits hold is a huge end (206,
# clamped); a signed number is no range (416); an ordinary range still works.
test_web_ranges_with_huge_and_signed_numbers() {
    mkdir -p "$OUT/share"
    head -c 1000 /dev/urandom >"$OUT/share/r.bin"
    web_start 1 "$OUT/send.jsonl" -- send-file --web --keep "$OUT/share/r.bin" || return 1
    local code
    code=$(lab_run 2 curl -sS -m 20 -H 'Range: bytes=0-99999999999999999999' -o "$OUT/huge.bin" -w '%{http_code}' "${WEB_URL}0/r.bin")
    expect_eq "$code" 206 "bytes=0-99999999999999999999" || return 1
    cmp "$OUT/share/r.bin" "$OUT/huge.bin" || { fail "the clamped range is not the whole file"; return 1; }
    code=$(lab_run 2 curl -sS -m 20 -H 'Range: bytes=+5-+10' -o /dev/null -w '%{http_code}' "${WEB_URL}0/r.bin")
    expect_eq "$code" 416 "bytes=+5-+10" || return 1
    code=$(lab_run 3 curl -sS -m 20 -H 'Range: bytes=10-19' -o "$OUT/part.bin" -w '%{http_code}' "${WEB_URL}0/r.bin")
    expect_eq "$code" 206 "bytes=10-19" || return 1
    cmp <(tail -c +11 "$OUT/share/r.bin" | head -c 10) "$OUT/part.bin" || { fail "bytes=10-19 differ"; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep ends with Ctrl-C" || return 1
}

# Issue 51, 6: completion per client. Bytes 0–49 to h2 and 50–99 to h3: nobody holds the file, so
# send-file --web is not done; once h2 has 50–99 too, it is (exit 0, all_done).
test_web_completion_is_per_client() {
    mkdir -p "$OUT/share"
    head -c 100 /dev/urandom >"$OUT/share/c.bin"
    web_start 1 "$OUT/send.jsonl" -- send-file --web "$OUT/share/c.bin" || return 1
    lab_run 2 curl -sS -m 20 -H 'Range: bytes=0-49' -o "$OUT/a1" "${WEB_URL}0/c.bin" || { fail "h2's first half"; return 1; }
    lab_run 3 curl -sS -m 20 -H 'Range: bytes=50-99' -o "$OUT/b2" "${WEB_URL}0/c.bin" || { fail "h3's second half"; return 1; }
    await "$OUT/send.jsonl" 'select(.event=="web-download" and .address=="10.99.0.3" and .offset==50)' 20 "h3's download event" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and .address=="10.99.0.3" and .complete and (.all_done|not))' \
        "halves to two clients are not all_done" || return 1
    kill -0 "$WEB_PID" || { fail "send-file --web ended though no client has the whole file"; return 1; }
    lab_run 2 curl -sS -m 20 -H 'Range: bytes=50-99' -o "$OUT/a2" "${WEB_URL}0/c.bin" || { fail "h2's second half"; return 1; }
    cmp "$OUT/share/c.bin" <(cat "$OUT/a1" "$OUT/a2") || { fail "h2's halves differ from the file"; return 1; }
    lab_wait_pid "$WEB_PID" 30
    expect_eq $? 0 "send-file --web's exit once h2 holds the whole file" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and .address=="10.99.0.2" and .offset==50 and .all_done)' "h2's second half completes it" || return 1
}
