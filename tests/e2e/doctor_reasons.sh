# `nearby doctor` reasons from everything it knows before it blames a cause (issue 33, rows 6-9),
# each fault built for real: a peer behind the router lab's router, an nft rule on this host dropping
# the peer's mDNS, the peer's avahi-daemon stopped, a D-Bus policy that refuses avahi to this user.
# Helpers of doctor.sh (doctor, check_is, nft_on) and netlab_router.sh.
# shellcheck shell=bash

# no_fail_but WHAT CHECK...: no check failed except the ones named.
dr_only_fails() {
    local what=$1 filter='select(.event=="check" and .status=="fail"' name; shift
    for name in "$@"; do filter+=" and .check!=\"$name\""; done
    filter+=')'
    [[ $(count_json "$OUT/doctor.jsonl" "$filter") == 0 ]] || { fail "$what: a check failed: $(jq -c "$filter" "$OUT/doctor.jsonl")"; return 1; }
}

# Row 6: a peer on another subnet (behind a router, which does not forward multicast) does not see
# this host's probe — which the subnet check already explains: `skip`, not a one-way-multicast FAIL.
test_doctor_reasons_a_routed_peer_is_not_one_way_multicast() {
    lab_router_up || return 1
    local far=$LAB_FAR addr
    addr=$(lab_router_addr "$far") || return 1
    NEARBY_PROBE_WAIT=2 advertise "$far" dr-routed || return 1
    # Every check shares doctor's --timeout, from its start: enough for the peer's 2 s wait before
    # it says it does not see this host.
    DOCTOR_TIMEOUT=6 doctor 1 "$addr:$ADV_PORT"
    stop "$ADV_PID"
    check_is subnet warn "mDNS does not cross routers" || return 1
    check_is connect ok || return 1
    check_is identity ok || return 1
    check_is peer-sees-us skip "another subnet" || return 1
    dr_only_fails "a routed peer" || return 1
    expect_eq "$STATUS" 0 "doctor exit status for a routed peer" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
}

# Row 7: this host drops mDNS from the peer: the peer check names the rule (not the daemon's stale
# cache of the peer on another type); and every hint that names the peer is one shell word.
test_doctor_reasons_a_local_rule_before_a_stale_cache() {
    trap 'stop_started; lab_run 2 nft delete table inet drseven 2>/dev/null; trap - RETURN' RETURN
    local hint cmd
    start_node 1 dr-seven-a --name "Alice's laptop" || return 1
    # Without the rule: the peer is on another type; the hint's command, run by a shell, names it.
    doctor 2 --service dr-seven-b "Alice's laptop"
    check_is peer fail "add --service dr-seven-a" || return 1
    hint=$(jq -r 'select(.event=="check" and .check=="peer") | .hint' "$OUT/doctor.jsonl")
    cmd=${hint%% (*}
    local -a words
    eval "words=($cmd)" || { fail "the hint is not shell: $hint"; return 1; }
    expect_eq "${words[2]}" "Alice's laptop" "the name in the hint's command, as a shell reads it ($cmd)" || return 1
    # With h2 dropping mDNS from h1: the rule is the cause named, not the cache.
    nft_on 2 drseven input "ip saddr $(lab_addr 1) udp dport 5353 drop" || return 1
    # Only root may list the firewall's rules (this part is about root).
    DOCTOR_AS=root doctor 2 --service dr-seven-b "Alice's laptop"
    check_is firewall warn "5353" 2>/dev/null || check_is firewall fail "5353" || return 1
    check_is peer fail "this host's firewall drops mDNS ('ip saddr $(lab_addr 1) udp dport 5353 drop')" || return 1
    expect_eq "$(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer" and (.detail|contains("add --service")))')" 0 \
        "the peer check blames the service type" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer" and (.hint|contains("nft")))' "the hint says how to remove the rule" || return 1
}

