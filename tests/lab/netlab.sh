#!/usr/bin/env bash
# tests/lab/netlab.sh — a throw-away "network lab" for end-to-end tests of nearby.
#
# Source it (bash 5; `set -u`/`set -e` friendly) and call:
#
#   lab_up N                    create hosts h1..hN on one private L2 link, each with its own
#                               network namespace, dbus-daemon and avahi-daemon; installs traps
#   lab_ns K                    print host K's namespace name
#   lab_addr K                  print host K's IPv4 address (10.99.0.K)
#   lab_run K CMD...            run CMD on host K in the foreground; returns CMD's status
#   lab_bg K OUTFILE CMD...     run CMD on host K in the background (stdout > OUTFILE,
#                               stderr > OUTFILE.err, stdin < /dev/null); prints CMD's pid and
#                               sets LAB_PID to it
#   lab_wait_pid PID TIMEOUT    wait ≤ TIMEOUT s for a lab_bg pid; returns its exit status
#                               (128+signo if killed by a signal), 124 on timeout
#   lab_wait_line FILE JQ TIMEOUT
#                               poll FILE (JSON lines) until a line satisfies the jq filter;
#                               print that line verbatim, return 0; return 1 on timeout
#   lab_stop_avahi K / lab_start_avahi K
#                               stop / (re)start host K's avahi-daemon
#   lab_avahi_reconfigure K SED / lab_avahi_restore K
#                               edit host K's avahi.conf with the sed script SED (the lab's own
#                               file kept aside the first time) and restart its daemon / put the
#                               lab's file back and restart it (nothing to do if not edited)
#   lab_down                    kill everything the lab started, delete its namespaces and
#                               LAB_DIR; idempotent
#
# CLI: `tests/lab/netlab.sh selftest` checks the lab itself; `... gc` removes labs whose shell
# died without cleaning up (SIGKILL); `... shell [N]` gives an interactive shell in a lab.
#
# Invariants (see README.md): nothing is created in the root network namespace (veth pairs are
# created directly inside the lab's namespaces), addresses are 10.99.0.K/24 on per-lab bridges,
# every started process is recorded (pid + kernel start time, so a recycled pid is never killed)
# and killed by lab_down, which lab_up hooks to EXIT/INT/TERM/HUP (prepended to any handler the
# caller already had; set LAB_NO_TRAP=1 to skip, and call lab_down yourself).

# ---------------------------------------------------------------------------------------------
# Tunables (may be set before lab_up).
: "${LAB_UP_TIMEOUT:=15}"      # seconds lab_up waits for all daemons to be ready
: "${LAB_KILL_GRACE:=2}"       # seconds between SIGTERM and SIGKILL in lab_down
: "${LAB_TMPDIR:=/tmp}"        # parent of LAB_DIR (kept short: unix socket paths ≤ 107 bytes)
: "${LAB_USER:=nearby-lab}"    # the ordinary user the lab's programs run as (tests/lab/as-user)
export LAB_USER
LAB_IFACE=nb0                  # name of each host's interface (inside its own namespace)
# The lab's daemons and tools (avahi-daemon, ip, useradd) live in /usr/sbin and /sbin: a PATH passed
# on from an ordinary user (sudo env PATH=…) often lacks them.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac
case ":$PATH:" in *:/sbin:*) ;; *) PATH=$PATH:/sbin ;; esac

# ---------------------------------------------------------------------------------------------
# Internal helpers.

_lab_err() { printf 'netlab: %s\n' "$*" >&2; }

# Current time in microseconds (EPOCHREALTIME, locale-proof).
_lab_now_us() { local t=${EPOCHREALTIME}; t=${t/[.,]/}; printf '%s' "$((10#$t))"; }

# Seconds (possibly fractional, e.g. 2.5) -> microseconds.
_lab_secs_to_us() {
    local s=$1 int frac
    [[ $s =~ ^([0-9]*)(\.([0-9]*))?$ ]] || { _lab_err "bad timeout: $s"; return 1; }
    int=${BASH_REMATCH[1]:-0}
    frac=${BASH_REMATCH[3]:-}000000
    # LAB_TIME_SCALE (a whole number, default 1): every wait that many times as long, for a build
    # that runs slower (an AddressSanitizer build under scripts/sanitize e2e: 3).
    printf '%s' "$(( (10#$int * 1000000 + 10#${frac:0:6}) * ${LAB_TIME_SCALE:-1} ))"
}

