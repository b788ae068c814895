# The failure matrix (issue 24): each command that reaches a peer, run through a running node (on
# host 2) and on its own (host 3), against each failure — a peer nobody advertises, a port that
# refuses, a port that drops every packet, an invitation declined. In every cell: the documented exit status, exactly one sentence
# on stderr, a final `error` event with the code; and the two ways agree on all three.
# Sourced by run.sh; uses the helpers of sessions.sh and outcomes.sh.
# shellcheck shell=bash

# mx_run HOST CELL ARGS...: `nearby ARGS` on HOST, stdin /dev/null; sets MX_STATUS, output in $OUT/CELL.*
# A stream's events go to stderr (its stdout is the peer's bytes): they are split out into .jsonl.
mx_run() {
    local host=$1 cell=$2; shift 2
    if [[ $1 == stream ]]; then
        lab_run "$host" "$NEARBY" "$@" </dev/null >"$OUT/$cell.out" 2>"$OUT/$cell.all"
        MX_STATUS=$?
        grep '^{' "$OUT/$cell.all" >"$OUT/$cell.jsonl"
        grep -v '^{' "$OUT/$cell.all" >"$OUT/$cell.err"
        return 0
    fi
    lab_run "$host" "$NEARBY" "$@" </dev/null >"$OUT/$cell.jsonl" 2>"$OUT/$cell.err"
    MX_STATUS=$?
}

# mx_cell NAME STATUS CODE SENTENCE -- ARGS...: runs ARGS through h2's node and on h3, checks both.
mx_cell() {
    local name=$1 status=$2 code=$3 sentence=$4; shift 5
    local way host last
    for way in node alone; do
        host=$([[ $way == node ]] && echo 2 || echo 3)
        [[ -n ${MX_BEFORE:-} ]] && $MX_BEFORE
        mx_run "$host" "$name-$way" "$@"
        expect_error "$OUT/$name-$way.jsonl" "$status" "$MX_STATUS" "$code" "$name ($way)" || return 1
        oc_sentence "$OUT/$name-$way.err" "$sentence" || { fail "$name ($way)"; return 1; }
        last=$(jq -c 'select(.event=="error") | .code' "$OUT/$name-$way.jsonl" | tail -1)
        expect_eq "$(tail -1 "$OUT/$name-$way.jsonl" | jq -r .event)" error "$name ($way): the final event" || return 1
        expect_eq "$last" "\"$code\"" "$name ($way): the final event's code" || return 1
    done
    # Both ways say the same sentence (the host that tried is not part of it).
    expect_eq "$(sed 's/^.*error: //' "$OUT/$name-node.err")" "$(sed 's/^.*error: //' "$OUT/$name-alone.err")" "$name: the sentence with and without a node" || return 1
    printf '    %-28s exit %s  %s\n' "$name" "$status" "$(sed 's/^.*error: //' "$OUT/$name-node.err" | cut -c1-90)"
}

test_matrix_not_found_and_refused() {
    trap stop_started RETURN
    local file=$OUT/f.txt closed="$(lab_addr 1):9"
    echo hello >"$file"
    start_node 2 s-mx || return 1
    local s=(--service s-mx)
    mx_cell send-not-found 2 peer-not-found "peer 'Zed' was not found" -- send "${s[@]}" --timeout 1 Zed hi || return 1
    mx_cell send-file-not-found 2 peer-not-found "peer 'Zed' was not found" -- send-file "${s[@]}" --timeout 1 Zed "$file" || return 1
    mx_cell invite-not-found 2 peer-not-found "peer 'Zed' was not found" -- invite "${s[@]}" --timeout 1 Zed || return 1
    mx_cell lines-not-found 2 peer-not-found "peer 'Zed' was not found" -- send --lines "${s[@]}" --timeout 1 Zed || return 1
    mx_cell send-refused 5 connection-failed "$closed" -- send "${s[@]}" --timeout 3 "$closed" hi || return 1
    mx_cell send-file-refused 5 connection-failed "$closed" -- send-file "${s[@]}" --timeout 3 "$closed" "$file" || return 1
    mx_cell invite-refused 5 connection-failed "$closed" -- invite "${s[@]}" --timeout 3 "$closed" || return 1
    mx_cell lines-refused 5 connection-failed "$closed" -- send --lines "${s[@]}" --timeout 3 "$closed" || return 1
    mx_cell stream-not-found 2 peer-not-found "peer 'Zed' was not found" -- stream "${s[@]}" --timeout 1 Zed || return 1
    mx_cell stream-refused 5 connection-failed "$closed" -- stream "${s[@]}" --timeout 3 "$closed" || return 1
}

