#!/usr/bin/env bash
# tests/lab/netlab_router.sh — a second subnet behind a router, and a BIND 9 `named` on the router,
# for wide-area DNS-SD tests (--domain). Builds on netlab.sh (source that first, then this, and
# call lab_up first):
#
#   lab_router_up               add namespace ${LAB_PREFIX}rt: a router with 10.99.0.254 on the
#                               lab's link and 10.99.1.254 on a second link, IP forwarding on,
#                               multicast not forwarded (no multicast routing: mDNS stays on each
#                               link); and one more host, h<N+1>, alone on that second link
#                               (10.99.1.1, its own dbus and avahi). Every existing host gets a
#                               route to 10.99.1.0/24, again on every call (a test that took a
#                               host's address or link away took the route too). Idempotent.
#                               Sets LAB_FAR to the new host.
#   lab_router_addr K           print host K's IPv4 address (either subnet)
#   lab_named_start ZONE        start named on the router, authoritative for the dynamic zone
#                               ZONE, with a key from tsig-keygen (name nearby-key) that may
#                               update DNS-SD records (*._tcp.ZONE PTR SRV TXT) and host addresses
#                               (*.ZONE A AAAA); key file $LAB_DIR/named/nearby.key (0600).
#                               Waits until it answers. LAB_NAMED_PID is its pid.
#   lab_named_stop              stop that named (SIGTERM, then wait)
#
# Everything is recorded like netlab.sh's own processes and namespaces, so lab_down removes it.

LAB_ROUTER_A=10.99.0.254
LAB_ROUTER_B=10.99.1.254

# _lab_router_routes N: hosts 1..N on the lab's link reach the far subnet through the router.
_lab_router_routes() {
    local h
    for (( h = 1; h <= $1; h++ )); do
        ip -n "${LAB_PREFIX}h$h" route replace 10.99.1.0/24 via "$LAB_ROUTER_A" || return 1
    done
}

lab_router_up() {
    _lab_require_up || return 1
    local rt="${LAB_PREFIX}rt" br="${LAB_PREFIX}br"
    if [[ -f $LAB_DIR/.router ]]; then
        # Up already (an earlier test, maybe in another subshell of the same lab): its far host again.
        LAB_FAR=$(sed -n 's/^far=//p' "$LAB_DIR/.router")
        LAB_N=$LAB_FAR
        export LAB_N LAB_FAR
        # A test in between may have taken a host's address or link away and given it back (the
        # IPv6-only LocalSend tests, the link-down faults): the kernel dropped the route with it.
        _lab_router_routes $((LAB_FAR - 1))
        return 0
    fi
    local tool
    for tool in named tsig-keygen dig; do
        command -v "$tool" >/dev/null || { _lab_err "missing tool: $tool (scripts/install-deps)"; return 1; }
    done
    ip netns add "$rt" || return 1
    printf '%s\n' "$rt" >> "$LAB_DIR/namespaces"
    ip netns exec "$rt" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
    ip -n "$rt" link set lo up || return 1
    # Leg A: a port of the lab's bridge.
    ip -n "$br" link add pr type veth peer name nb0 netns "$rt" || return 1
    ip -n "$br" link set pr master br0 up || return 1
    ip -n "$rt" link set nb0 up || return 1
    ip -n "$rt" addr add "$LAB_ROUTER_A/24" dev nb0 || return 1
    # Leg B: one more host, on a link of its own.
    local k=$((LAB_N + 1)) ns hd
    ns="${LAB_PREFIX}h$k"
    hd=$(_lab_hostdir "$k")
    mkdir -p "$hd/home" "$hd/run" || return 1
    chmod 0700 "$hd/run"
    chown "$LAB_USER:" "$hd/home" "$hd/run" || return 1
    ip netns add "$ns" || return 1
    printf '%s\n' "$ns" >> "$LAB_DIR/namespaces"
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.router_solicitations=0 >/dev/null || return 1
    ip -n "$rt" link add nbB type veth peer name "$LAB_IFACE" netns "$ns" || return 1
    ip -n "$rt" link set nbB up || return 1
    ip -n "$rt" addr add "$LAB_ROUTER_B/24" dev nbB || return 1
    ip -n "$ns" link set lo up || return 1
    ip -n "$ns" link set "$LAB_IFACE" multicast on up || return 1
    ip -n "$ns" addr add "10.99.1.1/24" dev "$LAB_IFACE" || return 1
    ip -n "$ns" route add default via "$LAB_ROUTER_B" || return 1
    _lab_router_routes "$LAB_N" || return 1
    LAB_N=$k
    LAB_FAR=$k
    export LAB_N LAB_FAR
    _lab_write_configs "$k"
    local deadline=$(( $(_lab_now_us) + LAB_UP_TIMEOUT * 1000000 ))
    _lab_start_dbus "$k" || return 1
    _lab_wait_ready dbus "$deadline" "$k" || return 1
    _lab_start_avahi_raw "$k" || return 1
    _lab_wait_ready avahi "$deadline" "$k" || return 1
    printf 'far=%s\n' "$k" > "$LAB_DIR/.router"
}

