# Wide-area DNS-SD end-to-end tests (--domain): two subnets joined by a router namespace (IP
# forwarding on, multicast not forwarded) with BIND 9's named on the router serving the dynamic
# zone lab.test, updates allowed with a key from tsig-keygen (tests/lab/netlab_router.sh).
# h1 is on 10.99.0.0/24, the far host h$LAB_FAR alone on 10.99.1.0/24.
# shellcheck source=../lab/netlab_router.sh
source "$ROOT/tests/lab/netlab_router.sh"

WA_ZONE=lab.test
# Short waits for the tests (the defaults are a 60 s lease and a 5 s TTL, see docs/wide-area.md).
WA_ENV=(env NEARBY_DNS_TTL=1 NEARBY_DNS_LEASE=4 NEARBY_DNS_TIMEOUT=2)

# The router, named and each host's key ($NEARBY_HOME/dns.key, 0600), once per lab.
wa_setup() {
    lab_router_up || return 1
    # Each test runs in a subshell of its own: the named an earlier test started is in the lab's record.
    [[ -n ${LAB_NAMED_PID:-} ]] || LAB_NAMED_PID=$(cat "$LAB_DIR/.named" 2>/dev/null)
    if [[ -z ${LAB_NAMED_PID:-} ]] || [[ -f $LAB_DIR/rc/$LAB_NAMED_PID ]]; then
        lab_named_start "$WA_ZONE" || return 1
    fi
    local k
    for (( k = 1; k <= LAB_N; k++ )); do
        install -m 600 -o "$LAB_USER" "$LAB_DIR/named/nearby.key" "$(_lab_hostdir "$k")/home/dns.key" || return 1
    done
}

# The server as each host reaches it: the router's address on its own subnet.
wa_server() { if [[ $1 == "$LAB_FAR" ]]; then echo "$LAB_ROUTER_B"; else echo "$LAB_ROUTER_A"; fi; }
wa() { local k=$1; shift; lab_run "$k" "${WA_ENV[@]}" "$NEARBY" "$@"; }
wa_bg() { local k=$1 out=$2; shift 2; lab_bg "$k" "$out" "${WA_ENV[@]}" "$NEARBY" "$@" >/dev/null; }
wa_dig() { lab_run 1 dig +short +time=2 +tries=1 @"$LAB_ROUTER_A" "$@"; }

WA_PIDS=()
# SIGINT first, so advertisers delete their records and the next test starts with an empty zone.
wa_stop_all() {
    local p
    for p in "${WA_PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done
    for p in "${WA_PIDS[@]}"; do lab_wait_pid "$p" 5 >/dev/null || kill -KILL "$p" 2>/dev/null; done
    WA_PIDS=()
}

# Advertise on the far host in lab.test; sets WA_ADV (the output) and WA_ADV_PID.
wa_advertise() {
    local k=$1; shift
    WA_ADV=$OUT/adv-h$k.jsonl
    wa_bg "$k" "$WA_ADV" advertise --service wa --domain "$WA_ZONE" --dns-server "$(wa_server "$k")" "$@" || return 1
    WA_ADV_PID=$LAB_PID; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$WA_ADV" 'select(.event=="advertising")' 15 >/dev/null || {
        fail "no advertising event from h$k"; cat "$WA_ADV" "$WA_ADV.err" >&2; return 1; }
}

test_widearea_mdns_does_not_cross_the_router() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR id status
    id=$(id_of "$far") || return 1
    lab_bg "$far" "$OUT/adv.jsonl" "$NEARBY" advertise --service wa-local >/dev/null; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/adv.jsonl" 'select(.event=="advertising")' 10 >/dev/null || { fail "no advertising"; return 1; }
    # The router forwards unicast (the far host answers a TCP connect) ...
    lab_run 1 bash -c "exec 3<>/dev/tcp/10.99.1.1/$(jq -r .port "$OUT/adv.jsonl" | head -1)" || fail "no unicast route across" || return 1
    # ... but not multicast: without --domain the far host is not found.
    lab_run 1 "$NEARBY" browse --service wa-local --peer "$id" --timeout 3 >"$OUT/browse.jsonl" 2>/dev/null; status=$?
    expect_eq "$status" 2 "mDNS browse across the router (peer not found)" || return 1
}

