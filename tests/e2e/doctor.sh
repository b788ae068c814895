# End-to-end tests of debugging discovery (sourced by run.sh): `nearby doctor` in each failure it
# names, built for real in the lab (a stopped daemon, nft rules in a host's namespace, a peer with
# the other encryption mode), and `browse --types` / `--service _http._tcp` against avahi-publish.

DOCTOR_TIMEOUT=${DOCTOR_TIMEOUT:-3}

# doctor K ARGS... — run `nearby doctor` on host K; sets STATUS and MS, output in $OUT/doctor.jsonl.
# DOCTOR_AS=root doctor …: doctor as root, for the tests about what only root sees (the firewall's
# rules: only root may list them); every other doctor runs as the lab's ordinary user.
doctor() {
    local host=$1 started bin=$NEARBY; shift
    [[ ${DOCTOR_AS:-} == root ]] && bin=$NEARBY_BIN
    started=${EPOCHREALTIME/[.,]/}
    lab_run "$host" "$bin" doctor --timeout "$DOCTOR_TIMEOUT" "$@" >"$OUT/doctor.jsonl" 2>"$OUT/doctor.err"; STATUS=$?
    MS=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    echo "    nearby doctor $*: exit $STATUS after $MS ms"
}

check_is() { # check_is NAME STATUS [DETAIL-SUBSTRING]
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"$1\" and .status==\"$2\" and (.detail|contains(\"${3:-}\")))" \
        "check $1 $2${3:+ mentioning '$3'}" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
}

# pins_of K — the SHA-256 of host K's known_peers ("absent" when it has none).
pins_of() { lab_run "$1" sh -c 'if [ -e "$NEARBY_HOME/known_peers" ]; then sha256sum <"$NEARBY_HOME/known_peers"; else echo absent; fi'; }

# doctor_behind_rule TABLE RULE DOCTOR-ARGS... — with RULE dropping input in an nft table on h1
# (the advertiser, $ADV_PID), runs doctor on h2; then removes the table and stops the advertiser.
doctor_behind_rule() {
    local table=$1 rule=$2; shift 2
    lab_run 1 nft -f - <<EOF_NFT || { fail "nft rules on h1"; stop "$ADV_PID"; return 1; }
table inet $table {
    chain input { type filter hook input priority 0; $rule; }
}
EOF_NFT
    doctor 2 "$@"
    lab_run 1 nft delete table inet "$table"
    stop "$ADV_PID"
    return 0
}

test_doctor_healthy_pair_is_all_ok() {
    local id1 pins1 pins2
    id1=$(id_of 1) || return 1
    pins1=$(pins_of 1) pins2=$(pins_of 2)
    advertise 1 dr-ok || return 1
    doctor 2 "$id1" --service dr-ok
    expect_eq "$STATUS" 0 "doctor exit status for a healthy pair" || { cat "$OUT/doctor.jsonl" >&2; stop "$ADV_PID"; return 1; }
    local check
    for check in daemon interfaces firewall mdns-stacks self-advertisement responders conflicts peer multicast-path ghost connect addresses encryption; do
        check_is "$check" ok || return 1
    done
    # The peer's responder answered the question sent to it and the one sent by multicast.
    check_is multicast-path ok "multicast passes between the two hosts" || return 1
    # The handshake proved the advertised identity, and the peer saw this host's probe.
    check_is identity ok "proved the key" || return 1
    check_is peer-sees-us ok "sees this host's announcements" || return 1
    expect_eq "$(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and .status!="ok")')" 0 "checks not ok" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="summary" and .fail==0 and .warn==0 and .ok==15 and .exit_status==0)' "summary" || return 1
    stop "$ADV_PID"
    # The peer was not bothered: no invitation, no session, no error on its side, and neither side
    # pinned anything (earlier tests may have pinned these two hosts already: the files must not change).
    local events=$OUT/adv-h1-dr-ok.jsonl
    expect_eq "$(count_json "$events" 'select(.event=="invitation" or .event=="connected" or .event=="error" or .event=="rejected")')" 0 \
        "invitations, sessions, errors or rejections on the peer" || { cat "$events" >&2; return 1; }
    expect_eq "$(pins_of 1)" "$pins1" "the peer's known_peers (doctor's host pinned?)" || return 1
    expect_eq "$(pins_of 2)" "$pins2" "doctor's known_peers (the peer pinned?)" || return 1
}

