# Security end-to-end tests: what a stranger on the LAN can do to a node (docs/security.md). A hostile
# peer (rogue_sender.py, speaking docs/protocol.md with a fresh identity each time) on another lab
# host tries each attack of issue 13; each test asserts the safe outcome. Sourced by run.sh; uses the
# helpers of sessions.sh (spawn, start_node, await, exits, show, stop_started …) and files.sh
# (files_python). Needs python3 with `cryptography`. Hosts h1..h3.
# shellcheck shell=bash

# rogue SCRIPT HOST OUTFILE ARGS...: a hostile peer of tests/e2e (rogue_*.py) on HOST, in the
# foreground, stdout to OUTFILE and stderr to OUTFILE.err; rogue_bg the same in the background (sets PID).
rogue() {
    local script=$1 host=$2 out=$3 py; shift 3
    py=$(files_python) || return 1
    lab_run "$host" "$py" "$ROOT/tests/e2e/$script" "$@" >"$out" 2>"$out.err"
}
rogue_bg() {
    local script=$1 host=$2 out=$3 py; shift 3
    py=$(files_python) || return 1
    spawn "$host" "$out" "$py" "$ROOT/tests/e2e/$script" "$@"
}
# sec_rogue HOST OUTFILE ARGS...: rogue_sender.py on HOST against the arguments; sec_rogue_bg in the background.
sec_rogue() { rogue rogue_sender.py "$@"; }
sec_rogue_bg() { rogue_bg rogue_sender.py "$@"; }
# sec_node K FILE DIR ENV... -- ARGS...: `nearby ARGS` on host K in working directory DIR with the
# extra environment ENV (NAME=VALUE …), stdin /dev/null, in the background; sets PID.
sec_node() {
    local host=$1 file=$2 dir=$3; shift 3
    local -a env=()
    while [[ $# -gt 0 && $1 != -- ]]; do env+=("$1"); shift; done
    shift
    mkdir -p "$dir"
    spawn "$host" "$file" env "${env[@]}" SEC_DIR="$dir" sh -c 'cd "$SEC_DIR" && exec "$0" "$@" </dev/null' "$NEARBY" "$@"
}
sec_port() { # sec_port FILE: the port of the advertising line in FILE
    local line
    line=$(await "$1" 'select(.event=="advertising")' 10 "advertising") || return 1
    jq -r .port <<<"$line"
}
sec_sha() { if [[ -e $1 ]]; then sha256sum "$1" | cut -d' ' -f1; else echo absent; fi; }

# --- files only with consent -----------------------------------------------------------------------

test_security_stream_listener_takes_no_files() {
    trap stop_started RETURN
    local listen=$OUT/listen port status
    sec_node 1 "$OUT/listener.out" "$listen" -- stream --listen --stream backup --service s-sec-listen --encryption optional || return 1
    port=$(sec_port "$OUT/listener.out.err") || return 1
    local spec='[{"path": ".bash_profile", "size": 120}, {"path": ".ssh/authorized_keys", "size": 90}]'
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$port" "$spec"; status=$?
    expect_eq "$status" 0 "rogue sender" || { show "$OUT/rogue.out" "$OUT/listener.out"; return 1; }
    expect_eq "$(jq -r 'select(.path) | "\(.path) \(.reply.accept) \(.reply.code)"' "$OUT/rogue.out" | tr '\n' '|')" \
        ".bash_profile false no-save-dir|.ssh/authorized_keys false no-save-dir|" "the listener's answers to the file offers" || return 1
    expect_eq "$(find "$listen" -mindepth 1 | wc -l)" 0 "files in the listener's working directory" || { ls -laR "$listen" >&2; return 1; }
    expect_json "$OUT/listener.out.err" 'select(.event=="file-failed" and .code=="no-save-dir" and (.reason|contains("--save-dir")))' \
        "the listener's file-failed says how to enable files" || return 1
    "$NEARBY" stream --help | tr -s ' \n' ' ' | grep -q "from anyone" || fail "stream --help does not say --listen takes a stream from anyone" || return 1
}

test_security_auto_accept_without_save_dir_refuses_files() {
    trap stop_started RETURN
    local cwd=$OUT/cwd src=$OUT/src port status id1
    id1=$(id_of 1) || return 1
    mkdir -p "$src" && echo hello >"$src/x.txt"
    sec_node 1 "$OUT/node.jsonl" "$cwd" -- advertise --auto-accept --service s-sec-nosave || return 1
    port=$(sec_port "$OUT/node.jsonl") || return 1
    nb 2 send-file "$id1" "$src/x.txt" --service s-sec-nosave >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    [[ $status != 0 ]] || fail "send-file to a node without --save-dir exited 0" || return 1
    expect_json "$OUT/send.jsonl" 'select(.event=="file-failed" and .code=="no-save-dir")' "the sender's file-failed (no-save-dir)" || return 1
    expect_json "$OUT/node.jsonl" 'select(.event=="file-failed" and .direction=="receive" and .code=="no-save-dir" and (.reason|contains("NEARBY_SAVE_DIR")))' \
        "the receiver's file-failed says how to enable files" || return 1
    expect_eq "$(find "$cwd" -mindepth 1 | wc -l)" 0 "files in the node's working directory" || { ls -la "$cwd" >&2; return 1; }
    # With consent (the environment variable), the same file lands there.
    stop_started
    sec_node 1 "$OUT/node2.jsonl" "$cwd" NEARBY_SAVE_DIR="$OUT/saved" -- advertise --auto-accept --service s-sec-nosave2 || return 1
    mkdir -p "$OUT/saved"
    sec_port "$OUT/node2.jsonl" >/dev/null || return 1
    nb 2 send-file "$id1" "$src/x.txt" --service s-sec-nosave2 >"$OUT/send2.jsonl" 2>"$OUT/send2.err"; status=$?
    expect_eq "$status" 0 "send-file to a node with NEARBY_SAVE_DIR" || { show "$OUT/send2.jsonl" "$OUT/node2.jsonl"; return 1; }
    cmp -s "$src/x.txt" "$OUT/saved/x.txt" || fail "x.txt did not arrive in NEARBY_SAVE_DIR" || return 1
}

test_security_bidi_file_name_is_sanitised() {
    trap stop_started RETURN
    local dir=$OUT/save port status
    mkdir -p "$dir"
    start_node 1 s-sec-bidi --auto-accept --encryption none --save-dir "$dir" || return 1; port=$ADV_PORT
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$port" "$(jq -nc '[{path: "\u202etxt.exe", size: 64}, {path: "a\u200bb\u2066.txt", size: 32}]')"; status=$?
    expect_eq "$status" 0 "rogue sender" || { show "$OUT/rogue.out" "$ADV"; return 1; }
    await "$ADV" 'select(.event=="file-received" and .path=="'"$dir"'/txt.exe")' 3 "txt.exe saved without U+202E" >/dev/null || return 1
    await "$ADV" 'select(.event=="file-received" and .path=="'"$dir"'/ab.txt")' 3 "ab.txt saved without U+200B/U+2066" >/dev/null || return 1
    expect_eq "$(ls "$dir" | LC_ALL=C grep -c $'\xe2\x80\xae\|\xe2\x80\x8b\|\xe2\x81\xa6')" 0 "names with format characters in the save directory" || return 1
}

# --- a verification code a MITM cannot grind ----------------------------------------------------

test_security_nonce_changed_after_commitment_is_refused() {
    trap stop_started RETURN
    local status
    start_node 1 s-sec-nonce --auto-accept --encryption none || return 1
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$ADV_PORT" --mode change-nonce; status=$?
    expect_eq "$status" 0 "rogue that changes its nonce after committing is refused" || { show "$OUT/rogue.out" "$ADV"; return 1; }
    expect_json "$OUT/rogue.out" 'select(.refused==true)' "refused" || return 1
    await "$ADV" 'select(.event=="rejected" and .code=="identity-mismatch" and (.reason|contains("commitment")))' 3 "the node's rejected event" >/dev/null || return 1
    [[ $(count_json "$ADV" 'select(.event=="invitation" or .event=="connected")') == 0 ]] || fail "the rogue got an invitation in" || return 1
    # An honest peer on the same node still gets in, with the same code on both sides.
    nb 3 send "$(lab_addr 1):$ADV_PORT" hi --service s-sec-nonce --encryption none >"$OUT/honest.jsonl" 2>"$OUT/honest.err" \
        || { fail "an honest send failed"; show "$OUT/honest.jsonl"; return 1; }
    expect_eq "$(jq -r 'select(.event=="connected") | .verification_code' "$OUT/honest.jsonl")" \
        "$(jq -r 'select(.event=="connected") | .verification_code' "$ADV" | tail -1)" "verification codes on both sides" || return 1
}

# --- pins -----------------------------------------------------------------------------------------

test_security_handshakes_without_invitation_pin_nothing() {
    trap stop_started RETURN
    local known=$LAB_DIR/h1/home/known_peers before auto after lines status
    start_node 1 s-sec-pins --auto-accept --encryption none || return 1
    before=$(sec_sha "$known") auto=$(sec_sha "$known.auto")
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$ADV_PORT" --mode handshakes --count 300; status=$?
    expect_eq "$status" 0 "300 handshakes" || { show "$OUT/rogue.out"; return 1; }
    expect_eq "$(sec_sha "$known")" "$before" "known_peers after 300 handshakes without invitations" || return 1
    expect_eq "$(sec_sha "$known.auto")" "$auto" "known_peers.auto after 300 handshakes without invitations" || return 1
    # A peer that reached a session is pinned: a stranger --auto-accept let in, in known_peers.auto.
    lines=$(cat "$known.auto" 2>/dev/null | wc -l)
    sec_rogue 2 "$OUT/session.out" "$(lab_addr 1)" "$ADV_PORT" '[]'; status=$?
    expect_eq "$status" 0 "a session with the rogue" || { show "$OUT/session.out"; return 1; }
    after=$(wc -l <"$known.auto")
    expect_eq "$after" $((lines + 1)) "known_peers.auto lines after one session" || return 1
    grep -q "^$(jq -r 'select(.event=="connected") | .id' "$OUT/session.out") " "$known.auto" || fail "the session's peer is not pinned" || return 1
    expect_eq "$(sec_sha "$known")" "$before" "known_peers after a stranger's session (strangers are pinned apart)" || return 1
}

test_security_unusable_known_peers_fails_closed() {
    trap 'stop_started; sec_restore_known' RETURN
    local known=$LAB_DIR/h1/home/known_peers status sha
    SEC_KNOWN=$known SEC_SAVED=$OUT/known_peers.saved
    if [[ -e $known ]]; then cp -a "$known" "$SEC_SAVED"; else rm -f "$SEC_SAVED"; fi
    start_node 1 s-sec-known --auto-accept --encryption none || return 1
    # 1. a line that is not valid UTF-8
    { [[ -e $SEC_SAVED ]] && cat "$SEC_SAVED"; printf 'garbage \xff\xfe\n'; } >"$known"
    sha=$(sec_sha "$known")
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$ADV_PORT" --mode invite; status=$?
    expect_eq "$status" 0 "rogue" || { show "$OUT/rogue.out"; return 1; }
    expect_json "$OUT/rogue.out" 'select(.closed==true)' "the connection is refused" || { show "$ADV"; return 1; }
    await "$ADV" "select(.event==\"error\" and (.message|contains(\"$known\")))" 3 "an error event naming the file" >/dev/null || return 1
    nb 3 send "$(lab_addr 1):$ADV_PORT" hi --service s-sec-known --encryption none >"$OUT/real.jsonl" 2>"$OUT/real.err"; status=$?
    [[ $status != 0 ]] || fail "a send got through with an unreadable known_peers" || return 1
    expect_eq "$(sec_sha "$known")" "$sha" "known_peers after refusals (kept, not wiped)" || return 1
    [[ $(count_json "$ADV" 'select(.event=="connected")') == 0 ]] || fail "a session started" || return 1
    # 2. a symlink (not followed, not replaced)
    printf 'precious\n' >"$OUT/victim"
    rm -f "$known" && ln -s "$OUT/victim" "$known"
    sec_rogue 2 "$OUT/rogue2.out" "$(lab_addr 1)" "$ADV_PORT" --mode invite; status=$?
    expect_json "$OUT/rogue2.out" 'select(.closed==true)' "refused with a symlinked known_peers" || return 1
    [[ -L $known && $(cat "$OUT/victim") == precious ]] || fail "the symlink or its target was touched" || return 1
}
sec_restore_known() {
    rm -f "$SEC_KNOWN"
    [[ -e $SEC_SAVED ]] && cp -a "$SEC_SAVED" "$SEC_KNOWN"
    return 0
}

# --- bounds on strangers ---------------------------------------------------------------------------

test_security_link_without_invitation_is_closed_after_the_deadline() {
    trap stop_started RETURN
    local status took
    sec_node 1 "$OUT/node.jsonl" "$OUT/cwd" NEARBY_INVITE_DEADLINE=2 -- advertise --auto-accept --encryption none --service s-sec-idle || return 1
    sec_port "$OUT/node.jsonl" >/dev/null || return 1
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$(sec_port "$OUT/node.jsonl")" --mode idle --hold 10; status=$?
    expect_eq "$status" 0 "the uninvited link is closed" || { show "$OUT/rogue.out"; return 1; }
    took=$(jq -r .closed_after "$OUT/rogue.out")
    printf '    closed %s s after the handshake (deadline 2 s)\n' "$took"
    jq -e '.closed_after >= 1.5 and .closed_after < 5' "$OUT/rogue.out" >/dev/null || fail "closed after $took s, expected ~2" || return 1
}

# nearby doctor's probe from a stranger: answered within NEARBY_PROBE_WAIT (not seen: nobody
# publishes that instance), no event for the node's user, nothing pinned; two probes on one link
# break the protocol and the link is cut without an answer.
test_security_doctor_probe_is_bounded() {
    trap stop_started RETURN
    local port pins before
    pins=$(lab_run 1 sh -c 'echo "$NEARBY_HOME/known_peers"')
    before=$(sec_sha "$pins")
    sec_node 1 "$OUT/node.jsonl" "$OUT/cwd" NEARBY_PROBE_WAIT=1 -- advertise --encryption none --service s-sec-probe || return 1
    port=$(sec_port "$OUT/node.jsonl") || return 1
    sec_rogue 2 "$OUT/rogue.out" "$(lab_addr 1)" "$port" --mode probe --hold 5 || { fail "rogue probe"; show "$OUT/rogue.out.err"; return 1; }
    printf '    %s\n' "$(cat "$OUT/rogue.out")"
    jq -e '(.features | index("probe")) != null and .reply.seen == false and .took >= 0.8 and .took < 3' "$OUT/rogue.out" >/dev/null \
        || fail "the probe's answer: $(cat "$OUT/rogue.out")" || return 1
    jq -e '.second_probe_closed == true' "$OUT/rogue.out" >/dev/null || fail "a second probe on one link was answered" || return 1
    await "$OUT/node.jsonl" 'select(.event=="error" and .code=="protocol-violation")' 5 "the second probe reported as a protocol violation" >/dev/null || return 1
    expect_eq "$(count_json "$OUT/node.jsonl" 'select(.event=="invitation" or .event=="connected")')" 0 "invitations or sessions on the node" || return 1
    expect_eq "$(sec_sha "$pins")" "$before" "the node's known_peers (a prober pinned?)" || return 1
}

test_security_flood_of_silent_connections_under_1024_fds() {
    trap stop_started RETURN
    local node port flood status fds limit
    spawn 1 "$OUT/node.jsonl" sh -c 'ulimit -n 1024 && exec "$0" "$@" </dev/null' "$NEARBY" advertise --auto-accept --encryption optional --service s-sec-flood || return 1
    node=$PID
    port=$(sec_port "$OUT/node.jsonl") || return 1
    limit=$(awk '/Max open files/ {print $4}' "/proc/$node/limits")
    expect_eq "$limit" 1024 "the node's fd limit" || return 1
    sec_rogue_bg 2 "$OUT/flood.out" "$(lab_addr 1)" "$port" --mode flood --count 1100 --hold 8 || return 1; flood=$PID
    await "$OUT/flood.out" 'select(.opened)' 20 "the flood opened its connections" >/dev/null || return 1
    fds=$(ls "/proc/$node/fd" | wc -l)
    printf '    node fds during the flood: %s (limit 1024)\n' "$fds"
    nb 3 send "$(lab_addr 1):$port" "through the flood" --service s-sec-flood --encryption optional >"$OUT/real.jsonl" 2>"$OUT/real.err"; status=$?
    expect_eq "$status" 0 "a real peer's send during the flood" || { show "$OUT/real.jsonl" "$OUT/node.jsonl"; return 1; }
    await "$OUT/node.jsonl" 'select(.event=="message" and .text=="through the flood")' 3 "the message during the flood" >/dev/null || return 1
    exits "$flood" 30 0 "the flood" || { show "$OUT/flood.out"; return 1; }
    jq -c 'select(.closed_by_node)' "$OUT/flood.out" | sed 's/^/    flood: /'
    still_running "$node" "the node after the flood" || { show "$OUT/node.jsonl"; return 1; }
    nb 3 send "$(lab_addr 1):$port" "after the flood" --service s-sec-flood --encryption optional >"$OUT/after.jsonl" 2>"$OUT/after.err" \
        || { fail "a send after the flood failed"; show "$OUT/after.jsonl"; return 1; }
}

# --- accept takes the oldest invitation ----------------------------------------------------------

test_security_accept_takes_the_oldest_invitation() {
    trap stop_started RETURN
    local status
    start_node 1 s-sec-oldest --encryption none || return 1
    sec_rogue_bg 2 "$OUT/friend.out" "$(lab_addr 1)" "$ADV_PORT" --mode invite --name friend --invite-timeout 60 --hold 5 || return 1
    await "$ADV" 'select(.event=="invitation" and .peer.name=="friend")' 5 "the friend's invitation" >/dev/null || return 1
    sec_rogue_bg 3 "$OUT/stranger.out" "$(lab_addr 1)" "$ADV_PORT" --mode invite --name stranger --invite-timeout 8 --hold 1 || return 1
    await "$ADV" 'select(.event=="invitation" and .peer.name=="stranger")' 5 "the stranger's invitation (expiring first)" >/dev/null || return 1
    nb 1 accept --service s-sec-oldest >"$OUT/accept.jsonl" 2>"$OUT/accept.err"; status=$?
    expect_eq "$status" 0 "nearby accept" || { show "$OUT/accept.jsonl"; return 1; }
    expect_json "$OUT/accept.jsonl" 'select(.event=="accepted" and .peer.name=="friend" and .pending==1)' "accepted the friend (oldest), one other pending" || return 1
    await "$OUT/friend.out" 'select(.answer.accept==true)' 3 "the friend's invitation accepted" >/dev/null || return 1
}

# --- the run directory ------------------------------------------------------------------------------

test_security_unsafe_run_directory_is_refused() {
    trap 'stop_started; rm -rf "$SEC_XDG"' RETURN
    local xdg id status lock
    # Short: a Unix socket path is at most 107 bytes.
    xdg=$(mktemp -d /tmp/nbsec.XXXXXX) && SEC_XDG=$xdg || return 1
    id=$(id_of 1) || return 1
    mkdir -p "$xdg/nearby"
    chown -R "$LAB_USER:" "$xdg"   # the user's own XDG_RUNTIME_DIR (nearby runs as $LAB_USER)
    # sec_try WHAT: advertise with XDG_RUNTIME_DIR=$xdg must exit 8 with unsafe-run-directory.
    sec_try() {
        lab_run 1 env XDG_RUNTIME_DIR="$xdg" timeout 10 "$NEARBY" advertise --service s-sec-run >"$OUT/run.jsonl" 2>"$OUT/run.err"; status=$?
        expect_error "$OUT/run.jsonl" 8 "$status" unsafe-run-directory "$1"
    }
    chmod 755 "$xdg/nearby"
    sec_try "a run directory with mode 755" || return 1
    chmod 700 "$xdg/nearby" && chown 65534 "$xdg/nearby"
    sec_try "a run directory owned by another user" || return 1
    chown "$LAB_USER" "$xdg/nearby"
    lock=$xdg/nearby/$id-s-sec-run.lock
    printf 'precious\n' >"$OUT/victim"
    ln -s "$OUT/victim" "$lock"
    sec_try "a symlinked lock file" || return 1
    expect_eq "$(cat "$OUT/victim")" precious "the symlink's target (not truncated)" || return 1
    grep -q "unsafe-run-directory" docs/exit-codes.md 2>/dev/null || grep -q "unsafe-run-directory" "$ROOT/docs/exit-codes.md" \
        || fail "docs/exit-codes.md does not document unsafe-run-directory" || return 1
    # A private directory of ours works, and its socket is 0600.
    rm -f "$lock"
    spawn 1 "$OUT/ok.jsonl" env XDG_RUNTIME_DIR="$xdg" "$NEARBY" advertise --service s-sec-run || return 1
    await "$OUT/ok.jsonl" 'select(.event=="advertising")' 10 "advertising with a private run directory" >/dev/null || return 1
    expect_eq "$(stat -c %a "$xdg/nearby/$id-s-sec-run.sock")" 600 "the control socket's mode" || return 1
}
