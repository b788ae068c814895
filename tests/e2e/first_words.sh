# The words and waits a newcomer meets first (issue 57): doctor tells an address nobody has from
# a port that is dropped, and the small ones — a decline said once, sizes for people, an unknown
# option's suggestion, a save directory that does not exist yet, a second node, a restarted peer,
# a wrong web link, waits that say when they end, counts in the singular, Ctrl-C taken.
# Sourced by run.sh; uses the helpers of sessions.sh, terminal.sh and doctor.sh. Captures of
# terminals are *.txt.
# shellcheck shell=bash

# fw_url FILE: the page's address a terminal announced (`serving … at URL`).
fw_url() { plain "$1" | grep -o 'http://10\.99\.0\.[0-9]*:[0-9]*/[a-z2-7]\{26\}/' | head -n 1; }

# `doctor HOST:PORT`: an address no host has on the link is said as that (no ARP reply), a host
# that is there and drops the port as a firewall, and neither blames the other.
test_words_doctor_tells_an_empty_address_from_a_dropped_port() {
    trap 'lab_run 1 nft delete table inet fwdrop 2>/dev/null; stop_started' RETURN
    DOCTOR_TIMEOUT=6 doctor 2 10.99.0.99:4000
    # connect fails (5); multicast-path too, for nobody's responder answers there (two failures: 1).
    [[ $STATUS == 1 || $STATUS == 5 ]] || { fail "doctor exit status for an address nobody has: $STATUS"; show "$OUT/doctor.jsonl"; return 1; }
    check_is connect fail "10.99.0.99: no host answers at that address" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="connect" and (.hint|contains("no machine answers at that address"))
        and (.hint|contains("firewall")|not))' "a hint that nobody has the address, not a firewall" || return 1
    start_node 1 s-fw-drop || return 1
    nft_on 1 fwdrop input "tcp dport $ADV_PORT drop" || return 1
    DOCTOR_TIMEOUT=6 doctor 2 "$(lab_addr 1):$ADV_PORT"
    expect_eq "$STATUS" 5 "doctor exit status for a dropped port" || { show "$OUT/doctor.jsonl"; return 1; }
    check_is connect fail "a host is there (it answered ARP) but drops port $ADV_PORT" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="connect" and (.hint|contains("a firewall on the peer")))' \
        "the firewall hint for a host that drops the port" || return 1
}

# A declined send-file says so once, in one sentence; a save directory that does not exist is made
# (mode 700), one that cannot be written names the option (or the variable) that named it.
test_words_a_declined_file_and_the_save_dir() {
    trap stop_started RETURN
    local id1 status seen
    id1=$(id_of 1) || return 1
    echo hello >"$OUT/f.txt"
    start_node 1 s-fw-dec || return 1
    seen=$ADV
    ( for _ in $(seq 100); do
          [[ $(count_json "$seen" 'select(.event=="invitation")') -gt 0 ]] && break
          sleep 0.1
      done
      lab_run 1 "$NEARBY" accept --decline --service s-fw-dec --timeout 10 >/dev/null 2>&1 ) &
    local decliner=$!
    term_run 2 "$OUT/declined.txt" -- send-file --service s-fw-dec --timeout 10 "$id1" "$OUT/f.txt"; status=$?
    wait "$decliner"
    expect_eq "$status" 3 "send-file declined" || { show "$OUT/declined.txt"; return 1; }
    # One line: the sentence, then its code (every error ends so).
    expect_eq "$(plain "$OUT/declined.txt" | grep -ci declin)" 1 "lines of a declined send-file that say 'declined'" || { show "$OUT/declined.txt"; return 1; }
    term_has "$OUT/declined.txt" "declined the invitation \(declined, exit 3\)$" "the sentence" || return 1

    # A save directory the user named that is not there yet: made, and said.
    nb 3 accept --service s-fw-dir --save-dir "$OUT/home/Downloads" --timeout 0.5 >"$OUT/missing.jsonl" 2>"$OUT/missing.err"; status=$?
    expect_error "$OUT/missing.jsonl" 4 "$status" no-invitation "accept into a save dir not there yet" || { show "$OUT/missing.jsonl"; return 1; }
    expect_eq "$(stat -c %a "$OUT/home/Downloads" 2>&1)" 700 "the mode of the save directory made" || return 1
    grep -qF "made the save directory $OUT/home/Downloads" "$OUT/missing.err" || { fail "no word of the directory made"; show "$OUT/missing.jsonl"; return 1; }
    # One that cannot be written: the option that named it, and what to do.
    mkdir -p "$OUT/ro" && chmod 0555 "$OUT/ro"
    nb 3 accept --service s-fw-dir --save-dir "$OUT/ro" --timeout 0.5 >"$OUT/ro.jsonl" 2>"$OUT/ro.err"; status=$?
    expect_eq "$status" 8 "accept into a read-only save dir" || { show "$OUT/ro.jsonl"; return 1; }
    expect_json "$OUT/ro.jsonl" 'select(.event=="error" and (.message|contains("--save-dir names a directory you cannot write in: give --save-dir one you can")))' \
        "the error names --save-dir" || return 1
    lab_run 3 env NEARBY_SAVE_DIR="$OUT/ro" "$NEARBY" accept --service s-fw-dir --timeout 0.5 >"$OUT/ro-env.jsonl" 2>"$OUT/ro-env.err"
    expect_json "$OUT/ro-env.jsonl" 'select(.event=="error" and (.message|contains("NEARBY_SAVE_DIR names a directory you cannot write in")))' \
        "the error names NEARBY_SAVE_DIR when that named it" || return 1
}