test_widearea_found_across_subnets_then_lost_on_a_clean_stop() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar status
    idfar=$(id_of "$far") || return 1
    wa_advertise "$far" --name "Far Away" --info room=lab2 || return 1
    expect_json "$WA_ADV" 'select(.event=="advertising" and .domain=="lab.test.")' "advertising in lab.test." || return 1
    wa_bg 1 "$OUT/browse.jsonl" browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A"; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$idfar\")" 10 >/dev/null || {
        fail "h1 did not find the far host in lab.test"; cat "$OUT/browse.jsonl" "$OUT/browse.jsonl.err" >&2; return 1; }
    expect_json "$OUT/browse.jsonl" 'select(.event=="browsing" and .domain=="lab.test.")' "browsing lab.test." || return 1
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.name==\"Far Away\" and .domain==\"lab.test.\" and .info.room==\"lab2\" and .addresses==[\"10.99.1.1\"] and .kind==\"nearby\")" "found with name, info, domain and address" || return 1
    stop "$WA_ADV_PID"; status=$?
    expect_eq "$status" 0 "advertise exit status" || return 1
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"lost\" and .peer.id==\"$idfar\" and .domain==\"lab.test.\")" 5 >/dev/null || {
        fail "no lost after a clean stop"; cat "$OUT/browse.jsonl" >&2; return 1; }
    expect_eq "$(wa_dig "_wa._tcp.$WA_ZONE" PTR)" "" "PTR records left after a clean stop" || return 1
}

test_widearea_send_invite_and_send_file_across_subnets() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar status
    idfar=$(id_of "$far") || return 1
    mkdir -p "$OUT/inbox"
    wa_advertise "$far" --name "Far Away" --auto-accept --save-dir "$OUT/inbox" || return 1
    wa 1 send --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 10 "Far Away" "hello across" \
        >"$OUT/send.jsonl" 2>"$OUT/send.err"; status=$?
    expect_eq "$status" 0 "send by name across subnets" || { cat "$OUT/send.jsonl" "$OUT/send.err" >&2; return 1; }
    lab_wait_line "$WA_ADV" 'select(.event=="message" and .text=="hello across")' 5 >/dev/null || fail "message not received" || return 1
    head -c 100000 /dev/urandom >"$OUT/blob.bin"
    wa 1 send-file --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 10 "$idfar" "$OUT/blob.bin" \
        >"$OUT/file.jsonl" 2>"$OUT/file.err"; status=$?
    expect_eq "$status" 0 "send-file across subnets" || { cat "$OUT/file.jsonl" "$OUT/file.err" >&2; return 1; }
    cmp -s "$OUT/blob.bin" "$OUT/inbox/blob.bin" || fail "the file arrived different" || return 1
    # invite stays in the session (it is the node) until the peer leaves or SIGINT.
    wa_bg 1 "$OUT/invite.jsonl" invite --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 10 "$idfar"; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/invite.jsonl" "select(.event==\"connected\" and .peer.id==\"$idfar\")" 15 >/dev/null || {
        fail "invite across subnets did not connect"; cat "$OUT/invite.jsonl" "$OUT/invite.jsonl.err" >&2; return 1; }
    stop "$LAB_PID"; status=$?
    expect_eq "$status" 0 "invite exit status after SIGINT in the session" || return 1
    expect_json "$OUT/invite.jsonl" "select(.event==\"connected\" and .peer.id==\"$idfar\")" "invite connected" || return 1
}

test_widearea_sigkill_is_lost_within_the_lease() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar t0 t1
    idfar=$(id_of "$far") || return 1
    wa_advertise "$far" || return 1
    wa_bg 1 "$OUT/browse.jsonl" browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A"; WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"found\" and .peer.id==\"$idfar\")" 10 >/dev/null || { fail "not found"; return 1; }
    t0=${EPOCHREALTIME/[.,]/}
    kill -KILL "$WA_ADV_PID"
    # Lease 4 s (NEARBY_DNS_LEASE), polled every TTL (1 s): lost within lease + TTL + slack.
    lab_wait_line "$OUT/browse.jsonl" "select(.event==\"lost\" and .peer.id==\"$idfar\")" 9 >/dev/null || {
        fail "a SIGKILLed node was not reported lost within its lease"; cat "$OUT/browse.jsonl" >&2; return 1; }
    t1=${EPOCHREALTIME/[.,]/}
    echo "    lost $(( (t1 - t0) / 1000 )) ms after SIGKILL (lease 4 s)"
    # The next node to register cleans the dead one's records up once its lease is long over.
    sleep 4.5  # wait out one more lease: the clean-up only removes leases that ended a lease ago
    wa_advertise 1 || return 1
    local deadline=$(( ${EPOCHREALTIME/[.,]/} + 5000000 ))
    while wa_dig "_wa._tcp.$WA_ZONE" PTR | grep -q "$idfar"; do
        (( ${EPOCHREALTIME/[.,]/} < deadline )) || { fail "the dead node's PTR was not cleaned up"; return 1; }
        sleep 0.2
    done
}

