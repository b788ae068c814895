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

# --- A responder's manners (issue 60, item 5): over-eager announcing, answers nobody asked for, a
# second stack taking the daemon's unicast queries. The faults are made on the wire by a program
# on a lab host; the healthy lab (avahi starting, announcing, probing, renaming) names none of them.

WATCH_MANNERS='select(.event=="finding" and (.rule=="over-eager-announcer" or .rule=="unasked-answers" or .rule=="unicast-unanswered"))'

# show_findings FILE — each finding of FILE, one line for people.
show_findings() { jq -r 'select(.event=="finding") | "    finding \(.rule) on \(.host): \(.evidence)"' "$1" | cut -c1-240; }

# A program on h3 multicasts a service's records every 100 ms, unasked (RFC 6762 §6.2 allows once a
# second, §8.3 announcements a second apart): over-eager-announcer on h3, once; nothing else of
# the manners' rules (copies under a second apart are not unasked-answers' to count).
test_watch_real_names_an_over_eager_announcer() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    lab_run 3 python3 "$WATCH_REAL_PEER" announce --from 10.99.0.3 --name eager._wr-eager._tcp.local --every 0.1 --count 30 >/dev/null \
        || { fail "the announcer failed"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="over-eager-announcer")' 5) || {
        fail "no over-eager-announcer finding"; show_findings "$OUT/watch.jsonl" >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    expect_eq "$(jq -r .host <<<"$line")" 10.99.0.3 "the host the finding names" || return 1
    [[ $(jq -r .evidence <<<"$line") =~ about\ every\ (9[0-9]|1[0-4][0-9])\ ms ]] || { fail "the evidence does not say about every 100 ms"; return 1; }
    watch_stop watch || return 1
    expect_eq "$(count_json "$OUT/watch.jsonl" "$WATCH_MANNERS")" 1 "findings of the manners' rules (this one alone)" || { show_findings "$OUT/watch.jsonl" >&2; return 1; }
}

# A program on h3 multicasts the same records every second, 10 times, with no question for them
# on the link: past RFC 6762 §8.3's 8 announcements, unasked-answers on h3. A second apart is what
# §6.2 allows, so it is no over-eager announcer.
test_watch_real_names_answers_nobody_asked() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    lab_run 3 python3 "$WATCH_REAL_PEER" announce --from 10.99.0.3 --name unasked._wr-unasked._tcp.local --every 1 --count 10 >/dev/null \
        || { fail "the responder failed"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="unasked-answers")' 3) || {
        fail "no unasked-answers finding"; show_findings "$OUT/watch.jsonl" >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    expect_eq "$(jq -r .host <<<"$line")" 10.99.0.3 "the host the finding names" || return 1
    [[ $(jq -r .evidence <<<"$line") == *"unchanged, 9 times"* ]] || { fail "the evidence does not count 9 copies"; return 1; }
    watch_stop watch || return 1
    expect_eq "$(count_json "$OUT/watch.jsonl" "$WATCH_MANNERS")" 1 "findings of the manners' rules (this one alone)" || { show_findings "$OUT/watch.jsonl" >&2; return 1; }
}

