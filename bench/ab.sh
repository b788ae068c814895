#!/usr/bin/env bash
# Two builds of nearby side by side, in turns, on the same lab link: before and after a change to
# the data path. Each round runs A then B for a stream through a node already running on the
# sender, a one-shot stream and a send-file, 1 GiB by default, to a file in RAM; the bytes are
# checked. Beside the speed (MB/s, and the ratio B/A) each row prints what it cost: CPU-seconds per
# GiB of the whole machine (both hosts, every process, from /proc/stat) and of the nearby processes
# alone (sender, receiver and node, utime + stime), and their read- and write-class syscalls per
# GiB (/proc/PID/io syscr + syscw). Raw TCP (socat, 1 MiB blocks and socket buffers) runs in every
# round as the reference, and each nearby row says its machine CPU per GiB as a multiple of that
# round's raw TCP ("×TCP"). Then messages: `send --lines` of MSGS 64-byte lines (100,000 by
# default), in messages a second until the receiving node has printed every one; and a one-shot
# `send` of one line to a node that auto-accepts, by name (its remembered address) and by
# HOST:PORT, the median of SENDS commands each, in ms (the ratio is still B's speed over A's).
# A noisy machine still gives a fair answer: compare the ratios of one run, not runs.
# With PERF=DIR, each process (socat's too) also runs under `perf record -g` (files in DIR/<build>-<path>-*.data;
# the per-process columns then count perf too), and the run ends with each file's CPU by kind of work (bench/perfcat.sh).
#
# PATHS may also name `scp` (OpenSSH, aes128-gcm, a private sshd on the receiving host: a reference
# like raw TCP, and send-file's speed as a multiple of it) and `disk` (the receiving side's disk work
# alone, `nearby-bench disk`: B's FileWriter writing and hashing, then fsync and the placing rename,
# into the same directory in RAM, so a slow disk and a slow network are told apart). Where B has a
# `nearby-bench` beside it (or BENCH=path), the run ends with the floor of each row: raw TCP's CPU per
# GiB plus what `nearby-bench primitives` measures alone on this CPU for AES-128-GCM (seal and open),
# one copy on each side and, for a file, one SHA-256 on each side; and the speed a row bound by the CPU
# could reach at that floor (raw TCP's speed × raw TCP's CPU / the floor).
#
# SINK=null sends the receivers' output (raw TCP's and the stream's) to /dev/null instead of a file in
# RAM: the transport alone. Writing a GiB into tmpfs is the largest part of every receiver, and on a VM
# it swings from run to run (socat's receiver alone spent 3.5 CPU-s on it in one run, twice a whole
# raw-TCP transfer in others), more than nearby and raw TCP differ; without it the ratio to raw TCP
# measures what nearby adds. The bytes are then counted (the
# stream's `stream-closed` event), not compared. `send-file` always writes its file.
#
# A goes first in odd rounds, B in even ones. PATHS picks rows (node stream file tcp lines oneshot),
# e.g. PATHS=lines MSGS=200000 bench/ab.sh A B 1 6 for the messages alone.
#
#   bench/ab.sh NEARBY_A NEARBY_B [MiB] [ROUNDS]      (root; e.g. a copy of last week's build and .build/release/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=$(readlink -f "$1") B=$(readlink -f "$2") MIB=${3:-1024} ROUNDS=${4:-2}
cd "$ROOT"
source tests/lab/netlab.sh
source bench/sshd.sh
BENCH=${BENCH:-$(dirname "$B")/nearby-bench}
[[ -x $BENCH ]] || BENCH=

