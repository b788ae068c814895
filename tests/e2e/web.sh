# shellcheck shell=bash
# --web (send-file, accept, advertise): a real headless Chromium (Debian's chromium and
# chromium-driver, driven by Selenium from the venv scripts/install-deps makes) on another lab host
# downloads and uploads; rogue_web.py plays the clients a browser never is.

WEB_VENV=${NEARBY_VENV:-/opt/nearby-venv}

web_browser() { local host=$1; shift; lab_run "$host" "$WEB_VENV/bin/python" "$ROOT/tests/e2e/web_browser.py" "$@"; }
rogue_web() { local host=$1; shift; lab_run "$host" python3 "$ROOT/tests/e2e/rogue_web.py" "$@"; }

# web_start K FILE [VAR=VALUE...] -- ARGS...: `nearby ARGS` on host K (with the environment given);
# waits for its web-serving line; sets WEB_PID and WEB_URL.
web_start() {
    local host=$1 file=$2; shift 2
    local environment=()
    while [[ $1 != -- ]]; do environment+=("$1"); shift; done
    shift
    lab_bg "$host" "$file" env "${environment[@]}" "$NEARBY" "$@" >/dev/null
    WEB_PID=$LAB_PID
    local line
    line=$(lab_wait_line "$file" 'select(.event=="web-serving")' 30) || {
        fail "no web-serving event from h$host"; cat "$file" "$file.err" >&2; return 1; }
    WEB_URL=$(jq -r .url <<<"$line")
    [[ $WEB_URL =~ ^http://$(lab_addr "$host"):[0-9]+/[a-z2-7]{26}/$ ]] || { fail "url '$WEB_URL' is not http://ADDRESS:PORT/TOKEN/"; return 1; }
}

web_check_browser() {
    [[ -x $WEB_VENV/bin/python ]] && "$WEB_VENV/bin/python" -c 'import selenium' 2>/dev/null && [[ -x /usr/bin/chromedriver ]] || {
        fail "selenium, chromium or chromium-driver is missing (scripts/install-deps)"; return 1; }
}

test_web_download_in_a_browser_byte_exact() {
    web_check_browser || return 1
    mkdir -p "$OUT/share" "$OUT/got"
    head -c 3000000 /dev/urandom >"$OUT/share/report.bin"
    printf 'hello from nearby\n' >"$OUT/share/note é.txt"
    web_start 1 "$OUT/send.jsonl" -- send-file --web "$OUT/share/report.bin" "$OUT/share/note é.txt" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-serving" and .mode=="send" and .items==2 and (.urls|length)>=1)' "web-serving names the page" || return 1
    web_browser 2 download "$WEB_URL" "$OUT/got" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the browser did not download"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    cmp "$OUT/share/report.bin" "$OUT/got/report.bin" || { fail "report.bin differs"; return 1; }
    cmp "$OUT/share/note é.txt" "$OUT/got/note é.txt" || { fail "note é.txt differs"; return 1; }
    lab_wait_pid "$WEB_PID" 30
    expect_eq $? 0 "send-file --web's exit status once both were downloaded" || { cat "$OUT/send.jsonl.err" >&2; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and .path=="report.bin" and .complete and .bytes==3000000 and .address=="10.99.0.2" and (.user_agent|test("Chrome")))' "a complete download event with the browser's address and user agent" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and .all_done)' "the last download says all_done" || return 1
}

test_web_upload_in_a_browser_byte_exact() {
    web_check_browser || return 1
    mkdir -p "$OUT/save" "$OUT/up"
    head -c 2500000 /dev/urandom >"$OUT/up/photo.jpg"
    head -c 70000 /dev/urandom >"$OUT/up/clip.bin"
    printf 'typed without JavaScript\n' >"$OUT/up/plain.txt"
    # A file of the user's under the name of one that arrives: never written over.
    printf 'mine\n' >"$OUT/save/photo.jpg"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" --count 3 || return 1
    expect_json "$OUT/accept.jsonl" 'select(.event=="web-serving" and .mode=="receive")' "web-serving for uploads" || return 1
    web_browser 2 upload "$WEB_URL" "$OUT/up/photo.jpg" "$OUT/up/clip.bin" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the browser did not upload"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    web_browser 2 upload-nojs "$WEB_URL" "$OUT/up/plain.txt" >"$OUT/browser-nojs.json" 2>"$OUT/browser-nojs.err" || {
        fail "the form without JavaScript did not upload"; cat "$OUT/browser-nojs.json" "$OUT/browser-nojs.err" >&2; return 1; }
    lab_wait_pid "$WEB_PID" 30
    expect_eq $? 0 "accept --web --count 3's exit status" || { cat "$OUT/accept.jsonl.err" >&2; return 1; }
    local name
    for name in clip.bin plain.txt; do
        cmp "$OUT/up/$name" "$OUT/save/$name" || { fail "$name differs"; return 1; }
    done
    cmp "$OUT/up/photo.jpg" "$OUT/save/photo (1).jpg" || { fail "photo.jpg did not land beside the user's as 'photo (1).jpg'"; return 1; }
    expect_eq "$(cat "$OUT/save/photo.jpg")" mine "the user's photo.jpg" || return 1
    expect_eq "$(find "$OUT/save" -name '*.nearby-part' | wc -l)" 0 "partial files left" || return 1
    expect_eq "$(count_json "$OUT/accept.jsonl" 'select(.event=="file-received")')" 3 "file-received events" || return 1
    expect_json "$OUT/accept.jsonl" 'select(.event=="file-received" and .peer.id=="web-10.99.0.2" and .bytes==2500000)' "file-received names the browser's address" || return 1
}

test_web_wrong_token_gets_nothing() {
    mkdir -p "$OUT/share"
    printf 'secret\n' >"$OUT/share/secret.txt"
    web_start 1 "$OUT/send.jsonl" -- send-file --web --keep "$OUT/share/secret.txt" || return 1
    rogue_web 2 wrong "$WEB_URL" >"$OUT/wrong.json" 2>"$OUT/wrong.err" || {
        fail "a wrong token got more than the wrong link's 404"; cat "$OUT/wrong.json" "$OUT/wrong.err" >&2; return 1; }
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="web-download")')" 0 "downloads by wrong tokens" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep ends with Ctrl-C" || return 1
}