# A second mDNS stack on h2 beside its avahi-daemon (watch_real_peer.py stack: 5353 with
# SO_REUSEPORT, bound to nb0 as a stack serving one link binds; the kernel then hands it every
# unicast datagram to 5353 — with SO_REUSEPORT alone it shares them by address and port, so some
# would still reach avahi). h1 asks h2's name by unicast: avahi alone answers 3 of 3; beside the
# second stack 0 of 10, and watch names unicast-unanswered on h2 both where the queries leave (h1)
# and where they arrive (h2). Then stopped: answered again.
test_watch_real_names_a_second_stack_taking_unicast_queries() {
    trap 'kill -INT ${WATCH_PID:-} ${WATCH2_PID:-} 2>/dev/null; kill -TERM ${STACK_PID:-} 2>/dev/null' EXIT
    watch_start 2 watch2 --interface nb0 || return 1
    WATCH2_PID=$WATCH_PID
    watch_start 1 watch --interface nb0 || return 1
    local answer line waited
    answer=$(lab_run 1 python3 "$MDNS_PEER" query --to 10.99.0.2 --name h2.local --count 3 --wait 1) || { fail "the query script failed"; return 1; }
    expect_eq "$(jq -r .answered <<<"$answer")" 3 "unicast queries h2's daemon answered alone" || return 1
    lab_bg 2 "$OUT/stack.txt" python3 "$WATCH_REAL_PEER" stack --address 10.99.0.2 --seconds 60 >/dev/null; STACK_PID=$LAB_PID
    for ((waited = 0; waited < 50; waited++)); do grep -q bound "$OUT/stack.txt" 2>/dev/null && break; sleep 0.1; done
    grep -q bound "$OUT/stack.txt" || { fail "the second stack did not bind 5353"; cat "$OUT/stack.txt.err" >&2; return 1; }
    lab_run 2 ss -H -lupn 'sport = :5353' | sed 's/^/    ss on h2: /'
    answer=$(lab_run 1 python3 "$MDNS_PEER" query --to 10.99.0.2 --name h2.local --count 10 --wait 0.5) || { fail "the query script failed"; return 1; }
    echo "    beside the second stack: $answer"
    expect_eq "$(jq -r .answered <<<"$answer")" 0 "unicast queries h2's daemon answered beside the second stack" || return 1
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="unicast-unanswered")' 3) || {
        fail "no unicast-unanswered finding"; show_findings "$OUT/watch.jsonl" >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    expect_eq "$(jq -r '"\(.host) \(.name)"' <<<"$line")" "10.99.0.2 h2.local. A" "the host and question the finding names" || return 1
    line=$(lab_wait_line "$OUT/watch2.jsonl" 'select(.event=="finding" and .rule=="unicast-unanswered")' 3) || {
        fail "no unicast-unanswered finding from watch on h2 itself"; show_findings "$OUT/watch2.jsonl" >&2; return 1; }
    expect_eq "$(jq -r '"\(.host) \(.name)"' <<<"$line")" "10.99.0.2 h2.local. A" "what watch on h2 names" || return 1
    kill -TERM "$STACK_PID"; lab_wait_pid "$STACK_PID" 5
    echo "    the second stack: $(tail -n 1 "$OUT/stack.txt")"
    expect_eq "$(tail -n 1 "$OUT/stack.txt" | jq -r .unicast)" 10 "unicast queries the second stack took" || return 1
    answer=$(lab_run 1 python3 "$MDNS_PEER" query --to 10.99.0.2 --name h2.local --count 3 --wait 1)
    expect_eq "$(jq -r .answered <<<"$answer")" 3 "unicast queries answered once the second stack is gone" || return 1
    watch_stop watch || return 1
    expect_eq "$(count_json "$OUT/watch.jsonl" "$WATCH_MANNERS")" 1 "findings of the manners' rules (this one alone)" || { show_findings "$OUT/watch.jsonl" >&2; return 1; }
    WATCH_PID=$WATCH2_PID watch_stop watch2 || return 1
    expect_eq "$(count_json "$OUT/watch2.jsonl" "$WATCH_MANNERS")" 1 "findings of the manners' rules on h2 (this one alone)" || { show_findings "$OUT/watch2.jsonl" >&2; return 1; }
}

