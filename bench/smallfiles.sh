#!/usr/bin/env bash
# A folder of many small files over one lab link (5,000 files of 4 KiB, 20 MB, by default): nearby
# send-file, scp -r (OpenSSH, aes128-gcm, a private sshd inside the lab host) and wormhole-william
# (its own mailbox server, magic-wormhole-mailbox-server, on the receiving lab host; the transit is
# direct between the two hosts, which have no route off the machine), each writing to a directory
# in RAM (/dev/shm) on the receiver, in turns, ROUNDS rounds. Every copy is checked with diff -r.
# Each row prints the median files a second (whole command: nearby's includes finding the peer and
# the handshake) and CPU-seconds per file of the sending and of the receiving side, and each as a
# ratio to the best row of the same run (files/s: the row's over the best; CPU: the row's over the
# lowest). CPU is counted per process (utime + stime of the commands, their children and, for
# scp, the sshd that serves it), so the other work on a shared machine does not count. A tool that
# is not installed is named and left out.
#
#   bench/smallfiles.sh [FILES] [KiB]   (root; default 5000 4; ROUNDS=3; NEARBY=path, else a release build)
#   NEARBY_B=path adds a second nearby row (another build, e.g. the one before a change);
#   TOOLS="nearby scp wormhole magic localsend" picks rows (default all): magic is magic-wormhole
#   (`pip install magic-wormhole` into /opt/nearby-venv; the same mailbox and relay as
#   wormhole-william), localsend is `nearby send-file --localsend DIR` to `nearby advertise
#   --localsend --auto-accept` (LocalSend v2 over HTTPS, one node per build).
#   PERF=DIR records each nearby round with `perf record -g` on both sides: DIR/ROW-send-N.data (the
#   send-file) and DIR/ROW-recv-N.data (the receiving node, attached for the round); read them with
#   `perf report --no-children -i FILE` (and --children). PERF_FREQ (default 999) is the sample rate.
#   STRACE=DIR counts syscalls the same way (`strace -c -f`): DIR/ROW-send-N.txt, DIR/ROW-recv-N.txt.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILES=${1:-5000} KIB=${2:-4} ROUNDS=${ROUNDS:-3} TOOLS=" ${TOOLS:-nearby scp wormhole magic localsend} "
cd "$ROOT"
if [[ ($TOOLS == *" nearby "* || $TOOLS == *" localsend "*) && -z ${NEARBY:-} ]]; then
    swift build -c release --scratch-path .build-release --product nearby >/dev/null
    NEARBY=$ROOT/.build-release/release/nearby
fi
[[ $TOOLS != *" nearby "* && $TOOLS != *" localsend "* ]] || NEARBY=$(readlink -f "$NEARBY")
NEARBY_B=${NEARBY_B:+$(readlink -f "$NEARBY_B")}
source tests/lab/netlab.sh

WORK=$(mktemp -d /dev/shm/nbsmall.XXXXXX)
NETNS_ETC=()
trap 'rm -rf "$WORK" "${NETNS_ETC[@]}"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
H1=$(lab_addr 1)
mkdir -p "$WORK/src/d" "$WORK/dst" "$WORK/ssh" "$WORK/t"
head -c $((FILES * KIB * 1024)) /dev/urandom | (cd "$WORK/src/d" && split -b $((KIB * 1024)) -a 5 -d - f)
(( $(find "$WORK/src/d" -type f | wc -l) == FILES )) || { echo "smallfiles: could not make $FILES files" >&2; exit 1; }

now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
HZ=$(getconf CLK_TCK)
# cpu PID: ticks of a running process and of the children it has waited for.
cpu() { local s; read -ra s </proc/"$1"/stat; echo $((s[13] + s[14] + s[15] + s[16])); }
# timed FILE CMD...: GNU time's user + system seconds of CMD and its children, into FILE.
timed() { local out=$1; shift; /usr/bin/time -f '%U %S' -o "$out" "$@"; }
secs() { awk '{ print $1 + $2 }' "$1"; }
declare -A US=() SEND=() RECV=() WAIT=()
record() { US[$1]="${US[$1]:-} $2"; SEND[$1]="${SEND[$1]:-} $3"; RECV[$1]="${RECV[$1]:-} $4"; }
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
check() { diff -r "$WORK/src/d" "$1" >/dev/null || { echo "smallfiles: $2 delivered different files" >&2; exit 1; }; rm -rf "$1"; }