WORK=$(mktemp -d /dev/shm/nbab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
mkdir -p "$WORK/dst" "$WORK/m" "$WORK/ssh"
[[ " ${PATHS:-} " != *" scp "* ]] || lab_sshd 1 "$WORK/ssh"
head -c $((MIB << 20)) /dev/urandom >"$WORK/data.bin"
MSGS=${MSGS:-100000} SENDS=${SENDS:-5}
for ((i = 0; i < MSGS; i++)); do printf '%063d\n' "$i"; done >"$WORK/lines.txt"
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
perf_of() { [[ -z ${PERF:-} ]] || echo perf record -F 499 -g -o "$PERF/$1.data"; }
check() { cmp -s "$WORK/data.bin" "$1" || { echo "ab: $2 delivered different bytes" >&2; exit 1; }; rm -f "$1"; }
# sink_of NAME: where a receiver's output goes (SINK=null: /dev/null).
sink_of() { if [[ ${SINK:-} == null ]]; then echo /dev/null; else echo "$WORK/dst/$1"; fi; }
# check_stream LABEL: the stream's bytes, compared; with SINK=null, counted from its last event.
check_stream() {
    if [[ ${SINK:-} != null ]]; then check "$WORK/dst/out.bin" "$1"; return; fi
    local got
    got=$(jq -r 'select(.event=="stream-closed") | .received' "$WORK/dst/out.bin.err" 2>/dev/null | tail -1)
    [[ $got == $((MIB << 20)) ]] || { echo "ab: $1 received ${got:-nothing} bytes, not $((MIB << 20))" >&2; exit 1; }
    rm -f "$WORK/dst/out.bin" "$WORK/dst/out.bin.err"
}
# The whole machine's busy ticks (user, nice, system, irq, softirq; both hosts, every process).
ticks() { local _ u n s i w q sq; read -r _ u n s i w q sq _ </proc/stat; echo $((u + n + s + q + sq)); }
# meter: the prefix that makes a command add its ticks and syscalls to the row's file when it ends.
meter() { echo "$ROOT/bench/meter.sh $WORK/m/procs"; }
# snap PID: the same for a process still running (a node, before it is told to stop).
snap() {
    local stat r w
    read -ra stat </proc/"$1"/stat || return 0
    read -r _ r < <(grep '^syscr' /proc/"$1"/io); read -r _ w < <(grep '^syscw' /proc/"$1"/io)
    echo "$((stat[13] + stat[14])) $r $w ${stat[9]}" >>"$WORK/m/procs"
}
# begin / finish: one row's measure. finish prints "microseconds machine-ticks process-ticks syscalls
# page-faults".
begin() { rm -f "$WORK/m/procs"; T0=$(now) C0=$(ticks); }
finish() {
    local us=$(( $(now) - T0 )) c=$(( $(ticks) - C0 ))
    awk -v us="$us" -v c="$c" '{ t += $1; s += $2 + $3; f += $4 } END { print us, c, t + 0, s + 0, f + 0 }' "$WORK/m/procs" 2>/dev/null \
        || echo "$us $c 0 0 0"
}
stop() { snap "$1"; kill -INT "$1"; lab_wait_pid "$1" 20 >/dev/null || true; }

# run BUILD-LABEL NEARBY PATH: prints the row's measure (see finish); for lines, messages a second;
# for oneshot, the median milliseconds by name and by HOST:PORT.
run() {
    local label=$1 nearby=$2 path=$3 receiver node= deadline port
    [[ $path == tcp || $path == scp || $path == disk ]] || lab_run 1 "$nearby" identity --rename ab-recv >/dev/null
    case $path in
    tcp)
        lab_bg 1 /dev/null $(meter) $(perf_of "$label-tcp-recv") socat -u -b 1048576 TCP-LISTEN:47010,reuseaddr,rcvbuf=1048576 CREATE:"$(sink_of socat.bin)" >/dev/null
        receiver=$LAB_PID
        sleep 0.3
        begin
        lab_run 2 $(meter) $(perf_of "$label-tcp-send") socat -u -b 1048576 FILE:"$WORK/data.bin" TCP:"$(lab_addr 1)":47010,sndbuf=1048576
        lab_wait_pid "$receiver" 60 >/dev/null || true
        finish
        [[ ${SINK:-} == null ]] || check "$WORK/dst/socat.bin" "raw TCP"
        return ;;
    scp)
        begin
        lab_run 2 $(meter) scp "${SCP_OPTIONS[@]}" "$WORK/data.bin" "root@$(lab_addr 1):$WORK/dst/scp.bin"
        # sshd's session process on the receiver is gone by now: its CPU is in the machine's column.
        finish
        check "$WORK/dst/scp.bin" "scp"
        return ;;
    disk)
        # The disk alone: "disk MB/s: write+sha256 ms, fsync ms, place ms, whole ms, cpu s".
        lab_run 1 "$BENCH" disk "$WORK/dst" "$MIB"
        return ;;
    lines)
        lab_bg 1 "$WORK/msgs.jsonl" $(perf_of "$label-lines-recv") "$nearby" advertise --service ab --auto-accept >/dev/null
        receiver=$LAB_PID
        lab_wait_line "$WORK/msgs.jsonl" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
        begin
        lab_run 2 $(perf_of "$label-lines-send") "$nearby" send --lines ab-recv --service ab <"$WORK/lines.txt" >/dev/null 2>&1
        deadline=$(( $(now) + 120000000 ))
        until (( $(grep -c '"event":"message"' "$WORK/msgs.jsonl") >= MSGS )); do
            (( $(now) < deadline )) || { echo "ab: $label lost messages" >&2; exit 1; }
            sleep 0.05
        done
        echo $(( MSGS * 1000000 / ($(now) - T0) ))
        stop "$receiver"
        rm -f "$WORK/msgs.jsonl"
        return ;;
    oneshot)
        lab_bg 1 "$WORK/one.jsonl" "$nearby" advertise --service ab1 --auto-accept >/dev/null
        receiver=$LAB_PID
        lab_wait_line "$WORK/one.jsonl" 'select(.event=="advertising")' 20 >/dev/null
        port=$(jq -r 'select(.event=="advertising") | .port' "$WORK/one.jsonl")
        # Reached once through discovery: from then on its address is remembered.
        lab_run 2 "$nearby" send ab-recv warm --service ab1 --timeout 10 >/dev/null 2>&1
        local by_name="" by_port="" t
        for ((i = 0; i < SENDS; i++)); do
            t=$(now); lab_run 2 "$nearby" send ab-recv hi --service ab1 >/dev/null 2>&1 || { echo "ab: $label send by name failed" >&2; exit 1; }
            by_name+="$(( $(now) - t )) "
            t=$(now); lab_run 2 "$nearby" send "$(lab_addr 1):$port" hi --service ab1 >/dev/null 2>&1 || { echo "ab: $label send HOST:PORT failed" >&2; exit 1; }
            by_port+="$(( $(now) - t )) "
        done
        echo "$(median "$by_name") $(median "$by_port")"
        stop "$receiver"
        rm -f "$WORK/one.jsonl"
        return ;;
    file)
        lab_bg 1 "$WORK/recv.jsonl" $(perf_of "$label-file-recv") "$nearby" advertise --service ab --auto-accept --save-dir "$WORK/dst" >/dev/null
        receiver=$LAB_PID
        lab_wait_line "$WORK/recv.jsonl" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
        begin
        (cd "$WORK" && lab_run 2 $(meter) $(perf_of "$label-file-send") "$nearby" send-file ab-recv data.bin --service ab >/dev/null 2>&1)
        snap "$receiver"
        finish
        kill -INT "$receiver"; lab_wait_pid "$receiver" 20 >/dev/null || true
        check "$WORK/dst/data.bin" "$label send-file"
        return ;;
    esac
    # With SINK=null the receiver's stdout is a link to /dev/null (its events still go to out.bin.err).
    [[ ${SINK:-} != null ]] || ln -sfn /dev/null "$WORK/dst/out.bin"
    lab_bg 1 "$WORK/dst/out.bin" $(meter) $(perf_of "$label-$path-recv") "$nearby" stream --listen --service ab >/dev/null
    receiver=$LAB_PID
    lab_wait_line "$WORK/dst/out.bin.err" 'select(.event=="advertising")' 20 >/dev/null; sleep 1
    if [[ $path == node ]]; then
        lab_bg 2 "$WORK/node.jsonl" $(perf_of "$label-node-node") "$nearby" advertise --service ab --name ab-send >/dev/null
        node=$LAB_PID
        lab_wait_line "$WORK/node.jsonl" 'select(.event=="advertising")' 20 >/dev/null
    fi
    begin
    if [[ $path == node ]]; then
        # Through the node, stdin is a pipe (as from `tar c |`): the node reads it itself when the
        # client can hand it over (SCM_RIGHTS), else the client copies it over the control socket.
        cat "$WORK/data.bin" | lab_run 2 $(meter) $(perf_of "$label-$path-send") "$nearby" stream ab-recv --service ab >/dev/null 2>/dev/null
    else
        lab_run 2 $(meter) $(perf_of "$label-$path-send") "$nearby" stream ab-recv --service ab <"$WORK/data.bin" >/dev/null 2>/dev/null
    fi
    lab_wait_pid "$receiver" 60 >/dev/null || true
    [[ -z $node ]] || snap "$node"
    finish
    [[ -z $node ]] || { kill -INT "$node"; lab_wait_pid "$node" 20 >/dev/null || true; }
    check_stream "$label $path"
}

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
HZ=$(getconf CLK_TCK)
# measure fields: us machine-ticks process-ticks syscalls; per GiB of this run's MiB.
mbs() { awk -v us="$1" -v b="$((MIB << 20))" 'BEGIN { printf "%.0f", b / us }'; }
gib() { awk -v t="$1" -v hz="$HZ" -v m="$MIB" 'BEGIN { printf "%.2f", t / hz * 1024 / m }'; }
per_gib() { awk -v n="$1" -v m="$MIB" 'BEGIN { printf "%.0f", n * 1024 / m }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
name_of() {
    case $1 in
    node) echo "stream through a running node";; stream) echo "one-shot stream";; file) echo "send-file";;
    oneshot) echo "one-shot send by name";;
    tcp) echo "raw TCP (socat, 1 MiB buffers)";; lines) echo "send --lines (messages/s)";;
    scp) echo "scp (OpenSSH, aes128-gcm)";; disk) echo "receiver's disk work alone (B)";;
    esac
}
declare -A SUM=() CPU=() PROC=() SYS=() FLT=() RATIOS=()
DISK=""
# Columns: speed (MB/s, B/A: above 1 is B faster) | machine CPU-s per GiB, and each as a multiple of
# raw TCP's in that round | the nearby processes' own CPU-s per GiB (socat's, for raw TCP), and as
# a multiple of socat's | their syscalls per GiB | their page faults per GiB.
FMT='%-42s %6s %6s %5s | %5s %5s %5s %5s | %5s %5s %5s %5s | %6s %6s | %6s %6s\n'
header() { printf "$FMT" "$1" "MB/s A" "B" "B/A" "CPU A" "B" "A×TCP" "B×TCP" "own A" "B" "A×TCP" "B×TCP" "sys A" "B" "flt A" "B"; }
header "$MIB MiB, h2 -> h1 (CPU-s, calls per GiB)"
for round in $(seq "$ROUNDS"); do
    tcp_cpu=0 tcp_own=0
    for path in ${PATHS:-tcp node stream file lines oneshot}; do
        label="round $round: $(name_of "$path")"
        if [[ $path == disk ]]; then
            [[ -n $BENCH ]] || { echo "ab: no nearby-bench beside B (BENCH=path) for the disk row" >&2; exit 1; }
            line=$(run B "$B" disk)
            echo "$label: $line"
            DISK+="$(awk '{ print $2 }' <<<"$line") "
            continue
        fi
        if [[ $path == tcp || $path == scp ]]; then
            read -r us c p s f <<<"$(run T "" "$path")"
            [[ $path == scp ]] || tcp_cpu=$c tcp_own=$p
            SUM[$path]=$(( ${SUM[$path]:-0} + us ))
            CPU[$path]+="$c "; PROC[$path]+="$p "; SYS[$path]+="$s "; FLT[$path]+="$f "
            printf "$FMT" "$label" "$(mbs "$us")" "" "" "$(gib "$c")" "" "$(ratio "$c" "$tcp_cpu")" "" "$(gib "$p")" "" "" "" "$(per_gib "$s")" "" "$(per_gib "$f")" ""
            continue
        fi
        # Who goes first alternates, so a machine warming up or slowing down favours neither.
        if (( round % 2 )); then a=$(run A "$A" "$path") b=$(run B "$B" "$path"); else b=$(run B "$B" "$path") a=$(run A "$A" "$path"); fi
        case $path in
        lines)
            printf "$FMT" "$label" "$a" "$b" "$(ratio "$b" "$a")" "" "" "" "" "" "" "" "" "" "" "" ""
            SUM[lines-A]+="$a "; SUM[lines-B]+="$b "; RATIOS[lines]+="$(ratio "$b" "$a") " ;;
        oneshot)
            read -r an ap <<<"$a"; read -r bn bp <<<"$b"
            printf "$FMT" "round $round: one-shot send by name (ms)" "$((an / 1000))" "$((bn / 1000))" "$(ratio "$an" "$bn")" "" "" "" "" "" "" "" "" "" "" "" ""
            printf "$FMT" "round $round: one-shot send HOST:PORT (ms)" "$((ap / 1000))" "$((bp / 1000))" "$(ratio "$ap" "$bp")" "" "" "" "" "" "" "" "" "" "" "" ""
            SUM[name-A]+="$an "; SUM[name-B]+="$bn "; SUM[port-A]+="$ap "; SUM[port-B]+="$bp "
            RATIOS[oneshot]+="$(ratio "$an" "$bn") " ;;
        *)
            read -r ua ca pa sa fa <<<"$a"; read -r ub cb pb sb fb <<<"$b"
            printf "$FMT" "$label" "$(mbs "$ua")" "$(mbs "$ub")" "$(ratio "$ua" "$ub")" "$(gib "$ca")" "$(gib "$cb")" \
                "$(ratio "$ca" "$tcp_cpu")" "$(ratio "$cb" "$tcp_cpu")" "$(gib "$pa")" "$(gib "$pb")" "$(ratio "$pa" "$tcp_own")" "$(ratio "$pb" "$tcp_own")" "$(per_gib "$sa")" "$(per_gib "$sb")" "$(per_gib "$fa")" "$(per_gib "$fb")"
            SUM[$path-A]="$(( ${SUM[$path-A]:-0} + ua ))"; SUM[$path-B]="$(( ${SUM[$path-B]:-0} + ub ))"
            RATIOS[$path]+="$(ratio "$ua" "$ub") "
            CPU[$path-A]+="$ca "; CPU[$path-B]+="$cb "; PROC[$path-A]+="$pa "; PROC[$path-B]+="$pb "
            SYS[$path-A]+="$sa "; SYS[$path-B]+="$sb "; FLT[$path-A]+="$fa "; FLT[$path-B]+="$fb " ;;
        esac
    done
