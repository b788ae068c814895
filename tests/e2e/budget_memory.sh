# End-to-end tests of what a peer can make a node hold in memory, and of output that never stops
# the network (issue 31; docs/security.md, "Memory and output"). The test peer is
# tests/e2e/rogue_memory.py: sessions that flood 1 MiB messages, TLS connections that send an
# unfinished 1 MiB hello and reconnect, local clients that send endless control request lines.
# Each test checks the node alive, what it held at its peak below 60 MB (bm_check), and a friend on host 3
# whose send gets through during and after. Sourced by run.sh; uses the helpers of sessions.sh,
# security.sh, bounds.sh and hostile_links.sh.
# shellcheck shell=bash

BM_PORT=47310

# bm_node SERVICE STDOUT ARGS...: `nearby advertise --service SERVICE --port BM_PORT ARGS` on host 1,
# its stdout into STDOUT, a shell pipeline's tail ("sleep 300", "python3 slow.py FILE"); sets NODE
# (the node's pid, not the pipeline's) and NODE_ERR.
bm_node() {
    local service=$1 tail=$2 i; shift 2
    NODE_ERR=$OUT/node.err BM_SERVICE=$service BM_BAD=0
    spawn 1 "$OUT/pipeline.out" sh -c "\"\$0\" \"\$@\" 2>'$NODE_ERR' </dev/null | $tail" \
        "$NEARBY" advertise --service "$service" --port "$BM_PORT" "$@" || return 1
    NODE=
    for ((i = 0; i < 100; i++)); do
        for NODE in $(pgrep -f -- "advertise --service $service --port $BM_PORT"); do
            [[ $(readlink "/proc/$NODE/exe") == "$NEARBY_BIN" ]] && break 2
        done
        NODE=
        sleep 0.1
    done
    [[ -n $NODE ]] || { fail "no node process"; show "$NODE_ERR"; return 1; }
    for ((i = 0; i < 100; i++)); do
        ip netns exec "$(lab_ns 1)" ss -ltn "sport = :$BM_PORT" 2>/dev/null | grep -q LISTEN && return 0
        sleep 0.1
    done
    fail "the node is not listening on $BM_PORT"; show "$NODE_ERR"; return 1
}

# bm_stop: the node (not only its pipeline) stops.
bm_stop() {
    [[ -n ${NODE:-} ]] && kill -INT "$NODE" 2>/dev/null
    stop_started
    [[ -n ${NODE:-} ]] && kill -KILL "$NODE" 2>/dev/null
    NODE=
    return 0
}

# bm_sample FILE: keeps the first and last 2,000 lines of a flood's output (the messages a node
# printed for 20 s: 100+ MB), so the schema check at the end of the suite reads a sample, not all.
bm_sample() {
    local file=$1
    [[ -f $file ]] && (($(wc -l <"$file") > 4000)) || return 0
    { head -n 2000 "$file"; tail -n 2000 "$file"; } >"$file.sample" && mv "$file.sample" "$file"
}

bm_rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$1/status" 2>/dev/null || echo 0; }
# bm_code PID: the MB of its resident memory that are files (the program's and libraries' code, the
# same whatever peers do: ~46 MB of a debug build's 86) — what is left of its peak is what it held.
bm_code() { awk '/^RssFile|^RssShmem/ {kb += $2} END {print int(kb / 1024)}' "/proc/$1/status" 2>/dev/null || echo 0; }