# A peer found by name whose port drops every packet (nft, IPv4 and IPv6): each address gets the
# connect timeout (NEARBY_CONNECT_TIMEOUT_MS, here 1 s, for h2's node and for h3), then exit 5
# naming every address and what happened there — through a node and on its own alike.
test_matrix_port_dropped() {
    trap 'stop_started; unset NEARBY_CONNECT_TIMEOUT_MS; lab_run 1 nft delete table inet mxdrop 2>/dev/null; trap - RETURN' RETURN
    local id1 file=$OUT/f.txt
    echo hello >"$file"
    export NEARBY_CONNECT_TIMEOUT_MS=1000
    id1=$(id_of 1) || return 1
    start_node 1 s-mx-drop --auto-accept || return 1
    nft_on 1 mxdrop input "tcp dport $ADV_PORT drop" || return 1
    start_node 2 s-mx-drop || return 1
    local s=(--service s-mx-drop --timeout 10) dropped="did not answer within 1 s"
    mx_cell send-dropped 5 connection-failed "$dropped" -- send "${s[@]}" "$id1" hi || return 1
    mx_cell send-file-dropped 5 connection-failed "$dropped" -- send-file "${s[@]}" "$id1" "$file" || return 1
    mx_cell invite-dropped 5 connection-failed "$dropped" -- invite "${s[@]}" "$id1" || return 1
    mx_cell lines-dropped 5 connection-failed "$dropped" -- send --lines "${s[@]}" "$id1" || return 1
    mx_cell stream-dropped 5 connection-failed "$dropped" -- stream "${s[@]}" "$id1" || return 1
}

# Host 1 declines: once the next invitation shows on its node, `nearby accept --decline` answers it.
mx_decline_next() {
    local seen
    seen=$(count_json "$MX_NODE1" 'select(.event=="invitation")')
    (
        for _ in $(seq 100); do
            (( $(count_json "$MX_NODE1" 'select(.event=="invitation")') > seen )) && break
            sleep 0.1
        done
        lab_run 1 "$NEARBY" accept --decline --service s-mx-dec >/dev/null 2>&1
    ) &
}

test_matrix_declined() {
    trap 'stop_started; MX_BEFORE=' RETURN
    local id1 file=$OUT/f.txt
    echo hello >"$file"
    id1=$(id_of 1) || return 1
    start_node 1 s-mx-dec || return 1
    MX_NODE1=$ADV
    start_node 2 s-mx-dec || return 1
    MX_BEFORE=mx_decline_next
    local s=(--service s-mx-dec --timeout 10)
    mx_cell send-declined 3 declined "declined the invitation" -- send "${s[@]}" "$id1" hi || return 1
    mx_cell send-file-declined 3 declined "declined the invitation" -- send-file "${s[@]}" "$id1" "$file" || return 1
    mx_cell invite-declined 3 declined "declined the invitation" -- invite "${s[@]}" "$id1" || return 1
    mx_cell lines-declined 3 declined "declined the invitation" -- send --lines "${s[@]}" "$id1" || return 1
    mx_cell stream-declined 3 declined "declined the invitation" -- stream "${s[@]}" "$id1" || return 1
}

# --- mid-transfer: the peer killed, the sender cancelled, the receiver's disk full ----------------
# The same send-file through h2's node and on its own on h3, to h1; each cell checks the exit
# status, one sentence on stderr, the final `error` event and its code, and that both ways agree on
# status and code (and, but for how the end was noticed, on the sentence).

