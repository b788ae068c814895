# End-to-end tests of `nearby watch` against what real networks carry (issue 60): packets the
# host's daemon takes — IPv6 behind extension headers, answers in IP fragments — live within 2 s;
# amplifying records bounded; names as people wrote them; a fault after a flood of noise still
# printed; `--read` of pcapng, and ending on a signal whatever it waits on. Packets are made by
# tests/e2e/watch_real_peer.py on a lab host and leave through that host's kernel; the names come
# from the hosts' real avahi-daemons. Uses watch.sh's watch_start / watch_stop.

WATCH_REAL_PEER=$ROOT/tests/e2e/watch_real_peer.py

# link_local K — host K's IPv6 link-local address on the lab's link.
link_local() {
    ip -n "$(lab_ns "$1")" -6 -o addr show dev "$LAB_IFACE" scope link | awk '{ sub("/.*", "", $4); print $4; exit }'
}

# An IPv6 answer behind a Destination Options header (avahi takes it: avahi-resolve on h1 returns
# its address) appears in live watch on h1 within 2 s of h3 sending it.
test_watch_real_sees_an_ipv6_answer_behind_destination_options() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    local h3 line
    h3=$(link_local 3)
    lab_run 3 python3 "$WATCH_REAL_PEER" dstopts --name dstopts-e2e.local --address fd00::60 >/dev/null || { fail "the script failed"; return 1; }
    line=$(lab_wait_line "$OUT/watch.jsonl" "select(.event==\"packet\" and .source==\"$h3\" and any(.answers[]; .name==\"dstopts-e2e.local.\" and .data==\"fd00::60\"))" 2) || {
        fail "no packet in live watch within 2 s"; tail -n 5 "$OUT/watch.jsonl" >&2; return 1; }
    echo "    live watch: $(jq -c '{source, answers: [.answers[] | "\(.name) \(.type) \(.data)"]}' <<<"$line")"
    lab_run 1 avahi-resolve -6 -n dstopts-e2e.local 2>&1 | sed 's/^/    avahi-resolve on h1: /'
    watch_stop watch
}

# A 2,567-byte answer leaves h3 in IPv4 fragments: live watch shows it whole (its A and TXT
# records, 2,567 bytes) within 2 s, and names it oversize.
test_watch_real_sees_a_fragmented_answer() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    lab_run 3 python3 "$WATCH_REAL_PEER" fragmented --from 10.99.0.3 --name frag-e2e.local --size 2567 >/dev/null || { fail "the script failed"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.3" and .size==2567
        and any(.answers[]; .name=="frag-e2e.local." and .type=="A") and any(.answers[]; .type=="TXT"))' 2) || {
        fail "no 2,567-byte packet in live watch within 2 s"; jq -c 'select(.source=="10.99.0.3")' "$OUT/watch.jsonl" | cut -c1-300 | tail -n 3 >&2; return 1; }
    echo "    live watch: a $(jq .size <<<"$line")-byte response, $(jq '.answers | length' <<<"$line") answers, $(wc -c <<<"$line") bytes of JSON"
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="oversize" and .host=="10.99.0.3" and (.evidence|contains("IP fragments")))' 2 >/dev/null || {
        fail "no oversize finding for the fragmented answer"; return 1; }
    watch_stop watch
}

# One NSEC answer of about 1,404 bytes whose bitmap names ~10,000 types is one packet line of at
# most 16 KB (it was ~92 KB), saying how many types it left out.
test_watch_real_bounds_an_nsec_answer() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    local sent line
    sent=$(lab_run 3 python3 "$WATCH_REAL_PEER" nsec --from 10.99.0.3 --name nsec-e2e.local --size 1404) || { fail "the script failed"; return 1; }
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.3" and any(.answers[]; .type=="NSEC"))' 5) || {
        fail "no NSEC packet"; return 1; }
    echo "    a $(jq .sent <<<"$sent")-byte NSEC answer: $(wc -c <<<"$line") bytes of JSON: $(jq -r '.answers[0].data' <<<"$line" | cut -c1-120)"
    (($(wc -c <<<"$line") <= 16384)) || { fail "the packet line is over 16 KB"; return 1; }
    [[ $(jq -r '.answers[0].data' <<<"$line") == *"more types"* ]] || { fail "the summary does not say what it left out"; return 1; }
    watch_stop watch
}