# The web drop box and share at a terminal: an upload starts with no size rather than 0 B, a
# download ends in sizes for people (JSON keeps the numbers), and a wrong link gets a page saying so.
test_words_web_sizes_and_a_wrong_link() {
    trap stop_started RETURN
    local url status
    mkdir -p "$OUT/save" "$OUT/share" "$OUT/got"
    head -c 1900000 /dev/urandom >"$OUT/share/photo.bin"
    term_bg 1 "$OUT/up.txt" NEARBY_WEB_QR=0 -- accept --web --save-dir "$OUT/save" --count 1 --timeout 30 || return 1
    term_wait "$OUT/up.txt" 'serving an upload page at http' "the upload page" || return 1
    url=$(fw_url "$OUT/up.txt")
    lab_run 2 curl -sS -H 'Expect:' -H 'Accept: text/plain' -F "file=@$OUT/share/photo.bin" "${url}upload" >"$OUT/curl.out" 2>&1 \
        || { fail "the upload"; show "$OUT/curl.out"; return 1; }
    lab_wait_pid "$PID" 20; status=$?
    expect_eq "$status" 0 "accept --web --count 1" || { show "$OUT/up.txt"; return 1; }
    term_has "$OUT/up.txt" 'receiving photo\.bin from [^(]*$' "the upload's first line, with no size" || return 1
    ! plain "$OUT/up.txt" | grep -q '(0 B)' || { fail "an upload said as 0 B"; show "$OUT/up.txt"; return 1; }
    term_has "$OUT/up.txt" 'received .*/photo\.bin from .*: 1\.8 MiB in ' "the size once received" || return 1

    term_bg 1 "$OUT/down.txt" NEARBY_WEB_QR=0 -- send-file --web "$OUT/share/photo.bin" || return 1
    term_wait "$OUT/down.txt" 'serving a download page' "the download page" || return 1
    url=$(fw_url "$OUT/down.txt")
    # A wrong link: 404, and a page that says the link is wrong or expired.
    lab_run 2 curl -s -o "$OUT/wrong.html" -w '%{http_code}' "${url%/*/}/aaaaaaaaaaaaaaaaaaaaaaaaaa/" >"$OUT/wrong.code"
    expect_eq "$(cat "$OUT/wrong.code")" 404 "a wrong link's status" || return 1
    grep -q "This link is wrong or has expired" "$OUT/wrong.html" || { fail "the wrong link's page"; show "$OUT/wrong.html"; return 1; }
    lab_run 2 curl -sS -o "$OUT/got/photo.bin" "${url}0/photo.bin" || { fail "the download"; return 1; }
    lab_wait_pid "$PID" 20; status=$?
    expect_eq "$status" 0 "send-file --web once downloaded" || { show "$OUT/down.txt"; return 1; }
    term_has "$OUT/down.txt" 'downloaded photo\.bin by 10\.99\.0\.2: 1\.8 MiB' "the download in a size for people" || return 1
    ! plain "$OUT/down.txt" | grep -q '1900000' || { fail "raw bytes at a terminal"; show "$OUT/down.txt"; return 1; }
}

