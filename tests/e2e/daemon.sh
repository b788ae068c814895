# End-to-end tests of the discovery daemon going away (sourced by run.sh): every command that needs
# it says "is avahi-daemon running?" (exit 7) at once, and an advertisement comes back by itself
# when the daemon does.

test_every_command_fails_at_once_without_the_daemon() {
    local file=$OUT/file.txt status started ms ok=0
    echo hello >"$file"
    lab_stop_avahi 5
    local -a commands=(
        "send --service dmn1 somebody hello --timeout 30"
        "invite --service dmn1 somebody --timeout 30"
        "send-file --service dmn1 somebody $file --timeout 30"
        "stream --service dmn1 somebody --timeout 30"
        "accept --service dmn1"
        "stream --listen --service dmn1"
    )
    local command
    for command in "${commands[@]}"; do
        started=${EPOCHREALTIME/[.,]/}
        # shellcheck disable=SC2086
        lab_run 5 "$NEARBY" $command </dev/null >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
        ms=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
        echo "    nearby ${command%% *}: exit $status after $ms ms"
        if [[ $status != 7 ]]; then fail "'nearby $command' exited $status without the daemon"; ok=1; continue; fi
        # At once, not after --timeout 30: bounded at 10 s, which a loaded machine (three labs on two cores) needs.
        (( ms <= 10000 )) || { fail "'nearby $command' took $ms ms to fail"; ok=1; }
        # stream prints its events on stderr (stdout carries the bytes).
        cat "$OUT/out.jsonl" "$OUT/err.txt" | grep -q '"code":"daemon-unavailable"' || { fail "no daemon-unavailable error from '$command'"; ok=1; }
        grep -q "is avahi-daemon running?" "$OUT/err.txt" || { fail "'$command' does not ask whether avahi-daemon runs"; ok=1; }
    done
    lab_start_avahi 5
    return "$ok"
}

test_an_advertisement_comes_back_after_the_daemon_restarts() {
    start_node 6 dmn2 || return 1
    local node=$ADV id
    id=$(id_of 6)
    lab_stop_avahi 6
    # A wait, not a failure: the node runs on, so no error event and no exit status.
    lab_wait_line "$node" 'select(.event=="waiting" and .for=="daemon")' 5 >/dev/null \
        || { fail "the node did not say it waits for the daemon"; show "$node"; return 1; }
    [[ $(count_json "$node" 'select(.event=="error")') == 0 ]] || { fail "an error event from a node that runs on"; show "$node"; return 1; }
    lab_start_avahi 6
    # A second `advertising`, and another host finds it again.
    local deadline=$(( ${EPOCHREALTIME/[.,]/} + 10000000 ))
    until [[ $(count_json "$node" 'select(.event=="advertising")') -ge 2 ]]; do
        (( ${EPOCHREALTIME/[.,]/} < deadline )) || { fail "no advertising event after the daemon came back"; show "$node"; return 1; }
        sleep 0.1
    done
    lab_run 5 "$NEARBY" browse --service dmn2 --peer "$id" --timeout 10 >"$OUT/browse.jsonl" 2>"$OUT/browse.err" \
        || { fail "h5 did not find the node after the daemon restarted"; show "$OUT/browse.jsonl"; return 1; }
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$id\")" "found again"
}
