# End-to-end tests of `nearby watch` under floods (issue 60, item 3): memory bounded at a terminal
# whatever the flood holds (amplifying NSEC answers, one name with new data in every packet, many
# sources and names), and watch saying it samples when a flood is past what it decodes — while
# another host's packets are still decoded. The floods come from tests/e2e/watch_flood_peer.py on
# h3 (Ethernet frames on a packet socket, so each may carry a source of its own). Uses watch.sh's
# watch_binary / watch_start / watch_at_a_terminal.

WATCH_FLOOD_PEER=$ROOT/tests/e2e/watch_flood_peer.py

# watch_nearby_pid PID — the nearby process under PID (pty_run.py, setpriv).
watch_nearby_pid() {
    local p
    for p in "$1" $(descendants "$1"); do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == nearby ]] && { echo "$p"; return 0; }
    done
    return 1
}

# At a terminal (a 160-column pty) watch on h1 takes three floods from h3 one after the other:
# NSEC answers of ~1,400 bytes naming ~10,000 types each, from 3,000 sources under 5,000 names;
# TXT answers of 8,000 bytes (IP fragments) from 4 sources under 64 names, new in every packet, for 30 s (main kept
# every one a source sent for a name under a second apart); and services, TXT, NSEC and questions from 3,000 sources under 100,000 names.
# Its peak RSS (VmHWM) stays at most 64 MB, and its top line says it samples.
test_watch_flood_keeps_memory_under_64_mb_at_a_terminal() {
    trap 'kill -INT ${WATCH_PID:-} 2>/dev/null' EXIT
    watch_at_a_terminal || return 1
    local nearby kind sent hwm
    nearby=$(watch_nearby_pid "$WATCH_PID") || { fail "no nearby process under the pty"; return 1; }
    for kind in "nsec --seconds 6 --sources 3000 --names 5000" "txt --seconds 30 --sources 4 --names 64 --size 8000" "mixed --seconds 10 --sources 3000 --names 100000"; do
        # shellcheck disable=SC2086 # the words of $kind are options
        sent=$(lab_run 3 python3 "$WATCH_FLOOD_PEER" flood --kind $kind --rate 8000) || { fail "the flood ($kind) failed"; return 1; }
        kill -0 "$nearby" 2>/dev/null || { fail "watch ended during the flood ($kind)"; tail -n 20 "$OUT/screen.txt" | cat -v >&2; return 1; }
        echo "    flood $kind: $(jq -r '"\(.sent) packets in \(.seconds) s"' <<<"$sent"); watch now $(awk '/^VmRSS/ {print $2}' "/proc/$nearby/status") kB"
    done
    hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$nearby/status")
    kill -INT "$WATCH_PID"
    lab_wait_pid "$WATCH_PID" 10
    expect_eq "$?" 0 "watch's exit status after Ctrl-C" || return 1
    echo "    peak RSS at a terminal: $((hwm / 1024)) MB; $(tr -d '\r' <"$OUT/screen.txt" | grep -a -o '[0-9]* packets ([0-9]* malformed[^)]*)' | tail -n 1)"
    ((hwm <= $(mem_mb 64) * 1024)) || { fail "peak RSS $hwm kB, over $(mem_mb 64) MB"; return 1; }
    grep -a -q "sampling 1 in [0-9]* (" "$OUT/screen.txt" || { fail "the top line never said watch samples"; tail -n 5 "$OUT/screen.txt" | cat -v >&2; return 1; }
}

# A flood from one source past what watch decodes of it (500 packets a second per source): watch
# says so in a `sampling` event (1 in how many, how many counted and not decoded) and counts the
# rest in its summary, while h2's questions in the middle of the flood are still decoded. Not timed:
# a flood from one source is past the budget however fast this machine is.
test_watch_flood_says_it_samples() {
    trap 'kill -INT ${WATCH_PID:-} ${FLOOD_PID:-} 2>/dev/null' EXIT
    watch_start 1 watch --interface nb0 || return 1
    lab_bg 3 "$OUT/flood.json" python3 "$WATCH_FLOOD_PEER" flood --kind nsec --rate 10000 --seconds 6 >/dev/null; FLOOD_PID=$LAB_PID
    local line
    line=$(lab_wait_line "$OUT/watch.jsonl" 'select(.event=="sampling" and .every >= 2 and .skimmed > 0)' 10) || {
        fail "no sampling event under the flood"; jq -c 'select(.event!="packet")' "$OUT/watch.jsonl" | tail -n 5 >&2; return 1; }
    echo "    $line"
    lab_run 2 python3 "$MDNS_PEER" chatty --from 10.99.0.2 --name beside-the-flood.local --count 3 --every 0.3 >/dev/null
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="packet" and .source=="10.99.0.2" and any(.questions[]; .name=="beside-the-flood.local."))' 5 >/dev/null || {
        fail "h2's question, sent during the flood, was not decoded"; return 1; }
    lab_wait_pid "$FLOOD_PID" 20 >/dev/null
    echo "    flood: $(cat "$OUT/flood.json")"
    lab_wait_line "$OUT/watch.jsonl" 'select(.event=="sampling" and .every == 1)' 10 >/dev/null || {
        fail "no sampling event saying every packet is decoded again"; return 1; }
    watch_stop watch || return 1
    echo "    $(jq -c 'select(.event=="summary") | {packets, skimmed, dropped}' "$OUT/watch.jsonl")"
    expect_json "$OUT/watch.jsonl" 'select(.event=="summary" and .skimmed > 0)' "the summary counts what was not decoded"
}