# bm_check NAME: the node is alive (else the test ends), and what it held at its peak is below
# 60 MB (else the test goes on, to measure the rest, and fails at its end: bm_verdict); prints them.
# Held: its peak RSS (VmHWM) less the resident pages of its files, which only grow, so this never
# counts more than it held. A total RSS limit (it was 100 MB) mostly measured how much of a debug
# build's code a test happened to touch: CI failed at 102 MB of which 46 were code.
bm_check() {
    still_running "$NODE" "the node" || { show "$NODE_ERR"; return 1; }
    local hwm code
    hwm=$(($(bounds_hwm "$NODE") / 1024))
    code=$(bm_code "$NODE")
    echo "    $1: node RSS $(bm_rss "$NODE") MB, peak $hwm MB, of which code $code MB: held at most $((hwm - code)) MB"
    (( hwm - code < $(mem_mb 60) )) || { fail "the node held $((hwm - code)) MB at its peak (limit $(mem_mb 60))"; BM_BAD=1; }
    return 0
}
bm_verdict() { [[ ${BM_BAD:-0} == 0 ]]; }

# bm_friend_sends TEXT ARGS...: host 3 sends TEXT to the node (one try, 20 s); its status is the test's.
bm_friend_sends() {
    local text=$1 status; shift
    nb 3 send "$(lab_addr 1):$BM_PORT" "$text" --service "$BM_SERVICE" --timeout 20 "$@" >"$OUT/friend.jsonl" 2>"$OUT/friend.err"
    status=$?
    expect_eq "$status" 0 "the friend's send ($text)" || { show "$OUT/friend.jsonl"; return 1; }
    echo "    the friend sent \"$text\""
}

bm_rogue_bg() { rogue_bg rogue_memory.py "$@"; }

# A node whose stdout nobody reads (`| sleep 300`) while 20 sessions send 1 MiB messages: once the
# pipe is full the node stops reading those sessions, and nothing else: a friend still connects
# and sends (before: "did not finish the nearby preamble in 10 s", exit 5).
test_budget_stuck_stdout_does_not_stop_the_network() {
    trap bm_stop RETURN
    local rogue
    bm_node s-bm-stuck "sleep 300" --auto-accept --encryption none || return 1
    bm_rogue_bg 2 "$OUT/rogue.out" messages "$(lab_addr 1)" "$BM_PORT" --count 20 --messages 20 --hold 25 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 60 "the rogue's sessions" >/dev/null || return 1
    # Wait until the rogues are held (the node stopped reading them).
    sleep 3
    bm_friend_sends "while stdout is stuck" --encryption none || return 1
    bm_check "stdout stuck, 20 sessions flooding" || return 1
    exits "$rogue" 60 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    bm_friend_sends "after the flood" --encryption none || return 1
    bm_check "after the flood" || return 1
    bm_verdict
}

# A slow reader (a script that takes each line in 20 ms) and 200 sessions × 1 MiB messages: the
# node holds a bounded queue of lines and stops reading the sessions whose lines wait, so its
# memory stays bounded (before: RSS ~194 MB, VmHWM 406 MB); the friend's message is printed too.
test_budget_slow_reader_keeps_memory_bounded() {
    trap bm_stop RETURN
    local rogue reader=$OUT/slow.py
    cat >"$reader" <<'PY'
import sys, time
out = open(sys.argv[1], "w")
for line in sys.stdin:
    time.sleep(0.02)
    out.write(line[:2000].rstrip("\n") + ("\n" if len(line) <= 2000 else "\"}\n"))
    out.flush()
PY
    bm_node s-bm-slow "python3 '$reader' '$OUT/node.jsonl'" --auto-accept --encryption none || return 1
    bm_rogue_bg 2 "$OUT/rogue.out" messages "$(lab_addr 1)" "$BM_PORT" --count 200 --messages 3 --hold 20 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 90 "the rogue's sessions" >/dev/null || return 1
    bm_friend_sends "during the flood" --encryption none || return 1
    bm_check "slow reader, 200 sessions flooding" || return 1
    exits "$rogue" 60 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    bm_check "after the flood" || return 1
    bm_friend_sends "after the flood" --encryption none || return 1
    await "$OUT/node.jsonl" 'select(.event=="message" and .text=="after the flood")' 120 "the friend's message printed" >/dev/null || return 1
    bm_check "all printed" || return 1
    bm_verdict
}

