#!/usr/bin/env bash
# Bulk transfer over one lab link, the same 1 GiB of random data written to a file in RAM (/dev/shm)
# on the receiver: nearby send-file, nearby stream (one-shot and through a running node), raw TCP
# (socat, 1 MiB blocks and socket buffers) and scp (OpenSSH, aes128-gcm, a private sshd inside the
# lab host). Every row runs ROUNDS times, the rows taking turns, and the median of each is printed
# in MB/s and as a ratio to raw TCP's median: on a noisy machine one run of raw TCP alone moves
# every ratio (it was seen anywhere from 340 to 980 MB/s in one afternoon). A second reference is
# socat over OpenSSL's TLS 1.3 with AES-128-GCM (what nearby negotiates): what a C program doing
# nothing but user-space TLS makes of the same two cores. Each row also prints the CPU time the
# whole machine spent on it per GiB (both hosts, every process, from /proc/stat), which moves less
# than the speed, and the run ends with the share of time the hypervisor gave to other guests
# (steal): how quiet the machine was.
#
# With PERF=DIR, every nearby process runs under `perf record -g` (DIR/<row>-<n>-send.data and
# -recv.data; the receiving node of the send-file rows, up for the whole run, in DIR/node.data):
# `perf report -i FILE --no-children --sort symbol` shows where a GiB went.
#
#   bench/transfer.sh [MiB]      (root; default 1024; ROUNDS=3; builds nearby in release mode;
#                                 NEARBY=path uses that build instead)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIB=${1:-1024}
ROUNDS=${ROUNDS:-3}
cd "$ROOT"
if [[ -z ${NEARBY:-} ]]; then
    swift build -c release --product nearby >/dev/null
    NEARBY=$(swift build -c release --show-bin-path)/nearby
fi
NEARBY=$(readlink -f "$NEARBY")
# perf_of NAME: the prefix that records a profile of the command (nothing without PERF).
N=0
perf_of() { [[ -z ${PERF:-} ]] || echo perf record -F 499 -g -o "$PERF/$1.data"; }
source tests/lab/netlab.sh
source bench/sshd.sh

