#!/usr/bin/env bash
# Bulk transfer over one lab link, all in one run, same 1 GiB of random data, written to disk on
# the receiver (in RAM, /dev/shm): nearby send-file, nearby stream, raw TCP (socat, 1 MiB blocks and socket buffers) and scp
# (OpenSSH, aes128-gcm, a private sshd inside the lab host). Prints MB/s and the ratio to raw TCP.
#
#   bench/transfer.sh [MiB]      (root; default 1024; builds nearby in release mode)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIB=${1:-1024}
cd "$ROOT"
swift build -c release --product nearby >/dev/null
NEARBY=$(swift build -c release --show-bin-path)/nearby
source tests/lab/netlab.sh

# In RAM (/dev/shm): the link and the programs are measured, not the disk.
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

# nearby send-file: a node receiving on h1, a one-shot send from h2 (discovery + handshake included).
# $1: the row's name; $2: the sender's --encryption.
lab_run 1 "$NEARBY" identity --rename bench-recv >/dev/null
lab_bg 1 "$WORK/node.jsonl" "$NEARBY" advertise --service bench --auto-accept --save-dir "$WORK/dst" --encryption optional >/dev/null
NODE=$LAB_PID
lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 10 >/dev/null
sleep 1
declare -A US=()
send_file() {
    local t0
    warm
    t0=$(now)
    (cd "$WORK/src" && lab_run 2 "$NEARBY" send-file bench-recv data.bin --service bench --encryption "$2" >"$WORK/send.jsonl")
    US[$1]=$(( $(now) - t0 ))
    [[ $2 != required ]] || transfer_only=$(jq -r 'select(.event=="file-sent") | .seconds' "$WORK/send.jsonl")
    check "$WORK/dst/data.bin" "send-file ($2)"
}
send_file sendfile required
send_file sendfile_none none
kill -INT "$NODE"; lab_wait_pid "$NODE" 10 >/dev/null || true

# nearby stream: a listener on h1 writing to the file system in RAM, the opener on h2 reading the
# file; one-shot (discovery included), or through a node already running on h2 (the client's
# bytes go through the node's control socket).
stream() { # row encryption [service]
    local t0 listener
    lab_bg 1 "$WORK/dst/stream.bin" "$NEARBY" stream --listen --service bench-st --encryption optional >/dev/null
    listener=$LAB_PID
    lab_wait_line "$WORK/dst/stream.bin.err" 'select(.event=="advertising")' 10 >/dev/null
    sleep 1
    warm
    t0=$(now)
    lab_run 2 "$NEARBY" stream bench-recv --service bench-st --encryption "$2" <"$WORK/src/data.bin" >/dev/null 2>"$WORK/stream.err"
    lab_wait_pid "$listener" 30 >/dev/null || true
    US[$1]=$(( $(now) - t0 ))
    check "$WORK/dst/stream.bin" "stream ($1)"
}
stream stream required
stream stream_none none
lab_bg 2 "$WORK/sender-node.jsonl" "$NEARBY" advertise --service bench-st --name bench-send >/dev/null
SENDER_NODE=$LAB_PID
lab_wait_line "$WORK/sender-node.jsonl" 'select(.event=="advertising")' 10 >/dev/null
stream stream_node required
kill -INT "$SENDER_NODE"; lab_wait_pid "$SENDER_NODE" 10 >/dev/null || true

# raw TCP: socat with 1 MiB buffers, straight to a file.
lab_bg 1 /dev/null socat -u -b 1048576 TCP-LISTEN:47010,reuseaddr,rcvbuf=1048576 CREATE:"$WORK/dst/socat.bin" >/dev/null
SOCAT=$LAB_PID
sleep 0.3
warm
t0=$(now)
lab_run 2 socat -u -b 1048576 FILE:"$WORK/src/data.bin" TCP:"$H1":47010,sndbuf=1048576
lab_wait_pid "$SOCAT" 30 >/dev/null || true
socat_us=$(( $(now) - t0 ))
check "$WORK/dst/socat.bin" socat

# scp: a private sshd in h1's namespace, key authentication, aes128-gcm.
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
sleep 0.5
warm
t0=$(now)
lab_run 2 scp -q -P 2222 -i "$WORK/ssh/user" -c aes128-gcm@openssh.com -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$WORK/src/data.bin" "root@$H1:$WORK/dst/scp.bin"
scp_us=$(( $(now) - t0 ))
check "$WORK/dst/scp.bin" scp
lab_down

tcp=$(rate "$socat_us")
printf '%-52s %8s %10s\n' "$MIB MiB, h2 -> h1, to a file in RAM" "MB/s" "vs raw TCP"
for row in "nearby send-file (whole command)|${US[sendfile]}" "nearby send-file, encryption none|${US[sendfile_none]}" \
    "nearby stream (whole command)|${US[stream]}" "nearby stream, encryption none|${US[stream_none]}" \
    "nearby stream through a running node|${US[stream_node]}" \
    "raw TCP (socat, 1 MiB blocks and buffers)|$socat_us" "scp (OpenSSH, aes128-gcm)|$scp_us"; do
    label=${row%|*}; us=${row#*|}; mbs=$(rate "$us")
    printf '%-52s %8s %10s\n' "$label" "$mbs" "$(awk -v a="$mbs" -v b="$tcp" 'BEGIN { printf "%.2f", a / b }')"
done
scp=$(rate "$scp_us")
awk -v a="$(rate "${US[sendfile]}")" -v b="$scp" 'BEGIN { printf "%-52s %8.2f\n", "nearby send-file vs scp (x)", a / b }'
awk -v s="$transfer_only" -v b="$BYTES" 'BEGIN { printf "%-52s %8.0f\n", "nearby send-file (transfer only, from file-sent)", b / s / 1e6 }'