# 128 TLS connections (16 from each of 8 addresses: the handshake caps) sending an unfinished 1 MiB
# hello, again and again for 15 s: each is refused from the frame's header, and what a connection
# holds before its session is small (before: peak 130–147 MB, ~100 MB after the attack).
test_budget_tls_hello_flood_holds_little() {
    trap 'bm_stop; hl_drop_sources' RETURN
    local rogue sources
    sources=$(hl_sources 8)
    bm_node s-bm-hello "cat >'$OUT/node.jsonl'" --auto-accept || return 1
    bm_rogue_bg 2 "$OUT/rogue.out" hellos "$(lab_addr 1)" "$BM_PORT" --sources "$sources" --per-source 16 --seconds 15 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 30 "the rogue's first round" >/dev/null || return 1
    printf '    %s\n' "$(head -1 "$OUT/rogue.out")"
    bm_friend_sends "during the hellos" || return 1
    bm_check "128 TLS connections sending unfinished hellos" || return 1
    exits "$rogue" 60 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    jq -e 'select(.connections and (.progress|not)) | .tls >= 128' "$OUT/rogue.out" >/dev/null \
        || fail "fewer than 128 connections got through TLS: the test proves little" || return 1
    bm_friend_sends "after the hellos" || return 1
    sleep 2
    bm_check "after the attack" || return 1
    bm_verdict
}

# 40 local clients each sending an 8 MiB request line that never ends: at most 16 are served at
# once (the rest closed at once), and a line is cut at what a request may carry (a 1 MiB message
# as base64, plus the request around it) (before: 396 MB).
test_budget_control_socket_flood_is_bounded() {
    trap bm_stop RETURN
    local rogue socket
    bm_node s-bm-control "cat >'$OUT/node.jsonl'" --auto-accept --encryption none || return 1
    local i
    for ((i = 0; i < 100; i++)); do
        socket=$(find "$LAB_DIR/h1/run/nearby" -name '*.sock' 2>/dev/null | head -1)
        [[ -S $socket ]] && break
        sleep 0.1
    done
    [[ -S $socket ]] || { fail "no control socket"; ls -laR "$LAB_DIR/h1/run" >&2; return 1; }
    bm_rogue_bg 1 "$OUT/rogue.out" control "$socket" --count 40 --mib 8 --hold 5 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 60 "the rogue's clients" >/dev/null || return 1
    bm_check "40 clients × 8 MiB unfinished request lines" || return 1
    bm_friend_sends "during the control flood" --encryption none || return 1
    exits "$rogue" 30 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    printf '    %s\n' "$(tail -1 "$OUT/rogue.out")"
    jq -e 'select(.closed_by_node) | .busy >= 24 and .closed_by_node == 40' "$OUT/rogue.out" >/dev/null \
        || fail "the node served more than 16 of the 40 clients, or kept a line past its limit" || return 1
    nb_bg 3 "$OUT/h3.jsonl" advertise --service s-bm-control --auto-accept --encryption none || return 1
    await "$OUT/h3.jsonl" 'select(.event=="advertising")' 10 "host 3 advertising" >/dev/null || return 1
    nb 1 send --service s-bm-control "$(id_of 3)" "through the node" --timeout 20 >"$OUT/local.jsonl" 2>"$OUT/local.err" \
        || { fail "a local client could not send through the node after the flood"; show "$OUT/local.jsonl"; return 1; }
    bm_check "after the flood" || return 1
    bm_verdict
}

