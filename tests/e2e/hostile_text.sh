# A stranger's text on the user's terminal, and a stranger's flood on the user's screen
# (docs/security.md, "Terminal output"): a hostile peer (rogue_text.py) puts OSC 52, OSC 0, CSI 2J,
# the C1 CSI, DEL, U+202E and U+200B in its name, invitation ID, context, message, goodbye and
# decline reasons; under a pseudo-terminal (pty_run.py, helpers of terminal.sh) none of those bytes
# reaches the screen raw, and JSON lines still decode to exactly what the peer sent. Then 2,000
# connections that are not nearby and 20,000 foreign datagrams: a few lines and a count, not 22,000.
# Sourced by run.sh; uses the helpers of sessions.sh, files.sh and terminal.sh.
# shellcheck shell=bash

text_rogue() { rogue_bg rogue_text.py "$@"; } # text_rogue K OUT MODE ARGS...: rogue_text.py on host K in the background; sets PID

# text_clean FILE WHAT [colors]: no byte a terminal acts on in FILE (the raw bytes of a terminal):
# ESC, the C1 CSI (C2 9B), DEL, U+202E, U+200B, U+FEFF. With "colors", nearby's own colours and
# line clears (ESC [ digits m, ESC [ K) are allowed, and nothing else.
text_clean() {
    python3 - "$1" "${3:-}" <<'PY' || { fail "$2: raw escape or bidi bytes reached the terminal"; return 1; }
import re, sys
raw = open(sys.argv[1], "rb").read()
if sys.argv[2] == "colors":
    raw = re.sub(rb"\x1b\[[0-9;]*[mK]", b"", raw)
bad = {"ESC": b"\x1b", "C1 CSI": "\x9b".encode(), "DEL": b"\x7f", "U+202E": "\u202e".encode(),
       "U+200B": "\u200b".encode(), "U+FEFF": "\ufeff".encode(), "OSC 52": b"]52;c;"}
found = False
for name, needle in bad.items():
    at = raw.find(needle)
    if at >= 0 and (name != "OSC 52" or raw[at - 1:at] == b"\x1b"):
        print(f"    FAIL: {name} at byte {at}: {raw[max(0, at - 60):at + 20]!r}", file=sys.stderr)
        found = True
if not found:
    print(f"    {len(raw)} bytes checked, none of them a raw escape")
sys.exit(1 if found else 0)
PY
}

# text_decodes TERMINAL_FILE ROGUE_FILE FILTER...: each jq FILTER (with $h, the rogue's strings)
# holds for some JSON line the terminal showed.
text_decodes() {
    local screen=$1 rogue=$2 filter; shift 2
    tr -d '\r' <"$screen" | grep '^{' >"$screen.jsonl"
    for filter in "$@"; do
        [[ -n $(jq -c --slurpfile h "$rogue" "\$h[0] as \$h | $filter" "$screen.jsonl" 2>/dev/null) ]] \
            || { fail "no JSON line decodes as expected: $filter"; show "$screen.jsonl"; return 1; }
    done
}

text_port() { # text_port FILE: the port the node's terminal announced
    local deadline=$(( $(now_ms) + 10000 )) port
    while (( $(now_ms) < deadline )); do
        port=$(tr -d '\r' <"$1" | grep -oE '(port |"port":)[0-9]+' | head -1 | grep -oE '[0-9]+$')
        [[ -n $port ]] && { echo "$port"; return 0; }
        sleep 0.1
    done
    fail "the node announced no port"; show "$1"; return 1
}

