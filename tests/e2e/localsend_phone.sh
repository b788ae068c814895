# shellcheck shell=bash
# Issue 50: LocalSend as a phone sees it. Against localsend-cli (an implementation we did not write)
# where it plays the part, else against tests/e2e/rogue_localsend_phone.py, a peer written from the
# official app's source (localsend/localsend 1.18.2): dates, media types, one bad file, cancels both
# ways, a device with encryption off, long texts. Uses localsend.sh's ls_setup/ls_teardown.

LSP_PEER="$ROOT/tests/e2e/rogue_localsend_phone.py"

# lsp_cert NAME: a self-signed certificate and key for a peer, $OUT/NAME.pem and $OUT/NAME.key.
lsp_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OUT/$1.key" -out "$OUT/$1.pem" \
        -days 2 -subj "/CN=$1" >/dev/null 2>&1 || { fail "openssl"; return 1; }
}

# lsp_peer K MODE ARGS...: the phone peer on host K (sets LSP_PID), its lines in $OUT/phone-MODE.out.
lsp_peer() {
    local host=$1 mode=$2; shift 2
    lab_bg "$host" "$OUT/phone-$mode.out" python3 "$LSP_PEER" "$mode" "$@" >/dev/null
    LSP_PID=$LAB_PID
    LS_PIDS+=("$LSP_PID")
    lab_wait_line "$OUT/phone-$mode.out" 'select(.listening)' 15 >/dev/null || {
        fail "no $mode peer on h$host"; cat "$OUT/phone-$mode.out.err" >&2; return 1; }
}

# A photo keeps its date both ways, and each file goes with its media type: to an official-format
# receiver that applies `metadata` as the app does, and from localsend-cli (which sends it).
test_localsend_phone_dates_and_media_types_both_ways() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/src" "$OUT/phone" "$OUT/in"
    local f
    for f in IMG_0001.jpg clip.mkv movie.webm old.avi shot.heic scan.tiff pic.avif; do head -c 20000 /dev/urandom >"$OUT/src/$f"; done
    touch -d '2021-06-01 12:34:56.789 UTC' "$OUT/src/IMG_0001.jpg"
    touch -d '2019-01-02 03:04:05 UTC' "$OUT/src/clip.mkv"
    lsp_cert phone || return 1
    lsp_peer 1 receiver 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT"/src/* >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send-file --localsend to the phone" || { cat "$OUT/send.err" >&2; return 1; }
    for f in IMG_0001.jpg:image/jpeg clip.mkv:video/x-matroska movie.webm:video/webm old.avi:video/x-msvideo shot.heic:image/heic \
        scan.tiff:image/tiff pic.avif:image/avif; do
        expect_json "$OUT/phone-receiver.out" "select(.offered==\"${f%%:*}\" and .fileType==\"${f#*:}\")" "${f%%:*} as ${f#*:}" || {
            cat "$OUT/phone-receiver.out" >&2; return 1; }
    done
    expect_json "$OUT/phone-receiver.out" 'select(.offered=="IMG_0001.jpg" and (.metadata.modified|startswith("2021-06-01T12:34:56.789")) and (.metadata.accessed|endswith("Z")))' \
        "the photo's dates in metadata" || return 1
    expect_eq "$(stat -c %Y "$OUT/phone/IMG_0001.jpg")" "$(stat -c %Y "$OUT/src/IMG_0001.jpg")" "the photo's date at the phone" || return 1
    expect_eq "$(stat -c %Y "$OUT/phone/clip.mkv")" "$(stat -c %Y "$OUT/src/clip.mkv")" "the video's date at the phone" || return 1
    # From localsend-cli: nearby's copy keeps the sender's date (its metadata.modified).
    kill "$LSP_PID" && lab_wait_pid "$LSP_PID" 10 >/dev/null
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --save-dir "$OUT/in" || return 1
    ls_cli 2 send 10.99.0.1 "$OUT/src/IMG_0001.jpg" --json >"$OUT/lssend.out" 2>"$OUT/lssend.err"
    expect_eq "$?" 0 "localsend-cli send" || { cat "$OUT/lssend.out" "$OUT/lssend.err" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 15 >/dev/null
    cmp -s "$OUT/src/IMG_0001.jpg" "$OUT/in/IMG_0001.jpg" || { fail "the photo differs"; return 1; }
    expect_eq "$(stat -c %Y "$OUT/in/IMG_0001.jpg")" "$(stat -c %Y "$OUT/src/IMG_0001.jpg")" "the photo's date at nearby" || return 1
}