WORK=$(mktemp -d /dev/shm/nbbench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
mkdir -p "$WORK/src" "$WORK/dst" "$WORK/ssh"
head -c $((MIB << 20)) /dev/urandom >"$WORK/src/data.bin"
BYTES=$((MIB << 20))
H1=$(lab_addr 1)

now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
# On a virtual machine, memory the guest freed goes back to the host within seconds, and touching it
# again costs about 2 s per GiB (measured: writing 1 GiB to /dev/shm took 2.5 s cold, 0.5 s warm).
# Every row writes its GiB into memory made warm just before, so no row pays for the machine.
warm() { head -c "$BYTES" /dev/zero >"$WORK/warm.bin"; rm -f "$WORK/warm.bin"; }
rate() { awk -v b="$BYTES" -v us="$1" 'BEGIN { printf "%.0f", b / (us / 1e6) / 1e6 }'; }
check() { cmp -s "$WORK/src/data.bin" "$1" || { echo "bench: $2 delivered different bytes" >&2; exit 1; }; rm -f "$1"; }
# The whole machine's busy time (user, system, interrupts; both hosts, every process) and the time
# the hypervisor gave to others (steal), in ticks: how much CPU a row cost, whatever the VM's speed.
ticks() { local _ u n s i w q sq st; read -r _ u n s i w q sq st _ </proc/stat; echo "$((u + n + s + q + sq)) $st"; }
declare -A US=() CPU=()
STEAL=0 TICKS=0
record() { US[$1]="${US[$1]:-} $2"; }
# record_cpu ROW "TICKS-AT-START": adds the row's busy ticks, and its steal to the run's.
record_cpu() {
    local b0 s0 b1 s1; read -r b0 s0 <<<"$2"; read -r b1 s1 <<<"$(ticks)"
    CPU[$1]="${CPU[$1]:-} $((b1 - b0))"; STEAL=$((STEAL + s1 - s0)); TICKS=$((TICKS + b1 - b0 + s1 - s0))
}
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# CPU-seconds per GiB from a median of ticks.
per_gib() { awk -v t="$1" -v b="$BYTES" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz / (b / 1073741824) }'; }

# The receivers that stay up: a node on h1 that takes files, and sshd on h1.
lab_run 1 "$NEARBY" identity --rename bench-recv >/dev/null
lab_bg 1 "$WORK/node.jsonl" $(perf_of node) "$NEARBY" advertise --service bench --auto-accept --save-dir "$WORK/dst" --encryption optional >/dev/null
lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 10 >/dev/null
lab_sshd 1 "$WORK/ssh"

# nearby send-file: a one-shot send from h2 to h1's node (discovery + handshake included).
send_file() { # row encryption
    local t0
    warm
    t0=$(now) c0=$(ticks)
    N=$((N + 1))
    (cd "$WORK/src" && lab_run 2 $(perf_of "$1-$N-send") "$NEARBY" send-file bench-recv data.bin --service bench --encryption "$2" >"$WORK/send.jsonl")
    record "$1" $(( $(now) - t0 )); record_cpu "$1" "$c0"
    [[ $2 != required ]] || record transfer_only "$(jq -r 'select(.event=="file-sent") | .seconds * 1e6 | floor' "$WORK/send.jsonl")"
    check "$WORK/dst/data.bin" "send-file ($2)"
}

# nearby stream: a listener on h1 writing to the file system in RAM, the opener on h2 reading the
# file; one-shot (discovery included), or through a node already running on h2 (the client's
# bytes go through the node's control socket).
stream() { # row encryption
    local t0 listener
    N=$((N + 1))
    lab_bg 1 "$WORK/dst/stream.bin" $(perf_of "$1-$N-recv") "$NEARBY" stream --listen --service bench-st --encryption optional >/dev/null
    listener=$LAB_PID
    lab_wait_line "$WORK/dst/stream.bin.err" 'select(.event=="advertising")' 10 >/dev/null
    sleep 1
    warm
    t0=$(now) c0=$(ticks)
    lab_run 2 $(perf_of "$1-$N-send") "$NEARBY" stream bench-recv --service bench-st --encryption "$2" <"$WORK/src/data.bin" >/dev/null 2>"$WORK/stream.err"
    lab_wait_pid "$listener" 30 >/dev/null || true
    record "$1" $(( $(now) - t0 )); record_cpu "$1" "$c0"
    check "$WORK/dst/stream.bin" "stream ($1)"
}

# socat_row ROW LISTEN-ADDRESS CONNECT-ADDRESS: socat from h2's file to a file on h1.
socat_row() {
    local t0 listener
    lab_bg 1 /dev/null env OPENSSL_CONF="$WORK/openssl.cnf" socat -u -b 1048576 "$2" CREATE:"$WORK/dst/socat.bin" >/dev/null
    listener=$LAB_PID
    sleep 0.3
    warm
    t0=$(now) c0=$(ticks)
    lab_run 2 env OPENSSL_CONF="$WORK/openssl.cnf" socat -u -b 1048576 FILE:"$WORK/src/data.bin" "$3"
    lab_wait_pid "$listener" 30 >/dev/null || true
    record "$1" $(( $(now) - t0 )); record_cpu "$1" "$c0"
    check "$WORK/dst/socat.bin" "socat ($1)"
}
# The TLS reference: OpenSSL 3 would choose AES-256-GCM for TLS 1.3, nearby's BoringSSL chooses
# AES-128-GCM, so OpenSSL is told to use that.
cat >"$WORK/openssl.cnf" <<CONF
openssl_conf = conf
[conf]
ssl_conf = ssl
[ssl]
system_default = tls
[tls]
MinProtocol = TLSv1.3
Ciphersuites = TLS_AES_128_GCM_SHA256
CONF
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench \
    -keyout "$WORK/ssh/tls.key" -out "$WORK/ssh/tls.crt" 2>/dev/null
TCP_LISTEN=TCP-LISTEN:47010,reuseaddr,rcvbuf=1048576
TCP_TO=TCP:$H1:47010,sndbuf=1048576
TLS_LISTEN=OPENSSL-LISTEN:47011,reuseaddr,rcvbuf=1048576,cert=$WORK/ssh/tls.crt,key=$WORK/ssh/tls.key,verify=0
TLS_TO=OPENSSL:$H1:47011,sndbuf=1048576,verify=0

scp_row() {
    local t0
    warm
    t0=$(now) c0=$(ticks)
    lab_run 2 scp "${SCP_OPTIONS[@]}" "$WORK/src/data.bin" "root@$H1:$WORK/dst/scp.bin"
    record scp $(( $(now) - t0 )); record_cpu scp "$c0"
    check "$WORK/dst/scp.bin" scp
}

for _ in $(seq "$ROUNDS"); do
    socat_row tcp "$TCP_LISTEN" "$TCP_TO"
    socat_row tls "$TLS_LISTEN" "$TLS_TO"
    send_file sendfile required
    send_file sendfile_none none
    stream stream required
    stream stream_none none
    scp_row
    # A node on h2: the next stream goes through it (and it must be gone for the one-shot rows).
    lab_bg 2 "$WORK/sender-node.jsonl" $(perf_of "node-$N-send") "$NEARBY" advertise --service bench-st --name bench-send >/dev/null
    sender_node=$LAB_PID
    lab_wait_line "$WORK/sender-node.jsonl" 'select(.event=="advertising")' 10 >/dev/null
    stream stream_node required
    kill -INT "$sender_node"; lab_wait_pid "$sender_node" 10 >/dev/null || true
done
lab_down

tcp=$(rate "$(median "${US[tcp]}")")
printf '%-52s %8s %10s %10s   %s\n' "$MIB MiB, h2 -> h1, to a file in RAM, median of $ROUNDS" "MB/s" "vs raw TCP" "CPU-s/GiB" "(each round, MB/s)"
for row in "nearby send-file (whole command)|sendfile" "nearby send-file, encryption none|sendfile_none" \
    "nearby stream (whole command)|stream" "nearby stream, encryption none|stream_none" \
    "nearby stream through a running node|stream_node" \
    "raw TCP (socat, 1 MiB blocks and buffers)|tcp" "socat over OpenSSL (TLS 1.3, AES-128-GCM)|tls" \
    "scp (OpenSSH, aes128-gcm)|scp" \
    "nearby send-file (transfer only, from file-sent)|transfer_only"; do
    label=${row%|*}; key=${row#*|}; mbs=$(rate "$(median "${US[$key]}")")
    each=$(for us in ${US[$key]}; do rate "$us"; echo -n " "; done)
    cpu=-; [[ -z ${CPU[$key]:-} ]] || cpu=$(per_gib "$(median "${CPU[$key]}")")
    printf '%-52s %8s %10s %10s   (%s)\n' "$label" "$mbs" "$(awk -v a="$mbs" -v b="$tcp" 'BEGIN { printf "%.2f", a / b }')" "$cpu" "${each% }"
done
# versus LABEL ROW REFERENCE: how many times the reference's median speed the row's is.
versus() {
    awk -v l="$1" -v a="$(rate "$(median "${US[$2]}")")" -v b="$(rate "$(median "${US[$3]}")")" 'BEGIN { printf "%-52s %8.2f\n", l, a / b }'
}
versus "nearby send-file vs scp (x)" sendfile scp
versus "nearby stream vs socat over OpenSSL (x)" stream tls
awk -v s="$STEAL" -v t="$TICKS" 'BEGIN { printf "%-52s %7.0f%%\n", "CPU time the hypervisor gave to others (steal)", t ? 100 * s / t : 0 }'
