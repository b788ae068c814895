# shellcheck shell=bash
# Issue 58: the one HTTP layer (NearbyHTTP) against a hostile LAN, as LocalSend serves it:
# `nearby advertise --localsend --auto-accept` on h1, a hostile client on h2
# (tests/e2e/rogue_http.py), a friend's `send-file --localsend` from h3 meanwhile (localsend.sh's
# ls_setup, localsend_strangers.sh's lss_node and lss_friend). Memory is the node's peak RSS
# (VmHWM), which a burst between two samples cannot hide.

HH_ROGUE="$ROOT/tests/e2e/rogue_http.py"

# hh_mb FIELD: the node's VmHWM or VmRSS in MB.
hh_mb() { awk -v f="^$1:" '$0 ~ f {print int($2 / 1024)}' "/proc/$LSS_NODE/status"; }

# hh_friend TAG: lss_friend's 2 MB send from h3, tried twice: under the 64 pipelines one send in a
# few is closed before any answer and before the node logs an offer (seen 1 in 3 runs; issue 58's
# item 3, not yet found). The second try must go through.
hh_friend() {
    local tag=$1 rc
    head -c 2000000 /dev/urandom >"$OUT/friend-$tag.bin"
    lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/friend-$tag.bin" >"$OUT/friend-$tag.jsonl" 2>"$OUT/friend-$tag.err"; rc=$?
    if ((rc != 0)); then
        echo "    the friend's first send failed ($rc): $(cat "$OUT/friend-$tag.err"); again"
        lab_run 3 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/friend-$tag.bin" >"$OUT/friend-$tag.jsonl" 2>"$OUT/friend-$tag.err"; rc=$?
    fi
    expect_eq "$rc" 0 "the friend's send-file --localsend during $tag" || { cat "$OUT/friend-$tag.err" >&2; return 1; }
    cmp -s "$OUT/friend-$tag.bin" "$OUT/in/friend-$tag.bin" || { fail "the friend's file differs ($tag)"; return 1; }
}

# A request that asks to switch protocols (h2c) on a keep-alive route, then 1 GiB: NIOHTTP1's
# decoder stops parsing after it and kept every later byte (RSS 40 -> 1,065 MB in ~1 s). Now the
# answer says close, the connection ends, the node's peak stays under 120 MB, and the friend's send
# goes through meanwhile.
test_http_an_upgrade_then_a_gigabyte_is_closed() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lss_node || return 1
    lab_bg 2 "$OUT/upgrade.out" python3 "$HH_ROGUE" upgrade 10.99.0.1 53317 1024 >/dev/null
    LS_PIDS+=("$LAB_PID")
    lss_friend upgrade || return 1
    lab_wait_line "$OUT/upgrade.out" 'select(.closed != null)' 60 >/dev/null || { fail "the upgrading client did not end"; cat "$OUT/upgrade.out" >&2; return 1; }
    expect_json "$OUT/upgrade.out" 'select(.status == 200 and (.connection|ascii_downcase) == "close" and .closed)' \
        "answered with Connection: close, then closed" || { cat "$OUT/upgrade.out" >&2; return 1; }
    local peak; peak=$(hh_mb VmHWM)
    echo "    peak RSS $peak MB; $(jq -c . "$OUT/upgrade.out")"
    ((peak <= $(mem_mb 120))) || { fail "peak RSS $peak MB after an upgrade and 1 GiB"; return 1; }
}

# 64 connections from 8 addresses of h2 pipelining GETs and reading none of the answers, for 30 s:
# each read burst was decoded at once into queued heads (79 -> 351 MB, kept after they closed).
# Now the node's peak stays under issue 58's 120 MB (45 -> 58 MB, 53 MB after, with two other
# labs beside it on a loaded machine: between requests a connection reads 16 KiB once a wake-up, so
# neither its read buffers nor TLS's plaintext buffer grow to a burst's 256 KiB; it was 117-148 MB
# with 4 reads of 64 KiB), and 40 s after they stop it is within 30 MB of where it started; a
# friend's send goes through meanwhile.
test_http_pipelined_unread_requests_cost_bytes() {
    ls_setup || return 1
    # The addresses go with the test: a later test in this lab would see h2 with ten of them.
    trap 'ls_teardown; for k in $(seq 20 27); do ip -n "$(lab_ns 2)" addr del "10.99.0.$k/24" dev "$LAB_IFACE" 2>/dev/null; done; trap - RETURN' RETURN
    local k sources=""
    for k in $(seq 20 27); do
        ip -n "$(lab_ns 2)" addr add "10.99.0.$k/24" dev "$LAB_IFACE" || return 1
        sources+="${sources:+,}10.99.0.$k"
    done
    lss_node || return 1
    local start; start=$(hh_mb VmRSS)
    lab_bg 2 "$OUT/pipeline.out" python3 "$HH_ROGUE" pipeline 10.99.0.1 53317 64 30 "$sources" >/dev/null
    local attack=$LAB_PID
    LS_PIDS+=("$attack")
    lab_wait_line "$OUT/pipeline.out" 'select(.opened)' 30 >/dev/null || { fail "the pipelining client did not start"; return 1; }
    hh_friend pipeline || return 1
    lab_wait_line "$OUT/pipeline.out" 'select(.sent != null)' 90 >/dev/null || { fail "the pipelining client did not end"; return 1; }
    lab_wait_pid "$attack" 10 >/dev/null
    local peak; peak=$(hh_mb VmHWM)
    # Within 30 MB of the start 40 s after (the idle deadline closes what the client left).
    local deadline=$((SECONDS + 40)) now
    while now=$(hh_mb VmRSS); ((now > start + 30 && SECONDS < deadline)); do sleep 1; done
    echo "    RSS at start $start MB, peak $peak MB, after $now MB; $(jq -c . "$OUT/pipeline.out" | tr '\n' ' ')"
    ((peak <= $(mem_mb 120))) || { fail "peak RSS $peak MB under 64 unread pipelines"; return 1; }
    ((now <= start + 30)) || { fail "RSS $now MB 40 s after the pipelines stopped (started at $start MB)"; return 1; }
}