# Kernel start time (clock ticks since boot) of PID; fails if no such process.
_lab_starttime() {
    local stat
    { read -r stat < "/proc/$1/stat"; } 2>/dev/null || return 1
    stat=${stat##*) }            # drop "pid (comm) "; comm may contain spaces/parens
    local -a f
    read -r -a f <<< "$stat"     # f[0] is field 3 (state) ... f[19] is field 22 (starttime)
    printf '%s' "${f[19]}"
}

# True if PID is alive (not a zombie) and still the process that had start time START.
_lab_alive() {
    local pid=$1 start=$2 stat
    { read -r stat < "/proc/$pid/stat"; } 2>/dev/null || return 1
    stat=${stat##*) }
    local -a f
    read -r -a f <<< "$stat"
    [[ ${f[0]} != Z && ${f[19]} == "$start" ]]
}

_lab_require_up() {
    if [[ -z ${LAB_DIR:-} || ! -f ${LAB_DIR}/.netlab ]]; then
        _lab_err "no lab is up (call lab_up first)"; return 1
    fi
}

_lab_check_host() {
    _lab_require_up || return 1
    if [[ ! ${1:-} =~ ^[1-9][0-9]*$ ]] || (( $1 > ${LAB_N:-0} )); then
        _lab_err "no such host: '${1:-}' (lab has h1..h${LAB_N:-0})"; return 1
    fi
}

_lab_hostdir() { printf '%s/h%s' "$LAB_DIR" "$1"; }

# The argv prefix that runs a command on host K with the lab environment. `ip netns exec` and
# `env` both exec(), so the pid of the spawned process is the command's own pid. SIGINT/SIGQUIT
# are reset to default because bash ignores them in background jobs when job control is off.
_lab_env_argv() {
    local k=$1 hd
    hd=$(_lab_hostdir "$k")
    _LAB_ARGV=(ip netns exec "${LAB_PREFIX}h$k"
        env --default-signal=INT,QUIT
        -u XDG_CONFIG_HOME -u DBUS_SESSION_BUS_ADDRESS
        "DBUS_SYSTEM_BUS_ADDRESS=unix:path=$hd/dbus.sock"
        "HOME=$hd/home" "NEARBY_HOME=$hd/home" "XDG_RUNTIME_DIR=$hd/run"
        AVAHI_COMPAT_NOWARN=1)
}

# _lab_spawn LABEL OUT ERR ARGV...
# Start ARGV in the background under a small wrapper subshell that waits for it and writes its
# exit status to $LAB_DIR/rc/<pid>. Records "<pid> <starttime> <label>" in $LAB_DIR/pids.
# Sets _LAB_SPAWNED to ARGV's pid. The wrapper (not the command) is the child of the calling
# shell, so this also works from $(...) and exit statuses are never lost. stdin is /dev/null.
_lab_spawn() {
    local label=$1 out=$2 err=$3; shift 3
    local fifo="$LAB_DIR/.spawn.$BASHPID.$RANDOM" fd pid=""
    mkfifo "$fifo" || return 1
    exec {fd}<>"$fifo"           # O_RDWR: neither side blocks on open
    (
        set +e; trap - ERR
        "$@" </dev/null >"$out" 2>"$err" &
        p=$!
        rm -f "$LAB_DIR/rc/$p"
        printf '%s %s %s\n' "$p" "$(_lab_starttime "$p")" "$label" >> "$LAB_DIR/pids"
        printf '%s\n' "$p" > "$fifo"
        wait "$p"; rc=$?
        printf '%s\n' "$rc" > "$LAB_DIR/rc/$p.tmp" && mv -f "$LAB_DIR/rc/$p.tmp" "$LAB_DIR/rc/$p"
    ) </dev/null >/dev/null 2>&1 &
    local wrapper=$!
    read -r -t 10 -u "$fd" pid || true
    exec {fd}<&-
    rm -f "$fifo"
    if [[ -z $pid ]]; then _lab_err "could not start: $*"; return 1; fi
    # Remember wrappers that are our children so lab_down can reap them (no zombies left).
    if [[ $BASHPID == "${_LAB_OWNER:-}" ]]; then _LAB_WRAPPERS+=("$wrapper"); fi
    _LAB_SPAWNED=$pid
}

# Wait until PID (spawned by _lab_spawn) has exited, at most TIMEOUT_US microseconds.
_lab_wait_rc_us() {
    local pid=$1 deadline=$(( $(_lab_now_us) + $2 ))
    while [[ ! -f $LAB_DIR/rc/$pid ]]; do
        (( $(_lab_now_us) < deadline )) || return 124
        sleep 0.05
    done
    local rc
    read -r rc < "$LAB_DIR/rc/$pid"
    return "$rc"
}

# ---------------------------------------------------------------------------------------------
# Daemons.

_lab_write_configs() {
    local k=$1 hd
    hd=$(_lab_hostdir "$k")
    cat > "$hd/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- netlab: private system bus of lab host h$k -->
<busconfig>
  <type>system</type>
  <listen>unix:path=$hd/dbus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
EOF
    cat > "$hd/avahi.conf" <<EOF
# netlab: avahi-daemon of lab host h$k
[server]
host-name=h$k
domain-name=local
use-ipv4=yes
use-ipv6=yes
allow-interfaces=$LAB_IFACE
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=10000

[wide-area]
enable-wide-area=no

[publish]
publish-workstation=no
publish-hinfo=no
publish-addresses=yes

[reflector]
enable-reflector=no

[rlimits]
EOF
}

_lab_start_dbus() {
    local k=$1 hd
    hd=$(_lab_hostdir "$k")
    rm -f "$hd/dbus.sock"
    _lab_spawn "dbus-h$k" "$hd/dbus.log" "$hd/dbus.log" \
        ip netns exec "${LAB_PREFIX}h$k" \
        dbus-daemon --nofork --nopidfile --nosyslog --config-file="$hd/dbus.conf" || return 1
    printf '%s\n' "$_LAB_SPAWNED" > "$hd/dbus.pid"
}

# avahi-daemon insists on /run/avahi-daemon (pid file, legacy socket). It runs in a private
# mount namespace where the per-host dir $hd/avahi-root is bind-mounted over /run (so nothing
# has to be created on the real /run), and an empty dir over /etc/avahi/services (no static
# services from the machine leak into the lab).
_lab_start_avahi_raw() {
    local k=$1 hd
    hd=$(_lab_hostdir "$k")
    mkdir -p "$hd/avahi-root/avahi-daemon" "$hd/avahi-services"
    rm -f "$hd/avahi-root/avahi-daemon/pid"    # a stale pid file would stop it from starting
    # shellcheck disable=SC2016  # $1/$2 expand in the inner sh
    _lab_spawn "avahi-h$k" "$hd/avahi.log" "$hd/avahi.log" \
        ip netns exec "${LAB_PREFIX}h$k" \
        env "DBUS_SYSTEM_BUS_ADDRESS=unix:path=$hd/dbus.sock" \
        unshare -m --propagation private \
        sh -c 'mount --bind "$1" /run || exit 1
               if [ -d /etc/avahi/services ]; then mount --bind "$2" /etc/avahi/services || exit 1; fi
               exec avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$3"' \
        sh "$hd/avahi-root" "$hd/avahi-services" "$hd/avahi.conf" || return 1
    printf '%s\n' "$_LAB_SPAWNED" > "$hd/avahi.pid"
}

# True once host K's avahi-daemon answers on its bus and reports AVAHI_SERVER_RUNNING (2),
# i.e. its host name is probed and announced.
_lab_avahi_ready() {
    local hd out
    hd=$(_lab_hostdir "$1")
    out=$(DBUS_SYSTEM_BUS_ADDRESS="unix:path=$hd/dbus.sock" timeout 2 \
          dbus-send --system --print-reply --reply-timeout=1000 --dest=org.freedesktop.Avahi \
          / org.freedesktop.Avahi.Server.GetState 2>/dev/null) || return 1
    [[ $out == *"int32 2"* ]]
}

# Is the daemon whose pid is in $hd/<name>.pid still running?
_lab_daemon_running() {
    local hd pid
    hd=$(_lab_hostdir "$1")
    [[ -f $hd/$2.pid ]] || return 1
    read -r pid < "$hd/$2.pid"
    [[ ! -f $LAB_DIR/rc/$pid ]]
}

_lab_tail_log() { [[ -f $1 ]] && tail -n "${2:-15}" "$1" | sed 's/^/    | /' >&2; return 0; }

# Wait for each host in "$@" to be ready (bounded by deadline_us); kind is dbus or avahi.
_lab_wait_ready() {
    local kind=$1 deadline=$2; shift 2
    local -a pending=("$@")
    while (( ${#pending[@]} )); do
        local -a still=()
        local k hd
        for k in "${pending[@]}"; do
            hd=$(_lab_hostdir "$k")
            if ! _lab_daemon_running "$k" "$kind"; then
                _lab_err "$kind-daemon of h$k exited during startup; log $hd/$kind.log:"
                _lab_tail_log "$hd/$kind.log"
                return 1
            fi
            case $kind in
                dbus)  [[ -S $hd/dbus.sock ]] || still+=("$k") ;;
                avahi) _lab_avahi_ready "$k" || still+=("$k") ;;
            esac
        done
        pending=("${still[@]}")
        (( ${#pending[@]} )) || break
        if (( $(_lab_now_us) >= deadline )); then
            for k in "${pending[@]}"; do
                _lab_err "$kind-daemon of h$k not ready after ${LAB_UP_TIMEOUT}s; log:"
                _lab_tail_log "$(_lab_hostdir "$k")/$kind.log"
            done
            return 1
        fi
        sleep 0.1
    done
}

# ---------------------------------------------------------------------------------------------
# Traps.

# _lab_chain_trap SIG CMD: run CMD (then any handler the caller had) on SIG. Not re-chained if
# the current handler already mentions lab_down (lab_up called again after lab_down).
_lab_chain_trap() {
    local sig=$1 cmd=$2 prev=""
    local spec
    spec=$(trap -p "$sig")
    if [[ -n $spec ]]; then
        local -a t
        eval "t=($spec)"           # -> (trap -- 'handler' SIG)
        prev=${t[2]:-}
    fi
    [[ $prev == *lab_down* ]] && return 0
    if [[ -n $prev ]]; then
        # shellcheck disable=SC2064
        trap "$cmd; $prev" "$sig"
    else
        case $sig in
            INT)  trap "$cmd; exit 130" INT ;;
            TERM) trap "$cmd; exit 143" TERM ;;
            HUP)  trap "$cmd; exit 129" HUP ;;
            *)    # shellcheck disable=SC2064
                  trap "$cmd" "$sig" ;;
        esac
    fi
}

# The ordinary user (no home, no login shell, no groups): root sets the lab up, the programs
# under test run as this user (tests/lab/as-user). Several labs start at once: one creates it.
_lab_ensure_user() {
    id -u "$LAB_USER" >/dev/null 2>&1 && return 0
    {
        flock -x 9
        id -u "$LAB_USER" >/dev/null 2>&1 ||
            useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$LAB_USER"
    } 9>"$LAB_TMPDIR/.netlab-user.lock"
    id -u "$LAB_USER" >/dev/null 2>&1 || { _lab_err "could not create the lab's user $LAB_USER"; return 1; }
}

# ---------------------------------------------------------------------------------------------
# Public API.

# lab_up N — create hosts h1..hN. Returns non-zero (after cleaning up) on failure.
lab_up() {
    local n=${1:-}
    if [[ ! $n =~ ^[1-9][0-9]*$ ]] || (( n > 250 )); then
        _lab_err "usage: lab_up N   (1 <= N <= 250)"; return 2
    fi
    if [[ -n ${LAB_DIR:-} && -f ${LAB_DIR}/.netlab ]]; then
        _lab_err "a lab is already up (LAB_DIR=$LAB_DIR); call lab_down first"; return 1
    fi
    if (( EUID != 0 )); then _lab_err "must run as root"; return 1; fi
    local tool
    for tool in ip unshare dbus-daemon dbus-send avahi-daemon jq mkfifo setpriv useradd; do
        command -v "$tool" >/dev/null || { _lab_err "missing tool: $tool"; return 1; }
    done
    _lab_ensure_user || return 1

    LAB_DIR=$(mktemp -d "$LAB_TMPDIR/nbl.XXXXXX") || return 1
    chmod 0755 "$LAB_DIR"    # the lab's user reaches its home, its run directory and the buses
    if (( ${#LAB_DIR} > 80 )); then
        _lab_err "LAB_DIR too long for unix socket paths: $LAB_DIR"; rm -rf "$LAB_DIR"; return 1
    fi
    # Unique per lab: creating shell's pid + LAB_DIR's random suffix.
    LAB_PREFIX="nbl${BASHPID}-${LAB_DIR##*.}-"
    LAB_N=$n
    _LAB_OWNER=$BASHPID
    _LAB_WRAPPERS=()
    export LAB_DIR LAB_N LAB_PREFIX
    mkdir -p "$LAB_DIR/rc"
    : > "$LAB_DIR/pids"
    printf '%s\n' "${LAB_PREFIX}br" > "$LAB_DIR/namespaces"
    printf 'prefix=%s\nn=%s\nowner=%s\nowner_start=%s\n' "$LAB_PREFIX" "$n" "$BASHPID" \
        "$(_lab_starttime "$BASHPID")" > "$LAB_DIR/.netlab"

    if [[ -z ${LAB_NO_TRAP:-} ]]; then
        _lab_chain_trap EXIT lab_down
        _lab_chain_trap INT lab_down
        _lab_chain_trap TERM lab_down
        _lab_chain_trap HUP lab_down
    fi

    if ! _lab_build_net "$n"; then
        _lab_err "network setup failed"; lab_down; return 1
    fi

    local k deadline
    deadline=$(( $(_lab_now_us) + LAB_UP_TIMEOUT * 1000000 ))
    for (( k = 1; k <= n; k++ )); do
        _lab_write_configs "$k"
        _lab_start_dbus "$k" || { lab_down; return 1; }
    done
    _lab_wait_ready dbus "$deadline" $(seq 1 "$n") || { lab_down; return 1; }
    for (( k = 1; k <= n; k++ )); do
        _lab_start_avahi_raw "$k" || { lab_down; return 1; }
    done
    _lab_wait_ready avahi "$deadline" $(seq 1 "$n") || { lab_down; return 1; }
    return 0
}

# The link: namespace ${LAB_PREFIX}br holds bridge br0 (no IP, IPv6 off, no multicast
# snooping so mDNS is always flooded); per host a namespace ${LAB_PREFIX}hK whose interface nb0
# (10.99.0.K/24, IPv6 link-local without DAD) is a veth whose peer pK is a port of br0. veths are
# created inside the bridge namespace with the peer placed straight into the host namespace, so
# the root namespace never sees any of these interfaces.
_lab_build_net() {
    local n=$1 br="${LAB_PREFIX}br" k ns hd
    ip netns add "$br" || return 1
    ip netns exec "$br" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
    ip -n "$br" link add br0 type bridge forward_delay 0 mcast_snooping 0 stp_state 0 || return 1
    ip -n "$br" link set br0 up || return 1
    for (( k = 1; k <= n; k++ )); do
        ns="${LAB_PREFIX}h$k"
        hd=$(_lab_hostdir "$k")
        mkdir -p "$hd/home" "$hd/run" || return 1
        chmod 0700 "$hd/run"
        chown "$LAB_USER:" "$hd/home" "$hd/run" || return 1
        ip netns add "$ns" || return 1
        printf '%s\n' "$ns" >> "$LAB_DIR/namespaces"
        # Before the interface exists: no DAD (link-local usable at once), no router solicits.
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 \
            net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.router_solicitations=0 \
            >/dev/null || return 1
        ip -n "$br" link add "p$k" type veth peer name "$LAB_IFACE" netns "$ns" || return 1
        ip -n "$br" link set "p$k" master br0 up || return 1
        ip -n "$ns" link set lo up || return 1
        ip -n "$ns" link set "$LAB_IFACE" multicast on up || return 1
        ip -n "$ns" addr add "10.99.0.$k/24" dev "$LAB_IFACE" || return 1
    done
}

lab_ns()   { _lab_check_host "${1:-}" || return 1; printf '%s\n' "${LAB_PREFIX}h$1"; }
lab_addr() { _lab_check_host "${1:-}" || return 1; printf '10.99.0.%s\n' "$1"; }

# lab_run K CMD... — foreground; stdin/stdout/stderr inherited; status is CMD's.
lab_run() {
    _lab_check_host "${1:-}" || return 1
    local k=$1; shift
    (( $# )) || { _lab_err "usage: lab_run K CMD..."; return 2; }
    _lab_env_argv "$k"
    "${_LAB_ARGV[@]}" "$@"
}

# lab_bg K OUTFILE CMD... — background; prints CMD's own pid and sets LAB_PID.
# Prefer `lab_bg ... >/dev/null; pid=$LAB_PID` over `pid=$(lab_bg ...)`: both work, but in the
# latter the small wrapper that reaps CMD is orphaned and, on machines whose init does not reap
# orphans, remains a zombie `bash` after CMD ends (CMD itself is always reaped).
lab_bg() {
    _lab_check_host "${1:-}" || return 1
    local k=$1 out=${2:-}; shift 2 || true
    if [[ -z $out || $# -eq 0 ]]; then _lab_err "usage: lab_bg K OUTFILE CMD..."; return 2; fi
    _lab_env_argv "$k"
    _lab_spawn "bg-h$k" "$out" "$out.err" "${_LAB_ARGV[@]}" "$@" || return 1
    LAB_PID=$_LAB_SPAWNED
    printf '%s\n' "$LAB_PID"
}

# lab_wait_pid PID TIMEOUT — exit status of a lab_bg pid (128+N if killed by signal N),
# 124 on timeout. A pid not started by lab_bg is polled until gone, then `wait`ed for if it is
# a child of this shell (else 0).
lab_wait_pid() {
    local pid=${1:-} t=${2:-}
    if [[ ! $pid =~ ^[0-9]+$ || -z $t ]]; then _lab_err "usage: lab_wait_pid PID TIMEOUT"; return 2; fi
    local us
    us=$(_lab_secs_to_us "$t") || return 2
    if [[ -n ${LAB_DIR:-} ]] && grep -q "^$pid " "$LAB_DIR/pids" 2>/dev/null; then
        local rc=0
        _lab_wait_rc_us "$pid" "$us" || rc=$?
        return "$rc"
    fi
    local deadline=$(( $(_lab_now_us) + us )) start
    start=$(_lab_starttime "$pid") || start=""
    while [[ -n $start ]] && _lab_alive "$pid" "$start"; do
        (( $(_lab_now_us) < deadline )) || return 124
        sleep 0.05
    done
    local rc=0
    wait "$pid" 2>/dev/null || rc=$?
    (( rc == 127 )) && rc=0     # not our child: status unknown
    return "$rc"
}

# lab_wait_line FILE JQ_FILTER TIMEOUT — a line matches when the filter yields at least one
# value other than false/null (so both `select(.event=="found")` and `.event=="found"` work).
# Lines that are not (yet complete) JSON are skipped. Prints the first matching line verbatim.
lab_wait_line() {
    local file=${1:-} filter=${2:-} t=${3:-}
    if [[ -z $file || -z $filter || -z $t ]]; then
        _lab_err "usage: lab_wait_line FILE JQ_FILTER TIMEOUT"; return 2
    fi
    local us deadline line
    us=$(_lab_secs_to_us "$t") || return 2
    deadline=$(( $(_lab_now_us) + us ))
    local prog="first(inputs as \$raw | (\$raw | try fromjson catch empty)
                  | select(any(try ($filter); . != false and . != null)) | \$raw)"
    # Compile the program once so a typo fails fast instead of timing out.
    if ! jq -nR "$prog" </dev/null >/dev/null; then
        _lab_err "invalid jq filter: $filter"; return 2
    fi
    while :; do
        if [[ -f $file ]]; then
            line=$(jq -nrR "$prog" < "$file" 2>/dev/null)
            if [[ -n $line ]]; then printf '%s\n' "$line"; return 0; fi
        fi
        (( $(_lab_now_us) < deadline )) || return 1
        sleep 0.1
    done
}

# lab_stop_avahi K — SIGTERM host K's avahi-daemon (it sends goodbye packets) and wait for it.
lab_stop_avahi() {
    _lab_check_host "${1:-}" || return 1
    local k=$1 hd pid start rc=0
    hd=$(_lab_hostdir "$k")
    _lab_daemon_running "$k" avahi || return 0
    read -r pid < "$hd/avahi.pid"
    start=$(awk -v p="$pid" '$1 == p { s = $2 } END { print s }' "$LAB_DIR/pids")
    _lab_alive "$pid" "$start" && kill -TERM "$pid" 2>/dev/null
    _lab_wait_rc_us "$pid" 5000000 || rc=$?
    if (( rc == 124 )); then
        _lab_alive "$pid" "$start" && kill -KILL "$pid" 2>/dev/null
        _lab_wait_rc_us "$pid" 2000000 || true
    fi
    return 0
}

# lab_start_avahi K — start host K's avahi-daemon again and wait (≤ LAB_UP_TIMEOUT) until ready.
lab_start_avahi() {
    _lab_check_host "${1:-}" || return 1
    local k=$1
    if _lab_daemon_running "$k" avahi; then _lab_err "avahi-daemon of h$k is already running"; return 1; fi
    _lab_start_avahi_raw "$k" || return 1
    _lab_wait_ready avahi $(( $(_lab_now_us) + LAB_UP_TIMEOUT * 1000000 )) "$k"
}

# lab_avahi_reconfigure K SED — host K's avahi-daemon restarted with its avahi.conf edited by SED.
lab_avahi_reconfigure() {
    _lab_check_host "${1:-}" || return 1
    local conf
    conf=$(_lab_hostdir "$1")/avahi.conf
    [[ -f $conf.lab ]] || cp "$conf" "$conf.lab" || return 1
    sed -i "$2" "$conf" || return 1
    lab_stop_avahi "$1"
    lab_start_avahi "$1"
}

# lab_avahi_restore K — the lab's own avahi.conf back on host K, its daemon restarted.
lab_avahi_restore() {
    _lab_check_host "${1:-}" || return 1
    local conf
    conf=$(_lab_hostdir "$1")/avahi.conf
    [[ -f $conf.lab ]] || return 0
    mv "$conf.lab" "$conf" || return 1
    lab_stop_avahi "$1"
    lab_start_avahi "$1"
}

# lab_down — tear everything down. Idempotent; safe from traps; never fails.
lab_down() {
    local dir=${LAB_DIR:-}
    if [[ -z $dir || ! -f $dir/.netlab ]]; then
        unset LAB_DIR LAB_N LAB_PREFIX
        return 0
    fi
    local prefix
    prefix=$(sed -n 's/^prefix=//p' "$dir/.netlab" 2>/dev/null)

    # 1. SIGTERM every recorded process that is still the one we started.
    local -a live=()
    local pid start label
    while read -r pid start label; do
        [[ -n $pid && -n $start ]] || continue
        if _lab_alive "$pid" "$start"; then
            kill -TERM "$pid" 2>/dev/null && live+=("$pid:$start")
        fi
    done < <(tac "$dir/pids" 2>/dev/null)

    # 2. Grace period, then SIGKILL.
    local deadline=$(( $(_lab_now_us) + LAB_KILL_GRACE * 1000000 )) p
    while (( ${#live[@]} )); do
        local -a still=()
        for p in "${live[@]}"; do _lab_alive "${p%%:*}" "${p#*:}" && still+=("$p"); done
        live=("${still[@]}")
        (( ${#live[@]} )) || break
        if (( $(_lab_now_us) >= deadline )); then
            for p in "${live[@]}"; do kill -KILL "${p%%:*}" 2>/dev/null; done
            break
        fi
        sleep 0.05
    done

    # 3. Safety net: anything still running inside our namespaces was started there by us
    #    (e.g. a manual `ip netns exec $(lab_ns 1) ... &`).
    local ns
    while read -r ns; do
        [[ -n $ns ]] || continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done < <(cat "$dir/namespaces" 2>/dev/null)

    # 4. Reap our wrapper subshells (children of this shell) so no zombies are left behind.
    if [[ $BASHPID == "${_LAB_OWNER:-}" ]]; then
        local w st
        deadline=$(( $(_lab_now_us) + 2000000 ))
        for w in "${_LAB_WRAPPERS[@]}"; do
            while { read -r st < "/proc/$w/stat"; } 2>/dev/null; do
                st=${st##*) }
                [[ ${st:0:1} == Z ]] && break
                (( $(_lab_now_us) < deadline )) || break
                sleep 0.02
            done
            { read -r st < "/proc/$w/stat"; } 2>/dev/null && st=${st##*) } \
                && [[ ${st:0:1} == Z ]] && wait "$w" 2>/dev/null
        done
    fi
    _LAB_WRAPPERS=()

    # 5. Mounts: ours live only in the daemons' private mount namespaces, which are gone now;
    #    defensively lazy-unmount anything under LAB_DIR that is visible here.
    local m
    while read -r _ m _; do
        [[ $m == "$dir"/* ]] && umount -l "$m" 2>/dev/null
    done < /proc/self/mounts

    # 6. Namespaces (deleting a host namespace destroys its veth pair).
    while read -r ns; do
        [[ -n $ns ]] && ip netns del "$ns" 2>/dev/null
    done < <(tac "$dir/namespaces" 2>/dev/null)
    # Anything with our prefix that escaped the list (e.g. interrupted mid-setup).
    if [[ -n $prefix ]]; then
        while read -r ns _; do
            [[ $ns == "$prefix"* ]] && ip netns del "$ns" 2>/dev/null
        done < <(ip netns list 2>/dev/null)
    fi

    # 7. State.
    rm -rf -- "$dir"
    unset LAB_DIR LAB_N LAB_PREFIX
    return 0
}

# ---------------------------------------------------------------------------------------------
# CLI: selftest.

_lab_selftest() {
    local fails=0 t0 t1 line out
    _st_pass() { printf 'PASS %s\n' "$*"; }
    _st_fail() { printf 'FAIL %s\n' "$*"; fails=$((fails + 1)); }
    _st_ms()   { printf '%d' $(( ($2 - $1) / 1000 )); }
    # _st_wait_grep FILE ERE TIMEOUT: poll until a line of FILE matches.
    _st_wait_grep() {
        local deadline=$(( $(_lab_now_us) + $3 * 1000000 ))
        until grep -Eq "$2" "$1" 2>/dev/null; do
            (( $(_lab_now_us) < deadline )) || return 1
            sleep 0.05
        done
    }

    t0=$(_lab_now_us)
    if lab_up 3; then
        t1=$(_lab_now_us); _st_pass "lab_up 3 ($(_st_ms "$t0" "$t1") ms, LAB_DIR=$LAB_DIR)"
    else
        _st_fail "lab_up 3"; return 1
    fi
    local dir=$LAB_DIR prefix=$LAB_PREFIX

    # Basic API.
    [[ $(lab_ns 2) == "${prefix}h2" && $(lab_addr 3) == 10.99.0.3 ]] \
        && _st_pass "lab_ns / lab_addr" || _st_fail "lab_ns / lab_addr"
    out=$(lab_run 2 sh -c 'echo "$HOME|$NEARBY_HOME|$XDG_RUNTIME_DIR|${XDG_CONFIG_HOME-unset}|$AVAHI_COMPAT_NOWARN|$DBUS_SYSTEM_BUS_ADDRESS"')
    [[ $out == "$dir/h2/home|$dir/h2/home|$dir/h2/run|unset|1|unix:path=$dir/h2/dbus.sock" ]] \
        && _st_pass "lab_run environment" || _st_fail "lab_run environment: $out"
    local rc=0; lab_run 1 sh -c 'exit 7' || rc=$?
    (( rc == 7 )) && _st_pass "lab_run exit status" || _st_fail "lab_run exit status ($rc)"
    out=$(lab_run 1 ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
    [[ $out == "lo nb0 " ]] && _st_pass "h1 interfaces: $out" || _st_fail "h1 interfaces: $out"
    out=$(lab_run 1 ip -6 -o addr show dev nb0 scope link | awk '{print $4, $NF}')
    [[ $out == fe80:* ]] && _st_pass "h1 IPv6 link-local $out" || _st_fail "h1 IPv6 link-local: $out"
    # IPv4 reachability h2 -> h1 over the bridge (socat TCP).
    lab_bg 1 "$dir/echo.out" socat -T5 TCP-LISTEN:7777,bind=10.99.0.1 SYSTEM:'echo hello-from-h1' >/dev/null
    local echo_pid=$LAB_PID i
    for i in $(seq 50); do
        out=$(lab_run 2 socat -T2 - TCP:10.99.0.1:7777 </dev/null 2>/dev/null) && break; sleep 0.05
    done
    [[ $out == hello-from-h1 ]] && _st_pass "TCP h2 -> h1" || _st_fail "TCP h2 -> h1: '$out'"
    lab_wait_pid "$echo_pid" 5 >/dev/null || true

    # lab_wait_line / lab_wait_pid behaviour.
    lab_bg 3 "$dir/lines.out" sh -c 'echo "{\"event\":\"x\"}"; sleep 0.3; echo "not json"; echo "{\"event\":\"found\",\"name\":\"n1\"}"; exec sleep 60' >/dev/null
    local lines_pid=$LAB_PID
    line=$(lab_wait_line "$dir/lines.out" 'select(.event=="found")' 5) \
        && [[ $line == '{"event":"found","name":"n1"}' ]] \
        && _st_pass "lab_wait_line: $line" || _st_fail "lab_wait_line: '$line'"
    rc=0; lab_wait_line "$dir/lines.out" '.event=="never"' 0.3 >/dev/null || rc=$?
    (( rc == 1 )) && _st_pass "lab_wait_line timeout" || _st_fail "lab_wait_line timeout ($rc)"
    rc=0; lab_wait_pid "$lines_pid" 0.2 || rc=$?
    (( rc == 124 )) && _st_pass "lab_wait_pid timeout -> 124" || _st_fail "lab_wait_pid timeout ($rc)"
    kill -INT "$lines_pid"
    rc=0; lab_wait_pid "$lines_pid" 5 || rc=$?
    (( rc == 130 )) && _st_pass "kill -INT reaches CMD (status $rc)" || _st_fail "kill -INT status $rc"

    # mDNS: a long-running browser on h2 (what nearby does), then publish on h1.
    # stdbuf: avahi-browse writing to a file would otherwise block-buffer its output.
    lab_bg 2 "$dir/browse2.out" stdbuf -oL avahi-browse -p _nbtest._tcp >/dev/null
    lab_bg 1 "$dir/pub.out" avahi-publish -s test1 _nbtest._tcp 4242 a=b >/dev/null
    local pub=$LAB_PID h
    t0=$(_lab_now_us)
    if _st_wait_grep "$dir/browse2.out" '^[+];nb0;IPv4;test1;_nbtest[.]_tcp;local$' 10; then
        _st_pass "h2 browser: test1 appeared after $(_st_ms "$t0" "$(_lab_now_us)") ms"
    else
        _st_fail "h2 browser: test1 did not appear"
    fi
    # One-shot resolving browses (-r: resolve, -p: parsable, -t: exit at "all for now").
    # NB: the IPv4/IPv6 column is the family the answer came in on; avahi-browse resolves the
    # host name with any address family, so an "IPv4" line may carry h1's fe80:: address.
    local want='^=;nb0;IPv[46];test1;_nbtest[.]_tcp;local;h1[.]local;(10[.]99[.]0[.]1|fe80:[0-9a-f:]+);4242;"a=b"$'
    for h in 2 3; do
        out=""
        t0=$(_lab_now_us)
        for i in $(seq 10); do
            out=$(lab_run "$h" avahi-browse -rpt _nbtest._tcp 2>/dev/null) || true
            grep -Eq "$want" <<< "$out" && break
            sleep 0.1
        done
        t1=$(_lab_now_us)
        if grep -Eq "$want" <<< "$out"; then
            _st_pass "h$h avahi-browse -rpt resolves test1 with TXT a=b (attempt $i, $(_st_ms "$t0" "$t1") ms)"
            grep '^=' <<< "$out" | sed 's/^/     /'
        else
            _st_fail "h$h does not resolve test1 with TXT: $out"
        fi
    done

    out=$(lab_run 3 avahi-resolve-host-name -4 h1.local 2>&1) || true
    [[ $out == $'h1.local\t10.99.0.1' ]] && _st_pass "h3 resolves h1.local -> 10.99.0.1" \
        || _st_fail "h3 avahi-resolve-host-name -4 h1.local: $out"

    kill -INT "$pub"
    t0=$(_lab_now_us)
    rc=0; lab_wait_pid "$pub" 5 || rc=$?
    (( rc != 124 )) && _st_pass "publisher exited on SIGINT (status $rc)" || _st_fail "publisher still running"
    if _st_wait_grep "$dir/browse2.out" '^-;nb0;IPv4;test1;_nbtest[.]_tcp;local$' 10; then
        _st_pass "h2 browser: test1 removed $(_st_ms "$t0" "$(_lab_now_us)") ms after SIGINT"
    else
        _st_fail "h2 browser: test1 not removed within 10 s"
    fi
    # A fresh one-shot browse must not list it any more (checks the exit status too).
    rc=0; out=$(lab_run 2 avahi-browse -pt _nbtest._tcp 2>&1) || rc=$?
    if (( rc == 0 )) && ! grep -q ';test1;' <<< "$out"; then
        _st_pass "h2 avahi-browse -pt no longer lists test1"
    else
        _st_fail "h2 avahi-browse -pt (rc=$rc): $out"
    fi

    # avahi stop/start on h3.
    lab_stop_avahi 3
    if ! lab_run 3 avahi-browse -pt _nbtest._tcp >/dev/null 2>&1; then
        _st_pass "h3 avahi stopped (avahi-browse fails)"
    else
        _st_fail "h3 avahi still answering after lab_stop_avahi"
    fi
    t0=$(_lab_now_us)
    lab_start_avahi 3 && lab_run 3 avahi-browse -pt _nbtest._tcp >/dev/null 2>&1 \
        && _st_pass "h3 avahi restarted ($(_st_ms "$t0" "$(_lab_now_us)") ms)" \
        || _st_fail "h3 avahi restart"

    # Teardown and leak check.
    local -a recorded
    mapfile -t recorded < <(awk '{print $1 ":" $2}' "$dir/pids")
    lab_down
    lab_down   # idempotent
    local leaked="" p
    for p in "${recorded[@]}"; do _lab_alive "${p%%:*}" "${p#*:}" && leaked+=" ${p%%:*}"; done
    [[ -z $leaked ]] && _st_pass "no recorded process left" || _st_fail "processes left:$leaked"
    out=$(ip netns list | grep -c "^$prefix" || true)
    [[ $out == 0 ]] && _st_pass "no namespace left" || _st_fail "$out namespaces left"
    out=$(pgrep -f "$dir" || true)
    [[ -z $out ]] && _st_pass "no process mentions $dir" || _st_fail "processes mention $dir: $out"
    [[ ! -e $dir ]] && _st_pass "LAB_DIR removed" || _st_fail "LAB_DIR still exists"

    if (( fails )); then printf 'FAIL selftest (%d failures)\n' "$fails"; return 1; fi
    printf 'PASS selftest\n'
}

# CLI: gc — tear down labs left behind by a shell that died without running its trap
# (e.g. SIGKILL). A lab counts as abandoned when the shell that ran lab_up is gone.
_lab_gc() {
    local d owner start ns pid p
    for d in "$LAB_TMPDIR"/nbl.*; do
        [[ -f $d/.netlab ]] || continue
        owner=$(sed -n 's/^owner=//p' "$d/.netlab")
        start=$(sed -n 's/^owner_start=//p' "$d/.netlab")
        # Conservative: without a start time (older format) any live process with that pid
        # counts as the owner. Without an owner entry at all, leave it alone.
        if [[ -z $owner ]] || { [[ -n $start ]] && _lab_alive "$owner" "$start"; } \
           || { [[ -z $start ]] && [[ -d /proc/$owner ]]; }; then
            printf 'in use (or unknown): %s (owner pid %s)\n' "$d" "${owner:-?}"; continue
        fi
        printf 'removing abandoned lab %s\n' "$d"
        ( LAB_DIR=$d; _LAB_OWNER=""; lab_down )
    done
    # Namespaces whose LAB_DIR is already gone: nbl<pid>-<tag>-(br|hK) with <pid> dead.
    while read -r ns _; do
        [[ $ns =~ ^nbl([0-9]+)-[A-Za-z0-9]{6}-(br|h[0-9]+)$ ]] || continue
        pid=${BASH_REMATCH[1]}
        [[ -d /proc/$pid ]] && continue
        printf 'removing orphan namespace %s\n' "$ns"
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null || true
    done < <(ip netns list 2>/dev/null)
    return 0
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    unset LAB_DIR LAB_N LAB_PREFIX   # never inherit somebody else's lab
    case ${1:-} in
        selftest) _lab_selftest ;;
        gc)       _lab_gc ;;
        shell)    # interactive shell with a lab of N hosts (default 2); torn down on exit
                  lab_up "${2:-2}"
                  printf 'netlab: %s hosts up, LAB_DIR=%s; try: lab_run 1 avahi-browse -at\n' \
                      "$LAB_N" "$LAB_DIR" >&2
                  bash --rcfile <(printf '. %q\nPS1="[netlab] \\w\\$ "\n' "${BASH_SOURCE[0]}") -i \
                      || true ;;
        *) printf 'usage: %s selftest | gc | shell [N]\n       (or source it: . %s; lab_up 3; ...)\n' \
               "$0" "$0" >&2; exit 2 ;;
    esac
fi
