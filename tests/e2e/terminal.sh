# A person at a terminal: the built binary run under a pseudo-terminal (pty_run.py), its raw bytes
# checked — lines for people and no JSON by default, JSON lines with --json, no escape sequences with
# NO_COLOR, and a progress bar that never shares a line with anything else. Piped output stays the
# JSON lines every other test reads. Sourced by run.sh; uses the helpers of sessions.sh and files.sh.
# Captures of terminals are *.txt (the schema test reads every *.jsonl).
# TERMINAL_WAIT (seconds, default 15) bounds every wait; TERMINAL_FILE_MIB (default 64) sizes the file.
# shellcheck shell=bash

TERM_PTY=$ROOT/tests/e2e/pty_run.py

# term_args [VAR=VALUE...] [--stdin F] [--stdout F] [--columns N] [--answer TEXT REPLY] -- ARGS...: sets TERM_ARGV, the command line of
# `nearby ARGS` under a pseudo-terminal, in a colour terminal's environment (plus the VAR=VALUEs).
term_args() {
    local vars=() pty=()
    while [[ $# -gt 0 && $1 != -- ]]; do
        case $1 in
            --stdin|--stdout|--columns) pty+=("$1" "$2"); shift 2 ;;
            --answer) pty+=("$1" "$2" "$3"); shift 3 ;;
            *) vars+=("$1"); shift ;;
        esac
    done
    shift
    TERM_ARGV=(env -u NO_COLOR -u NEARBY_OUTPUT TERM=xterm-256color "${vars[@]}"
        /usr/bin/python3 "$TERM_PTY" "${pty[@]}" -- "$NEARBY" "$@")
}
# term_run K FILE [VAR=VALUE...] [--stdin F] [--stdout F] -- ARGS...: in the foreground; the
# terminal's bytes in FILE; returns the command's status.
term_run() {
    local host=$1 file=$2; shift 2
    term_args "$@"
    lab_run "$host" "${TERM_ARGV[@]}" >"$file" 2>"$file.err"
}
# term_bg K FILE ...: the same in the background; sets PID.
term_bg() {
    local host=$1 file=$2; shift 2
    term_args "$@"
    spawn "$host" "$file" "${TERM_ARGV[@]}"
}

# plain FILE: what the terminal shows at the end, line by line: escape sequences out, and of each
# line only what follows its last carriage return (what was drawn over is gone).
plain() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/\r$//; s/.*\r//' "$1"; }
# term_has FILE ERE WHAT
term_has() {
    plain "$1" | grep -qE -- "$2" && return 0
    fail "$3: no line matches /$2/"; show "$1"; return 1
}
# term_wait FILE ERE WHAT: until the terminal shows a line matching ERE (TERMINAL_WAIT seconds).
term_wait() {
    local deadline=$(( $(now_ms) + ${TERMINAL_WAIT:-15} * 1000 ))
    until plain "$1" | grep -qE -- "$2"; do
        (( $(now_ms) < deadline )) || { fail "$3: nothing matched /$2/ within ${TERMINAL_WAIT:-15} s"; show "$1"; return 1; }
        sleep 0.1
    done
}
term_no_json() {
    ! grep -qa '{"' "$1" || { fail "$2: JSON on the terminal"; show "$1"; return 1; }
}
term_no_escapes() {
    ! grep -qaP '\x1b' "$1" || { fail "$2: escape sequences with NO_COLOR"; show "$1"; return 1; }
}
# term_all_json FILE WHAT: every line shown is a JSON object (copied to FILE.jsonl for the schema test).
term_all_json() {
    tr -d '\r' <"$1" >"$1.jsonl"
    [[ -s $1.jsonl ]] && jq -e 'type == "object" and has("event")' "$1.jsonl" >/dev/null 2>&1 \
        || { fail "$2: not JSON lines only"; show "$1"; return 1; }
    term_no_escapes "$1" "$2"
}