# mx_mid_cell NAME STATUS CODE SENTENCE: checks $OUT/NAME-{node,alone}.{jsonl,err} and MX_S_node/MX_S_alone.
mx_mid_cell() {
    local name=$1 status=$2 code=$3 sentence=$4 way
    for way in node alone; do
        local s_var=MX_S_$way
        expect_error "$OUT/$name-$way.jsonl" "$status" "${!s_var}" "$code" "$name ($way)" || return 1
        oc_sentence "$OUT/$name-$way.jsonl.err" "$sentence" || { fail "$name ($way)"; return 1; }
        expect_eq "$(tail -1 "$OUT/$name-$way.jsonl" | jq -r .event)" error "$name ($way): the final event" || return 1
    done
    printf '    %-28s exit %s  %s\n' "$name" "$status" "$(sed 's/^.*error: //' "$OUT/$name-node.jsonl.err" | cut -c1-90)"
}

# mx_send_bg WAY NAME ARGS...: send-file from h2 through its node (WAY node) or from h3 on its own.
mx_send_bg() {
    local way=$1 name=$2 host; shift 2
    host=$([[ $way == node ]] && echo 2 || echo 3)
    nb_bg "$host" "$OUT/$name-$way.jsonl" send-file "$@"
}

test_matrix_mid_transfer() {
    trap files_done RETURN
    local id1 receiver sender way src=$OUT/src size=400000000 full=$OUT/full
    id1=$(id_of 1) || return 1
    files_later rm -rf "$src" "$OUT/in"
    files_random "$src/big.bin" "$size"
    start_node 2 s-mx-mid || return 1
    local s=(--service s-mx-mid --timeout 10)

    # 1. The receiver is killed mid-transfer (SIGKILL: no goodbye), and the sender told not to wait
    # for it to come back (--retry-for 0; faults.sh tests the waiting).
    for way in node alone; do
        mkdir -p "$OUT/in"
        nb_bg 1 "$OUT/recv-$way.jsonl" advertise --service s-mx-mid --auto-accept --save-dir "$OUT/in"; receiver=$PID
        await "$OUT/recv-$way.jsonl" 'select(.event=="advertising")' 10 "the receiver" >/dev/null || return 1
        mx_send_bg "$way" killed "${s[@]}" --retry-for 0 "$id1" "$src/big.bin"; sender=$PID
        await "$OUT/recv-$way.jsonl" "select(.event==\"progress\" and .bytes >= $((size / 10)))" 30 "receiving ($way)" >/dev/null || return 1
        kill -KILL "$receiver"
        lab_wait_pid "$sender" 30 >/dev/null; printf -v "MX_S_$way" %s $?
        rm -rf "$OUT/in"
    done
    mx_mid_cell killed 5 connection-lost "big.bin" || return 1

    # 2. The sender is cancelled (SIGINT) mid-transfer. (Each part below has a service of its own,
    # with h2's node started after h1's: it must not hold the port of a receiver killed above.)
    mkdir -p "$OUT/in"
    start_node 1 s-mx-cancel --auto-accept --save-dir "$OUT/in" || return 1
    start_node 2 s-mx-cancel || return 1
    for way in node alone; do
        mx_send_bg "$way" cancelled --service s-mx-cancel --timeout 10 "$id1" "$src/big.bin"; sender=$PID
        await "$OUT/cancelled-$way.jsonl" "select(.event==\"progress\" and .bytes >= $((size / 10)))" 30 "sending ($way)" >/dev/null || return 1
        kill -INT "$sender"
        lab_wait_pid "$sender" 15 >/dev/null; printf -v "MX_S_$way" %s $?
    done
    mx_mid_cell cancelled 130 cancelled "sending big.bin to $id1 cancelled" || return 1

    # 3. The receiver's disk fills (a 5 MB tmpfs).
    mkdir -p "$full"
    mount -t tmpfs -o size=5m tmpfs "$full" || { fail "cannot mount a 5 MB tmpfs"; return 1; }
    files_later umount -l "$full"
    files_random "$src/ten.bin" 10000000
    start_node 1 s-mx-full --auto-accept --save-dir "$full" || return 1
    start_node 2 s-mx-full || return 1
    for way in node alone; do
        mx_send_bg "$way" full --service s-mx-full --timeout 10 "$id1" "$src/ten.bin"; sender=$PID
        lab_wait_pid "$sender" 30 >/dev/null; printf -v "MX_S_$way" %s $?
    done
    mx_mid_cell full 8 io-error "disk is full" || return 1
}