# The classic one-way failure: h2 sees h1, but h1's host drops mDNS from h2 (an nft rule in h1's
# namespace, added once h2 has h1 in its cache). h1 is asked, inside the handshake, and says no.
test_doctor_names_one_way_multicast() {
    local id1 mac
    id1=$(id_of 1) || return 1
    NEARBY_PROBE_WAIT=2 advertise 1 dr-oneway || return 1
    # h2's daemon learns h1's service (and its address) before the wall goes up.
    lab_run 2 avahi-browse -rpt _dr-oneway._tcp >"$OUT/cached.txt" 2>&1
    grep -q "^=.*$id1" "$OUT/cached.txt" || { fail "h2 does not see h1 before the rule"; cat "$OUT/cached.txt" >&2; stop "$ADV_PID"; return 1; }
    mac=$(lab_run 2 cat "/sys/class/net/$LAB_IFACE/address") || return 1
    # Every check shares doctor's --timeout, from its start: enough for the lookup and the peer's
    # 2 s wait before it says it does not see this host.
    DOCTOR_TIMEOUT=6 doctor_behind_rule droneway "ether saddr $mac udp dport 5353 drop" "$id1" --service dr-oneway || return 1
    expect_eq "$STATUS" 1 "doctor exit status for one-way multicast" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is peer ok || return 1
    check_is identity ok || return 1
    check_is peer-sees-us fail "does not see this host: one-way multicast" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer-sees-us" and (.hint|contains("UDP 5353")))' "a hint about UDP 5353" || return 1
    # The way around it, with the real address (not a HOST:PORT placeholder).
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"peer-sees-us\" and (.hint|contains(\"nearby invite $(lab_addr 1):$ADV_PORT\")))" \
        "the hint names the peer's real address" || return 1
    # h1 drops every mDNS datagram from h2, the direct question too: its responder answers nothing.
    check_is multicast-path fail "unicast to UDP 5353 is blocked" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="summary" and .fail==2 and .exit_status==1)' "summary with exit 1" || return 1
    expect_eq "$(count_json "$OUT/adv-h1-dr-oneway.jsonl" 'select(.event=="invitation" or .event=="error")')" 0 "invitations or errors on the peer" || return 1
}

# This host pins another key for the peer's ID: the handshake says so and names known_peers.
test_doctor_names_a_changed_pinned_key() {
    local id1 pins
    id1=$(id_of 1) || return 1
    advertise 1 dr-pin || return 1
    pins=$(lab_run 2 sh -c 'echo "$NEARBY_HOME/known_peers"')
    # Only this pin (earlier tests may have pinned h1's real key; the first line for an ID counts).
    [[ ! -e $pins ]] || cp -p "$pins" "$OUT/known_peers.saved"
    printf '%s %s %s\n' "$id1" "$(printf 'another key entirely' | base64 -w0)" "impostor" >"$pins"
    doctor 2 "$id1" --service dr-pin
    if [[ -e $OUT/known_peers.saved ]]; then cp -p "$OUT/known_peers.saved" "$pins"; else rm -f "$pins"; fi
    stop "$ADV_PID"
    expect_eq "$STATUS" 9 "doctor exit status for a changed pinned key" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is encryption ok || return 1
    check_is identity fail "pinned key changed" || return 1
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"identity\" and (.detail|contains(\"$pins\")) and (.hint|contains(\"$id1\")))" \
        "the detail names known_peers, the hint the line to remove" || return 1
    # No probe without a proven identity.
    expect_eq "$(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer-sees-us")')" 0 "a peer-sees-us check" || return 1
}