test_hostile_text_reaches_a_node_terminal_escaped() {
    trap stop_started RETURN
    local mode screen node port
    for mode in human json colors; do
        screen=$OUT/node-$mode.txt
        term_bg 1 "$screen" "$([[ $mode == colors ]] && echo COLORS=1 || echo NO_COLOR=1)" -- \
            advertise --service "s-text-$mode" --encryption none --auto-accept -v $([[ $mode == json ]] && echo --json) || return 1
        node=$PID
        port=$(text_port "$screen") || return 1
        text_rogue 2 "$OUT/rogue-$mode.out" client "$(lab_addr 1)" "$port" || return 1
        exits "$PID" 20 0 "the hostile client ($mode)" || { show "$OUT/rogue-$mode.out" "$screen"; return 1; }
        head -1 "$OUT/rogue-$mode.out" >"$OUT/hostile.json"
        term_wait "$screen" 'closed|disconnected' "the session's end on the terminal ($mode)" || return 1
        kill -INT "$node"; exits "$node" 10 0 "the node ($mode)" || return 1
        text_clean "$screen" "the node's terminal ($mode)" "$mode" || { show "$screen"; return 1; }
    done
    grep -qaP '\x1b\[1m' "$OUT/node-colors.txt" || { fail "no colours in the colour run"; show "$OUT/node-colors.txt"; return 1; }
    # Lines for people say what happened, escaped.
    term_has "$OUT/node-human.txt" 'invitation from rogue\\u\{202e\}gpj\.exe\\u\{200b\}' "the invitation, name escaped" || return 1
    term_has "$OUT/node-human.txt" 'message from .*hi\\u\{1b\}\[2J' "the message, escaped" || return 1
    term_has "$OUT/node-human.txt" 'nearby: \[info\] .*bye\\u\{1b\}]52;c;' "the -v log line with the goodbye reason, escaped" || return 1
    # JSON lines on a terminal decode to exactly what the peer sent.
    text_decodes "$OUT/node-json.txt" "$OUT/hostile.json" \
        'select(.event=="invitation" and .invitation==$h.invitation and .context==$h.context and .peer.name==$h.name)' \
        'select(.event=="message" and .text==$h.text)' \
        'select(.event=="disconnected" and (.reason | contains($h.reason)))' || return 1
    grep -qa 'nearby: \[info\] .*bye\\u{1b}]52;c;' "$OUT/node-json.txt" || { fail "the -v goodbye line (--json)"; return 1; }
}

test_hostile_text_in_error_sentences_is_escaped() {
    trap stop_started RETURN
    local status port=47123
    text_rogue 2 "$OUT/server-1.out" server "$port" || return 1
    await "$OUT/server-1.out" 'select(.listening)' 10 "the hostile server" >/dev/null || return 1
    head -1 "$OUT/server-1.out" >"$OUT/hostile.json"
    term_run 1 "$OUT/send.txt" NO_COLOR=1 -- send "$(lab_addr 2):$port" hello --encryption none --timeout 10; status=$?
    expect_eq "$status" 3 "nearby send, declined" || { show "$OUT/send.txt" "$OUT/server-1.out"; return 1; }
    text_clean "$OUT/send.txt" "send's terminal" || { show "$OUT/send.txt"; return 1; }
    # The error is wrapped between words to the terminal: its lines read as one.
    plain "$OUT/send.txt" | tr -s ' \r\n' ' ' | grep -qE 'error: .*declined the invitation: bye\\u\{1b\}]52;c;' \
        || { fail "the error line, escaped"; show "$OUT/send.txt"; return 1; }

    text_rogue 2 "$OUT/server-2.out" server "$port" || return 1
    await "$OUT/server-2.out" 'select(.listening)' 10 "the hostile server, again" >/dev/null || return 1
    term_run 1 "$OUT/invite.txt" NO_COLOR=1 -- invite "$(lab_addr 2):$port" --encryption none --timeout 10 --json; status=$?
    expect_eq "$status" 3 "nearby invite --json, declined" || { show "$OUT/invite.txt" "$OUT/server-2.out"; return 1; }
    text_clean "$OUT/invite.txt" "invite's terminal (--json)" || { show "$OUT/invite.txt"; return 1; }
    tr -s ' \r\n' ' ' <"$OUT/invite.txt" | grep -qa 'nearby: error: .*declined the invitation: bye\\u{1b}]52;c;' \
        || { fail "the nearby: error: sentence, escaped"; show "$OUT/invite.txt"; return 1; }
    text_decodes "$OUT/invite.txt" "$OUT/hostile.json" \
        'select(.event=="error" and .code=="declined" and (.message | contains($h.reason)))' || return 1
}