# term_check_lines FILE WHAT: in the raw bytes, every event line (a time stamp, or a JSON object)
# begins a line: after a newline, or after the bar was cleared (\r ESC[K); and no finished line of
# the screen still shows a piece of the bar.
term_check_lines() {
    python3 - "$1" <<'PY' || { fail "$2: the progress bar shares a line"; return 1; }
import re, sys
raw = open(sys.argv[1], "rb").read()
bad = 0
for match in re.finditer(rb'(?:\x1b\[2m)?\d\d:\d\d:\d\d(?:\x1b\[0m)? |\{"event":', raw):
    before = raw[:match.start()]
    if before and not before.endswith(b"\n") and not before.endswith(b"\r\x1b[K"):
        print("    FAIL: a line starts mid-line:", repr(raw[max(0, match.start() - 90):match.end() + 30]), file=sys.stderr)
        bad += 1
for line in raw.split(b"\n")[:-1]:
    shown = line.rstrip(b"\r").split(b"\r")[-1].replace(b"\x1b[K", b"")
    if re.search(rb"\[[#-]{30}\]", shown):
        print("    FAIL: a finished line shows the bar:", repr(line[-200:]), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
}

test_terminal_invitation_and_messages_are_readable() {
    trap stop_started RETURN
    local adv=$OUT/advertise-h1.txt line code accept args
    term_bg 1 "$adv" -- advertise --service t-term || return 1
    term_wait "$adv" "advertising as Alice Box \([0-9a-z]+\) on _t-term._tcp port [0-9]+ — waiting for invitations" "advertise on h1" || return 1

    term_run 2 "$OUT/browse-h2.txt" -- browse --service t-term --peer "Alice Box" --timeout "${TERMINAL_WAIT:-15}" \
        || { fail "browse --peer on h2 under a terminal"; show "$OUT/browse-h2.txt"; return 1; }
    # A browse that ends by itself says when, not "Ctrl-C to stop" (issue 33, row 16).
    term_has "$OUT/browse-h2.txt" "^[0-9:]{8} browsing for _t-term._tcp in local\. — for [0-9]+ s \(Ctrl-C stops sooner\)$" "browsing line" || return 1
    # The first found line names the address the daemon reported first: IPv4 or the link-local IPv6.
    term_has "$OUT/browse-h2.txt" "^[0-9:]{8} found Alice Box \([0-9a-z]+\), nearby at h1\.local\.:[0-9]+ \[(10\.99\.0\.1|fe80::[0-9a-f:]+%nb0)" "found line" || return 1
    term_no_json "$OUT/browse-h2.txt" browse || return 1

    # An invitation: who, the context, the code, the deadline and the commands to answer.
    nb_bg 2 "$OUT/invite-h2.jsonl" invite "Alice Box" --service t-term --context "hello from bob" --timeout 30
    line=$(await "$OUT/invite-h2.jsonl" 'select(.event=="invited")' "${TERMINAL_WAIT:-15}" "invited on h2") || return 1
    code=$(jq -r .verification_code <<<"$line")
    term_wait "$adv" '^[0-9:]{8} invitation from .+ \([0-9a-z]+\): "hello from bob"$' "invitation on h1" || return 1
    term_has "$adv" "^ +verification code $code — the inviter's screen shows the same code$" "the code, prominently" || return 1
    term_has "$adv" "^ +decline: nearby accept --decline --service t-term " "the command to decline" || return 1
    term_has "$adv" "^ +expires in [0-9]+ s \(at [0-9:]{8}\), then it is declined$" "the deadline" || return 1
    # The command shown is the one that works.
    accept=$(plain "$adv" | sed -n 's/^ *accept:  nearby accept //p' | head -1)
    [[ $accept == "--service t-term "* ]] || { fail "the command to accept: '$accept'"; show "$adv"; return 1; }
    eval "args=($accept)"
    nb 1 accept "${args[@]}" >"$OUT/accept-h1.jsonl" || { fail "the accept command shown failed: nearby accept $accept"; return 1; }
    term_wait "$adv" "^[0-9:]{8} connected to .+ verification code $code \(1 session\)$" "connected shows the code again" || return 1

    # send, on a terminal (through h2's running node), and the message on h1's.
    term_run 2 "$OUT/send-h2.txt" -- send "Alice Box" "hi there" --service t-term \
        || { fail "send on a terminal"; show "$OUT/send-h2.txt"; return 1; }
    term_has "$OUT/send-h2.txt" "^[0-9:]{8} sent 8 B to Alice Box$" "sent line" || return 1
    term_wait "$adv" '^[0-9:]{8} message from .+: "hi there"$' "message on h1" || return 1
    term_no_json "$OUT/send-h2.txt" send && term_no_json "$adv" advertise || return 1
    term_check_lines "$adv" advertise || return 1

    # --json on a terminal: JSON lines, as in a pipe.
    term_run 2 "$OUT/send-json-h2.txt" -- send --json "Alice Box" "again" --service t-term || return 1
    term_all_json "$OUT/send-json-h2.txt" "send --json" || return 1
    expect_json "$OUT/send-json-h2.txt.jsonl" 'select(.event=="sent" and .bytes==5)' "send --json: the sent event" || return 1
    term_run 2 "$OUT/browse-json-h2.txt" -- browse --json --service t-term --peer "Alice Box" --timeout "${TERMINAL_WAIT:-15}" || return 1
    term_all_json "$OUT/browse-json-h2.txt" "browse --json" || return 1
    expect_json "$OUT/browse-json-h2.txt.jsonl" 'select(.event=="found" and .peer.name=="Alice Box")' "browse --json: found" || return 1
    # --human into a pipe; NO_COLOR on a terminal.
    nb 2 browse --human --service t-term --peer "Alice Box" --timeout "${TERMINAL_WAIT:-15}" >"$OUT/browse-human-h2.txt" || return 1
    term_has "$OUT/browse-human-h2.txt" "^[0-9:]{8} found Alice Box" "browse --human into a pipe" || return 1
    term_no_json "$OUT/browse-human-h2.txt" "browse --human" && term_no_escapes "$OUT/browse-human-h2.txt" "browse --human into a pipe" || return 1
    term_run 2 "$OUT/browse-nocolor-h2.txt" NO_COLOR=1 -- browse --service t-term --peer "Alice Box" --timeout "${TERMINAL_WAIT:-15}" || return 1
    term_has "$OUT/browse-nocolor-h2.txt" "found Alice Box" "browse with NO_COLOR" && term_no_escapes "$OUT/browse-nocolor-h2.txt" "browse with NO_COLOR"
}

test_terminal_file_transfer_bar_never_shares_a_line() {
    trap files_done RETURN
    local mib=${TERMINAL_FILE_MIB:-64} file=$OUT/big.bin sha out=$OUT/send-h2.txt
    files_random "$file" $((mib << 20)); sha=$(files_sha "$file")
    files_later rm -rf "$OUT/in" "$file"
    mkdir -p "$OUT/in"
    start_node 1 t-tfile --auto-accept --save-dir "$OUT/in" || return 1

    term_run 2 "$out" -- send-file "Alice Box" "$file" --service t-tfile || { fail "send-file on a terminal"; show "$out"; return 1; }
    term_has "$out" "^[0-9:]{8} sending big\.bin to Alice Box \($mib\.0 MiB\)$" "started line" || return 1
    term_has "$out" "^[0-9:]{8} sent big\.bin to Alice Box: $mib\.0 MiB in [0-9.]+ (s|min)[^,]*, [0-9.]+ [KMG]iB/s, sha256 ${sha:0:12}…$" "summary line" || return 1
    grep -qaE '\[#+-*\]' "$out" || { fail "no progress bar drawn"; show "$out"; return 1; }
    grep -qaE "[0-9]+% [0-9.]+ [KMG]?i?B of $mib\.0 MiB, [0-9.]+ [KMG]?i?B/s" "$out" || { fail "the bar shows no total"; show "$out"; return 1; }
    term_no_json "$out" send-file && term_check_lines "$out" send-file || return 1
    expect_eq "$(files_sha "$OUT/in/big.bin")" "$sha" "received file" || return 1

    # Several files: which one, and the whole batch (issue 25); the same facts as JSON fields.
    files_random "$OUT/batch/one.bin" $((8 << 20)); files_random "$OUT/batch/two.bin" $((8 << 20)); files_random "$OUT/batch/three.bin" $((8 << 20))
    files_later rm -rf "$OUT/batch"
    term_run 2 "$OUT/batch-h2.txt" -- send-file --json "Alice Box" "$OUT/batch" --service t-tfile || { fail "send-file of three files"; show "$OUT/batch-h2.txt"; return 1; }
    grep -qaE '\[3/3\] batch/two\.bin .* all 100% of 24\.0 MiB' "$OUT/batch-h2.txt" || { fail "no batch progress for the last file"; show "$OUT/batch-h2.txt"; return 1; }
    grep -qa '"event":"progress".*"all_total":25165824.*"file":1,"files":3' "$OUT/batch-h2.txt" || { fail "no batch fields in the progress events"; show "$OUT/batch-h2.txt"; return 1; }
    term_check_lines "$OUT/batch-h2.txt" "send-file of three files" || return 1

    # --json on a terminal: JSON lines on stdout, the bar and summary on stderr, never on one line.
    term_run 2 "$OUT/send-json-h2.txt" -- send-file --json "Alice Box" "$file" --service t-tfile || return 1
    grep -qa '^{"event":"file-sent"' "$OUT/send-json-h2.txt" || { fail "send-file --json: no file-sent line"; show "$OUT/send-json-h2.txt"; return 1; }
    # (The same file again: Alice has it already, and says so.)
    term_has "$OUT/send-json-h2.txt" "already there, nothing sent: big\.bin — Alice Box has the same $mib\.0 MiB \(sha256 ${sha:0:12}…\)$" "send-file --json: the summary on stderr" || return 1
    term_check_lines "$OUT/send-json-h2.txt" "send-file --json" || return 1

    # NO_COLOR: no escape sequence at all, the bar cleared with spaces.
    term_run 2 "$OUT/send-nocolor-h2.txt" NO_COLOR=1 -- send-file "Alice Box" "$file" --service t-tfile || return 1
    term_has "$OUT/send-nocolor-h2.txt" "already there, nothing sent: big\.bin — Alice Box" "NO_COLOR: summary" && term_no_escapes "$OUT/send-nocolor-h2.txt" "send-file with NO_COLOR" || return 1

    # Piped: JSON lines only, and nothing on stderr, as before.
    nb 2 send-file "Alice Box" "$file" --service t-tfile >"$OUT/send-piped.jsonl" 2>"$OUT/send-piped.err" || return 1
    jq -e 'type == "object"' "$OUT/send-piped.jsonl" >/dev/null || { fail "piped: not JSON lines"; show "$OUT/send-piped.jsonl"; return 1; }
    jq -se 'map(.event) | index("file-started") < index("file-sent")' "$OUT/send-piped.jsonl" >/dev/null \
        || { fail "piped: file-started then file-sent"; show "$OUT/send-piped.jsonl"; return 1; }
    [[ ! -s $OUT/send-piped.err ]] || { fail "piped: stderr is not quiet"; show "$OUT/send-piped.err"; return 1; }
    term_no_json "$OUT/send-nocolor-h2.txt" "send-file NO_COLOR"
}

test_terminal_stream_events_are_readable_on_stderr() {
    trap files_done RETURN
    local listen=$OUT/listen-h1.txt opener=$OUT/open-h2.txt listener
    files_random "$OUT/data.bin" $((1 << 20))
    term_bg 1 "$listen" --stdin /dev/null --stdout "$OUT/listen-h1.out" -- stream --listen --stream x --service t-tstream || return 1
    listener=$PID
    term_wait "$listen" "advertising as Alice Box" "stream --listen advertises" || return 1
    term_run 2 "$opener" --stdin "$OUT/data.bin" --stdout "$OUT/open-h2.out" -- stream "Alice Box" --stream x --service t-tstream \
        || { fail "stream on a terminal"; show "$opener"; return 1; }
    exits "$listener" "${TERMINAL_WAIT:-15}" 0 "stream --listen" || { show "$listen"; return 1; }
    cmp -s "$OUT/data.bin" "$OUT/listen-h1.out" || { fail "the stream's bytes differ"; return 1; }
    term_has "$opener" '^[0-9:]{8} stream "x" to Alice Box opened$' "opened, on the opener" || return 1
    term_has "$opener" '^[0-9:]{8} stream "x" with Alice Box closed: sent 1\.0 MiB, received 0 B \(done\)$' "closed, on the opener" || return 1
    term_has "$listen" '^[0-9:]{8} stream "x" from .+ opened$' "opened, on the listener" || return 1
    term_has "$listen" '^[0-9:]{8} stream "x" with .+ closed: sent 0 B, received 1\.0 MiB \(done\)$' "closed, on the listener" || return 1
    term_no_json "$opener" "stream" && term_no_json "$listen" "stream --listen"
}

# `browse --live` (issue 49, item 5), as an ordinary user with no capability: the peers and their
# hosts drawn in place (cursor home, lines overwritten), a peer found, updated and lost as it
# happens; in a pipe the same command prints the usual JSON lines (browse keeps its contract).
test_terminal_browse_live_draws_the_peers_in_place() {
    trap 'stop_started; trap - RETURN' RETURN
    local screen=$OUT/live-h1.txt id2 browser
    id2=$(id_of 2) || return 1
    term_bg 1 "$screen" --columns 180 -- browse --live --service t-live || return 1
    browser=$PID
    term_wait "$screen" '^PEERS 0 on _t-live\._tcp' "the empty table" || return 1
    start_node 2 t-live --name "Bob Live" --info room=lab || return 1
    term_wait "$screen" "^  Bob Live \(${id2:0:8}\) +h2\.local\.:$ADV_PORT +room=lab +found [0-9]+s ago" "Bob's row" || return 1
    # IPv4 first whichever answer the daemon gives first (CI once saw the link-local AAAA first).
    term_wait "$screen" '^  h2\.local\. +10\.99\.0\.2.* \(nb0\) +1 peer$' "h2's host row, its address on nb0" || return 1
    term_wait "$screen" "[0-9:.]{12} found Bob Live \(${id2:0:8}\) at h2\.local\.:$ADV_PORT" "the change below the table" || return 1
    stop "$ADV_PID" >/dev/null
    term_wait "$screen" "^  Bob Live \(${id2:0:8}\) .* lost [0-9]+s ago" "Bob marked lost" || return 1
    term_wait "$screen" '^PEERS 0 on _t-live\._tcp, 1 lost' "the count" || return 1
    kill -INT "$browser" 2>/dev/null
    lab_wait_pid "$browser" 10
    expect_eq "$?" 0 "browse --live's status after Ctrl-C" || { show "$screen"; return 1; }
    grep -qaF $'\e[H' "$screen" || { fail "the table is not drawn in place"; return 1; }
    term_no_json "$screen" "browse --live"
    # In a pipe: JSON lines, found with its fields, as without --live.
    start_node 2 t-live --name "Bob Live" || return 1
    nb 1 browse --live --service t-live --peer "$id2" --timeout 10 >"$OUT/live-pipe.jsonl" 2>/dev/null
    expect_eq "$?" 64 "browse --live --peer is refused (a usage error)" || return 1
    nb 1 browse --live --service t-live --count 1 --timeout 10 >"$OUT/live-pipe.jsonl" 2>"$OUT/live-pipe.err" \
        || { fail "browse --live in a pipe"; cat "$OUT/live-pipe.err" >&2; return 1; }
    expect_json "$OUT/live-pipe.jsonl" "select(.event==\"found\" and .peer.id==\"$id2\" and .peer.name==\"Bob Live\")" "found, as JSON, in a pipe"
}

# Every command a node prints for a nearby invitation works as printed (issue 59, as LocalSend's in
# localsend_person.sh): the decline line, then the accept line, read from the node's terminal and
# each run verbatim in a shell; the first inviter is declined (exit 3), the second connected.
test_terminal_an_invitations_printed_commands_work_as_printed() {
    trap stop_started RETURN
    local adv=$OUT/advertise-h1.txt verb line n=0 status shell_path inviter deadline
    shell_path="$(dirname "$NEARBY"):$PATH"
    term_bg 1 "$adv" -- advertise --service t-verb --name "Alice Box" || return 1
    term_wait "$adv" "advertising as Alice Box" "advertise on h1" || return 1
    for verb in decline accept; do
        n=$((n + 1))
        nb_bg 2 "$OUT/invite-$verb.jsonl" invite "Alice Box" --service t-verb --timeout 30 || return 1
        inviter=$PID
        deadline=$(( $(now_ms) + ${TERMINAL_WAIT:-15} * 1000 ))
        until (( $(plain "$adv" | grep -cE "^ +$verb: +nearby accept") >= n )); do
            (( $(now_ms) < deadline )) || { fail "no $verb line for invitation $n"; show "$adv"; return 1; }
            sleep 0.1
        done
        line=$(plain "$adv" | sed -n "s/^ *$verb: *//p" | tail -1)
        lab_run 1 env PATH="$shell_path" bash -c "$line" >"$OUT/$verb.out" 2>"$OUT/$verb.err"; status=$?
        expect_eq "$status" 0 "'$line' as printed" || { cat "$OUT/$verb.err" >&2; return 1; }
        [[ $verb == decline ]] && { exits "$inviter" 15 3 "the declined inviter" || return 1; }
    done
    await "$OUT/invite-accept.jsonl" 'select(.event=="connected")' 15 "the accepted inviter connected" || return 1
}