# nearby: a node on h1 that takes files (one per build), the one-shot send-file from h2.
declare -A NODE=()
lab_run 1 "${NEARBY_B:-$NEARBY}" identity --rename sf-recv >/dev/null 2>&1 || true
start_node() { # label binary service
    mkdir -p "$WORK/dst/$1"
    lab_bg 1 "$WORK/node-$1.jsonl" "$2" advertise --service "$3" --auto-accept --save-dir "$WORK/dst/$1" >/dev/null
    NODE[$1]=$LAB_PID
    lab_wait_line "$WORK/node-$1.jsonl" 'select(.event=="advertising")' 20 >/dev/null
}
ROWS=()
if [[ $TOOLS == *" nearby "* ]]; then ROWS+=(nearby); start_node nearby "$NEARBY" sfa; fi
if [[ -n $NEARBY_B ]]; then ROWS+=(nearby_b); start_node nearby_b "$NEARBY_B" sfb; fi
ROUND=0
nearby_row() { # label binary service
    local t0 r0 received watch=() watcher=
    rm -rf "$WORK/dst/$1/d"
    if [[ -n ${PERF:-} ]]; then
        mkdir -p "$PERF"
        perf record -q -g -F "${PERF_FREQ:-999}" -o "$PERF/$1-recv-$ROUND.data" -p "${NODE[$1]}" 2>"$PERF/$1-recv-$ROUND.err" & watcher=$!
        watch=(perf record -q -g -F "${PERF_FREQ:-999}" -o "$PERF/$1-send-$ROUND.data" --)
    elif [[ -n ${STRACE:-} ]]; then
        mkdir -p "$STRACE"
        strace -c -f -o "$STRACE/$1-recv-$ROUND.txt" -p "${NODE[$1]}" 2>/dev/null & watcher=$!
        watch=(strace -c -f -o "$STRACE/$1-send-$ROUND.txt" --)
    fi
    [[ -z $watcher ]] || sleep 1   # attached before the send starts
    r0=$(cpu "${NODE[$1]}") t0=$(now)
    (cd "$WORK/src" && lab_run 2 /usr/bin/time -f '%U %S' -o "$WORK/t/send" "${watch[@]}" "$2" send-file sf-recv d --service "$3" >"$WORK/send.jsonl")
    if [[ -n $watcher ]]; then kill -INT "$watcher" 2>/dev/null || true; wait "$watcher" || true; fi
    # The receiving node has put every file in place before it confirms the last one.
    record "$1" $(( $(now) - t0 )) "$(secs "$WORK/t/send")" "$(awk -v t=$(( $(cpu "${NODE[$1]}") - r0 )) -v hz="$HZ" 'BEGIN { print t / hz }')"
    # The longest the sender went without a confirmation (a stall shows here, not in the median).
    WAIT[$1]="${WAIT[$1]:-} $(jq -r 'select(.event=="file-sent") | .time' "$WORK/send.jsonl" |
        awk -F'[T:Z]' '{ t = $2 * 3600 + $3 * 60 + $4; if (NR > 1 && t - p > m) m = t - p; p = t } END { printf "%.3f", m }')"
    received=$(jq -c 'select(.event=="file-sent")' "$WORK/send.jsonl" | wc -l)
    (( received == FILES )) || { echo "smallfiles: $1 reported $received file-sent events of $FILES" >&2; exit 1; }
    check "$WORK/dst/$1/d" "$1"
}

# scp -r to a private sshd on h1; the sshd's waited-for children are the receiving side.
ssh-keygen -q -t ed25519 -N '' -f "$WORK/ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$WORK/ssh/user"
cp "$WORK/ssh/user.pub" "$WORK/ssh/authorized_keys"
mkdir -p /run/sshd
cat >"$WORK/ssh/sshd_config" <<CONF
Port 2222
ListenAddress $H1
HostKey $WORK/ssh/host
AuthorizedKeysFile $WORK/ssh/authorized_keys
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $WORK/ssh/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
CONF
lab_bg 1 "$WORK/ssh/sshd.log" /usr/sbin/sshd -D -e -f "$WORK/ssh/sshd_config" >/dev/null
SSHD=$LAB_PID
[[ $TOOLS != *" scp "* ]] || ROWS+=(scp)
scp_row() {
    local t0 r0
    mkdir -p "$WORK/dst/scp"
    r0=$(cpu "$SSHD") t0=$(now)
    lab_run 2 /usr/bin/time -f '%U %S' -o "$WORK/t/send" scp -q -r -P 2222 -i "$WORK/ssh/user" -c aes128-gcm@openssh.com \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$WORK/src/d" "root@$H1:$WORK/dst/scp/"
    record scp $(( $(now) - t0 )) "$(secs "$WORK/t/send")" "$(awk -v t=$(( $(cpu "$SSHD") - r0 )) -v hz="$HZ" 'BEGIN { print t / hz }')"
    check "$WORK/dst/scp/d" scp
}