test_widearea_dig_sees_standard_records() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar
    idfar=$(id_of "$far") || return 1
    wa_advertise "$far" --name "Far Away" || return 1
    expect_eq "$(wa_dig "_wa._tcp.$WA_ZONE" PTR)" "$idfar._wa._tcp.$WA_ZONE." "PTR" || return 1
    expect_eq "$(wa_dig "$idfar._wa._tcp.$WA_ZONE" SRV | cut -d' ' -f1-4)" "0 0 $(jq -r .port "$WA_ADV" | head -1) nearby-$idfar.$WA_ZONE." "SRV" || return 1
    wa_dig "$idfar._wa._tcp.$WA_ZONE" TXT | grep -q '"_d=Far Away".*"_nb=2".*"_lease=' || fail "TXT: $(wa_dig "$idfar._wa._tcp.$WA_ZONE" TXT)" || return 1
    expect_eq "$(wa_dig "nearby-$idfar.$WA_ZONE" A)" "10.99.1.1" "A" || return 1
}

test_widearea_records_made_by_nsupdate_are_found() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    cat >"$OUT/update.txt" <<UPD
server $LAB_ROUTER_A
zone $WA_ZONE
update add _wa._tcp.$WA_ZONE 5 PTR handmade._wa._tcp.$WA_ZONE.
update add handmade._wa._tcp.$WA_ZONE 5 SRV 0 0 4242 box.$WA_ZONE.
update add handmade._wa._tcp.$WA_ZONE 5 TXT "_d=Hand Made" "colour=blue"
update add box.$WA_ZONE 5 A 10.99.0.77
send
UPD
    lab_run 1 nsupdate -k "$LAB_DIR/named/nearby.key" "$OUT/update.txt" || fail "nsupdate failed" || return 1
    wa 1 browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --peer handmade --timeout 5 >"$OUT/browse.jsonl" 2>"$OUT/browse.err" \
        || { fail "browse did not find the records nsupdate made"; cat "$OUT/browse.jsonl" "$OUT/browse.err" >&2; return 1; }
    expect_json "$OUT/browse.jsonl" 'select(.event=="found" and .peer.id=="handmade" and .peer.name=="Hand Made" and .info.colour=="blue" and .port==4242 and .addresses==["10.99.0.77"] and .kind=="mpc")' "found as nsupdate wrote it" || return 1
    printf 'server %s\nzone %s\nupdate delete handmade._wa._tcp.%s\nupdate delete _wa._tcp.%s PTR handmade._wa._tcp.%s.\nupdate delete box.%s\nsend\n' \
        "$LAB_ROUTER_A" "$WA_ZONE" "$WA_ZONE" "$WA_ZONE" "$WA_ZONE" "$WA_ZONE" >"$OUT/delete.txt"
    lab_run 1 nsupdate -k "$LAB_DIR/named/nearby.key" "$OUT/delete.txt" || fail "nsupdate delete failed" || return 1
}

