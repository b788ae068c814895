# Stream end-to-end tests: `nearby stream PEER` and `nearby stream --listen` — 2 GiB through
# sha256sum in bounded memory, both directions at once, streams through running nodes (whose session
# outlives the stream), stream names and --from, an incoming stream nobody listens for, half-close,
# a listener killed mid-stream, and stdout that carries only the peer's bytes.
# Sourced by run.sh. Each test uses its own service type.
# Uses the helpers of sessions.sh (spawn, start_node, await, exits, still_running, show, stop_started …),
# which run.sh sources into the same shell.
#
# A stream's stdout is raw bytes and its events go to stderr, so each stream command here writes
# stdout to $OUT/NAME.out and stderr to $OUT/NAME.events (JSON lines, plus "nearby: …" words for people
# on errors). When the test returns, the JSON lines of every NAME.events are copied to NAME.jsonl for
# test_every_line_matches_the_schema.
# shellcheck shell=bash

# --- helpers ------------------------------------------------------------------------------------
# A test's first line is `trap st_done RETURN`: every process it started and their children (the
# pipelines around `nearby`) are stopped, then the event files are copied for the schema check.
st_done() {
    trap - RETURN
    local p kids=()
    for p in "${STARTED[@]}"; do kids+=($(st_descendants "$p")); done
    [[ ${#kids[@]} -gt 0 ]] && kill -INT "${kids[@]}" 2>/dev/null
    stop_started
    [[ ${#kids[@]} -gt 0 ]] && { sleep 0.2; kill -KILL "${kids[@]}" 2>/dev/null; }
    local f
    for f in "$OUT"/*.events; do [[ -e $f ]] && grep -a '^{' "$f" >"${f%.events}.jsonl"; done
    return 0
}

st_descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; st_descendants "$c"; done; }

# st_nb K NAME FEED ARGS...: `nearby ARGS` on host K in the background, its stdin the output of the
# shell command FEED (':' for nothing; $O is $OUT in it), stdout $OUT/NAME.out (or $ST_OUT when
# set), stderr $OUT/NAME.events. PID is nearby's own pid (the shell execs it).
st_nb() {
    local host=$1 name=$2 feed=$3; shift 3
    spawn "$host" "$OUT/$name.sh.log" env O="$OUT" F="$feed" E="$OUT/$name.events" S="${ST_OUT:-$OUT/$name.out}" \
        bash -c 'exec "$0" "$@" < <(eval "$F") >"$S" 2>"$E"' "$NEARBY" "$@"
}

# st_json FILE FILTER WHAT: some JSON line of FILE (an .events file) satisfies the filter.
st_json() {
    [[ -n $(grep -a '^{' "$1" | jq -c "$2" 2>/dev/null) ]] || { fail "$3 (filter: $2)"; show "$1"; return 1; }
}
st_count() { grep -a '^{' "$1" | jq -c "$2" 2>/dev/null | wc -l; }

# st_same FILE EXPECTED WHAT: FILE has exactly the bytes of EXPECTED.
st_same() {
    cmp -s "$1" "$2" && return 0
    fail "$3: $(stat -c %s "$1" 2>/dev/null || echo no) bytes, expected the $(stat -c %s "$2") bytes of $(basename "$2") ($(cmp "$1" "$2" 2>&1 | head -1))"
}

# st_listening FILE: the node-less listener's advertising line.
st_listening() { await "$1" 'select(.event=="advertising")' 10 "the listener advertises" >/dev/null; }

# st_nearby_pid PID: the nearby process that is PID or one of its descendants.
st_nearby_pid() {
    local p
    for p in "$1" $(st_descendants "$1"); do
        [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$NEARBY_BIN" ]] && { echo "$p"; return 0; }
    done
    return 1
}

# st_sample PID FILE: "VmRSS VmHWM" (KiB) of PID every 0.2 s into FILE until PID is gone (in the background).
st_sample() {
    ( while [[ -e /proc/$1 ]]; do awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { print r, h }' "/proc/$1/status" 2>/dev/null; sleep 0.2; done >"$2" ) &
}
# st_median: the median of the KiB numbers on stdin, in MB.
st_median() { sort -n | awk '{ a[NR] = $1 } END { printf "%d", a[int((NR + 1) / 2)] * 1024 / 1e6 }'; }
# st_rss_summary FILE: the VmRSS samples in MB — median, highest, and the medians of the first and
# last tenth of the run (a plateau from growth, spikes from a level).
st_rss_summary() {
    local v; mapfile -t v < <(awk '$1 > 0 { print $1 }' "$1")
    local n=${#v[@]}
    (( n >= 10 )) || { echo "only $n samples"; return 0; }
    printf 'median %s, highest %s, first tenth %s, last tenth %s (%d samples)' \
        "$(printf '%s\n' "${v[@]}" | st_median)" "$(printf '%s\n' "${v[@]}" | sort -n | tail -1 | awk '{ printf "%d", $1 * 1024 / 1e6 }')" \
        "$(printf '%s\n' "${v[@]:0:n/10}" | st_median)" "$(printf '%s\n' "${v[@]:n-n/10}" | st_median)" "$n"
}

# st_ms JSON_LINE: its time in milliseconds since the epoch.
st_ms() { jq -r '(.time[0:19] + "Z" | fromdateiso8601) * 1000 + (.time[20:23] | tonumber)' <<<"$1"; }

# --- 1. 2 GiB through sha256sum, in bounded memory -------------------------------------------------

test_stream_two_gib_in_bounded_memory() {
    trap st_done RETURN
    local id1 id2 size=2147483648 listener opener t0 ms opened closed rss1 rss2 sent recv
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    [[ -x /usr/bin/time ]] || { fail "needs GNU time at /usr/bin/time for the peak RSS"; return 1; }
    # GNU time gives the peak RSS (getrusage ru_maxrss, KiB) of exactly the nearby process.
    spawn 1 "$OUT/listen.sh.log" env N="$NEARBY" O="$OUT" bash -c '
        /usr/bin/time -f %M -o "$O/listen.rss" "$N" stream --listen --service s-st-big </dev/null 2>"$O/listen.events" \
            | sha256sum >"$O/recv.sha"
        exit "${PIPESTATUS[0]}"' || return 1
    listener=$PID
    st_listening "$OUT/listen.events" || return 1

    # 2 GiB of deterministic pseudo-random bytes (AES-CTR keystream), never stored.
    t0=$(now_ms)
    spawn 2 "$OUT/open.sh.log" env N="$NEARBY" O="$OUT" ID="$id1" SIZE="$size" bash -c '
        openssl enc -aes-128-ctr -pass pass:nearby -nosalt </dev/zero 2>/dev/null | head -c "$SIZE" \
            | tee >(sha256sum >"$O/sent.sha") \
            | /usr/bin/time -f %M -o "$O/open.rss" "$N" stream "$ID" --service s-st-big >"$O/open.out" 2>"$O/open.events"
        exit "${PIPESTATUS[3]}"' || return 1
    opener=$PID
    # Sample the RSS of both nearby processes too, to tell a plateau from growth.
    local n1 n2
    for _ in $(seq 50); do n2=$(st_nearby_pid "$opener") && break; sleep 0.1; done
    n1=$(st_nearby_pid "$listener")
    [[ -n $n1 ]] && st_sample "$n1" "$OUT/listen.rss-samples"
    [[ -n $n2 ]] && st_sample "$n2" "$OUT/open.rss-samples"

    exits "$opener" 150 0 "the opener (2 GiB)" || { show "$OUT/open.events" "$OUT/listen.events" "$OUT/open.sh.log"; return 1; }
    ms=$(( $(now_ms) - t0 ))
    exits "$listener" 10 0 "the listener" || { show "$OUT/listen.events" "$OUT/listen.sh.log"; return 1; }

    # The measurements first, so that they are reported whatever fails below.
    opened=$(grep -a '^{' "$OUT/open.events" | jq -c 'select(.event=="stream-opened")' | head -1)
    closed=$(grep -a '^{' "$OUT/open.events" | jq -c 'select(.event=="stream-closed")' | head -1)
    if [[ -n $opened && -n $closed ]]; then
        opened=$(st_ms "$opened") closed=$(st_ms "$closed")
        printf '    2 GiB: stream-opened to stream-closed %d ms = %d MB/s; the whole command %d ms\n' \
            $((closed - opened)) $((size * 1000 / (closed - opened) / 1000000)) "$ms"
    fi
    rss1=$(tail -1 "$OUT/listen.rss") rss2=$(tail -1 "$OUT/open.rss")
    [[ $rss1 =~ ^[0-9]+$ && $rss2 =~ ^[0-9]+$ ]] || { fail "no peak RSS from /usr/bin/time: '$rss1' '$rss2'"; return 1; }
    printf '    peak RSS (GNU time): listener (h1) %d KiB = %d MB, opener (h2) %d KiB = %d MB\n' \
        "$rss1" $((rss1 * 1024 / 1000000)) "$rss2" $((rss2 * 1024 / 1000000))
    [[ -s $OUT/listen.rss-samples ]] && printf '    VmRSS sampled every 0.2 s (MB): listener %s\n' "$(st_rss_summary "$OUT/listen.rss-samples")"
    [[ -s $OUT/open.rss-samples ]] && printf '    VmRSS sampled every 0.2 s (MB): opener   %s\n' "$(st_rss_summary "$OUT/open.rss-samples")"

    for _ in $(seq 50); do [[ -s $OUT/sent.sha ]] && break; sleep 0.1; done
    sent=$(cut -d' ' -f1 "$OUT/sent.sha") recv=$(cut -d' ' -f1 "$OUT/recv.sha")
    [[ ${#sent} == 64 ]] || fail "no sha256 of what was sent" || return 1
    expect_eq "$recv" "$sent" "sha256 of the bytes the listener wrote to stdout" || return 1
    expect_eq "$(stat -c %s "$OUT/open.out")" 0 "bytes on the opener's stdout (the listener sent none)" || return 1

    st_json "$OUT/open.events" "select(.event==\"stream-opened\" and .direction==\"out\" and .peer.id==\"$id1\")" "stream-opened (out) on h2" || return 1
    st_json "$OUT/open.events" "select(.event==\"stream-closed\" and .sent==$size and .received==0 and .reason==\"done\")" "stream-closed on h2: 2 GiB sent" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-opened\" and .direction==\"in\" and .peer.id==\"$id2\")" "stream-opened (in) on h1" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-closed\" and .sent==0 and .received==$size and .reason==\"done\")" "stream-closed on h1: 2 GiB received" || return 1

    (( rss1 * 1024 < $(mem_mb 100) * 1000000 )) || fail "the listener's peak RSS is $rss1 KiB: not under 100 MB" || return 1
    (( rss2 * 1024 < $(mem_mb 100) * 1000000 )) || fail "the opener's peak RSS is $rss2 KiB: not under 100 MB" || return 1
}

# --- 2. both directions at once ----------------------------------------------------------------------

test_stream_both_directions_at_once_byte_exact() {
    trap st_done RETURN
    local id1 id2 listener opener a=20971520 b=31457280
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    head -c $a /dev/urandom >"$OUT/A.bin" && head -c $b /dev/urandom >"$OUT/B.bin" || return 1
    st_nb 1 listen 'cat "$O/A.bin"' stream --listen --service s-st-both || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1
    st_nb 2 open 'cat "$O/B.bin"' stream "$id1" --service s-st-both || return 1; opener=$PID

    exits "$opener" 60 0 "the opener" || { show "$OUT/open.events" "$OUT/listen.events"; return 1; }
    exits "$listener" 10 0 "the listener" || { show "$OUT/listen.events"; return 1; }
    st_same "$OUT/listen.out" "$OUT/B.bin" "the listener's stdout (h2's input)" || return 1
    st_same "$OUT/open.out" "$OUT/A.bin" "the opener's stdout (h1's input)" || return 1
    st_json "$OUT/open.events" "select(.event==\"stream-opened\" and .direction==\"out\" and .peer.id==\"$id1\" and .name==\"\" and (.stream|length) > 0)" "stream-opened (out) on h2" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-opened\" and .direction==\"in\" and .peer.id==\"$id2\" and .name==\"\")" "stream-opened (in) on h1" || return 1
    st_json "$OUT/open.events" "select(.event==\"stream-closed\" and .peer.id==\"$id1\" and .sent==$b and .received==$a and .reason==\"done\")" "stream-closed on h2 with its counts" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-closed\" and .peer.id==\"$id2\" and .sent==$a and .received==$b and .reason==\"done\")" "stream-closed on h1 with its counts" || return 1
}

# --- 3. through running nodes on both sides ---------------------------------------------------------

test_stream_through_running_nodes() {
    trap st_done RETURN
    local id1 id2 adv1 adv2 pid1 pid2 listener opener status a=8000000 b=1000000
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    # The listener sends more than it receives, so its last bytes (and the window the peer grants
    # for them) come at the very end of the stream.
    head -c $a /dev/urandom >"$OUT/A.bin" && head -c $b /dev/urandom >"$OUT/B.bin" || return 1
    start_node 1 s-st-node --auto-accept || return 1; adv1=$ADV pid1=$ADV_PID
    start_node 2 s-st-node --auto-accept || return 1; adv2=$ADV pid2=$ADV_PID

    st_nb 1 listen 'cat "$O/A.bin"' stream --listen --stream x --service s-st-node || return 1; listener=$PID
    sleep 0.5
    still_running "$listener" "the listener attached to h1's node" || { show "$OUT/listen.events"; return 1; }
    st_nb 2 open 'cat "$O/B.bin"' stream "$id1" --stream x --service s-st-node || return 1; opener=$PID

    exits "$opener" 30 0 "the opener (through h2's node)" || { show "$OUT/open.events" "$adv2" "$adv1"; return 1; }
    exits "$listener" 10 0 "the listener (through h1's node)" || { show "$OUT/listen.events" "$adv1"; return 1; }
    st_same "$OUT/listen.out" "$OUT/B.bin" "the listener's stdout (h2's input)" || return 1
    st_same "$OUT/open.out" "$OUT/A.bin" "the opener's stdout (h1's input)" || return 1

    # They went through the nodes: the nodes saw the stream, and neither client ran a node of its own.
    expect_json "$adv1" "select(.event==\"stream-opened\" and .direction==\"in\" and .name==\"x\" and .peer.id==\"$id2\")" "stream-opened (in) on h1's node" || return 1
    expect_json "$adv2" "select(.event==\"stream-opened\" and .direction==\"out\" and .name==\"x\" and .peer.id==\"$id1\")" "stream-opened (out) on h2's node" || return 1
    expect_json "$adv1" "select(.event==\"stream-closed\" and .sent==$a and .received==$b and .reason==\"done\")" "stream-closed on h1's node" || return 1
    expect_json "$adv2" "select(.event==\"stream-closed\" and .sent==$b and .received==$a and .reason==\"done\")" "stream-closed on h2's node" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-opened\" and .direction==\"in\" and .name==\"x\")" "the listener prints stream-opened" || return 1
    st_json "$OUT/open.events" "select(.event==\"stream-opened\" and .direction==\"out\" and .name==\"x\")" "the opener prints stream-opened" || return 1
    expect_eq "$(st_count "$OUT/listen.events" 'select(.event=="advertising")')$(st_count "$OUT/open.events" 'select(.event=="advertising")')" 00 \
        "advertising events of the clients (they ran no node of their own)" || return 1

    # The nodes keep running and keep working.
    sleep 1
    still_running "$pid1" "h1's node" || return 1
    still_running "$pid2" "h2's node" || return 1
    nb 2 send "$id1" "after the stream" --service s-st-node >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "nearby send through h2's node after the stream" || { show "$OUT/send.jsonl"; return 1; }
    await "$adv1" "select(.event==\"message\" and .peer.id==\"$id2\" and .text==\"after the stream\")" 5 "the message on h1's node" >/dev/null || return 1

    # And the session itself outlives the stream: nobody disconnected, the send needed no new invitation.
    expect_eq "$(count_json "$adv1" 'select(.event=="disconnected")')$(count_json "$adv2" 'select(.event=="disconnected")')" 00 \
        "disconnected events on the nodes after a finished stream" || { show "$adv1" "$adv2"; return 1; }
    expect_eq "$(count_json "$adv1" 'select(.event=="invitation")')" 1 "invitations on h1 (the send reuses the stream's session)" || return 1
}

# A client whose stdin is a file passes it to its node, which reads it itself: the bytes from where
# the client's stdin stood, byte-exact, and the client's stdin left at the end for whoever reads on.
test_stream_through_a_node_reads_a_file_itself() {
    trap st_done RETURN
    local id1 adv2 pid2 listener opener a=8000000
    id1=$(id_of 1) || return 1
    head -c $a /dev/urandom >"$OUT/A.bin" && tail -c +1001 "$OUT/A.bin" >"$OUT/A.rest" || return 1
    start_node 1 s-st-file --auto-accept || return 1
    start_node 2 s-st-file --verbose || return 1; adv2=$ADV pid2=$ADV_PID
    st_nb 1 listen : stream --listen --stream f --service s-st-file || return 1; listener=$PID
    sleep 0.5
    # 1000 bytes of stdin read before nearby; what nearby leaves is read after it.
    spawn 2 "$OUT/open.sh.log" env N="$NEARBY" O="$OUT" ID="$id1" bash -c \
        '{ dd bs=1000 count=1 of=/dev/null 2>/dev/null; "$N" stream "$ID" --stream f --service s-st-file >"$O/open.out" 2>"$O/open.events"; echo $? >"$O/open.status"; cat >"$O/after.bin"; } <"$O/A.bin"' || return 1
    opener=$PID
    exits "$opener" 30 0 "the opener (through h2's node)" || { show "$OUT/open.events" "$adv2"; return 1; }
    exits "$listener" 10 0 "the listener (through h1's node)" || { show "$OUT/listen.events"; return 1; }
    expect_eq "$(cat "$OUT/open.status")" 0 "the opener's exit status" || { show "$OUT/open.events"; return 1; }
    st_same "$OUT/listen.out" "$OUT/A.rest" "the listener's stdout (the opener's stdin after its first 1000 bytes)" || return 1
    expect_eq "$(stat -c %s "$OUT/after.bin")" 0 "bytes of stdin left after nearby" || return 1
    grep -q "passed its input: the node reads it itself" "$adv2.err" || { fail "h2's node did not read the file itself"; show "$adv2"; return 1; }
    st_json "$OUT/open.events" "select(.event==\"stream-closed\" and .sent==$((a - 1000)) and .reason==\"done\")" "the opener's stream-closed" || return 1
    expect_json "$adv2" "select(.event==\"stream-closed\" and .sent==$((a - 1000)) and .reason==\"done\")" "stream-closed on h2's node" || return 1
    still_running "$pid2" "h2's node" || return 1
}

# st_fds PID: how many descriptors PID has open.
st_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# st_fds_back PID COUNT WHAT: PID's descriptors come back to COUNT within 5 s.
st_fds_back() {
    local i
    for ((i = 0; i < 50; i++)); do (( $(st_fds "$1") <= $2 )) && return 0; sleep 0.1; done
    fail "$3: $(st_fds "$1") descriptors open, $2 before"; ls -l "/proc/$1/fd" >&2; return 1
}

# st_passing K NAME ENV FEED ARGS...: `nearby ARGS` on host K with ENV (NAME=VALUE, or : for none),
# its stdin a pipe from FEED's file, its stdout a pipe into $OUT/NAME.out: pipes both ways, which a
# node reads and writes itself when they are passed to it.
st_passing() {
    local host=$1 name=$2 env=$3 feed=$4; shift 4
    spawn "$host" "$OUT/$name.sh.log" env O="$OUT" F="$feed" E="$OUT/$name.events" S="$OUT/$name.out" X="$env" \
        bash -c '[[ $X == : ]] || export "$X"; cat "$F" | "$0" "$@" 2>"$E" | cat >"$S"; echo "${PIPESTATUS[1]}" >"$S.status"' "$NEARBY" "$@"
}

# A stream through running nodes whose clients' stdin and stdout are pipes: each node is handed the
# pipes (SCM_RIGHTS) and reads and writes them itself, byte-exact both ways, and holds none of them
# after; the clients still print their own events with the right counts. With NEARBY_PASS_FDS=0 the
# bytes go over the control socket as before, just as exactly.
test_stream_through_a_node_passes_its_stdin_and_stdout() {
    trap st_done RETURN
    local id1 adv1 adv2 node1 node2 fds1=0 fds2=0 listener opener a=6000000 b=3000000 env mode
    id1=$(id_of 1) || return 1
    head -c $a /dev/urandom >"$OUT/A.bin" && head -c $b /dev/urandom >"$OUT/B.bin" || return 1
    start_node 1 s-st-pass --auto-accept --verbose || return 1; adv1=$ADV; node1=$(st_nearby_pid "$ADV_PID") || return 1
    start_node 2 s-st-pass --verbose || return 1; adv2=$ADV; node2=$(st_nearby_pid "$ADV_PID") || return 1
    # The session and the nodes' threads outlive a stream: what they hold is counted after the first.
    for env in NEARBY_PASS_FDS=0 :; do
        mode=${env/:/passed}
        st_passing 1 "listen-$mode" "$env" "$OUT/A.bin" stream --listen --stream p --service s-st-pass || return 1; listener=$PID
        sleep 0.5
        st_passing 2 "open-$mode" "$env" "$OUT/B.bin" stream "$id1" --stream p --service s-st-pass || return 1; opener=$PID
        exits "$opener" 30 0 "the opener's shell ($mode)" || { show "$OUT/open-$mode.events" "$adv2"; return 1; }
        exits "$listener" 10 0 "the listener's shell ($mode)" || { show "$OUT/listen-$mode.events" "$adv1"; return 1; }
        expect_eq "$(cat "$OUT/open-$mode.out.status")$(cat "$OUT/listen-$mode.out.status")" 00 "the clients' exit statuses ($mode)" || return 1
        st_same "$OUT/listen-$mode.out" "$OUT/B.bin" "the listener's stdout ($mode)" || return 1
        st_same "$OUT/open-$mode.out" "$OUT/A.bin" "the opener's stdout ($mode)" || return 1
        st_json "$OUT/listen-$mode.events" "select(.event==\"stream-closed\" and .sent==$a and .received==$b and .reason==\"done\")" "the listener's stream-closed ($mode)" || return 1
        st_json "$OUT/open-$mode.events" "select(.event==\"stream-closed\" and .sent==$b and .received==$a and .reason==\"done\")" "the opener's stream-closed ($mode)" || return 1
        [[ $mode == passed ]] || { sleep 0.5; fds1=$(st_fds "$node1") fds2=$(st_fds "$node2"); continue; }
        st_fds_back "$node1" "$fds1" "h1's node after the stream ($mode)" || return 1
        st_fds_back "$node2" "$fds2" "h2's node after the stream ($mode)" || return 1
    done
    expect_eq "$(grep -c "passed its stdin and stdout" "$adv1.err")$(grep -c "passed its stdin and stdout" "$adv2.err")" 11 \
        "streams whose descriptors each node took (one of two: the other had NEARBY_PASS_FDS=0)" || { show "$adv1" "$adv2"; return 1; }
}

# A client interrupted (Ctrl-C) while its node reads its file, the peer having stopped reading: the
# client ends at once (130), and the node stops reading, resets the stream and goes on.
test_stream_client_interrupted_while_its_node_reads_its_file() {
    trap st_done RETURN
    local id1 adv2 pid2 opener nearby_pid a=64000000
    id1=$(id_of 1) || return 1
    head -c $a /dev/zero >"$OUT/big.bin" || return 1
    start_node 1 s-st-kill --auto-accept || return 1
    start_node 2 s-st-kill || return 1; adv2=$ADV pid2=$ADV_PID
    # A listener that does not read: the window stops the sender after a few MB.
    spawn 1 "$OUT/listen.sh.log" env N="$NEARBY" O="$OUT" bash -c \
        '"$N" stream --listen --stream k --service s-st-kill </dev/null 2>"$O/listen.events" | sleep 60' || return 1
    sleep 0.5
    spawn 2 "$OUT/open.sh.log" env N="$NEARBY" O="$OUT" ID="$id1" bash -c \
        'exec "$N" stream "$ID" --stream k --service s-st-kill <"$O/big.bin" >/dev/null 2>"$O/open.events"' || return 1
    opener=$PID
    await "$adv2" 'select(.event=="stream-opened")' 10 "the stream opened on h2's node" >/dev/null || return 1
    sleep 0.5
    nearby_pid=$(st_nearby_pid "$opener") || { fail "no opener process"; return 1; }
    kill -INT "$nearby_pid"
    exits "$opener" 5 130 "the interrupted opener" || { show "$OUT/open.events"; return 1; }
    await "$adv2" 'select(.event=="stream-closed" and .reason!="done")' 10 "h2's node ends the stream of the interrupted client" >/dev/null || return 1
    expect_json "$adv2" "select(.event==\"stream-closed\" and .sent < $a)" "h2's node stopped before the end of the file" || return 1
    still_running "$pid2" "h2's node" || return 1
}

# --- 4. names and --from ---------------------------------------------------------------------------

test_stream_listener_takes_only_its_name_and_its_peer() {
    trap st_done RETURN
    local id1 id2 id3 listener other logs fh2 fh3 status
    id1=$(id_of 1) && id2=$(id_of 2) && id3=$(id_of 3) || return 1
    echo "not for the logs listener" >"$OUT/other.txt"
    seq 1 20000 >"$OUT/logs.txt"
    st_nb 1 listen : stream --listen --stream logs --service s-st-names || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1

    # A stream named 'other' gets into the session but is not taken: it waits.
    st_nb 2 other 'cat "$O/other.txt"' stream "$id1" --stream other --service s-st-names || return 1; other=$PID
    await "$OUT/other.events" "select(.event==\"connected\" and .peer.id==\"$id1\")" 10 "h2 connected to the listener" >/dev/null || return 1
    sleep 2
    still_running "$other" "the opener of 'other' (should be waiting)" || { show "$OUT/other.events"; return 1; }
    still_running "$listener" "the listener for 'logs'" || { show "$OUT/listen.events"; return 1; }
    expect_eq "$(st_count "$OUT/other.events" 'select(.event=="stream-opened" or .event=="stream-closed" or .event=="error")')$(st_count "$OUT/listen.events" 'select(.event=="stream-opened")')" 00 \
        "stream-opened/closed or error events 2 s after opening 'other'" || { show "$OUT/other.events" "$OUT/listen.events"; return 1; }

    # A stream named 'logs', opened after it, is taken and completes.
    st_nb 3 logs 'cat "$O/logs.txt"; sleep 1' stream "$id1" --stream logs --service s-st-names || return 1; logs=$PID
    await "$OUT/listen.events" "select(.event==\"stream-opened\" and .name==\"logs\" and .peer.id==\"$id3\")" 10 "the listener takes 'logs'" >/dev/null || return 1
    still_running "$other" "the opener of 'other' while 'logs' runs" || { show "$OUT/other.events"; return 1; }
    exits "$logs" 10 0 "the opener of 'logs'" || { show "$OUT/logs.events"; return 1; }
    exits "$listener" 10 0 "the listener after 'logs'" || { show "$OUT/listen.events"; return 1; }
    st_same "$OUT/listen.out" "$OUT/logs.txt" "the listener's stdout" || return 1
    expect_eq "$(st_count "$OUT/listen.events" 'select(.event=="stream-opened" and .name!="logs")')" 0 "streams not named 'logs' the listener took" || return 1
    expect_eq "$(stat -c %s "$OUT/other.out")" 0 "bytes the opener of 'other' received" || return 1
    kill -INT "$other" 2>/dev/null; lab_wait_pid "$other" 5 >/dev/null

    # --from h3: a stream from h2 is not taken (its invitation is never accepted), h3's is.
    echo "from h3" >"$OUT/from3.txt"
    st_nb 1 flisten : stream --listen --from "$id3" --service s-st-from || return 1; listener=$PID
    st_listening "$OUT/flisten.events" || return 1
    st_nb 2 fh2 'echo from h2' stream "$id1" --service s-st-from --timeout 3 || return 1; fh2=$PID
    await "$OUT/flisten.events" "select(.event==\"invitation\" and .peer.id==\"$id2\")" 10 "h2's invitation seen by the listener" >/dev/null || return 1
    # h3's stream stays open (sleep 4) past h2's 3 s timeout.
    st_nb 3 fh3 'cat "$O/from3.txt"; sleep 4' stream "$id1" --service s-st-from || return 1; fh3=$PID
    await "$OUT/flisten.events" "select(.event==\"stream-opened\" and .peer.id==\"$id3\")" 10 "the listener takes h3's stream" >/dev/null || return 1
    lab_wait_pid "$fh2" 10; status=$?
    expect_eq "$status" 4 "exit status of h2's opener (not accepted)" || { show "$OUT/fh2.events" "$OUT/flisten.events"; return 1; }
    st_json "$OUT/fh2.events" 'select(.event=="error" and .code=="invitation-timeout" and .exit_status==4)' "h2: error invitation-timeout" || return 1
    exits "$fh3" 15 0 "h3's opener" || { show "$OUT/fh3.events"; return 1; }
    exits "$listener" 10 0 "the --from listener" || { show "$OUT/flisten.events"; return 1; }
    st_same "$OUT/flisten.out" "$OUT/from3.txt" "the --from listener's stdout" || return 1
    expect_eq "$(st_count "$OUT/flisten.events" "select((.event==\"accepted\" or .event==\"connected\" or .event==\"stream-opened\") and .peer.id==\"$id2\")")" 0 \
        "accepted/connected/stream-opened events for h2 on the --from listener" || { show "$OUT/flisten.events"; return 1; }
    expect_eq "$(stat -c %s "$OUT/fh2.out")" 0 "bytes h2's opener received" || return 1
}

# --- 5. nobody listening ---------------------------------------------------------------------------

test_stream_nobody_listening_is_refused_in_time() {
    trap st_done RETURN
    local id1 adv opener t0 ms
    id1=$(id_of 1) || return 1
    # The node waits NEARBY_STREAM_WAIT (default 30 s) for a listener: 3 s here.
    NEARBY_STREAM_WAIT=3 start_node 1 s-st-none --auto-accept || return 1; adv=$ADV
    t0=$(now_ms)
    st_nb 2 open : stream "$id1" --service s-st-none || return 1; opener=$PID
    exits "$opener" 20 5 "the opener with nobody listening" || { show "$OUT/open.events"; return 1; }
    ms=$(( $(now_ms) - t0 ))
    printf '    refused after %d ms\n' "$ms"
    (( ms >= 2900 && ms < 9000 )) || fail "refused after $ms ms, expected ~3 s" || return 1
    st_json "$OUT/open.events" 'select(.event=="error" and .code=="stream-refused" and .exit_status==5 and (.message|test("nobody is listening")))' \
        "error event stream-refused saying nobody is listening" || return 1
    grep -q '^nearby: error: .*nobody is listening' "$OUT/open.events" || fail "no 'nearby: error: … nobody is listening' line on stderr" || { show "$OUT/open.events"; return 1; }
    expect_eq "$(st_count "$OUT/open.events" 'select(.event=="stream-opened")')$(count_json "$adv" 'select(.event=="stream-opened")')" 00 "stream-opened events" || return 1
    expect_eq "$(stat -c %s "$OUT/open.out")" 0 "bytes on the opener's stdout" || return 1
    still_running "$ADV_PID" "h1's node" || return 1
}

# --- 6. EOF half-closes ------------------------------------------------------------------------------

test_stream_eof_half_closes_one_direction() {
    trap st_done RETURN
    local id1 id2 listener opener closed=
    id1=$(id_of 1) && id2=$(id_of 2) || return 1
    head -c 65536 /dev/urandom >"$OUT/A.bin" && head -c 1048576 /dev/urandom >"$OUT/B.bin" || return 1
    cat "$OUT/A.bin" "$OUT/B.bin" >"$OUT/AB.bin"
    printf 0123456789 >"$OUT/ten.bin"
    # The listener sends A, and B two seconds after the stream opened; the opener sends 10 bytes and
    # EOF at once. ($E, the listener's own event file, tells its stdin when the stream opened.)
    st_nb 1 listen 'cat "$O/A.bin"; until grep -q stream-opened "$E"; do sleep 0.05; done; sleep 2; cat "$O/B.bin"' \
        stream --listen --service s-st-half || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1
    st_nb 2 open 'cat "$O/ten.bin"' stream "$id1" --service s-st-half || return 1; opener=$PID
    await "$OUT/listen.events" 'select(.event=="stream-opened")' 10 "stream-opened on h1" >/dev/null || return 1

    # The opener's EOF reaches the listener as EOF: it closes its stdout while it still sends.
    for _ in $(seq 30); do [[ -e /proc/$listener/fd/1 ]] || { closed=1; break; }; sleep 0.05; done
    [[ -n $closed ]] || fail "the listener's stdout still open 1.5 s after the stream opened (the opener's EOF did not arrive)" || { show "$OUT/listen.events"; return 1; }
    st_same "$OUT/listen.out" "$OUT/ten.bin" "the listener's stdout at the opener's EOF" || return 1
    (( $(stat -c %s "$OUT/open.out") <= 65536 )) || fail "the opener had more than A before the listener sent B" || return 1
    still_running "$listener" "the listener (still sending) after the opener's EOF" || { show "$OUT/listen.events"; return 1; }
    still_running "$opener" "the opener (still receiving) after its EOF" || { show "$OUT/open.events"; return 1; }

    exits "$opener" 15 0 "the opener" || { show "$OUT/open.events"; return 1; }
    exits "$listener" 10 0 "the listener" || { show "$OUT/listen.events"; return 1; }
    st_same "$OUT/open.out" "$OUT/AB.bin" "the opener's stdout (all the listener sent, most of it after the opener's EOF)" || return 1
    st_same "$OUT/listen.out" "$OUT/ten.bin" "the listener's stdout" || return 1
    st_json "$OUT/open.events" "select(.event==\"stream-closed\" and .sent==10 and .received==$((65536 + 1048576)) and .reason==\"done\")" "stream-closed on h2" || return 1
    st_json "$OUT/listen.events" "select(.event==\"stream-closed\" and .sent==$((65536 + 1048576)) and .received==10 and .reason==\"done\")" "stream-closed on h1" || return 1
}

# --- 7. a listener that vanishes mid-stream ---------------------------------------------------------------

test_stream_listener_killed_mid_stream() {
    trap st_done RETURN
    local id1 listener opener t0 ms status
    id1=$(id_of 1) || return 1
    ST_OUT=/dev/null st_nb 1 listen : stream --listen --service s-st-kill || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1
    ST_OUT=/dev/null st_nb 2 open 'head -c 5G /dev/zero' stream "$id1" --service s-st-kill || return 1; opener=$PID
    await "$OUT/listen.events" 'select(.event=="stream-opened")' 10 "stream-opened on h1" >/dev/null || return 1
    await "$OUT/open.events" 'select(.event=="stream-opened")' 5 "stream-opened on h2" >/dev/null || return 1
    sleep 1.5
    still_running "$opener" "the opener before the kill" || { show "$OUT/open.events"; return 1; }
    kill -KILL "$listener"; t0=$(now_ms)
    lab_wait_pid "$opener" 15; status=$?
    ms=$(( $(now_ms) - t0 ))
    [[ $status == 124 ]] && { fail "the opener still runs 15 s after the listener was killed"; show "$OUT/open.events"; return 1; }
    printf '    the opener exited %d, %d ms after SIGKILL of the listener\n' "$status" "$ms"
    expect_eq "$status" 5 "the opener's exit status" || { show "$OUT/open.events"; return 1; }
    (( ms < 10000 )) || fail "the opener took $ms ms to notice" || return 1
    st_json "$OUT/open.events" 'select(.event=="stream-closed" or (.event=="error" and .exit_status==5))' "a stream-closed or error event on h2" || return 1
    grep -a '^{' "$OUT/open.events" | jq -c 'select(.event=="stream-closed" or .event=="error" or .event=="disconnected")' | sed 's/^/    | /'
}

# --- 8. stdout carries only bytes --------------------------------------------------------------------

test_stream_stdout_carries_only_the_peers_bytes() {
    trap st_done RETURN
    local id1 listener opener line bad
    id1=$(id_of 1) || return 1
    # Text that looks like events, so that a stray event line could not hide in it.
    for _ in $(seq 2000); do printf '{"event":"message","time":"2024-01-01T00:00:00.000Z","n":%d}\n' "$RANDOM"; done >"$OUT/X.txt"
    head -c 300000 /dev/urandom | base64 >"$OUT/Y.txt"
    st_nb 1 listen 'cat "$O/X.txt"' stream --listen --verbose --service s-st-bytes || return 1; listener=$PID
    st_listening "$OUT/listen.events" || return 1
    st_nb 2 open 'cat "$O/Y.txt"' stream "$id1" --verbose --service s-st-bytes || return 1; opener=$PID
    exits "$opener" 20 0 "the opener" || { show "$OUT/open.events"; return 1; }
    exits "$listener" 10 0 "the listener" || { show "$OUT/listen.events"; return 1; }
    st_same "$OUT/open.out" "$OUT/X.txt" "the opener's stdout (exactly the listener's input)" || return 1
    st_same "$OUT/listen.out" "$OUT/Y.txt" "the listener's stdout (exactly the opener's input)" || return 1
    # The events went to stderr: JSON lines (and "nearby: …" words for people), nothing else.
    local f
    for f in "$OUT/open.events" "$OUT/listen.events"; do
        for line in connected stream-opened stream-closed; do
            st_json "$f" "select(.event==\"$line\")" "$line on $(basename "$f")" || return 1
        done
        bad=$(grep -av '^nearby: ' "$f" | while IFS= read -r line; do jq -e 'has("event") and has("time")' <<<"$line" >/dev/null 2>&1 || printf '%s\n' "$line"; done)
        [[ -z $bad ]] || fail "$(basename "$f"): lines that are neither events nor words for people: $bad" || return 1
    done
}