# Text files go with their text types, as the app's lookupMimeType gives them (notes.txt is
# text/plain), yet a text file sent is still received as a file: a lone one goes as a generic file,
# for localsend-cli takes any lone text/* file for a message and prints it unsaved (the app wants a
# preview too). From localsend-cli, a lone text/plain file without a preview is saved by nearby.
test_localsend_phone_text_files_typed_as_the_app_and_still_files() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/src" "$OUT/phone" "$OUT/in"
    local f
    for f in notes.txt data.csv page.html readme.md; do echo "the words of $f" >"$OUT/src/$f"; done
    lsp_cert phone || return 1
    lsp_peer 1 receiver 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT"/src/* >/dev/null 2>"$OUT/send.err"
    expect_eq "$?" 0 "four text files to the phone" || { cat "$OUT/send.err" >&2; return 1; }
    for f in notes.txt:text/plain data.csv:text/csv page.html:text/html readme.md:text/markdown; do
        expect_json "$OUT/phone-receiver.out" "select(.offered==\"${f%%:*}\" and .fileType==\"${f#*:}\")" "${f%%:*} as ${f#*:}" || {
            cat "$OUT/phone-receiver.out" >&2; return 1; }
    done
    kill "$LSP_PID" && lab_wait_pid "$LSP_PID" 10 >/dev/null
    ls_receive 1 "$OUT/recv" --json || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/src/notes.txt" >/dev/null 2>"$OUT/lone.err"
    expect_eq "$?" 0 "a lone text file to localsend-cli" || { cat "$OUT/lone.err" >&2; return 1; }
    cmp -s "$OUT/src/notes.txt" "$OUT/recv/notes.txt" || { fail "notes.txt was not saved"; cat "$OUT/lscli-h1.out" >&2; return 1; }
    expect_eq "$(count_json "$OUT/lscli-h1.out" 'select(.event=="text")')" 0 "not taken for a message" || return 1
    kill "$LS_PID" && lab_wait_pid "$LS_PID" 10 >/dev/null
    nearby_ls_node 1 "$OUT/accept.jsonl" accept --save-dir "$OUT/in" || return 1
    ls_cli 2 send 10.99.0.1 "$OUT/src/notes.txt" --json >"$OUT/lssend.out" 2>"$OUT/lssend.err"
    expect_eq "$?" 0 "localsend-cli sends a lone text file" || { cat "$OUT/lssend.out" "$OUT/lssend.err" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 15 >/dev/null
    cmp -s "$OUT/src/notes.txt" "$OUT/in/notes.txt" || { fail "nearby did not save notes.txt"; cat "$OUT/accept.jsonl" >&2; return 1; }
    expect_eq "$(count_json "$OUT/accept.jsonl" 'select(.event=="message")')" 0 "no message at nearby" || return 1
}