test_widearea_errors_have_their_own_exit_codes() {
    trap 'wa_stop_all; lab_named_start "$WA_ZONE" >/dev/null 2>&1' RETURN
    wa_setup || return 1
    local home status
    home=$(_lab_hostdir 1)/home
    # A key with our name but another secret: BADSIG.
    rm -f "$home/wrong.key" "$home/stranger.key"; (umask 077; tsig-keygen -a hmac-sha256 nearby-key >"$home/wrong.key"); chown "$LAB_USER" "$home/wrong.key"
    wa 1 advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --dns-key "$home/wrong.key" >"$OUT/badsig.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 12 "wrong secret exit status" || { cat "$OUT/badsig.jsonl" >&2; return 1; }
    expect_json "$OUT/badsig.jsonl" 'select(.event=="error" and .code=="dns-key-rejected" and (.message|test("BADSIG")))' "BADSIG in words" || return 1
    # A key the server does not know: BADKEY.
    (umask 077; tsig-keygen -a hmac-sha256 stranger >"$home/stranger.key"); chown "$LAB_USER" "$home/stranger.key"
    wa 1 advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --dns-key "$home/stranger.key" >"$OUT/badkey.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 12 "unknown key exit status" || { cat "$OUT/badkey.jsonl" >&2; return 1; }
    expect_json "$OUT/badkey.jsonl" 'select(.code=="dns-key-rejected" and (.message|test("BADKEY")))' "BADKEY in words" || return 1
    grep -q "$(sed -n 's/.*secret "\(.*\)".*/\1/p' "$home/dns.key")" "$OUT"/*.jsonl && { fail "the TSIG secret was printed"; return 1; }
    # Our clock 10 minutes fast (a test knob): BADTIME.
    lab_run 1 env NEARBY_DNS_CLOCK_SKEW=600 "$NEARBY" advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" >"$OUT/badtime.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 12 "skewed clock exit status" || { cat "$OUT/badtime.jsonl" >&2; return 1; }
    expect_json "$OUT/badtime.jsonl" 'select(.code=="dns-clock-skew" and (.message|test("BADTIME")))' "BADTIME in words" || return 1
    # A zone the server does not serve: NOTAUTH.
    wa 1 advertise --service wa --domain elsewhere.test --dns-server "$LAB_ROUTER_A" >"$OUT/zone.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 13 "unknown zone exit status" || { cat "$OUT/zone.jsonl" >&2; return 1; }
    expect_json "$OUT/zone.jsonl" 'select(.code=="dns-zone-refused" and (.message|test("NOTAUTH|REFUSED")))' "NOTAUTH in words" || return 1
    # A key file others can read is refused before anything is sent.
    chmod 644 "$home/wrong.key"
    wa 1 advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --dns-key "$home/wrong.key" >"$OUT/mode.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 8 "key file mode 644 exit status" || { cat "$OUT/mode.jsonl" >&2; return 1; }
    expect_json "$OUT/mode.jsonl" 'select(.code=="dns-key-file" and (.message|test("chmod 600")))' "mode refused in words" || return 1
    # The server down: no answer.
    lab_named_stop
    wa 1 advertise --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" >"$OUT/down.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 11 "server down exit status (advertise)" || { cat "$OUT/down.jsonl" >&2; return 1; }
    wa 1 browse --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --timeout 5 >"$OUT/down-browse.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 11 "server down exit status (browse)" || { cat "$OUT/down-browse.jsonl" >&2; return 1; }
    expect_json "$OUT/down.jsonl" 'select(.code=="dns-unreachable" and (.message|test("did not answer")))' "server down in words" || return 1
}

test_widearea_doctor_names_each_fault() {
    trap 'wa_stop_all; [[ -n ${LAB_NAMED_PID:-} ]] || lab_named_start "$WA_ZONE" >/dev/null 2>&1' RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar status home
    idfar=$(id_of "$far") || return 1
    home=$(_lab_hostdir 1)/home
    wa_advertise "$far" --name "Far Away" || return 1
    # Healthy: every check ok (our-records warns: h1 itself is not registered), the far peer reached.
    wa 1 doctor --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" "Far Away" >"$OUT/ok.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 0 "doctor --domain exit status, all well" || { cat "$OUT/ok.jsonl" >&2; return 1; }
    for check in dns-server zone key clock peer connect encryption identity; do
        expect_json "$OUT/ok.jsonl" "select(.event==\"check\" and .check==\"$check\" and .status==\"ok\")" "check $check ok" || return 1
    done
    expect_json "$OUT/ok.jsonl" 'select(.check=="our-records" and .status=="warn")' "our-records warns when not registered" || return 1
    # A wrong secret: key fails with BADSIG, exit 12.
    rm -f "$home/doctor-wrong.key"; (umask 077; tsig-keygen -a hmac-sha256 nearby-key >"$home/doctor-wrong.key"); chown "$LAB_USER" "$home/doctor-wrong.key"
    wa 1 doctor --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" --dns-key "$home/doctor-wrong.key" >"$OUT/badsig.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 12 "doctor with a wrong key" || { cat "$OUT/badsig.jsonl" >&2; return 1; }
    expect_json "$OUT/badsig.jsonl" 'select(.check=="key" and .status=="fail" and (.detail|test("BADSIG")) and .hint!=null)' "key check names BADSIG" || return 1
    # Our clock 10 minutes fast: BADTIME, named by the clock check.
    lab_run 1 env NEARBY_DNS_CLOCK_SKEW=600 "$NEARBY" doctor --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" >"$OUT/badtime.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 12 "doctor with a skewed clock" || { cat "$OUT/badtime.jsonl" >&2; return 1; }
    expect_json "$OUT/badtime.jsonl" 'select(.check=="clock" and .status=="fail" and (.detail|test("BADTIME")))' "clock check names BADTIME" || return 1
    # A zone the server does not have.
    wa 1 doctor --service wa --domain elsewhere.test --dns-server "$LAB_ROUTER_A" >"$OUT/zone.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 13 "doctor with an unknown zone" || { cat "$OUT/zone.jsonl" >&2; return 1; }
    expect_json "$OUT/zone.jsonl" 'select(.check=="zone" and .status=="fail")' "zone check fails" || return 1
    # A peer that is not registered.
    wa 1 doctor --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" nobody >"$OUT/nopeer.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 2 "doctor with an unregistered peer" || { cat "$OUT/nopeer.jsonl" >&2; return 1; }
    # The server down.
    lab_named_stop
    wa 1 doctor --service wa --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" >"$OUT/down.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 11 "doctor with the server down" || { cat "$OUT/down.jsonl" >&2; return 1; }
    expect_json "$OUT/down.jsonl" 'select(.check=="dns-server" and .status=="fail" and (.detail|test("did not answer")))' "dns-server check fails" || return 1
}

test_widearea_browse_domains_lists_what_the_zone_offers() {
    wa_setup || return 1
    wa 1 browse --domains --domain "$WA_ZONE" --dns-server "$LAB_ROUTER_A" >"$OUT/domains.jsonl" 2>"$OUT/err.txt" \
        || { fail "browse --domains failed"; cat "$OUT/domains.jsonl" "$OUT/err.txt" >&2; return 1; }
    expect_json "$OUT/domains.jsonl" 'select(.event=="browse-domain" and .domain=="lab.test." and .default==false)' "b._dns-sd._udp names lab.test." || return 1
    expect_json "$OUT/domains.jsonl" 'select(.event=="browse-domain" and .domain=="lab.test." and .default==true)' "lb._dns-sd._udp names lab.test." || return 1
}

test_widearea_without_dns_server_uses_the_resolver_and_the_zones_srv() {
    trap wa_stop_all RETURN
    wa_setup || return 1
    local far=$LAB_FAR idfar status
    idfar=$(id_of "$far") || return 1
    # Each host's resolver (NEARBY_RESOLV_CONF: a lab host's /etc/resolv.conf) is named on the router.
    printf 'nameserver %s\nsearch %s\n' "$LAB_ROUTER_A" "$WA_ZONE" >"$OUT/resolv-a.conf"
    printf 'nameserver %s\n' "$LAB_ROUTER_B" >"$OUT/resolv-b.conf"
    # Updates find the server from SRV _dns-update._udp.lab.test (ns.lab.test, resolved through it).
    lab_bg "$far" "$OUT/adv.jsonl" "${WA_ENV[@]}" NEARBY_RESOLV_CONF="$OUT/resolv-b.conf" "$NEARBY" advertise --service wa --domain "$WA_ZONE" >/dev/null
    WA_PIDS+=("$LAB_PID")
    lab_wait_line "$OUT/adv.jsonl" 'select(.event=="advertising")' 15 >/dev/null || { fail "advertise without --dns-server"; cat "$OUT/adv.jsonl" "$OUT/adv.jsonl.err" >&2; return 1; }
    lab_run 1 "${WA_ENV[@]}" NEARBY_RESOLV_CONF="$OUT/resolv-a.conf" NEARBY_DOMAIN="$WA_ZONE" "$NEARBY" browse --service wa --peer "$idfar" --timeout 5 \
        >"$OUT/browse.jsonl" 2>"$OUT/err.txt" || { fail "browse with NEARBY_DOMAIN and the resolver"; cat "$OUT/browse.jsonl" "$OUT/err.txt" >&2; return 1; }
    expect_json "$OUT/browse.jsonl" "select(.event==\"found\" and .domain==\"lab.test.\")" "found through the system resolver" || return 1
    # Plain doctor (mDNS) does not see the far peer, and says the network offers lab.test. (With
    # --timeout 1, a loaded machine's self-advertisement probe had not come back: exit 1, not 2.)
    lab_run 1 env NEARBY_RESOLV_CONF="$OUT/resolv-a.conf" "$NEARBY" doctor --service wa --timeout 3 "$idfar" >"$OUT/doctor.jsonl" 2>"$OUT/err.txt"; status=$?
    expect_eq "$status" 2 "mDNS doctor of a peer across the router" || { cat "$OUT/doctor.jsonl" >&2; return 1; }
    expect_json "$OUT/doctor.jsonl" 'select(.check=="peer" and .status=="fail" and (.detail|test("offers the DNS-SD domain lab.test")) and (.hint|test("--domain lab.test")))' "doctor names the offered domain" || return 1
}