# wormhole-william with its mailbox and transit relay on h1 (wormhole-william has no option for
# the relay: the lab hosts' /etc/hosts, which `ip netns exec` takes from /etc/netns/NS/, names h1
# for its default one); the receiver answers its question with y.
MAILBOX=/opt/nearby-venv/bin/twistd RELAY=/usr/bin/twistd3 MAGIC=/opt/nearby-venv/bin/wormhole
if [[ $TOOLS != *" wormhole "* && $TOOLS != *" magic "* ]]; then
    :
elif [[ -x $MAILBOX && -x $RELAY ]]; then
    if [[ $TOOLS == *" wormhole "* ]]; then
        if command -v wormhole-william >/dev/null; then ROWS+=(wormhole); else echo "smallfiles: wormhole-william is missing: no wormhole row" >&2; fi
    fi
    if [[ $TOOLS == *" magic "* ]]; then
        if [[ -x $MAGIC ]]; then ROWS+=(magic); else echo "smallfiles: magic-wormhole ($MAGIC) is missing: no magic row" >&2; fi
    fi
    for k in 1 2; do
        NETNS_ETC+=("/etc/netns/$(lab_ns $k)")
        mkdir -p "/etc/netns/$(lab_ns $k)"
        printf '127.0.0.1 localhost\n%s transit.magic-wormhole.io\n' "$H1" >"/etc/netns/$(lab_ns $k)/hosts"
    done
    (cd "$WORK" && lab_bg 1 "$WORK/mailbox.log" "$MAILBOX" -n --pidfile= wormhole-mailbox \
        --port "tcp:4000:interface=$H1" --channel-db="$WORK/relay.sqlite" >/dev/null)
    (cd "$WORK" && lab_bg 1 "$WORK/relay.log" "$RELAY" -n --pidfile= transitrelay --port "tcp:4001:interface=$H1" >/dev/null)
    for _ in $(seq 200); do lab_run 2 bash -c "exec 3<>/dev/tcp/$H1/4000" 2>/dev/null && break; sleep 0.3; done
else
    echo "smallfiles: the wormholes' mailbox server (pip magic-wormhole-mailbox-server in /opt/nearby-venv)" \
        "or transit relay (magic-wormhole-transit-relay) is missing: no wormhole rows" >&2
fi
wormhole_row() {
    local t0 receiver code="7-smallfiles-$RANDOM"
    mkdir -p "$WORK/dst/wh"
    t0=$(now)
    lab_bg 1 "$WORK/wh.log" bash -c "cd '$WORK/dst/wh' && yes | /usr/bin/time -f '%U %S' -o '$WORK/t/recv' \
        wormhole-william receive --hide-progress --relay-url ws://$H1:4000/v1 '$code'" >/dev/null
    receiver=$LAB_PID
    (cd "$WORK/src" && lab_run 2 /usr/bin/time -f '%U %S' -o "$WORK/t/send" \
        wormhole-william send --hide-progress --relay-url "ws://$H1:4000/v1" --code "$code" d >/dev/null 2>&1)
    lab_wait_pid "$receiver" 120 >/dev/null || { echo "smallfiles: wormhole-william did not finish" >&2; exit 1; }
    record wormhole $(( $(now) - t0 )) "$(secs "$WORK/t/send")" "$(secs "$WORK/t/recv")"
    check "$WORK/dst/wh/d" wormhole-william
}

# magic-wormhole (Python) through the same mailbox and relay; the receiver takes the offer at once.
magic_row() {
    local t0 receiver code="7-magicfiles-$RANDOM"
    mkdir -p "$WORK/dst/mw"
    t0=$(now)
    lab_bg 1 "$WORK/mw.log" bash -c "cd '$WORK/dst/mw' && /usr/bin/time -f '%U %S' -o '$WORK/t/recv' \
        '$MAGIC' --relay-url ws://$H1:4000/v1 --transit-helper tcp:$H1:4001 receive --accept-file --hide-progress '$code'" >/dev/null
    receiver=$LAB_PID
    (cd "$WORK/src" && lab_run 2 /usr/bin/time -f '%U %S' -o "$WORK/t/send" \
        "$MAGIC" --relay-url "ws://$H1:4000/v1" --transit-helper "tcp:$H1:4001" send --hide-progress --code "$code" d >/dev/null 2>&1)
    lab_wait_pid "$receiver" 120 >/dev/null || { echo "smallfiles: magic-wormhole did not finish" >&2; exit 1; }
    record magic $(( $(now) - t0 )) "$(secs "$WORK/t/send")" "$(secs "$WORK/t/recv")"
    check "$WORK/dst/mw/d" magic-wormhole
}