test_web_large_download_resumes_with_range() {
    local mib=${WEB_BIG_MIB:-1024}
    mkdir -p "$OUT/share"
    head -c $((mib << 20)) /dev/urandom >"$OUT/share/big.bin"
    web_start 1 "$OUT/send.jsonl" -- send-file --web "$OUT/share/big.bin" || return 1
    rogue_web 2 resume "${WEB_URL}0/big.bin" "$OUT/got.bin" $(((mib << 20) * 2 / 5)) >"$OUT/resume.json" 2>"$OUT/resume.err" || {
        fail "the resumed download failed"; cat "$OUT/resume.json" "$OUT/resume.err" >&2; return 1; }
    expect_json "$OUT/resume.json" 'select(.resumed_status|test("206"))' "the resume is answered 206" || return 1
    expect_eq "$(jq -r .sha256 "$OUT/resume.json")" "$(sha256sum "$OUT/share/big.bin" | cut -d' ' -f1)" "the SHA-256 of the interrupted and resumed download" || return 1
    lab_wait_pid "$WEB_PID" 60
    expect_eq $? 0 "send-file --web's exit once the two parts cover the file" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and (.complete|not) and .offset==0)' "the cut download is reported incomplete" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="web-download" and .complete and .offset>0 and .all_done)' "the resumed part completes the file" || return 1
}

test_web_directory_as_zip_passes_unzip_t() {
    web_check_browser || return 1
    mkdir -p "$OUT/share/album/2024/trip" "$OUT/share/album/empty" "$OUT/got" "$OUT/unzipped"
    head -c 1500000 /dev/urandom >"$OUT/share/album/2024/trip/beach.jpg"
    printf 'list\n' >"$OUT/share/album/ünïcode ✓.txt"
    : >"$OUT/share/album/2024/zero.bin"
    web_start 1 "$OUT/send.jsonl" -- send-file --web "$OUT/share/album" || return 1
    web_browser 2 download "$WEB_URL" "$OUT/got" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the browser did not download the zip"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    unzip -t "$OUT/got/album.zip" >"$OUT/unzip-t.txt" 2>&1 || { fail "unzip -t refuses album.zip"; cat "$OUT/unzip-t.txt" >&2; return 1; }
    (cd "$OUT/unzipped" && unzip -q "$OUT/got/album.zip") || { fail "unzip cannot extract album.zip"; return 1; }
    diff -r "$OUT/share/album" "$OUT/unzipped/album" || { fail "the extracted tree differs"; return 1; }
    lab_wait_pid "$WEB_PID" 30
    expect_eq $? 0 "send-file --web's exit status after the zip" || return 1
}