test_doctor_names_a_stopped_daemon() {
    lab_stop_avahi 4
    doctor 4
    lab_start_avahi 4
    expect_eq "$STATUS" 7 "doctor exit status without avahi-daemon" || return 1
    (( MS <= 3000 )) || fail "doctor took $MS ms to name the daemon" || return 1
    check_is daemon fail avahi-daemon || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="daemon" and (.hint|contains("start")))' "a hint to start it" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="summary" and .exit_status==7)' "summary with exit 7" || return 1
}

test_doctor_peer_not_advertising_but_multicast_works() {
    spawn_publish 3 "$OUT/publish.txt" -s webby _http._tcp 8080 || return 1
    doctor 2 nobody-here --service dr-none
    kill -INT "$PUBLISH_PID" 2>/dev/null
    expect_eq "$STATUS" 2 "doctor exit status for a peer that is not there" || return 1
    check_is responders ok _http._tcp || return 1
    check_is peer fail "not found" || return 1
}

test_doctor_peer_port_dropped_is_a_firewall() {
    local id1
    id1=$(id_of 1) || return 1
    advertise 1 dr-fw || return 1
    # Every check shares doctor's --timeout: enough for the lookup and a 2 s connection attempt.
    DOCTOR_TIMEOUT=6 doctor_behind_rule drfw "tcp dport $ADV_PORT drop" "$id1" --service dr-fw || return 1
    expect_eq "$STATUS" 5 "doctor exit status for a dropped port" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is peer ok || return 1
    check_is connect fail "no TCP connection" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="connect" and (.hint|contains("firewall")))' "a firewall hint" || return 1
}

test_doctor_names_an_encryption_mismatch() {
    local id1
    id1=$(id_of 1) || return 1
    advertise 1 dr-enc --encryption none || return 1
    doctor 2 "$id1" --service dr-enc
    stop "$ADV_PID"
    expect_eq "$STATUS" 5 "doctor exit status for an encryption mismatch" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    check_is connect ok || return 1
    check_is encryption fail "encryption mismatch" || return 1
}

test_browse_types_and_any_dnssd_type() {
    spawn_publish 3 "$OUT/publish.txt" -s "Web Box" _http._tcp 8080 "path=/x" "flag" || return 1
    lab_run 2 "$NEARBY" browse --types --timeout 3 >"$OUT/types.jsonl" 2>"$OUT/types.err" || fail "browse --types exited $?" || return 1
    expect_json "$OUT/types.jsonl" 'select(.event=="browsing" and .service=="_services._dns-sd._udp")' "browsing the meta-query" || return 1
    expect_json "$OUT/types.jsonl" 'select(.event=="type" and .type=="_http._tcp" and .instances==1)' "_http._tcp with one instance" || { cat "$OUT/types.jsonl" >&2; return 1; }
    lab_run 2 "$NEARBY" browse --service _http._tcp --count 1 --timeout 5 >"$OUT/http.jsonl" 2>"$OUT/http.err" || fail "browse --service _http._tcp exited $?" || return 1
    expect_json "$OUT/http.jsonl" 'select(.event=="service" and .state=="found" and .type=="_http._tcp" and .name=="Web Box"
        and .port==8080 and .host=="h3.local." and (.addresses|index("10.99.0.3")) != null and .interface=="nb0"
        and .txt=={"path":"/x","flag":""})' "the instance with its TXT" || { cat "$OUT/http.jsonl" >&2; return 1; }
    kill -INT "$PUBLISH_PID" 2>/dev/null
    # The old meaning of --service stays: an MPC name still browses _<name>._tcp.
    lab_run 2 "$NEARBY" browse --service dr-old --timeout 1 >"$OUT/old.jsonl" || return 1
    expect_json "$OUT/old.jsonl" 'select(.event=="browsing" and .service=="dr-old")' "browsing an MPC service name" || return 1
}

# spawn_publish K FILE ARGS... — avahi-publish on host K until it says it is established.
spawn_publish() {
    local host=$1 file=$2; shift 2
    lab_bg "$host" "$file" avahi-publish "$@" >/dev/null
    PUBLISH_PID=$LAB_PID
    local i
    for ((i = 0; i < 50; i++)); do
        grep -q "Established" "$file" "$file.err" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "avahi-publish on h$host did not establish"
}

