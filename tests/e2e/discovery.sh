# Discovery end-to-end tests: identity, advertise, browse, the MPC wire format. Sourced by run.sh.
# shellcheck shell=bash

test_identity_created_once_and_kept() {
    local a b
    a=$(id_of 1) && b=$(id_of 1) || return 1
    [[ $a =~ ^[0-9a-z]{13}$ ]] || fail "peer id '$a' is not 13 base-36 characters" || return 1
    expect_eq "$b" "$a" "id after a second run" || return 1
    expect_eq "$(stat -c %a "$LAB_DIR/h1/home/identity.json")" 600 "identity file mode" || return 1
    lab_run 1 "$NEARBY" identity --rename "Alice Box" >/dev/null || return 1
    expect_eq "$(id_of 1)" "$a" "id after rename" || return 1
    expect_eq "$(lab_run 1 "$NEARBY" identity | jq -r .peer.name)" "Alice Box" "name after rename" || return 1
    # Eight first runs racing on an empty home all end up with one identity.
    local home=$LAB_DIR/h4/race pids=() i
    mkdir -p "$home"
    for i in 1 2 3 4 5 6 7 8; do
        NEARBY_HOME=$home "$NEARBY" identity >"$OUT/race$i.jsonl" 2>&1 & pids+=($!)
    done
    wait "${pids[@]}"
    expect_eq "$(cat "$OUT"/race*.jsonl | jq -r .peer.id | sort -u | wc -l)" 1 "distinct ids after 8 racing first runs" || return 1
    expect_eq "$(ls "$home")" identity.json "files left in the racing home" || return 1
}

test_corrupt_identity_is_an_error_not_a_new_identity() {
    local home=$LAB_DIR/h4/corrupt status
    mkdir -p "$home" && echo '{"version":1,"broken' >"$home/identity.json"
    NEARBY_HOME=$home "$NEARBY" identity >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 9 "exit status" || return 1
    expect_json "$OUT/out.jsonl" 'select(.event=="error" and .code=="identity-corrupt" and (.message|contains("identity.json")))' "an identity-corrupt error naming the file" || return 1
    grep -q "identity.json" "$OUT/err.txt" || fail "stderr does not name the file" || return 1
    expect_eq "$(cat "$home/identity.json")" '{"version":1,"broken' "the corrupt file is left as it was" || return 1
}

test_advertise_then_browse_from_another_host() {
    local id1
    id1=$(id_of 1) || return 1
    advertise 1 e2e-basic --info room=4.12 --info _secret=x --info "note=hello world" || return 1
    expect_json "$OUT/adv-h1-e2e-basic.jsonl" "select(.event==\"advertising\" and .peer.id==\"$id1\" and .service==\"e2e-basic\" and .info.room==\"4.12\")" "advertising event" || return 1
    lab_run 2 "$NEARBY" browse --service e2e-basic --timeout 4 >"$OUT/browse.jsonl" 2>"$OUT/browse.err" || fail "browse exited $?" || return 1
    expect_json "$OUT/browse.jsonl" 'select(.event=="browsing" and .service=="e2e-basic" and .domain=="local.")' "browsing event first" || return 1
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\" and .peer.name==\"Alice Box\"
        and .kind==\"nearby\" and .protocol==\"2\" and .info==({\"room\":\"4.12\",\"_secret\":\"x\",\"note\":\"hello world\"})
        and .port==$ADV_PORT and .host==\"h1.local.\" and (.addresses|index(\"10.99.0.1\")) != null
        and .interface==\"nb0\" and .self==false and .elapsed_ms >= 0)" "found event with everything about h1" || return 1
    expect_eq "$(count_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\")")" 1 "found events for h1 (IPv4 + IPv6 reports)" || return 1
    # Our own advertisement, browsed by the same identity, is marked as such.
    lab_run 1 "$NEARBY" browse --service e2e-basic --count 1 --timeout 5 >"$OUT/self.jsonl" || return 1
    expect_json "$OUT/self.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\" and .self==true)" "self flag on our own advertisement" || return 1
    stop "$ADV_PID"; expect_eq $? 0 "advertise exit status after SIGINT" || return 1
}