test_hostile_text_floods_are_summarised() {
    trap stop_started RETURN
    local node port udp lines errs rejected held status
    nb_bg 1 "$OUT/node.jsonl" advertise --service s-text-flood --auto-accept -v || return 1
    node=$PID
    port=$(sec_port "$OUT/node.jsonl") || return 1
    text_rogue 2 "$OUT/flood.out" flood "$(lab_addr 1)" "$port" 2000 || return 1
    local flood=$PID sent
    nb 3 send "$(lab_addr 1):$port" "during the flood" --service s-text-flood >"$OUT/during.jsonl" 2>"$OUT/during.err"; status=$?
    expect_eq "$status" 0 "a real peer's send during the flood" || { show "$OUT/during.jsonl"; return 1; }
    exits "$flood" 60 0 "the flood" || { show "$OUT/flood.out"; return 1; }
    sent=$(jq -r 'select(.sent) | .sent' "$OUT/flood.out")
    # The session opened the node's UDP socket: 20,000 datagrams that are not nearby's.
    udp=$(grep -oE 'UDP port [0-9]+' "$OUT/node.jsonl.err" | head -1 | grep -oE '[0-9]+$')
    [[ -n $udp ]] || { fail "no UDP port in the -v log"; show "$OUT/node.jsonl"; return 1; }
    text_rogue 2 "$OUT/datagrams.out" datagrams "$(lab_addr 1)" "$udp" 20000 || return 1
    exits "$PID" 30 0 "the datagram flood" || return 1
    nb 3 send "$(lab_addr 1):$port" "after the flood" --service s-text-flood >"$OUT/after.jsonl" 2>"$OUT/after.err" \
        || { fail "a send after the flood failed"; show "$OUT/after.jsonl"; return 1; }
    await "$OUT/node.jsonl" 'select(.event=="message" and .text=="after the flood")' 5 "the message after the flood" >/dev/null || return 1
    # The summaries come when their 10 s are over, whether the flood goes on or not.
    local deadline=$(( $(now_ms) + 15000 )) summaries=0
    until grep -q '"event":"suppressed"' "$OUT/node.jsonl" && grep -qE '… and [0-9,]+ more like "dropped a datagram' "$OUT/node.jsonl.err"; do
        (( $(now_ms) < deadline )) || { summaries=1; break; }
        sleep 0.2
    done
    kill -INT "$node"; exits "$node" 10 0 "the node" || return 1
    lines=$(wc -l <"$OUT/node.jsonl"); errs=$(wc -l <"$OUT/node.jsonl.err")
    rejected=$(count_json "$OUT/node.jsonl" 'select(.event=="rejected")')
    held=$(jq -s '[.[] | select(.event=="suppressed" and .of=="rejected") | .count] | add // 0' "$OUT/node.jsonl")
    printf '    2,000 foreign connections (%s sent a request), 20,000 foreign datagrams: %s stdout lines (%s rejected + %s counted), %s stderr lines\n' \
        "$sent" "$lines" "$rejected" "$held" "$errs"
    expect_json "$OUT/node.jsonl" 'select(.event=="message" and .text=="during the flood")' "the message during the flood" || return 1
    (( summaries == 0 )) || { fail "no summary event, or no summary of the dropped datagrams on stderr, within 15 s"; return 1; }
    (( lines <= 50 )) || { fail "stdout: $lines lines (at most 50)"; return 1; }
    (( errs <= 50 )) || { fail "stderr: $errs lines (at most 50)"; return 1; }
    (( rejected + held == sent )) || { fail "rejected shown + counted: $rejected + $held, expected $sent"; return 1; }
}

test_hostile_text_protocol_violations_are_summarised() {
    trap stop_started RETURN
    local node port lines errs shown held
    nb_bg 1 "$OUT/node.jsonl" advertise --service s-text-viol --encryption none --auto-accept -v || return 1
    node=$PID
    port=$(sec_port "$OUT/node.jsonl") || return 1
    text_rogue 2 "$OUT/rogue.out" violations "$(lab_addr 1)" "$port" 300 || return 1
    exits "$PID" 60 0 "300 links breaking the protocol" || { show "$OUT/rogue.out"; return 1; }
    await "$OUT/rogue.out" 'select(.cut == 300)' 1 "every link cut" >/dev/null || return 1
    nb 3 send "$(lab_addr 1):$port" "after the violations" --encryption none --service s-text-viol >"$OUT/send.jsonl" 2>&1 \
        || { fail "a real peer's send after the violations"; show "$OUT/send.jsonl" "$OUT/rogue.out"; tail -5 "$OUT/node.jsonl"; return 1; }
    kill -INT "$node"; exits "$node" 10 0 "the node" || return 1
    lines=$(wc -l <"$OUT/node.jsonl"); errs=$(wc -l <"$OUT/node.jsonl.err")
    shown=$(count_json "$OUT/node.jsonl" 'select(.event=="error" and .code=="protocol-violation")')
    held=$(jq -s '[.[] | select(.event=="suppressed" and .of=="error" and .code=="protocol-violation") | .count] | add // 0' "$OUT/node.jsonl")
    printf '    300 links breaking the protocol: %s stdout lines (%s errors + %s counted), %s stderr lines\n' "$lines" "$shown" "$held" "$errs"
    (( shown + held == 300 )) || { fail "errors shown + counted: $shown + $held, expected 300"; show "$OUT/node.jsonl"; return 1; }
    (( lines <= 30 )) || { fail "stdout: $lines lines (at most 30)"; return 1; }
    (( errs <= 40 )) || { fail "stderr: $errs lines (at most 40)"; return 1; }
    text_clean "$OUT/node.jsonl.err" "the node's -v log" || return 1
    text_clean "$OUT/node.jsonl" "the node's JSON lines" || return 1
}