# h2's avahi-daemon publishes "Küche’s TV" (the apostrophe iPhones use): watch shows the name as
# UTF-8 in JSON and in its lines for people, not as \195\188.
test_watch_real_shows_names_as_utf8() {
    trap 'kill -INT ${WATCH_PID:-} ${PUB_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    lab_bg 2 "$OUT/publish.txt" avahi-publish -s "Küche’s TV" _wr-utf8._tcp 8080 "n=Küche’s TV" >/dev/null; PUB_PID=$LAB_PID
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.meaning[]; .kind=="announced" and .service=="_wr-utf8._tcp.local."))' 15) || {
        fail "no announcement of the UTF-8 name"; return 1; }
    echo "    $(jq -c '[.meaning[] | select(.kind=="announced") | .name]' <<<"$line")"
    expect_json "$OUT/watch.jsonl" 'select(.event=="packet" and any(.meaning[]; .name=="Küche’s TV._wr-utf8._tcp.local."))' "the instance as UTF-8 in JSON" || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="packet" and any(.answers[], .additional[]; .type=="TXT" and .data=="\"n=Küche’s TV\""))' "its TXT as UTF-8" || return 1
    grep -q '\\195' "$OUT/watch.jsonl" && { fail "a name still escaped byte by byte"; grep -m1 '\\195' "$OUT/watch.jsonl" | cut -c1-200 >&2; return 1; }
    watch_stop watch || return 1
    # The same at a terminal: the lines for people.
    watch_at_a_terminal || return 1
    kill -INT "$PUB_PID"; lab_wait_pid "$PUB_PID" 5
    lab_bg 2 "$OUT/publish2.txt" avahi-publish -s "Küche’s TV" _wr-utf8._tcp 8080 >/dev/null; PUB_PID=$LAB_PID
    local waited
    for ((waited = 0; waited < 100; waited++)); do grep -q "Küche’s TV._wr-utf8" "$OUT/screen.txt" 2>/dev/null && break; sleep 0.1; done
    grep -q "Küche’s TV._wr-utf8" "$OUT/screen.txt" || { fail "the terminal does not show the name as UTF-8"; grep -a "wr-utf8" "$OUT/screen.txt" | tail -n 2 | cat -v >&2; return 1; }
    kill -INT "$WATCH_PID"; lab_wait_pid "$WATCH_PID" 10
}

# A pcapng capture (what Wireshark writes): 1,000 malformed packets from 1,000 sources, then a
# real conflict. watch --read prints the conflict; the malformed findings stop at their rule's
# budget and the summary counts the rest.
test_watch_real_prints_a_conflict_after_a_thousand_malformed_packets() {
    python3 "$WATCH_REAL_PEER" pcapng --out "$OUT/noise.pcapng" >/dev/null || { fail "writing the capture"; return 1; }
    chmod 0644 "$OUT/noise.pcapng"
    lab_run 1 "$NEARBY" watch --read "$OUT/noise.pcapng" --json >"$OUT/read.jsonl" 2>"$OUT/read.err"
    expect_eq "$?" 0 "watch --read of the pcapng file" || { cat "$OUT/read.err" >&2; return 1; }
    echo "    $(jq -c 'select(.event=="summary") | {packets, malformed, findings, findings_suppressed, rules}' "$OUT/read.jsonl")"
    expect_json "$OUT/read.jsonl" 'select(.event=="finding" and .rule=="conflict" and .name=="h9.local." and .host=="10.99.0.8")' "the conflict, printed" || return 1
    expect_json "$OUT/read.jsonl" 'select(.event=="summary" and .packets==1003 and .malformed==1000)' "every packet read" || return 1
    (($(count_json "$OUT/read.jsonl" 'select(.event=="finding" and .rule=="malformed")') <= 100)) || { fail "more than 100 malformed findings printed"; return 1; }
}