# Each malformed request of issue 58's list gets exactly one answer and the connection is closed
# (NIO's 400 was followed by the route's own answer: 400 + 400), HTTP/0.9 within 5 s (it waited
# for the 10 s deadline).
test_http_every_malformed_request_gets_one_answer() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lss_node || return 1
    lab_run 2 timeout 200 python3 "$HH_ROGUE" probe 10.99.0.1 53317 >"$OUT/probe.out" 2>&1
    [[ $(grep -c '"probe"' "$OUT/probe.out") == 9 ]] || { fail "not every probe ran"; cat "$OUT/probe.out" >&2; return 1; }
    local bad; bad=$(jq -c 'select((.answers|length) != 1 or (.closed|not))' "$OUT/probe.out")
    [[ -z $bad ]] || { fail "a malformed request did not get exactly one answer and a close: $bad"; return 1; }
    expect_json "$OUT/probe.out" 'select(.probe == "http09" and .seconds < 5)' "HTTP/0.9 answered at once" || return 1
    lss_friend probe || return 1
}

# curl's default upload (2 MB: it sends `Expect: 100-continue` and waits up to 1 s for it) to the
# web drop box: the layer answers 100 Continue when the route reads the body, so it is not held
# for curl's Expect timeout (1.007 s before, 0.006 s without Expect).
test_http_curls_default_upload_is_not_delayed_by_expect() {
    mkdir -p "$OUT/save" "$OUT/up"
    head -c 2000000 /dev/urandom >"$OUT/up/two.bin"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    local took
    took=$(lab_run 2 curl -sS -o /dev/null -w '%{time_total}' -F "file=@$OUT/up/two.bin" "${WEB_URL}upload" 2>"$OUT/curl.err") || {
        fail "curl's upload failed"; cat "$OUT/curl.err" >&2; return 1; }
    echo "    curl's default upload of 2 MB: $took s"
    await "$OUT/accept.jsonl" 'select(.event=="file-received")' 20 "the upload received" || return 1
    cmp -s "$OUT/up/two.bin" "$OUT/save/two.bin" || { fail "two.bin differs"; return 1; }
    awk -v t="$took" 'BEGIN { exit !(t < 0.9) }' || { fail "curl's upload took $took s (its Expect timeout is 1 s)"; return 1; }
    stop "$WEB_PID"
}

# One bound on a request's target for both servers, kept by the layer: LocalSend answered 414 past
# 4 KiB and kept the connection, the web pages 404 past 2 KiB. Now a target of 4,097 bytes is 414
# and the connection closes on LocalSend's HTTPS and on the web drop box alike; 4,096 is served.
test_http_an_over_long_target_is_414_on_both_servers() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lss_node || return 1
    local api=/api/localsend/v2/info?x= code
    local fits; fits=$(printf 'a%.0s' $(seq $((4096 - ${#api}))))
    code=$(lab_run 2 curl -sSk -m 20 -o /dev/null -w '%{http_code}' "https://10.99.0.1:53317$api$fits")
    expect_eq "$code" 200 "LocalSend's /info with a target of 4,096 bytes" || return 1
    code=$(lab_run 2 curl -sSk -m 20 -D "$OUT/ls-long.head" -o /dev/null -w '%{http_code}' "https://10.99.0.1:53317$api${fits}a")
    expect_eq "$code" 414 "LocalSend with a target of 4,097 bytes" || return 1
    grep -qi '^connection: close' "$OUT/ls-long.head" || { fail "LocalSend's 414 keeps the connection"; cat "$OUT/ls-long.head" >&2; return 1; }
    mkdir -p "$OUT/save"
    web_start 1 "$OUT/accept.jsonl" -- accept --web --save-dir "$OUT/save" || return 1
    local path=${WEB_URL#http://*/}
    code=$(lab_run 2 curl -sS -m 20 -D "$OUT/web-long.head" -o /dev/null -w '%{http_code}' \
        "$WEB_URL?x=$(printf 'a%.0s' $(seq $((4096 - 1 - ${#path} - 3))))a")
    expect_eq "$code" 414 "the web drop box with a target of 4,097 bytes" || return 1
    grep -qi '^connection: close' "$OUT/web-long.head" || { fail "the web page's 414 keeps the connection"; return 1; }
    code=$(lab_run 2 curl -sS -m 20 -o /dev/null -w '%{http_code}' "$WEB_URL")
    expect_eq "$code" 200 "the drop box's page after it" || return 1
    stop "$WEB_PID"
}
