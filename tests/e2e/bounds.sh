# End-to-end tests of what a hostile peer cannot make a node hold (sourced by run.sh): streams
# flooded past their window or before anyone accepted them, thousands of channels. Each checks the
# node's peak RSS (VmHWM) and descriptors while it happens, and that a real peer still gets in.
# The hostile peer is tests/e2e/rogue_flood.py (plaintext: the nodes run --encryption none).

# Peak resident memory (kB) and open descriptors of a process.
bounds_hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
bounds_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# rogue HOST_K MODE AMOUNT: runs rogue_flood.py from host HOST_K against host 1's node ($ADV_PORT);
# its result line in $ROGUE.
bounds_rogue() {
    local py
    py=$(files_python) || return 1
    lab_run "$1" "$py" "$ROOT/tests/e2e/rogue_flood.py" "$(lab_addr 1)" "$ADV_PORT" "$2" "$3" \
        >"$OUT/rogue-$2.out" 2>"$OUT/rogue-$2.err" || { fail "rogue_flood $2 failed"; cat "$OUT/rogue-$2.err" >&2; return 1; }
    ROGUE=$(tail -1 "$OUT/rogue-$2.out")
    echo "    rogue $2 $3: $ROGUE"
}

# The node on host 1 still takes a real peer's message.
bounds_still_serves() {
    local service=$1 node_file=$2 id
    id=$(id_of 1)
    lab_run 3 "$NEARBY" send --service "$service" --encryption none --timeout 10 "$id" "still here" \
        >"$OUT/send.jsonl" 2>"$OUT/send.err" || { fail "a real peer could not send after the flood"; show "$OUT/send.jsonl" "$node_file"; return 1; }
    lab_wait_line "$node_file" 'select(.event=="message" and .text=="still here")' 5 >/dev/null \
        || { fail "the node did not receive the real peer's message"; return 1; }
}

bounds_check_memory() {
    local pid=$1 hwm
    hwm=$(bounds_hwm "$pid")
    echo "    node peak RSS $((hwm / 1024)) MB, $(bounds_fds "$pid") descriptors"
    (( hwm < $(mem_mb 100) * 1024 )) || fail "node peak RSS $((hwm / 1024)) MB (limit $(mem_mb 100))"
}

test_stream_flooded_before_anyone_accepted_it_is_cut_off() {
    start_node 1 bounds1 --auto-accept --encryption none || return 1
    local node=$ADV pid=$ADV_PID
    bounds_rogue 2 stream-unread 400 || return 1
    [[ $(jq -r .cut <<<"$ROGUE") == true ]] || { fail "the node took 400 MiB on a stream nobody accepted"; return 1; }
    lab_wait_line "$node" 'select(.event=="error" and .code=="protocol-violation")' 5 >/dev/null \
        || { fail "no protocol-violation error event"; show "$node"; return 1; }
    bounds_check_memory "$pid" || return 1
    bounds_still_serves bounds1 "$node"
}

test_stream_flooded_past_its_window_with_a_stuck_reader_is_cut_off() {
    # The listener's stdout is a pipe nobody reads: it fills, and the node must not buffer for it.
    local file=$OUT/listen.txt
    lab_bg 1 "$OUT/listen.out" sh -c "'$NEARBY' stream --listen --service bounds2 --encryption none 2>'$file' </dev/null | sleep 60" >/dev/null
    lab_wait_line "$file" 'select(.event=="advertising")' 10 >/dev/null || { fail "no listener"; cat "$file" >&2; return 1; }
    ADV_PORT=$(jq -r 'select(.event=="advertising") | .port' "$file")
    local pid
    pid=$(pgrep -n -f "stream --listen --service bounds2") || { fail "no listener process"; return 1; }
    bounds_rogue 2 stream-past-window 400 || return 1
    [[ $(jq -r .accepted <<<"$ROGUE") == 1 ]] || { fail "the listener did not accept the stream"; return 1; }
    [[ $(jq -r .cut <<<"$ROGUE") == true ]] || { fail "the node took 400 MiB past its window"; return 1; }
    lab_wait_line "$file" 'select(.event=="error" and .code=="protocol-violation")' 5 >/dev/null \
        || { fail "no protocol-violation error event"; cat "$file" >&2; return 1; }
    bounds_check_memory "$pid"
}

test_thousands_of_channels_are_refused_without_files_or_descriptors() {
    local dir=$OUT/save
    mkdir -p "$dir"
    start_node 1 bounds3 --auto-accept --encryption none --save-dir "$dir" || return 1
    local node=$ADV pid=$ADV_PID
    local py
    py=$(files_python) || return 1
    # The rogue holds its 3,000 offers open while a real peer sends a file.
    lab_bg 2 "$OUT/rogue-channels.out" "$py" "$ROOT/tests/e2e/rogue_flood.py" "$(lab_addr 1)" "$ADV_PORT" channels 3000 30 >/dev/null
    local rogue=$LAB_PID
    ROGUE=$(lab_wait_line "$OUT/rogue-channels.out" 'select(.holding)' 30) || { fail "the rogue got no answers"; cat "$OUT/rogue-channels.out.err" >&2; return 1; }
    echo "    rogue channels 3000: $ROGUE"
    head -c 3000000 /dev/urandom >"$OUT/real.bin"
    lab_run 3 "$NEARBY" send-file --service bounds3 --encryption none --timeout 10 "$(id_of 1)" "$OUT/real.bin" \
        >"$OUT/real.jsonl" 2>"$OUT/real.err" || { fail "a real peer could not send a file meanwhile"; show "$OUT/real.jsonl" "$node"; return 1; }
    cmp -s "$OUT/real.bin" "$dir/real.bin" || { fail "the real peer's file did not arrive intact"; return 1; }
    kill -0 "$rogue" 2>/dev/null || { fail "the rogue was cut off: the test proves nothing about 'meanwhile'"; return 1; }
    local accepted refused
    accepted=$(jq -r .accepted <<<"$ROGUE") refused=$(jq -r .refused <<<"$ROGUE")
    (( accepted <= 64 && refused >= 2936 )) || { fail "accepted $accepted, refused $refused of 3000 offers"; return 1; }
    local fds
    fds=$(bounds_fds "$pid")
    (( fds < 200 )) || { fail "the node holds $fds descriptors"; return 1; }
    local left
    left=$(find "$dir" -name '*.nearby-part' | wc -l)
    expect_eq "$left" 0 "partial files of offers that never sent a byte" || return 1
    bounds_check_memory "$pid" || return 1
    kill "$rogue" 2>/dev/null
    bounds_still_serves bounds3 "$node"
}