# A local client asks the node for `send --lines` to a friend and reads nothing of the answer
# while it writes lines for 20 s (one `sent` event each batch): the events waiting for that client
# are bounded (1 MiB); past it they are dropped and counted, and once the client reads again, a
# `suppressed` event says how many before its status. The node's own output has every line, its
# memory stays bounded, and the friend's connection works.
test_budget_control_client_that_stops_reading_is_bounded() {
    trap 'bm_stop; bm_sample "$OUT/h3.jsonl"' RETURN
    local rogue socket i line sent
    # The client's bound at 128 KiB (1 MiB by default): a few hundred unread events pass it, so the
    # test does not depend on how many lines a loaded machine gets through in 20 s (with three labs
    # at once, 5,605 events, 1.1 MB, did not reach 1 MiB queued).
    NEARBY_CONTROL_CLIENT_QUEUE_BYTES=131072 bm_node s-bm-quiet "cat >'$OUT/node.jsonl'" --encryption none || return 1
    for ((i = 0; i < 100; i++)); do
        socket=$(find "$LAB_DIR/h1/run/nearby" -name '*.sock' 2>/dev/null | head -1)
        [[ -S $socket ]] && break
        sleep 0.1
    done
    [[ -S $socket ]] || { fail "no control socket"; return 1; }
    nb_bg 3 "$OUT/h3.jsonl" advertise --service s-bm-quiet --auto-accept --encryption none || return 1
    await "$OUT/h3.jsonl" 'select(.event=="advertising")' 10 "host 3 advertising" >/dev/null || return 1
    # A line every millisecond or so: each its own `sent` event, whatever the machine's load. Unpaced,
    # a loaded node took 70 lines a batch: 1,101 events, which the socket's own buffer (~200 KB)
    # and the bound held without a drop, and the test proved nothing.
    bm_rogue_bg 1 "$OUT/rogue.out" quiet-client "$socket" --peer "$(id_of 3)" --seconds 20 --hold 3 --pace 0.001 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 120 "the quiet client" >/dev/null || return 1
    bm_check "a control client that reads nothing, $(jq -r 'select(.progress) | .lines' "$OUT/rogue.out") lines" || return 1
    bm_friend_sends "while a client reads nothing" --encryption none || return 1
    exits "$rogue" 180 0 "the quiet client" || { show "$OUT/rogue.out"; return 1; }
    line=$(tail -1 "$OUT/rogue.out")
    sent=$(jq -s '[.[] | select(.event=="sent")] | length' "$OUT/node.jsonl")
    printf '    %s\n    the node printed %s sent events\n' "$line" "$sent"
    jq -e --argjson sent "$sent" '.status == 0 and .suppressed > 0 and (.events.sent + .suppressed == $sent)' <<<"$line" >/dev/null \
        || fail "the client's events were not bounded, or some were dropped without being counted: $line" || return 1
    bm_check "after the client read" || return 1
    bm_verdict
}

# 20 sessions that read nothing: each offers files until the node's refusals fill the connection
# (the node waits to write its next answer and handles nothing more of that link), then sends
# 1 MiB messages, which no longer take the shortcut and wait above the frame decoder. What waits
# there is charged to the link (one 1 MiB message at most) and to the node's budget for frames
# (MemoryBudget.frames): past it the link stops reading. The node alive, its peak RSS bounded, the
# friend's send during and after.
test_budget_frames_waiting_for_a_stalled_link_are_bounded() {
    trap bm_stop RETURN
    local rogue
    bm_node s-bm-stalled "cat >'$OUT/node.jsonl'" --auto-accept --encryption none || return 1
    bm_rogue_bg 2 "$OUT/rogue.out" stalled "$(lab_addr 1)" "$BM_PORT" --count 20 --messages 20 --pings 5000 --hold 5 || return 1; rogue=$PID
    await "$OUT/rogue.out" 'select(.progress)' 180 "the stalled sessions" >/dev/null || return 1
    printf '    %s\n' "$(jq -c 'select(.progress)' "$OUT/rogue.out")"
    bm_check "20 stalled sessions with 1 MiB messages waiting" || return 1
    bm_friend_sends "while sessions are stalled" --encryption none || return 1
    exits "$rogue" 60 0 "the rogue" || { show "$OUT/rogue.out"; return 1; }
    bm_check "after" || return 1
    bm_friend_sends "after the stalled sessions" --encryption none || return 1
    bm_verdict
}