# One refused file does not fail the batch: the others arrive, a 422 is sent again (3 tries in
# all, as the app's upload isolate), and the outcome counts what arrived, with the refusal's exit 3.
test_localsend_phone_one_refused_file_the_others_arrive() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/src" "$OUT/phone"
    local f
    for f in a.bin refused.bin damaged.bin b.bin c.bin; do head -c 300000 /dev/urandom >"$OUT/src/$f"; done
    lsp_cert phone || return 1
    lsp_peer 1 receiver 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT"/src/{a,refused,damaged,b,c}.bin >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 3 "one refused file: declined" || { cat "$OUT/send.err" >&2; return 1; }
    grep -q "4 of 5 files arrived; not refused.bin" "$OUT/send.err" || { fail "no count in words: $(cat "$OUT/send.err")"; return 1; }
    for f in a.bin damaged.bin b.bin c.bin; do cmp -s "$OUT/src/$f" "$OUT/phone/$f" || { fail "$f did not arrive"; return 1; }; done
    expect_eq "$(count_json "$OUT/phone-receiver.out" 'select(.upload=="damaged.bin")')" 3 "damaged.bin sent three times" || return 1
    expect_eq "$(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")')" 4 "file-sent events" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="file-failed" and .path=="refused.bin")' "refused.bin failed" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="error" and .exit_status==3)' "the error event" || return 1
}

# The receiver cancels while nearby sends (the app's cancelSession: /cancel to the sender's port):
# nearby stops at once, says so, exits 3.
test_localsend_phone_receiver_cancels_and_nearby_stops() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/src" "$OUT/phone"
    local n
    for n in 1 2 3 4 5 6; do head -c 2000000 /dev/urandom >"$OUT/src/f$n.bin"; done
    lsp_cert phone || return 1
    lsp_peer 1 canceller 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT"/src/*.bin >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 3 "cancelled by the receiver" || { cat "$OUT/send.err" >&2; return 1; }
    grep -q "the receiver cancelled" "$OUT/send.err" || { fail "not said: $(cat "$OUT/send.err")"; return 1; }
    expect_json "$OUT/phone-canceller.out" 'select(.cancel_sent and .status==200 and (.to|startswith("10.99.0.2:")))' "the phone's cancel was answered" || {
        cat "$OUT/phone-canceller.out" >&2; return 1; }
    (( $(count_json "$OUT/send.jsonl" 'select(.event=="file-sent")') < 6 )) || { fail "every file went after the cancel"; return 1; }
}

# A nearby receiver that stops with a session open tells its sender (/cancel at the port and
# protocol the sender's info named), as the app's receiver does. The sender listens on 31318, below
# the ephemeral ports (32768–60999): on 53318 it once found the port taken on a loaded CI-like run.
test_localsend_phone_nearby_receiver_ending_a_session_tells_the_sender() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    head -c 1000 /dev/urandom >"$OUT/one.bin"
    head -c 1000 /dev/urandom >"$OUT/two.bin"
    lsp_cert sender || return 1
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_bg 2 "$OUT/sender.out" python3 "$LSP_PEER" sender 10.99.0.1 53317 "$OUT/sender.pem" "$OUT/sender.key" 31318 "$OUT/one.bin" "$OUT/two.bin" >/dev/null
    local sender=$LAB_PID
    LS_PIDS+=("$sender")
    lab_wait_line "$OUT/sender.out" 'select(.waiting)' 30 >/dev/null || { fail "the sender did not get going"; cat "$OUT/sender.out"* >&2; return 1; }
    stop "$NODE_PID" >/dev/null
    lab_wait_pid "$sender" 20 >/dev/null
    expect_json "$OUT/sender.out" 'select(.cancel and .ours==true and .sender=="10.99.0.1")' "the sender heard /cancel for its session" || {
        cat "$OUT/sender.out" >&2; return 1; }
}

# A device with encryption off (plain HTTP) is found by address and sent to.
test_localsend_phone_a_device_with_encryption_off_is_found_by_address() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/phone"
    head -c 500000 /dev/urandom >"$OUT/a.bin"
    lsp_peer 1 http-receiver 53317 "$OUT/phone" || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send-file --localsend over plain HTTP" || { cat "$OUT/send.err" >&2; return 1; }
    cmp -s "$OUT/a.bin" "$OUT/phone/a.bin" || { fail "a.bin differs"; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="file-sent" and .peer.name=="Phone")' "named by its /info" || return 1
}