# --read ends within 3 s of SIGINT on a FIFO no one writes to, and of SIGTERM on a pipe from a
# program that writes nothing (`sleep 20 | nearby watch --read /dev/stdin`): exit 0, a summary.
# A file that is not there is said in words.
test_watch_real_read_ends_on_a_signal_whatever_it_waits_on() {
    trap 'kill ${SLEEP_PID:-} 2>/dev/null' EXIT
    mkfifo -m 0666 "$OUT/fifo"
    local pid watch started waited
    # The nearby process under $1 once it catches signal mask $2 (its handler is installed).
    watch_catching() {
        local p
        for p in "$1" $(descendants "$1"); do
            [[ $(cat "/proc/$p/comm" 2>/dev/null) == nearby ]] || continue
            (( 0x$(awk '/^SigCgt/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0) & $2 )) && { echo "$p"; return 0; }
        done
        return 1
    }
    lab_bg 1 "$OUT/fifo.jsonl" "$NEARBY" watch --read "$OUT/fifo" --json >/dev/null
    pid=$LAB_PID
    for ((waited = 0; waited < 100; waited++)); do watch=$(watch_catching "$pid" 2) && break; sleep 0.1; done
    [[ -n $watch ]] || { fail "watch --read FIFO never caught SIGINT"; return 1; }
    started=${EPOCHREALTIME/[.,]/}
    kill -INT "$watch"
    lab_wait_pid "$pid" 3
    expect_eq "$?" 0 "watch --read FIFO: exit status within 3 s of SIGINT" || { cat "$OUT/fifo.jsonl.err" >&2; return 1; }
    echo "    FIFO with no writer: ended $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 )) ms after SIGINT"
    expect_json "$OUT/fifo.jsonl" 'select(.event=="summary" and .packets==0)' "a summary as it ends" || return 1
    # The user's own shell and pipe (a pipe root made is not theirs to open as /dev/stdin).
    lab_bg 1 "$OUT/pipe.jsonl" "$ROOT/tests/lab/as-user" bash -c "sleep 20 | \"$NEARBY_BIN\" watch --read /dev/stdin --json" >/dev/null
    pid=$LAB_PID watch=
    for ((waited = 0; waited < 100; waited++)); do watch=$(watch_catching "$pid" 0x4000) && break; sleep 0.1; done
    [[ -n $watch ]] || { fail "watch --read /dev/stdin never caught SIGTERM"; return 1; }
    SLEEP_PID=$(pgrep -n -x sleep -P "$pid")
    started=${EPOCHREALTIME/[.,]/}
    kill -TERM "$watch"
    for ((waited = 0; waited < 30; waited++)); do kill -0 "$watch" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$watch" 2>/dev/null || { fail "watch --read /dev/stdin still running 3 s after SIGTERM"; return 1; }
    echo "    a pipe that writes nothing: ended $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 )) ms after SIGTERM"
    lab_wait_line "$OUT/pipe.jsonl" 'select(.event=="summary")' 2 >/dev/null || { fail "no summary after SIGTERM"; cat "$OUT/pipe.jsonl.err" >&2; return 1; }
    lab_run 1 "$NEARBY" watch --read /nonexistent --json >"$OUT/none.jsonl" 2>"$OUT/none.err"
    expect_eq "$?" 8 "exit status for a file that is not there" || return 1
    sed 's/^/    stderr: /' "$OUT/none.err"
    grep -q "NSCocoaErrorDomain\|NSURL\|Code=" "$OUT/none.err" && { fail "Foundation's words on stderr"; return 1; }
    grep -q "no such file" "$OUT/none.err" || { fail "stderr does not say there is no such file"; return 1; }
}