# An unknown option gets the option it begins; waits with a --timeout say when they end; counts of
# one are singular.
test_words_options_waits_and_counts() {
    local status
    nb 1 browse --time 5 >"$OUT/time.jsonl" 2>"$OUT/time.err"; status=$?
    expect_error "$OUT/time.jsonl" 64 "$status" invalid-argument "browse --time 5" || return 1
    grep -qF "Unknown option '--time'. Did you mean '--timeout'?" "$OUT/time.err" || { fail "the suggestion"; show "$OUT/time.jsonl"; return 1; }
    expect_json "$OUT/time.jsonl" 'select(.event=="error" and (.message|contains("--timeout")))' "the suggestion in the error event" || return 1
    nb 1 browse --tiemout 5 >"$OUT/typo.jsonl" 2>"$OUT/typo.err"
    grep -qF "Did you mean '--timeout'?" "$OUT/typo.err" || { fail "the suggestion for a typo"; show "$OUT/typo.jsonl"; return 1; }

    term_run 1 "$OUT/ls.txt" -- browse --localsend --timeout 1
    term_has "$OUT/ls.txt" 'for 1 s \(Ctrl-C stops sooner\)' "browse --localsend --timeout 1 says when it ends" || return 1
    ! plain "$OUT/ls.txt" | grep -q 'Ctrl-C to stop' || { fail "'Ctrl-C to stop' with a --timeout"; show "$OUT/ls.txt"; return 1; }

    # A node-less accept with --timeout: its node's line says when it ends, not "Ctrl-C to stop".
    term_run 1 "$OUT/acc.txt" -- accept --service s-fw-wait --timeout 1
    term_has "$OUT/acc.txt" 'waiting for invitations for 1 s \(Ctrl-C stops sooner\)' "accept --timeout 1 says when it ends" || return 1
    ! plain "$OUT/acc.txt" | grep -q 'Ctrl-C to stop' || { fail "'Ctrl-C to stop' in accept --timeout"; show "$OUT/acc.txt"; return 1; }

    # One packet read from a capture: "1 packet", for the whole and for its host.
    python3 - "$OUT/one.pcap" <<'PY'
import struct, sys
dns = struct.pack(">HHHHHH", 0, 0, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p for p in (b"_nearby", b"_tcp", b"local")) + b"\0" + struct.pack(">HH", 12, 1)
udp = struct.pack(">HHHH", 5353, 5353, 8 + len(dns), 0) + dns
ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 255, 17, 0, bytes([10, 99, 0, 2]), bytes([224, 0, 0, 251])) + udp
frame = b"\x01\x00\x5e\x00\x00\xfb" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00" + ip
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1) + struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
PY
    chmod 0644 "$OUT/one.pcap"
    term_run 1 "$OUT/one.txt" -- watch --read "$OUT/one.pcap"
    term_has "$OUT/one.txt" '^1 packet \(0 malformed\)' "one packet in the singular" || return 1
    term_has "$OUT/one.txt" '10\.99\.0\.2: 1 packet$' "its host's one packet" || return 1
}

# A second `advertise` says what to do; Ctrl-C on the first is taken in one line.
test_words_a_second_advertise_and_ctrl_c() {
    trap stop_started RETURN
    local status node
    term_bg 1 "$OUT/adv.txt" -- advertise --service s-fw-twice || return 1
    node=$PID
    term_wait "$OUT/adv.txt" 'advertising as' "the first advertise" || return 1
    nb 1 advertise --service s-fw-twice >"$OUT/second.jsonl" 2>"$OUT/second.err"; status=$?
    expect_error "$OUT/second.jsonl" 10 "$status" node-running "a second advertise" || { show "$OUT/second.jsonl"; return 1; }
    expect_json "$OUT/second.jsonl" 'select(.event=="error" and (.message|test("kill -INT [0-9]+")) and (.message|contains("NEARBY_HOME=DIR"))
        and (.message|contains("nearby send")))' "what to do, in the error" || return 1
    kill -INT "$node"
    lab_wait_pid "$node" 10; status=$?
    expect_eq "$status" 0 "advertise after Ctrl-C" || { show "$OUT/adv.txt"; return 1; }
    term_has "$OUT/adv.txt" '^stopping: saying goodbye to peers and withdrawing the advertisement$' "a line for Ctrl-C" || return 1
}

# A one-shot send to a peer that restarted on another port: the fresh answer of discovery wins
# over the port remembered from the last send — one connection, at the new port.
test_words_a_restarted_peer_is_reached_at_its_new_port() {
    trap stop_started RETURN
    local status first
    start_node 1 s-fw-port --auto-accept --port 40431 || return 1; first=$ADV_PID
    nb 2 send --service s-fw-port "Alice Box" first >"$OUT/first.jsonl" 2>"$OUT/first.err" \
        || { fail "the first send (exit $?)"; show "$OUT/first.jsonl"; return 1; }
    kill -INT "$first"; lab_wait_pid "$first" 10 >/dev/null
    start_node 1 s-fw-port --auto-accept --port 40432 || return 1
    nb 2 send --service s-fw-port "Alice Box" second >"$OUT/second.jsonl" 2>"$OUT/second.err"; status=$?
    expect_eq "$status" 0 "a send after the peer moved to another port" || { show "$OUT/second.jsonl"; return 1; }
    await "$ADV" 'select(.event=="message" and .text=="second")' 5 "the message at h1's new node" >/dev/null || return 1
    expect_eq "$(count_json "$OUT/second.jsonl" 'select(.event=="connecting")')" 1 "connecting lines" || { show "$OUT/second.jsonl"; return 1; }
    expect_json "$OUT/second.jsonl" 'select(.event=="connecting" and (.address|endswith(":40432")))' "connecting at the new port" || return 1
}