# nearby over LocalSend: a node on h1 that takes LocalSend uploads (its own port), send-file --localsend.
if [[ $TOOLS == *" localsend "* ]]; then
    ROWS+=(localsend)
    mkdir -p "$WORK/dst/ls"
    lab_bg 1 "$WORK/node-ls.jsonl" "$NEARBY" advertise --service sfl --localsend --auto-accept --save-dir "$WORK/dst/ls" >/dev/null
    NODE[localsend]=$LAB_PID
    lab_wait_line "$WORK/node-ls.jsonl" 'select(.event=="advertising")' 20 >/dev/null
fi
localsend_row() {
    local t0 r0
    rm -rf "$WORK/dst/ls/d"
    r0=$(cpu "${NODE[localsend]}") t0=$(now)
    (cd "$WORK/src" && lab_run 2 /usr/bin/time -f '%U %S' -o "$WORK/t/send" "$NEARBY" send-file --localsend "$H1" d >"$WORK/send-ls.jsonl" 2>"$WORK/send-ls.err") ||
        { echo "smallfiles: send-file --localsend failed: $(tail -1 "$WORK/send-ls.err")" >&2; exit 1; }
    record localsend $(( $(now) - t0 )) "$(secs "$WORK/t/send")" "$(awk -v t=$(( $(cpu "${NODE[localsend]}") - r0 )) -v hz="$HZ" 'BEGIN { print t / hz }')"
    check "$WORK/dst/ls/d" "nearby --localsend"
}

for ROUND in $(seq "$ROUNDS"); do
    for row in "${ROWS[@]}"; do
        case $row in
        nearby) nearby_row nearby "$NEARBY" sfa ;;
        nearby_b) nearby_row nearby_b "$NEARBY_B" sfb ;;
        scp) scp_row ;;
        wormhole) wormhole_row ;;
        magic) magic_row ;;
        localsend) localsend_row ;;
        esac
    done
done
lab_down

declare -A RATE=() CS=() CR=()
for row in "${ROWS[@]}"; do
    RATE[$row]=$(awk -v n="$FILES" -v us="$(median "${US[$row]}")" 'BEGIN { printf "%.0f", n / (us / 1e6) }')
    CS[$row]=$(awk -v n="$FILES" -v s="$(median "${SEND[$row]}")" 'BEGIN { printf "%.4f", s * 1000 / n }')
    CR[$row]=$(awk -v n="$FILES" -v s="$(median "${RECV[$row]}")" 'BEGIN { printf "%.4f", s * 1000 / n }')
done
best() { local -n values=$1; printf '%s\n' "${values[@]}" | sort -g | { [[ $2 == max ]] && tail -1 || head -1; }; }
top=$(best RATE max) lows=$(best CS min) lowr=$(best CR min)
name() { case $1 in nearby) echo "nearby send-file DIR";; nearby_b) echo "nearby send-file DIR (NEARBY_B)";;
    scp) echo "scp -r (aes128-gcm)";; wormhole) echo "wormhole-william";; magic) echo "magic-wormhole";;
    localsend) echo "nearby send-file --localsend DIR";; esac; }
printf '%s files of %s KiB, h2 -> h1, into RAM; median of %s rounds; ratios to the best row\n' "$FILES" "$KIB" "$ROUNDS"
printf '%-34s %9s %6s %13s %6s %13s %6s  %s\n' tool files/s "x" "send ms/file" "x" "recv ms/file" "x" "(each round: s)"
for row in "${ROWS[@]}"; do
    each=$(for us in ${US[$row]}; do awk -v us="$us" 'BEGIN { printf "%.2f ", us / 1e6 }'; done)
    printf '%-34s %9s %6.2f %13.3f %6.2f %13.3f %6.2f  (%s)\n' "$(name "$row")" "${RATE[$row]}" \
        "$(awk -v a="${RATE[$row]}" -v b="$top" 'BEGIN { print a / b }')" "${CS[$row]}" \
        "$(awk -v a="${CS[$row]}" -v b="$lows" 'BEGIN { print (b > 0 ? a / b : 0) }')" "${CR[$row]}" \
        "$(awk -v a="${CR[$row]}" -v b="$lowr" 'BEGIN { print (b > 0 ? a / b : 0) }')" "${each% }"
done
for row in nearby nearby_b; do
    [[ -z ${WAIT[$row]:-} ]] || printf '%-34s %s\n' "$(name "$row"): longest wait" "for a confirmation, s, each round:${WAIT[$row]}"
done
[[ -z ${RATE[scp]:-} || -z ${RATE[nearby]:-} ]] || awk -v a="${RATE[nearby]}" -v b="${RATE[scp]}" 'BEGIN { printf "%-34s %9.2f\n", "nearby vs scp (files/s, x)", a / b }'