# The healthy lab, with all the announcing and probing real daemons do: watch on h1 from before
# h2's avahi-daemon restarts (probes, announcements), through nearby advertising on h2 and
# browsing on h3, avahi-browse resolving everything on h4, unicast queries h2 answers, h3's daemon
# restarted with h2's host name (a conflict, h2's defence, h3's rename to h2-2) and back. None of
# the manners' rules names anyone: the rename (and a conflict) are the only findings.
test_watch_real_a_healthy_lab_names_no_manners_fault() {
    trap 'kill -INT ${WATCH_PID:-} ${ADV_PID:-} 2>/dev/null; lab_avahi_restore 3; trap - RETURN' RETURN
    watch_start 1 watch || return 1
    lab_stop_avahi 2 && lab_start_avahi 2 || { fail "restarting h2's avahi-daemon"; return 1; }
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.meaning[]; .kind=="address" and .host=="h2.local."))' 15 >/dev/null || {
        fail "h2 never announced its name"; return 1; }
    advertise 2 wr-healthy || return 1
    lab_run 3 "$NEARBY" browse --service wr-healthy --timeout 3 >/dev/null 2>&1
    lab_run 4 avahi-browse -art >/dev/null 2>&1
    # 4 queries: a fifth at once would be a chatty querier (RFC 6762 §5.2), which is this script's fault.
    local answer
    answer=$(lab_run 1 python3 "$MDNS_PEER" query --to 10.99.0.2 --name h2.local --count 4 --wait 1)
    expect_eq "$(jq -r .answered <<<"$answer")" 4 "unicast queries h2's daemon answered" || return 1
    lab_avahi_reconfigure 3 's/^host-name=h3$/host-name=h2/' || { fail "h3's avahi-daemon did not start"; return 1; }
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="rename")' 15 >/dev/null || { fail "no rename"; show_findings "$OUT/watch.jsonl" >&2; return 1; }
    lab_avahi_restore 3 || { fail "h3's avahi-daemon did not start again"; return 1; }
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.3" and any(.meaning[]; .kind=="address" and .host=="h3.local."))' 15 >/dev/null || {
        fail "h3 never announced its own name again"; return 1; }
    # While h3's daemon announces its name again (1 s, then 2 s apart), h1 asks it by unicast.
    answer=$(lab_run 1 python3 "$MDNS_PEER" query --to 10.99.0.3 --name h3.local --count 4 --wait 1)
    expect_eq "$(jq -r .answered <<<"$answer")" 4 "unicast queries h3's daemon answered" || return 1
    stop "$ADV_PID" >/dev/null
    watch_stop watch || return 1
    show_findings "$OUT/watch.jsonl"
    echo "    $(jq -c 'select(.event=="summary") | {packets, findings, rules}' "$OUT/watch.jsonl")"
    expect_eq "$(count_json "$OUT/watch.jsonl" "$WATCH_MANNERS")" 0 "findings of the manners' rules in a healthy lab" || return 1
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .rule!="rename" and .rule!="conflict")')" 0 \
        "findings other than the rename and conflict" || return 1
}

# --- A fault under noise (issue 60, item 2): one host's noise never hides another host's fault.

# ttl_noise K — host K multicasts 21 answers of 50 A records each, every name its own, TTL 1:
# 1,050 ttl findings on that host. Waits until watch ($OUT/watch.jsonl, or the screen) saw the last.
ttl_noise() {
    lab_run "$1" python3 "$WATCH_REAL_PEER" ttl-noise --from "10.99.0.$1" --packets 21 --records 50 >/dev/null || { fail "h$1's noise"; return 1; }
}

# last_frame FILE — the last table a terminal showed in FILE (pty_run.py's bytes): what follows the
# last cursor-home, its line clears taken out.
last_frame() {
    python3 -c 'import sys; data = open(sys.argv[1], "rb").read().split(b"\x1b[H")[-1].split(b"\x1b[J")[0]
sys.stdout.write(data.replace(b"\x1b[K", b"").replace(b"\r", b"").decode("utf-8", "replace"))' "$1"
}