test_web_hostile_clients_while_a_friend_is_served() {
    web_check_browser || return 1
    mkdir -p "$OUT/share" "$OUT/got"
    head -c 4000000 /dev/urandom >"$OUT/share/friend.bin"
    web_start 1 "$OUT/send.jsonl" NEARBY_WEB_HANDSHAKE_MS=3000 -- send-file --web --keep "$OUT/share/friend.bin" || return 1
    local host port
    host=$(lab_addr 1); port=$(jq -r .port <<<"$(head -1 "$OUT/send.jsonl")")
    port=$(jq -r 'select(.event=="web-serving") | .port' "$OUT/send.jsonl")
    lab_bg 3 "$OUT/trickle.json" python3 "$ROOT/tests/e2e/rogue_web.py" trickle "$host" "$port" 300 20 >/dev/null
    local trickler=$LAB_PID
    lab_bg 4 "$OUT/guess.json" python3 "$ROOT/tests/e2e/rogue_web.py" guess "$host" "$port" "${WEB_GUESSES:-10000}" >/dev/null
    local guesser=$LAB_PID
    web_browser 2 download "$WEB_URL" "$OUT/got" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the friend was not served"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    cmp "$OUT/share/friend.bin" "$OUT/got/friend.bin" || { fail "the friend's download differs"; return 1; }
    kill -0 "$guesser" 2>/dev/null || echo "    note: the guesses ended before the friend was served" >&2
    lab_wait_pid "$trickler" 60 || { fail "the trickler did not end"; return 1; }
    lab_wait_pid "$guesser" 600
    expect_eq $? 0 "every guessed token got the wrong link's 404" || { cat "$OUT/guess.json" "$OUT/guess.json.err" >&2; return 1; }
    expect_json "$OUT/trickle.json" 'select(.still_open==0 and .latest_close_s < 15)' "every trickling connection closed by the server within its head deadline" || return 1
    kill -0 "$WEB_PID" || { fail "send-file --web died"; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "send-file --web --keep after the storm" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="web-download" and .complete)')" 1 "complete downloads (the friend's only)" || return 1
}