# A text over 16 KiB arrives whole (the app sends a text of any length in its preview); one over
# 1 MiB is refused in words. And to localsend-cli, nearby's long text is shown.
test_localsend_phone_long_texts() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    nearby_ls_node 1 "$OUT/accept.jsonl" accept || return 1
    head -c 150000 /dev/urandom | base64 -w 0 >"$OUT/long.txt"
    lab_run 2 "$NEARBY" send --localsend 10.99.0.1 <"$OUT/long.txt" >/dev/null 2>"$OUT/send.err"
    expect_eq "$?" 0 "a 200 KB text" || { cat "$OUT/send.err" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 15 >/dev/null
    expect_eq "$(jq -r 'select(.event=="message") | .text' "$OUT/accept.jsonl")" "$(cat "$OUT/long.txt")" "the whole text" || return 1
    # As the app sends one (nearby's own send stops at 1 MiB): 600 KB taken, 1.2 MB refused in words.
    nearby_ls_node 1 "$OUT/accept2.jsonl" accept || return 1
    lab_run 2 python3 "$LSP_PEER" text 10.99.0.1 53317 1200000 >"$OUT/huge.out" 2>&1
    expect_json "$OUT/huge.out" 'select(.status==413 and (.said|contains("a text message")))' "a 1.2 MB text refused in words" || {
        cat "$OUT/huge.out" >&2; return 1; }
    lab_run 2 python3 "$LSP_PEER" text 10.99.0.1 53317 600000 >"$OUT/big.out" 2>&1
    expect_json "$OUT/big.out" 'select(.status==204)' "a 600 KB text taken" || { cat "$OUT/big.out" >&2; return 1; }
    lab_wait_pid "$NODE_PID" 15 >/dev/null
    expect_eq "$(jq -r 'select(.event=="message") | .text | length' "$OUT/accept2.jsonl")" 600000 "the 600 KB text, whole" || return 1
    ls_receive 3 "$OUT/lscli" --json || return 1
    lab_run 2 "$NEARBY" send --localsend 10.99.0.3 <"$OUT/long.txt" >/dev/null 2>"$OUT/tocli.err"
    expect_eq "$?" 0 "a 200 KB text to localsend-cli" || { cat "$OUT/tocli.err" >&2; return 1; }
    grep -qF "$(head -c 1000 "$OUT/long.txt")" "$OUT/lscli-h3.out" || { fail "localsend-cli did not show the text"; return 1; }
}

# A device whose clock is two days behind (OpenSSL's verifier at that time, -attime) accepts the
# certificate nearby stores and shows; 1.18 refuses one outside its dates, both ways.
test_localsend_phone_a_clock_two_days_behind_accepts_the_certificate() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lab_run 1 "$NEARBY" browse --localsend --timeout 1 >/dev/null 2>&1
    local home
    home=$(lab_run 1 sh -c 'echo "${NEARBY_HOME:-$HOME/.nearby}"')
    jq -r .certificate "$home/localsend.json" >"$OUT/ours.pem" || { fail "no localsend.json in $home"; return 1; }
    openssl verify -attime $(( $(date +%s) - 2 * 86400 )) -check_ss_sig -partial_chain -CAfile "$OUT/ours.pem" "$OUT/ours.pem" >"$OUT/verify.out" 2>&1
    grep -q "not yet valid\|has expired" "$OUT/verify.out" && { fail "a clock two days behind refuses it: $(cat "$OUT/verify.out")"; return 1; }
    expect_eq "$(openssl x509 -in "$OUT/ours.pem" -noout -startdate)" "notBefore=Jan  1 00:00:00 1975 GMT" "valid from 1975" || return 1
    expect_eq "$(openssl x509 -in "$OUT/ours.pem" -noout -enddate)" "notAfter=Jan  1 00:00:00 4096 GMT" "valid until 4096" || return 1
}