lab_router_addr() {
    _lab_check_host "${1:-}" || return 1
    if [[ $1 == "${LAB_FAR:-}" ]]; then printf '10.99.1.1\n'; else printf '10.99.0.%s\n' "$1"; fi
}

lab_named_start() {
    local zone=${1:?usage: lab_named_start ZONE} dir=$LAB_DIR/named
    [[ -f $LAB_DIR/.router ]] || { _lab_err "lab_router_up first"; return 1; }
    mkdir -p "$dir"
    if [[ ! -f $dir/nearby.key ]]; then
        (umask 077; tsig-keygen -a hmac-sha256 nearby-key > "$dir/nearby.key") || return 1
    fi
    cat > "$dir/named.conf" <<CONF
options {
    directory "$dir";
    pid-file "$dir/named.pid";
    session-keyfile "$dir/session.key";
    managed-keys-directory "$dir";
    listen-on port 53 { $LAB_ROUTER_A; $LAB_ROUTER_B; };
    listen-on-v6 { none; };
    recursion no;
    allow-query { any; };
    dnssec-validation no;
    notify no;
};
include "$dir/nearby.key";
zone "$zone" {
    type primary;
    file "$dir/$zone.db";
    // As the README advises: DNS-SD names and host addresses only.
    update-policy {
        grant nearby-key wildcard *._tcp.$zone. PTR SRV TXT;
        grant nearby-key wildcard *.$zone. A AAAA;
    };
};
CONF
    if [[ ! -f $dir/$zone.db ]]; then
        cat > "$dir/$zone.db" <<ZONE
\$TTL 60
@   IN SOA ns.$zone. admin.$zone. 1 60 60 600 5
    IN NS  ns.$zone.
ns  IN A   $LAB_ROUTER_A
b._dns-sd._udp  IN PTR @
lb._dns-sd._udp IN PTR @
_dns-update._udp IN SRV 0 0 53 ns.$zone.
ZONE
    fi
    _lab_spawn named "$dir/named.log" "$dir/named.log" \
        ip netns exec "${LAB_PREFIX}rt" named -g -n 1 -c "$dir/named.conf" || return 1
    LAB_NAMED_PID=$_LAB_SPAWNED
    printf '%s\n' "$LAB_NAMED_PID" > "$LAB_DIR/.named"
    local deadline=$(( $(_lab_now_us) + LAB_UP_TIMEOUT * 1000000 ))
    until ip netns exec "${LAB_PREFIX}h1" dig +short +time=1 +tries=1 @"$LAB_ROUTER_A" "$zone" SOA 2>/dev/null | grep -q .; do
        if [[ -f $LAB_DIR/rc/$LAB_NAMED_PID ]] || (( $(_lab_now_us) >= deadline )); then
            _lab_err "named did not come up; log:"; _lab_tail_log "$dir/named.log" 30; return 1
        fi
        sleep 0.1
    done
}

lab_named_stop() {
    [[ -n ${LAB_NAMED_PID:-} ]] || return 0
    kill -TERM "$LAB_NAMED_PID" 2>/dev/null
    lab_wait_pid "$LAB_NAMED_PID" 10 >/dev/null || true
    LAB_NAMED_PID=
    rm -f "$LAB_DIR/.named"
}