done
lab_down

# All rounds: speed as the ratio of the total times (fair whichever build went first), the costs as
# medians, and machine CPU as a multiple of raw TCP's median.
echo
header "all $ROUNDS rounds (B/A of totals; medians)"
tcpm=$(median "${CPU[tcp]:-0}") tcpo=$(median "${PROC[tcp]:-0}")
for path in ${PATHS:-tcp node stream file lines oneshot}; do
    case $path in
    tcp | scp)
        printf "$FMT" "$(name_of "$path")" "$(mbs $(( ${SUM[$path]} / ROUNDS )))" "" "" "$(gib "$(median "${CPU[$path]}")")" "" \
            "$(ratio "$(median "${CPU[$path]}")" "$tcpm")" "" \
            "$(gib "$(median "${PROC[$path]}")")" "" "" "" "$(per_gib "$(median "${SYS[$path]}")")" "" "$(per_gib "$(median "${FLT[$path]}")")" "" ;;
    disk)
        printf '%-42s %6s MB/s (median of the rounds: %s)\n' "$(name_of disk)" "$(median "$DISK")" "${DISK% }" ;;
    lines)
        la=$(median "${SUM[lines-A]}") lb=$(median "${SUM[lines-B]}")
        printf "$FMT" "$(name_of lines)" "$la" "$lb" "$(ratio "$lb" "$la")" "" "" "" "" "" "" "" "" "" "" "" "" ;;
    oneshot)
        for kind in name port; do
            ma=$(median "${SUM[$kind-A]}") mb=$(median "${SUM[$kind-B]}")
            printf "$FMT" "one-shot send $( [[ $kind == name ]] && echo "by name" || echo HOST:PORT) (ms)" \
                "$((ma / 1000))" "$((mb / 1000))" "$(ratio "$ma" "$mb")" "" "" "" "" "" "" "" "" "" "" "" ""
        done ;;
    *)
        ca=$(median "${CPU[$path-A]}") cb=$(median "${CPU[$path-B]}") oa=$(median "${PROC[$path-A]}") ob=$(median "${PROC[$path-B]}")
        printf "$FMT" "$(name_of "$path")" "$(mbs $(( ${SUM[$path-A]} / ROUNDS )))" "$(mbs $(( ${SUM[$path-B]} / ROUNDS )))" \
            "$(ratio "${SUM[$path-A]}" "${SUM[$path-B]}")" "$(gib "$ca")" "$(gib "$cb")" "$(ratio "$ca" "$tcpm")" "$(ratio "$cb" "$tcpm")" \
            "$(gib "$oa")" "$(gib "$ob")" "$(ratio "$oa" "$tcpo")" "$(ratio "$ob" "$tcpo")" \
            "$(per_gib "$(median "${SYS[$path-A]}")")" "$(per_gib "$(median "${SYS[$path-B]}")")" \
            "$(per_gib "$(median "${FLT[$path-A]}")")" "$(per_gib "$(median "${FLT[$path-B]}")")" ;;
    esac