# A LocalSend identity stored by an earlier nearby (valid a day before it was made, ten years) is
# re-issued once with the same key and the app's dates, said in an identity-renewed event.
test_localsend_phone_an_old_certificate_is_reissued_once_with_the_same_key() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    local home=$OUT/oldhome
    mkdir -p "$home" && chmod 777 "$home"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OUT/old.key" -out "$OUT/old.pem" \
        -days 3650 -subj "/CN=nearby LocalSend" >/dev/null 2>&1 || { fail "openssl"; return 1; }
    python3 - "$OUT/old.pem" "$OUT/old.key" "$home/localsend.json" <<'PY' || { fail "could not write the old identity"; return 1; }
import hashlib, json, ssl, sys, os
cert, key = open(sys.argv[1]).read(), open(sys.argv[2]).read()
fp = hashlib.sha256(ssl.PEM_cert_to_DER_cert(cert)).hexdigest().upper()
json.dump({"version": 1, "certificate": cert, "privateKey": key, "fingerprint": fp, "created": "2025-01-01T00:00:00Z"},
          open(sys.argv[3], "w"))
os.chmod(sys.argv[3], 0o666)
PY
    local old
    old=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$home/localsend.json")
    lab_run 1 env NEARBY_HOME="$home" "$NEARBY" browse --localsend --timeout 1 >"$OUT/first.jsonl" 2>"$OUT/first.err"
    expect_json "$OUT/first.jsonl" "select(.event==\"identity-renewed\" and .kind==\"localsend\" and .previous==\"$old\" and .fingerprint!=\"$old\")" \
        "identity-renewed" || { cat "$OUT/first.jsonl" "$OUT/first.err" >&2; return 1; }
    grep -q "1975-4096" "$OUT/first.err" || { fail "not said on stderr: $(cat "$OUT/first.err")"; return 1; }
    jq -r .certificate "$home/localsend.json" >"$OUT/new.pem"
    expect_eq "$(openssl x509 -in "$OUT/new.pem" -noout -pubkey)" "$(openssl x509 -in "$OUT/old.pem" -noout -pubkey)" "the same key" || return 1
    expect_eq "$(openssl x509 -in "$OUT/new.pem" -noout -startdate)" "notBefore=Jan  1 00:00:00 1975 GMT" "valid from 1975" || return 1
    lab_run 1 env NEARBY_HOME="$home" "$NEARBY" browse --localsend --timeout 1 >"$OUT/second.jsonl" 2>/dev/null
    expect_eq "$(count_json "$OUT/second.jsonl" 'select(.event=="identity-renewed")')" 0 "re-issued once only" || return 1
}

# A known alias with a new fingerprint (a reinstalled device): under --auto-accept a warning and
# the files, as the app trusts by fingerprint; under --accept-from ALIAS still refused.
test_localsend_phone_a_known_alias_with_a_new_fingerprint_is_a_warning_under_auto_accept() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    mkdir -p "$OUT/in"
    printf 'one' >"$OUT/one.bin"
    printf 'two' >"$OUT/two.bin"
    nearby_ls_node 1 "$OUT/node.jsonl" advertise --save-dir "$OUT/in" --auto-accept || return 1
    lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/one.bin" --name "Bob Box" >/dev/null 2>&1
    expect_eq "$?" 0 "Bob's first" || return 1
    lab_run 2 env NEARBY_HOME="$OUT/h2-reinstalled" "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/two.bin" --name "Bob Box" >/dev/null 2>"$OUT/two.err"
    expect_eq "$?" 0 "Bob reinstalled, under --auto-accept" || { cat "$OUT/two.err" >&2; return 1; }
    cmp -s "$OUT/two.bin" "$OUT/in/two.bin" || { fail "two.bin did not arrive"; return 1; }
    expect_json "$OUT/node.jsonl" 'select(.event=="fingerprint-changed" and .peer.name=="Bob Box" and (.reason|contains("FINGERPRINT CHANGED")))' \
        "the warning" || return 1
    stop "$NODE_PID" >/dev/null
}