# Row 8: the peer's avahi-daemon is stopped while its node runs: by name, doctor finds its node at
# the last-known address and says that its daemon does not answer; by address, the same — never
# "is nearby advertise running?", never this host's daemon.
test_doctor_reasons_the_peers_daemon_not_ours() {
    trap 'stop_started; lab_start_avahi 2 2>/dev/null; trap - RETURN' RETURN
    local port sentence
    start_node 2 dr-eight --name "Bob's Pi" || return 1; port=$ADV_PORT
    # h1 has seen it once (recent-peers.json keeps where).
    nb 1 browse --service dr-eight --peer "Bob's Pi" --timeout 10 >/dev/null || { fail "h1 does not find Bob's Pi"; return 1; }
    lab_stop_avahi 2
    # h1's daemon may keep Bob's records cached for a while; a fresh one knows nothing of it.
    lab_stop_avahi 1; lab_start_avahi 1 || return 1
    sentence="Bob's Pi answers at $(lab_addr 2):$port but is not advertised: its DNS-SD daemon does not answer"
    doctor 1 --service dr-eight "Bob's Pi"
    [[ $STATUS != 0 ]] || fail "doctor by name exits 0" || return 1
    check_is daemon ok || return 1
    check_is peer fail "a node answers at its last-known address $(lab_addr 2):$port" || return 1
    check_is peer-sees-us fail "$sentence" || return 1
    expect_eq "$(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and ((.hint // "")|contains("nearby advertise")))')" 0 \
        "a hint asking whether 'nearby advertise' runs" || return 1
    doctor 1 --service dr-eight "$(lab_addr 2):$port"
    [[ $STATUS != 0 ]] || fail "doctor HOST:PORT exits 0" || return 1
    check_is peer-sees-us fail "$sentence" || return 1
    ! grep -q "could not look for this host" "$OUT/doctor.jsonl" || fail "the peer's daemon blamed as this host's" || return 1
}

# Row 9: a D-Bus policy that refuses this user avahi: one sentence and exit 7 from browse, advertise
# and doctor alike, no raw error number as the whole story.
test_doctor_reasons_access_refused_by_dbus_policy() {
    local hd conf
    hd=$(_lab_hostdir 3); conf=$hd/dbus.conf
    cp "$conf" "$OUT/dbus.conf.orig"
    trap 'cp "$OUT/dbus.conf.orig" "'"$conf"'"; dr_reload_dbus 3; trap - RETURN' RETURN
    # As a site policy that lets only some users browse and publish does (avahi answers who it is,
    # but refuses the calls that browse, resolve and publish).
    local member deny=""
    for member in ServiceBrowserNew ServiceTypeBrowserNew ServiceResolverNew RecordBrowserNew EntryGroupNew; do
        deny+="<deny send_destination=\"org.freedesktop.Avahi\" send_interface=\"org.freedesktop.Avahi.Server\" send_member=\"$member\"/>"
    done
    sed -i "s#</busconfig>#  <policy user=\"$LAB_USER\">$deny</policy>\n</busconfig>#" "$conf"
    dr_reload_dbus 3 || return 1
    dr_nine_says_refused "some calls denied" || return 1
    # A policy that denies every call to the daemon: Avahi's library says -65537, as when it is not
    # running; the bus says it is there.
    cp "$OUT/dbus.conf.orig" "$conf"
    sed -i "s#</busconfig>#  <policy user=\"$LAB_USER\"><deny send_destination=\"org.freedesktop.Avahi\"/></policy>\n</busconfig>#" "$conf"
    dr_reload_dbus 3 || return 1
    dr_nine_says_refused "every call denied" || return 1
}

# dr_nine_says_refused WHAT: browse, advertise and doctor on h3 say access is refused, exit 7.
dr_nine_says_refused() {
    local what=$1 hd cmd status
    hd=$(_lab_hostdir 3)
    for cmd in "browse --timeout 2" "advertise" "doctor --timeout 2"; do
        # shellcheck disable=SC2086
        timeout 10 "$(command -v ip)" netns exec "${LAB_PREFIX}h3" env "DBUS_SYSTEM_BUS_ADDRESS=unix:path=$hd/dbus.sock" \
            "NEARBY_HOME=$hd/home" "XDG_RUNTIME_DIR=$hd/run" "$NEARBY" $cmd --service dr-nine >"$OUT/nine.jsonl" 2>"$OUT/nine.err"; status=$?
        expect_eq "$status" 7 "nearby $cmd under a policy refusing avahi ($what)" || { show "$OUT/nine.jsonl"; return 1; }
        # The error's sentence on stderr (doctor: its daemon check's detail).
        cat "$OUT/nine.err" "$OUT/nine.jsonl" >"$OUT/nine.all"
        ex_says "$OUT/nine.all" "avahi-daemon refused this user access: its D-Bus policy" "nearby $cmd ($what): the sentence" || return 1
        ! grep -q "avahi-daemon is not running" "$OUT/nine.all" || fail "nearby $cmd ($what) asks whether avahi-daemon runs" || return 1
    done
}

# dr_reload_dbus K: host K's bus rereads its configuration.
dr_reload_dbus() {
    lab_run "$1" dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null \
        || fail "dbus ReloadConfig on h$1"
}