# --- issue 25: every doctor answer says what was seen and what to do next -------------------------

# nft_on K TABLE HOOK RULE: RULE in an nft table of host K, on the input or output hook.
nft_on() {
    lab_run "$1" nft -f - <<EOF_NFT || fail "nft rules on h$1"
table inet $2 {
    chain $3 { type filter hook $3 priority 0; $4; }
}
EOF_NFT
}
# joined FILE: the terminal's lines as one, wrapped lines put back together.
joined() { plain "$1" | sed 's/^ *//' | tr '\n' ' '; }

# A local rule dropping mDNS: the firewall check names it, and so do the hints of the checks it
# breaks (not "check allow-interfaces"). On a terminal every detail and hint is shown whole,
# wrapped between words to the terminal's width.
test_doctor_hints_name_the_firewall_rule_wrapped_on_a_tty() {
    trap 'lab_run 1 nft delete table inet drmdns 2>/dev/null; trap - RETURN' RETURN
    nft_on 1 drmdns input "udp dport 5353 drop" || return 1
    # The daemon forgets what it heard before the rule (an earlier test's services, still cached,
    # would make `responders` ok: with several labs at once the order of tests differs run to run).
    lab_stop_avahi 1 && lab_start_avahi 1 || { fail "h1's avahi-daemon did not restart"; return 1; }
    # As a user, the rules are not read, and doctor says how to have them read.
    doctor 1
    check_is firewall ok "readable only by root" || return 1
    check_is firewall ok "sudo" || return 1
    # As root (this test is about root), the rule is named.
    lab_run 1 env -u NO_COLOR -u NEARBY_OUTPUT TERM=xterm-256color /usr/bin/python3 "$TERM_PTY" --columns 80 -- \
        "$NEARBY_BIN" doctor --timeout "$DOCTOR_TIMEOUT" >"$OUT/doctor-tty.txt" 2>"$OUT/doctor-tty.err"
    term_has "$OUT/doctor-tty.txt" "WARN responders:" "the responders line" || return 1
    local widest
    widest=$(plain "$OUT/doctor-tty.txt" | awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }')
    (( widest <= 80 )) || { fail "a line of $widest columns on an 80-column terminal"; show "$OUT/doctor-tty.txt"; return 1; }
    ! grep -q "…" "$OUT/doctor-tty.txt" || { fail "a detail or hint cut (…)"; show "$OUT/doctor-tty.txt"; return 1; }
    DOCTOR_AS=root doctor 1
    check_is firewall warn "udp dport 5353 drop" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="responders" and .status=="warn"
        and (.hint|contains("firewall drops mDNS: '"'"'udp dport 5353 drop'"'"'")))' "responders' hint names the rule" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .status!="ok" and .check!="firewall" and (.hint|contains("allow-interfaces")))' \
        "no hint blames allow-interfaces" >/dev/null 2>&1 && { fail "a hint blames allow-interfaces"; cat "$OUT/doctor.jsonl" >&2; return 1; }
    local hint
    hint=$(jq -r 'select(.event=="check" and .check=="responders") | .hint' "$OUT/doctor.jsonl")
    (( ${#hint} > 200 )) || { fail "the hint is only ${#hint} characters: nothing to wrap"; return 1; }
    joined "$OUT/doctor-tty.txt" | grep -qF -- "hint: $hint" || { fail "the whole hint, wrapped: $hint"; show "$OUT/doctor-tty.txt"; return 1; }
}

# A host that hears nothing else: its own services (its node, under its identity's ID, and
# anything else published under its own host name) do not make `responders` ok.
test_doctor_responders_do_not_count_own_services() {
    advertise 1 dr-own || return 1
    spawn_publish 1 "$OUT/publish.txt" -s "own web" _drownweb._tcp 8080 || { stop "$ADV_PID"; return 1; }
    doctor 1
    kill -INT "$PUBLISH_PID" 2>/dev/null
    stop "$ADV_PID"
    check_is responders warn "no other service announced" || return 1
    check_is responders warn "_dr-own._tcp" || return 1
    check_is responders warn "_drownweb._tcp" || return 1
}

# The peer advertises on another service type: the peer check names that type and the option.
test_doctor_names_the_peer_on_another_service_type() {
    local id2
    id2=$(id_of 2) || return 1
    advertise 2 drchat --name "Chat Box" || return 1
    doctor 1 "Chat Box"
    stop "$ADV_PID"
    expect_eq "$STATUS" 2 "doctor exit status for a peer on another type" || return 1
    check_is responders ok _drchat._tcp || return 1
    check_is peer fail "Chat Box ($id2) is on _drchat._tcp: add --service drchat" || return 1
    expect_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer" and (.hint|contains("--service drchat")))' "a hint with --service" || return 1
}

# `doctor HOST:PORT` checks that address: no look-up by name, the connection checks against it.
test_doctor_checks_a_host_port() {
    local id2
    id2=$(id_of 2) || return 1
    advertise 2 dr-addr || return 1
    doctor 1 "$(lab_addr 2):$ADV_PORT"
    stop "$ADV_PID"
    expect_eq "$STATUS" 0 "doctor exit status for a reachable HOST:PORT" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    expect_eq "$(count_json "$OUT/doctor.jsonl" 'select(.event=="check" and .check=="peer")')" 0 "a peer check (look-up by name)" || return 1
    check_is subnet ok "10.99.0.0/24" || return 1
    check_is connect ok "$(lab_addr 2):$ADV_PORT connects" || return 1
    check_is encryption ok || return 1
    check_is identity ok "($id2) proved the key of its ID (named by address" || return 1
    check_is peer-sees-us ok || return 1
}

# A peer on another subnet, reachable by address but never found by mDNS. The lab has one link:
# h2 gets a second address on 10.98.0.0/24 (h1 routes that /24 onto the link, without an address
# on it) and drops all it sends from port 5353 (its announcements and its unicast answers alike: a
# responder behind a router answers neither), so h1 finds nothing by name, not even by asking the
# link directly.
test_doctor_names_a_peer_on_another_subnet() {
    local id2
    id2=$(id_of 2) || return 1
    trap 'lab_run 2 nft delete table inet drsub 2>/dev/null; lab_run 2 ip addr del 10.98.0.2/24 dev "$LAB_IFACE" 2>/dev/null
          lab_run 1 ip route del 10.98.0.0/24 dev "$LAB_IFACE" 2>/dev/null; trap - RETURN' RETURN
    lab_run 2 ip addr add 10.98.0.2/24 dev "$LAB_IFACE" || { fail "second address on h2"; return 1; }
    lab_run 1 ip route add 10.98.0.0/24 dev "$LAB_IFACE" || { fail "route on h1"; return 1; }
    nft_on 2 drsub output "udp sport 5353 drop" || return 1
    advertise 2 dr-sub || return 1
    doctor 1 "$id2" --service dr-sub
    cp "$OUT/doctor.jsonl" "$OUT/by-name.jsonl"
    expect_eq "$STATUS" 2 "doctor exit status by name" || { stop "$ADV_PID"; return 1; }
    expect_json "$OUT/by-name.jsonl" 'select(.event=="check" and .check=="peer" and .status=="fail"
        and (.hint|contains("mDNS does not cross routers")) and (.hint|contains("10.99.0.0/24 on nb0")) and (.hint|contains("HOST:PORT")))' \
        "the not-found hint names routers, the subnets and HOST:PORT" || { stop "$ADV_PID"; return 1; }
    doctor 1 "10.98.0.2:$ADV_PORT"
    stop "$ADV_PID"
    check_is subnet warn "10.98.0.2 is on none of this host's subnets (10.99.0.0/24 on nb0)" || return 1
    check_is subnet warn "mDNS does not cross routers" || return 1
    expect_json "$OUT/doctor.jsonl" "select(.event==\"check\" and .check==\"subnet\" and (.hint|contains(\"nearby send 10.98.0.2:$ADV_PORT\")))" \
        "the hint names the address to use" || return 1
    check_is connect ok "10.98.0.2:$ADV_PORT connects" || return 1
    check_is identity ok "($id2) proved the key" || return 1
}