done
# One round that another guest's burst slowed (a B/A of 0.5 beside 1.1s) moves the ratio of totals:
# the median of the rounds' own ratios is the steadier reading.
for path in ${PATHS:-tcp node stream file lines oneshot}; do
    [[ -z ${RATIOS[$path]:-} ]] || printf '%-56s %5s   (rounds: %s)\n' "$(name_of "$path"), median of rounds" \
        "$(tr ' ' '\n' <<<"${RATIOS[$path]}" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" "${RATIOS[$path]% }"
done

# send-file against scp: how many times scp's speed (ratio of the total times).
if [[ -n ${SUM[scp]:-} && -n ${SUM[file-A]:-} ]]; then
    printf '%-56s %5s %5s\n' "send-file vs scp (x), A and B" "$(ratio "${SUM[scp]}" "${SUM[file-A]}")" "$(ratio "${SUM[scp]}" "${SUM[file-B]}")"
fi
# The floors: raw TCP's median CPU per GiB plus the primitives alone (one thread's CPU per GiB):
# AES-128-GCM sealed on one side and opened on the other, one copy on each side; a file adds one
# SHA-256 on each side. "speed" is what a row bound by the CPU would reach at its floor.
if [[ -n $BENCH && -n ${CPU[tcp]:-} ]]; then
    "$BENCH" primitives 512 >"$WORK/primitives.txt"
    echo
    sed 's/^/primitives: /' "$WORK/primitives.txt"
    prim() { awk -v k="$1" '$1 == k { print $2 }' "$WORK/primitives.txt"; }
    # Against the machine's CPU (the "CPU" columns) and against socat's own (the "own" columns).
    awk -v t="$(gib "$tcpm")" -v o="$(gib "$tcpo")" -v v="$(mbs $(( ${SUM[tcp]} / ROUNDS )))" -v seal="$(prim aes128gcm-seal)" \
        -v open="$(prim aes128gcm-open)" -v copy="$(prim memcpy)" -v sha="$(prim sha256)" 'BEGIN {
        add = seal + open + 2 * copy
        s = t + add; f = s + 2 * sha; os = o + add; of = os + 2 * sha
        fmt = "%-52s %5.2f CPU-s/GiB %4.2f x TCP, own %4.2f %4.2f x TCP; speed <= %4.0f MB/s (%4.2f of raw)\n"
        printf fmt, "floor: stream (raw TCP + AES-GCM + a copy a side)", s, s / t, os, os / o, v * t / s, t / s
        printf fmt, "floor: send-file (that + a SHA-256 a side)", f, f / t, of, of / o, v * t / f, t / f
    }'
fi
# With PERF=DIR: each profiled process's CPU by kind of work (bench/perfcat.sh), raw TCP's beside.
if [[ -n ${PERF:-} ]]; then
    echo
    "$ROOT/bench/perfcat.sh" "$PERF"/*.data
fi