test_avahi_browse_sees_the_mpc_txt_format() {
    local id1 line instance type host address port txt
    id1=$(id_of 1) || return 1
    advertise 1 e2e-wire --info room=4.12 --info _secret=x || return 1
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        line=$(lab_run 3 avahi-browse -rpt _e2e-wire._tcp 2>/dev/null | grep "^=;nb0;IPv[46];$id1;" | head -1)
        [[ -n $line ]] && break
        sleep 0.5
    done
    [[ -n $line ]] || fail "avahi-browse on h3 did not resolve $id1" || return 1
    # =;iface;proto;name;type;domain;host;address;port;txt (the address may be of either family)
    IFS=';' read -r _ _ _ instance type _ host address port txt <<<"$line"
    expect_eq "$instance" "$id1" "instance name" || return 1
    expect_eq "$type" "_e2e-wire._tcp" "service type" || return 1
    expect_eq "$host" "h1.local" "host" || return 1
    [[ $address == 10.99.0.1 || $address == fe80:* ]] || fail "address $address is not h1's" || return 1
    expect_eq "$port" "$ADV_PORT" "port" || return 1
    for entry in '"_d=Alice Box"' '"_nb=2"' '"room=4.12"' '"__secret=x"'; do
        [[ $txt == *"$entry"* ]] || fail "TXT '$txt' lacks $entry" || return 1
    done
    stop "$ADV_PID"
}

test_plain_mpc_app_is_marked_as_such() {
    lab_bg 3 "$OUT/publish.txt" avahi-publish -s mpcphone _e2e-mpc._tcp 5555 "_d=Anna's iPhone" "color=red" "__hidden=1" "_private=9" >/dev/null
    local pub=$LAB_PID
    lab_run 2 "$NEARBY" browse --service e2e-mpc --count 1 --timeout 10 >"$OUT/browse.jsonl" || fail "browse exited $?" || return 1
    expect_json "$OUT/browse.jsonl" 'select(.event=="found" and .peer.id=="mpcphone" and .peer.name=="Anna'"'"'s iPhone"
        and .kind=="mpc" and .protocol==null and .info=={"color":"red","_hidden":"1"} and .port==5555
        and (.addresses|index("10.99.0.3")) != null)' "found event for the MPC app" || return 1
    kill "$pub"; lab_wait_pid "$pub" 5
}

test_stopping_the_advertiser_is_seen_as_lost_within_seconds() {
    local id1 status t0 t1
    id1=$(id_of 1) || return 1
    lab_bg 2 "$OUT/browse.jsonl" "$NEARBY" browse --service e2e-lost >/dev/null
    local browser=$LAB_PID
    advertise 1 e2e-lost || return 1
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\")" 10 >/dev/null || fail "no found event" || return 1
    t0=${EPOCHREALTIME/[.,]/}
    stop "$ADV_PID"; status=$?
    expect_eq "$status" 0 "advertise exit status after SIGINT" || return 1
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"lost\" and .peer.id==\"$id1\" and .peer.name==\"Alice Box\")" 5 >/dev/null || fail "no lost event within 5 s of SIGINT" || return 1
    t1=${EPOCHREALTIME/[.,]/}
    printf '    lost seen %d ms after SIGINT\n' $(( (t1 - t0) / 1000 ))
    expect_eq "$(count_json "$OUT/browse.jsonl" 'select(.event=="lost")')" 1 "lost events" || return 1
    stop "$browser"; expect_eq $? 0 "browse exit status after SIGINT" || return 1
}

test_txt_change_is_an_update() {
    lab_bg 3 "$OUT/publisher.txt" /usr/bin/python3 "$ROOT/tests/e2e/publish_and_update.py" e2e-upd nodeupd >/dev/null
    local pub=$LAB_PID
    lab_bg 2 "$OUT/browse.jsonl" "$NEARBY" browse --service e2e-upd >/dev/null
    local browser=$LAB_PID
    lab_wait_line "$OUT/browse.jsonl" 'select(.event=="found" and .peer.id=="nodeupd" and .info.v=="1")' 10 >/dev/null || fail "no found event" || return 1
    lab_wait_line "$OUT/browse.jsonl" 'select(.event=="updated" and .peer.id=="nodeupd" and .info.v=="2" and .changed==["info"])' 10 >/dev/null || fail "no updated event after the TXT change" || return 1
    expect_eq "$(count_json "$OUT/browse.jsonl" 'select(.event=="found")')" 1 "found events" || return 1
    kill "$pub"; lab_wait_pid "$pub" 5
    stop "$browser"
}