test_web_hostile_uploads() {
    web_check_browser || return 1
    mkdir -p "$OUT/box/save" "$OUT/up"
    printf 'a friend after the storm\n' >"$OUT/up/after.txt"
    web_start 1 "$OUT/accept.jsonl" NEARBY_PARTIAL_BYTES=1000000 -- accept --web --save-dir "$OUT/box/save" || return 1
    rogue_web 2 names "$WEB_URL" >"$OUT/names.json" 2>"$OUT/names.err" || { fail "the names upload failed"; cat "$OUT/names.err" >&2; return 1; }
    rogue_web 2 liar "$WEB_URL" >"$OUT/liar.json" 2>"$OUT/liar.err" || { fail "the liar failed"; cat "$OUT/liar.err" >&2; return 1; }
    web_browser 2 upload "$WEB_URL" "$OUT/up/after.txt" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the friend's upload failed after the hostile ones"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "accept --web ends with Ctrl-C" || return 1
    # Nothing outside the save directory, nothing in a subdirectory, no control character in a name.
    expect_eq "$(find "$OUT/box" -mindepth 1 -not -path "$OUT/box/save" -not -path "$OUT/box/save/*" | wc -l)" 0 "files beside the save directory" || return 1
    expect_eq "$(find "$OUT/box/save" -mindepth 1 -type d | wc -l)" 0 "directories made by names" || return 1
    [[ ! -e /etc/escape-2.txt && -z $(find "$OUT" /tmp -maxdepth 2 -name 'escape-*' 2>/dev/null) ]] || { fail "a name escaped"; return 1; }
    expect_eq "$(find "$OUT/box/save" -name $'*[\x01-\x1f\x7f]*' | wc -l)" 0 "names with control characters" || return 1
    expect_eq "$(find "$OUT/box/save" -name $'*\xe2\x80\xae*' | wc -l)" 0 "names with a right-to-left override" || return 1
    ! grep -q $'\x1b' "$OUT/accept.jsonl" || { fail "an escape character reached stdout"; return 1; }
    # Each hostile name landed once, under a sanitized name in the save directory (and the friend's file).
    expect_eq "$(count_json "$OUT/accept.jsonl" 'select(.event=="file-received" and .peer.id=="web-10.99.0.2")')" $(($(jq -r .sent "$OUT/names.json") + 1)) "files received" || return 1
    expect_eq "$(find "$OUT/box/save" -type f | wc -l)" $(($(jq -r .sent "$OUT/names.json") + 1)) "files in the save directory" || return 1
    expect_json "$OUT/liar.json" 'select(.part_larger_than_declared[0]|test("400"))' "a part larger than declared is refused" || return 1
    expect_json "$OUT/liar.json" 'select(.too_large[0]|test("413"))' "a body over the quota is refused before it is read" || return 1
    [[ ! -e $OUT/box/save/liar.bin && ! -e $OUT/box/save/short.bin ]] || { fail "a lying part was kept"; ls -la "$OUT/box/save" >&2; return 1; }
    expect_eq "$(find "$OUT/box/save" -name '*.nearby-part' | wc -l)" 0 "partial files left" || return 1
    cmp "$OUT/up/after.txt" "$OUT/box/save/after.txt" || { fail "the friend's file differs"; return 1; }
}

test_web_advertise_serves_an_upload_page() {
    web_check_browser || return 1
    mkdir -p "$OUT/save" "$OUT/up"
    head -c 100000 /dev/urandom >"$OUT/up/to-node.bin"
    web_start 1 "$OUT/adv.jsonl" -- advertise --service webtest --web --save-dir "$OUT/save" || return 1
    expect_json "$OUT/adv.jsonl" 'select(.event=="advertising")' "the node advertises as well" || return 1
    web_browser 2 upload "$WEB_URL" "$OUT/up/to-node.bin" >"$OUT/browser.json" 2>"$OUT/browser.err" || {
        fail "the upload to the node failed"; cat "$OUT/browser.json" "$OUT/browser.err" >&2; return 1; }
    cmp "$OUT/up/to-node.bin" "$OUT/save/to-node.bin" || { fail "to-node.bin differs"; return 1; }
    stop "$WEB_PID"
    expect_eq $? 0 "advertise --web ends with Ctrl-C" || return 1
}

# The pages at a phone's size (390x844), as docs/web.md shows them (WEB_SHOTS=DIR keeps them there).
test_web_pages_at_phone_size() {
    web_check_browser || return 1
    mkdir -p "$OUT/share/Holiday photos" "$OUT/save"
    head -c 2400000 /dev/urandom >"$OUT/share/Holiday photos/beach.jpg"
    head -c 180000 /dev/urandom >"$OUT/share/Holiday photos/dunes.jpg"
    head -c 1234567 /dev/urandom >"$OUT/share/report.pdf"
    printf 'see you\n' >"$OUT/share/notes.txt"
    web_start 1 "$OUT/send.jsonl" NEARBY_WEB_QR=1 -- send-file --web --keep --name "Alice's laptop" "$OUT/share/report.pdf" "$OUT/share/Holiday photos" "$OUT/share/notes.txt" || return 1
    web_browser 2 screenshot "$WEB_URL" "$OUT/web-download.png" >"$OUT/shot1.json" 2>"$OUT/shot1.err" || { fail "no screenshot"; cat "$OUT/shot1.err" >&2; return 1; }
    stop "$WEB_PID"
    # The QR code as drawn on stderr (NEARBY_WEB_QR=1 draws it without a terminal), with the URL beneath.
    grep -q "$WEB_URL" "$OUT/send.jsonl.err" || { fail "the URL is not beneath the QR code"; cat "$OUT/send.jsonl.err" >&2; return 1; }
    grep -q '▀' "$OUT/send.jsonl.err" || { fail "no QR code on stderr"; return 1; }
    { printf '$ nearby send-file --web report.pdf "Holiday photos" notes.txt\n'; grep -v '^\[' "$OUT/send.jsonl.err" | sed -n '1,/^  http/p'; } >"$OUT/terminal.txt"
    web_browser 1 terminal "$OUT/terminal.txt" "$OUT/web-terminal.png" >"$OUT/shot0.json" 2>"$OUT/shot0.err" || { fail "no terminal picture"; cat "$OUT/shot0.err" >&2; return 1; }
    [[ -z ${WEB_SHOTS:-} ]] || cp "$OUT/web-terminal.png" "$WEB_SHOTS/"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --name "Alice's laptop" --save-dir "$OUT/save" || return 1
    web_browser 2 screenshot "$WEB_URL" "$OUT/web-upload.png" >"$OUT/shot2.json" 2>"$OUT/shot2.err" || { fail "no screenshot"; cat "$OUT/shot2.err" >&2; return 1; }
    stop "$WEB_PID"
    local shot
    for shot in web-download web-upload; do
        expect_eq "$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", d[16:24]))' "$OUT/$shot.png")" 390x844 "$shot.png's size" || return 1
        [[ -z ${WEB_SHOTS:-} ]] || cp "$OUT/$shot.png" "$WEB_SHOTS/"
    done
}

# accept --web killed during an upload leaves a stranger's unresumable partial; the next accept
# --web on that directory deletes it as it starts (as a node does), and never shows it as a file.
test_web_a_crash_leaves_no_partial() {
    mkdir -p "$OUT/save" "$OUT/up"
    head -c 3000000 /dev/urandom >"$OUT/up/cut.bin"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    lab_bg 2 "$OUT/curl.out" curl -sS -H 'Expect:' --limit-rate 30k -F "file=@$OUT/up/cut.bin" "${WEB_URL}upload" >/dev/null
    local curler=$LAB_PID left
    await "$OUT/accept.jsonl" 'select(.event=="progress" and .peer.id=="web-10.99.0.2")' 20 "the upload under way" || return 1
    kill -KILL "$WEB_PID"
    lab_wait_pid "$WEB_PID" 10
    lab_wait_pid "$curler" 30
    expect_eq "$(find "$OUT/save" -name '*-u.nearby-part' | wc -l)" 1 "the killed upload's partial file" || { ls -la "$OUT/save" >&2; return 1; }
    web_start 1 "$OUT/again.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    for _ in $(seq 1 100); do
        left=$(find "$OUT/save" -name '*.nearby-part' | wc -l)
        (( left == 0 )) && break
        sleep 0.1
    done
    expect_eq "$left" 0 "partial files after the restart" || { ls -la "$OUT/save" >&2; return 1; }
    expect_eq "$(find "$OUT/save" -type f | wc -l)" 0 "files in the save directory" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "accept --web ends with Ctrl-C" || return 1
}

# advertise --web on a node: the page's connections take places in the node's one admission table,
# beside its links' (here 2 per address): a stranger holding its places through one protocol gets
# none through the other, while another host is served. Separate tables would let h2 in twice.
test_web_node_shares_admission_with_its_links() {
    mkdir -p "$OUT/save"
    web_start 1 "$OUT/adv.jsonl" NEARBY_STRANGER_CONNECTIONS_PER_ADDRESS=2 NEARBY_STRANGER_CONNECTIONS_HANDSHAKE_MS=120000 \
        NEARBY_HANDSHAKE_DEADLINE=120 -- advertise --service s-web-adm --encryption none --web --save-dir "$OUT/save" || return 1
    web_one_table "$(jq -r 'select(.event=="advertising") | .port' "$OUT/adv.jsonl" | head -1)" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "advertise --web ends with Ctrl-C" || return 1
}

# The same beside a LocalSend receiver: the page's connections and LocalSend's HTTPS take places in
# its one table (here 2 per address).
test_web_localsend_node_shares_admission_with_its_https() {
    mkdir -p "$OUT/save"
    web_start 1 "$OUT/adv.jsonl" NEARBY_LOCALSEND_PER_ADDRESS=2 NEARBY_LOCALSEND_HANDSHAKE_MS=120000 -- \
        advertise --localsend --web --save-dir "$OUT/save" || return 1
    web_one_table "$(jq -r 'select(.event=="advertising" and .service=="localsend") | .port' "$OUT/adv.jsonl" | head -1)" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "advertise --localsend --web ends with Ctrl-C" || return 1
}

# web_one_table PORT: h1's web page (WEB_URL) and its other protocol on PORT share one admission
# table of 2 places per address: h2 holding 2 silent connections through one gets none through the
# other, while h3 is let in.
web_one_table() {
    local other=$1 host web_port holder
    host=$(lab_addr 1)
    web_port=$(jq -r 'select(.event=="web-serving") | .port' "$OUT/adv.jsonl")
    [[ $other =~ ^[0-9]+$ && $web_port =~ ^[0-9]+$ ]] || { fail "no ports in the node's events ('$other', '$web_port')"; return 1; }
    web_probe 2 "$host" "$web_port" false || return 1
    # Through the other protocol: then h2 has no place left on the web page, h3 has.
    web_hold 2 "$host" "$other" || return 1; holder=$LAB_PID
    web_probe 2 "$host" "$web_port" true || return 1
    web_probe 3 "$host" "$web_port" false || return 1
    kill "$holder"; lab_wait_pid "$holder" 10
    web_probe 2 "$host" "$web_port" false || return 1
    # Through the web page: then h2 has no place left for the other protocol, h3 has.
    web_hold 2 "$host" "$web_port" || return 1; holder=$LAB_PID
    web_probe 2 "$host" "$other" true || return 1
    web_probe 3 "$host" "$other" false || return 1
    kill "$holder"
    lab_wait_pid "$holder" 10 || true
}

# web_hold K HOST PORT: h_K holds 2 silent connections to HOST:PORT (LAB_PID is the holder).
web_hold() {
    lab_bg "$1" "$OUT/hold-$3.json" python3 "$ROOT/tests/e2e/rogue_web.py" hold "$2" "$3" 2 120 >/dev/null
    lab_wait_line "$OUT/hold-$3.json" 'select(.held==2)' 15 >/dev/null || { fail "h$1 could not hold 2 connections to $3"; return 1; }
}

# web_probe K HOST PORT WANT: h_K's connection to HOST:PORT is closed at once (true) or kept (false),
# within 4 tries (a place is taken or given back a moment after the client's connect or close).
web_probe() {
    local try
    for try in 1 2 3 4; do
        rogue_web "$1" probe "$2" "$3" >"$OUT/probe.json" 2>&1
        [[ $(jq -r .closed "$OUT/probe.json" 2>/dev/null) == "$4" ]] && return 0
    done
    fail "h$1's connection to port $3: closed is not $4 ($(cat "$OUT/probe.json"))"
}

# advertise --web on a node: a browser's upload is a partial file in the node's one strangers'
# quota (here 1 file), beside those of the strangers on its links: a link's file taking the place
# takes the browser's partial back (file-failed quota, nothing left of it). Separate quotas would
# let both through.
test_web_node_shares_the_strangers_quota_with_its_links() {
    mkdir -p "$OUT/save" "$OUT/up"
    head -c 3000000 /dev/urandom >"$OUT/up/slow.bin"
    head -c 300000 /dev/urandom >"$OUT/up/link.bin"
    # A home of its own: in a full run h3 may have had a session with h1's usual node before, and a
    # pinned peer is no stranger (its files are not charged to the strangers' quota).
    mkdir -p "$OUT/home1"
    web_start 1 "$OUT/adv.jsonl" NEARBY_PARTIAL_FILES=1 NEARBY_HOME="$OUT/home1" -- \
        advertise --service s-web-quota --encryption none --auto-accept --web --save-dir "$OUT/save" || return 1
    local port curler status
    port=$(jq -r 'select(.event=="advertising") | .port' "$OUT/adv.jsonl" | head -1)
    lab_bg 2 "$OUT/curl.out" curl -sS -H 'Expect:' --limit-rate 30k -F "file=@$OUT/up/slow.bin" -H 'Accept: text/plain' \
        -w '\n%{http_code}\n' "${WEB_URL}upload" >/dev/null
    curler=$LAB_PID
    await "$OUT/adv.jsonl" 'select(.event=="progress" and .peer.id=="web-10.99.0.2")' 20 "the browser's upload under way" || return 1
    nb 3 send-file "$(lab_addr 1):$port" "$OUT/up/link.bin" --service s-web-quota --encryption none --timeout 20 \
        >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "the link's send-file" || { show "$OUT/send.jsonl" "$OUT/send.err"; return 1; }
    cmp -s "$OUT/up/link.bin" "$OUT/save/link.bin" || { fail "the link's file did not arrive whole"; return 1; }
    await "$OUT/adv.jsonl" 'select(.event=="file-failed" and .peer.id=="web-10.99.0.2" and .code=="quota")' 20 \
        "the browser's upload taken back by the quota" || return 1
    lab_wait_pid "$curler" 30
    grep -q '^507$' "$OUT/curl.out" || { fail "the browser was not told 507"; cat "$OUT/curl.out" "$OUT/curl.out.err" >&2; return 1; }
    [[ ! -e $OUT/save/slow.bin ]] || { fail "the taken-back upload was kept"; return 1; }
    expect_eq "$(find "$OUT/save" -name '*.nearby-part' | wc -l)" 0 "partial files left" || return 1
    stop "$WEB_PID"
    expect_eq $? 0 "advertise --web ends with Ctrl-C" || return 1
}
