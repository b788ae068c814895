# End-to-end tests of the discovery daemon going away (sourced by run.sh): every command that needs
# it says "avahi-daemon is not running: start it with …" (exit 7) at once, and an advertisement comes back by itself
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
        grep -q "avahi-daemon is not running: start it with" "$OUT/err.txt" || { fail "'$command' does not say how to start avahi-daemon"; ok=1; }
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

# daemon_catches_sigint PID: true once PID handles SIGINT itself (SigCgt in /proc has bit 2), within 10 s.
daemon_catches_sigint() {
    local i mask
    for ((i = 0; i < 200; i++)); do
        mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
        [[ -n $mask ]] && (( (16#$mask >> 1) & 1 )) && return 0
        sleep 0.05
    done
    return 1
}

# A daemon that runs but answers nothing (SIGSTOPped: as hung as it gets) holds every DNS-SD call
# for D-Bus's 25 s. Ctrl-C still ends each waiting command within a second (before: `invite` went on
# for the whole 25 s, the call blocking the very thread that had to notice the signal), and doctor
# says the daemon hangs within its --timeout.
test_a_hung_daemon_holds_up_neither_ctrl_c_nor_doctor() {
    trap files_done RETURN
    local file=$OUT/file.txt pid status started ms ok=0 avahi
    echo hello >"$file"
    avahi=$(cat "$(_lab_hostdir 5)/avahi.pid") || { fail "no avahi pid for h5"; return 1; }
    kill -STOP "$avahi"
    files_later kill -CONT "$avahi"
    local -a commands=(
        "invite --service dmn3 somebody --timeout 30"
        "send --service dmn3 somebody hello --timeout 30"
        "send-file --service dmn3 somebody $file --timeout 30"
        "browse --service dmn3"
        "browse --types"
        "accept --service dmn3"
        "advertise --service dmn3"
    )
    local command
    for command in "${commands[@]}"; do
        # shellcheck disable=SC2086
        lab_bg 5 "$OUT/out.jsonl" "$NEARBY" $command </dev/null >/dev/null; pid=$LAB_PID
        # Until the command handles Ctrl-C itself (else SIGINT kills it, and the test proves
        # nothing), and a moment more to be waiting on the daemon.
        daemon_catches_sigint "$pid" || { fail "'nearby $command' never handled SIGINT"; ok=1; kill -KILL "$pid"; continue; }
        sleep 0.5
        started=${EPOCHREALTIME/[.,]/}
        kill -INT "$pid"
        lab_wait_pid "$pid" 10; status=$?
        ms=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
        echo "    nearby ${command%% --*}: exit $status $ms ms after SIGINT"
        [[ $status == 124 ]] && { fail "'nearby $command' still runs 10 s after SIGINT"; kill -KILL "$pid"; ok=1; continue; }
        case ${command%% *} in
            browse) [[ $status == 0 ]] || { fail "'nearby $command' exited $status after SIGINT (0: browse ends so)"; ok=1; } ;;
            *) [[ $status == 130 ]] || { fail "'nearby $command' exited $status after SIGINT (130 expected)"; ok=1; } ;;
        esac
        (( ms <= 3000 )) || { fail "'nearby $command' took $ms ms to end after SIGINT"; ok=1; }
    done
    # A lookup keeps to its --timeout (not found: exit 2), whatever the daemon does.
    started=${EPOCHREALTIME/[.,]/}
    lab_run 5 "$NEARBY" send --service dmn3 somebody hello --timeout 2 >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    ms=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    echo "    send --timeout 2: exit $status after $ms ms"
    expect_eq "$status" 2 "send --timeout 2 with a hung daemon" || { show "$OUT/send.jsonl"; ok=1; }
    (( ms <= 6000 )) || { fail "send --timeout 2 took $ms ms with a hung daemon"; ok=1; }
    started=${EPOCHREALTIME/[.,]/}
    lab_run 5 "$NEARBY" doctor --service dmn3 --timeout 2 >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"; status=$?
    ms=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    echo "    doctor --timeout 2: exit $status after $ms ms"
    expect_eq "$status" 7 "doctor's exit status with a hung daemon" || { show "$OUT/doctor.jsonl"; ok=1; }
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="daemon" and .status=="fail" and (.detail|test("did not answer")))' \
        "the daemon check says the daemon does not answer" || ok=1
    (( ms <= 6000 )) || { fail "doctor --timeout 2 took $ms ms with a hung daemon"; ok=1; }
    return "$ok"
}