test_count_timeout_and_peer_end_browsing() {
    local id1 status
    id1=$(id_of 1) || return 1
    advertise 1 e2e-end || return 1
    lab_run 2 "$NEARBY" browse --service e2e-end --count 1 --timeout 20 >"$OUT/count.jsonl"; status=$?
    expect_eq "$status" 0 "--count 1 exit status" || return 1
    expect_eq "$(count_json "$OUT/count.jsonl" 'select(.event=="found")')" 1 "found events with --count 1" || return 1
    lab_run 2 "$NEARBY" browse --service e2e-none --timeout 1 >"$OUT/timeout.jsonl"; status=$?
    expect_eq "$status" 0 "--timeout with nothing found" || return 1
    expect_eq "$(jq -r .event "$OUT/timeout.jsonl" | tr '\n' ' ')" "browsing nothing-found " "events with nothing to find (issue 25: the browse says so)" || return 1
    lab_run 2 "$NEARBY" browse --service e2e-end --peer "${id1:0:5}" >"$OUT/prefix.jsonl"; status=$?
    expect_eq "$status" 0 "--peer by ID prefix" || return 1
    expect_json "$OUT/prefix.jsonl" "select(.event==\"found\" and .peer.id==\"$id1\")" "the peer found by prefix" || return 1
    lab_run 2 "$NEARBY" browse --service e2e-end --peer "Alice Box" >"$OUT/name.jsonl"; status=$?
    expect_eq "$status" 0 "--peer by display name" || return 1
    lab_run 2 "$NEARBY" browse --service e2e-end --peer nosuchpeer --timeout 2 >"$OUT/missing.jsonl" 2>"$OUT/missing.err"; status=$?
    expect_eq "$status" 2 "--peer that never appears" || return 1
    expect_json "$OUT/missing.jsonl" 'select(.event=="error" and .code=="peer-not-found" and .exit_status==2)' "peer-not-found error" || return 1
    [[ $(count_json "$OUT/missing.jsonl" 'select(.event=="found")') == 0 ]] || fail "other peers printed while waiting for one" || return 1
    stop "$ADV_PID"
}

test_invalid_input_is_refused_before_the_network() {
    local args code status
    while IFS='|' read -r code args; do
        # shellcheck disable=SC2086
        eval "lab_run 2 \"\$NEARBY\" $args" >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
        expect_eq "$status" 64 "exit status of: nearby $args" || return 1
        expect_json "$OUT/out.jsonl" "select(.event==\"error\" and .code==\"$code\")" "error $code for: nearby $args" || return 1
        [[ $(count_json "$OUT/out.jsonl" 'select(.event=="advertising" or .event=="browsing")') == 0 ]] || fail "it touched the network: $args" || return 1
        [[ -s $OUT/err.txt ]] || fail "nothing on stderr for: $args" || return 1
    done <<'CASES'
invalid-service-type|advertise --service Chat
invalid-service-type|advertise --service abcdefghijklmnop
invalid-service-type|browse --service=-chat
invalid-service-type|browse --service ch--at
invalid-service-type|browse --service 12345
invalid-service-type|browse --service chat_v2
invalid-service-type|browse --service ''
invalid-name|advertise --service ok --name "$(printf 'x%.0s' {1..64})"
invalid-name|advertise --service ok --name ''
invalid-info|advertise --service ok --info novalue
invalid-info|advertise --service ok --info "k=$(printf 'v%.0s' {1..254})"
invalid-info|advertise --service ok --info "a=$(printf 'v%.0s' {1..150})" --info "b=$(printf 'v%.0s' {1..150})" --info "c=$(printf 'v%.0s' {1..150})"
invalid-info|advertise --service ok --info a=1 --info a=2
CASES
    # The limits themselves are fine: 63-byte name, 255-byte entry.
    advertise 2 e2e-limits --name "$(printf 'é%.0s' {1..31})x" --info "k=$(printf 'v%.0s' {1..253})" || return 1
    stop "$ADV_PID"
    # And the environment's service type is checked the same way.
    lab_run 2 env NEARBY_SERVICE=BAD "$NEARBY" browse --timeout 1 >"$OUT/env.jsonl" 2>/dev/null; status=$?
    expect_eq "$status" 64 "exit status with NEARBY_SERVICE=BAD" || return 1
}

test_daemon_not_running_is_a_clear_error() {
    local status
    lab_bg 4 "$OUT/running.jsonl" "$NEARBY" browse --service e2e-daemon >/dev/null
    local browser=$LAB_PID
    lab_wait_line "$OUT/running.jsonl" 'select(.event=="browsing")' 5 >/dev/null || fail "browse did not start" || return 1
    lab_stop_avahi 4
    lab_wait_pid "$browser" 10; status=$?
    expect_eq "$status" 7 "exit status of a browse whose daemon went away" || return 1
    expect_json "$OUT/running.jsonl" 'select(.event=="error" and .code=="daemon-unavailable")' "daemon-unavailable error" || return 1
    for command in "browse --service e2e-daemon --timeout 2" "advertise --service e2e-daemon"; do
        # shellcheck disable=SC2086
        lab_run 4 "$NEARBY" $command >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
        expect_eq "$status" 7 "exit status of 'nearby $command' without avahi-daemon" || return 1
        expect_json "$OUT/out.jsonl" 'select(.event=="error" and .code=="daemon-unavailable" and .exit_status==7)' "daemon-unavailable error" || return 1
        grep -q "avahi-daemon is not running: start it with" "$OUT/err.txt" || fail "stderr does not say how to start avahi-daemon" || return 1
    done
    lab_start_avahi 4
}