# 21 packets of TTL-1 records from h4 (1,050 ttl findings), then a real rename: h3's avahi-daemon
# restarted with h2's host name, h2 defends it, h3 becomes h2-2. The rename prints as a finding
# line; h4's noise prints 5 (its rule-and-host budget for the minute) and the summary counts all.
test_watch_real_prints_a_rename_after_one_hosts_ttl_noise() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null; lab_avahi_restore 3; trap - RETURN' RETURN
    watch_start 1 watch --interface nb0 || return 1
    ttl_noise 4 || return 1
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.4" and any(.answers[]; .name=="t20-49.local."))' 5 >/dev/null || {
        fail "watch did not see h4's last packet"; return 1; }
    lab_avahi_reconfigure 3 's/^host-name=h3$/host-name=h2/' || { fail "h3's avahi-daemon did not start"; return 1; }
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="rename")' 15) || {
        fail "no rename finding after h4's noise"; show_findings "$OUT/watch.jsonl" | tail -n 8 >&2; return 1; }
    echo "    $(jq -r '"\(.rule) on \(.host): \(.evidence)"' <<<"$line")"
    [[ $(jq -r .host <<<"$line") == 10.99.0.3 || $(jq -r .host <<<"$line") == "$(link_local 3)" ]] || { fail "the rename names $(jq -r .host <<<"$line"), not h3"; return 1; }
    watch_stop watch || return 1
    echo "    $(jq -c 'select(.event=="summary") | {findings, findings_suppressed, rules}' "$OUT/watch.jsonl")"
    expect_eq "$(count_json "$OUT/watch.jsonl" 'select(.event=="finding" and .rule=="ttl" and .host=="10.99.0.4")')" 5 "h4's ttl findings printed" || return 1
    expect_json "$OUT/watch.jsonl" 'select(.event=="summary" and .rules.ttl >= 1050 and .findings_suppressed >= 1045)' "the summary counts h4's noise" || return 1
}

# The same at a terminal of 24 rows: h4's noise, h3's rename, then more noise from h5 and h6 (10
# more ttl findings printed, twice what the FINDINGS panel holds). The last frame shows the whole
# panel, its 5 findings, the rename among them: the panel keeps the most severe, the noise pushes
# out only noise, and the table the noise fills (1,050 host names) never pushes the panel off the
# screen.
test_watch_real_keeps_a_rename_in_the_findings_panel_under_noise() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null; lab_avahi_restore 3; trap - RETURN' RETURN
    watch_at_a_terminal 24 || return 1
    local waited host frame
    ttl_noise 4 || return 1
    lab_avahi_reconfigure 3 's/^host-name=h3$/host-name=h2/' || { fail "h3's avahi-daemon did not start"; return 1; }
    for ((waited = 0; waited < 150; waited++)); do grep -aq "finding rename on" "$OUT/screen.txt" 2>/dev/null && break; sleep 0.1; done
    grep -aq "finding rename on" "$OUT/screen.txt" || { fail "no rename on the screen after h4's noise"; last_frame "$OUT/screen.txt" | tail -n 20 >&2; return 1; }
    for host in 5 6; do ttl_noise "$host" || return 1; done
    for ((waited = 0; waited < 100; waited++)); do last_frame "$OUT/screen.txt" | grep -q "finding ttl on 10.99.0.6" && break; sleep 0.1; done
    frame=$(last_frame "$OUT/screen.txt")
    kill -INT "$WATCH_PID"; lab_wait_pid "$WATCH_PID" 10
    expect_eq "$?" 0 "watch's exit status after Ctrl-C" || return 1
    local panel
    panel=$(awk '/^FINDINGS/ { on = 1; next } on && /^  / { print; next } { on = 0 }' <<<"$frame")
    sed 's/^/    panel: /' <<<"$panel" | cut -c1-160
    [[ $panel == *"finding ttl on 10.99.0.6"* ]] || { fail "the last frame was drawn before h6's noise"; printf '%s\n' "$frame" | tail -n 30 >&2; return 1; }
    [[ $panel == *"finding rename on"* ]] || { fail "the FINDINGS panel lost the rename to the noise"; printf '%s\n' "$frame" | tail -n 30 >&2; return 1; }
    expect_eq "$(grep -c . <<<"$panel")" 5 "findings the panel shows on 24 rows" || { printf '%s\n' "$frame" | cut -c1-100 >&2; return 1; }
}
