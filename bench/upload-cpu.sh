#!/usr/bin/env bash
# CPU per GiB of the receiving process for one upload of MiB through its real server, in turns:
# a browser-style multipart/form-data POST (curl -F, as a browser's form sends it) to
# `accept --web`, and a LocalSend upload (prepare-upload, then the file as the raw body of
# /upload, over HTTPS) to `advertise --localsend --auto-accept`: the reference, measured in the
# same run. Every NEARBY given is measured (e.g. before and after a change). CPU is the receiver's
# utime + stime from /proc/PID/stat over the upload; files in RAM (/dev/shm) on both sides.
# Prints the median of ROUNDS and the web upload's ratio to the LocalSend one of the same build.
#
#   bench/upload-cpu.sh MiB ROUNDS NEARBY...      (root; e.g. 512 3 /opt/before/nearby .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIB=${1:-512} ROUNDS=${2:-3}
shift 2
(( $# )) || { echo "usage: bench/upload-cpu.sh MiB ROUNDS NEARBY..." >&2; exit 2; }
cd "$ROOT"
source tests/lab/netlab.sh
WORK=$(mktemp -d /dev/shm/nbup.XXXXXX)
trap 'rm -rf "$WORK"' EXIT   # set before lab_up, which chains its teardown onto it
lab_up 2 >/dev/null
head -c $((MIB << 20)) /dev/urandom >"$WORK/data.bin"
TICKS=$(getconf CLK_TCK)
now() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -A cpu rate
# A stranger's file may be as large as the upload (the quota is NEARBY_PARTIAL_BYTES).
QUOTA=NEARBY_PARTIAL_BYTES=$(((MIB + 64) << 20))

# upload LABEL PID CMD...: CMD on h2 while PID (the receiver on h1) is metered; appends to cpu[LABEL], rate[LABEL].
upload() {
    local label=$1 pid=$2 c0 t0; shift 2
    c0=$(ticks "$pid") t0=$(now)
    lab_run 2 "$@" >"$WORK/curl.out" 2>&1 || { echo "upload-cpu: '$label' failed" >&2; cat "$WORK/curl.out" >&2; exit 1; }
    local us=$(($(now) - t0)) c=$(($(ticks "$pid") - c0))
    cpu[$label]+="$(awk -v c="$c" -v t="$TICKS" -v m="$MIB" 'BEGIN { printf "%.2f", c / t / (m / 1024) }') "
    rate[$label]+="$(awk -v us="$us" -v m="$MIB" 'BEGIN { printf "%.0f", m / (us / 1e6) }') "
}

# web NEARBY TAG ROUND: one browser-style upload to accept --web.
web() {
    local bin=$1 tag=$2 line url pid
    mkdir -p "$WORK/$tag/web"
    lab_bg 1 "$WORK/$tag/web.jsonl" env "$QUOTA" "$bin" accept --web --save-dir "$WORK/$tag/web" >/dev/null
    pid=$LAB_PID
    line=$(lab_wait_line "$WORK/$tag/web.jsonl" 'select(.event=="web-serving")' 30)
    url=$(jq -r .url <<<"$line")
    upload "$tag web" "$pid" curl -sS --fail -H 'Expect:' -H 'Accept: text/plain' -F "file=@$WORK/data.bin" "${url}upload"
    kill -INT "$pid"; lab_wait_pid "$pid" 20 >/dev/null || true
    cmp -s "$WORK/data.bin" "$WORK/$tag/web/data.bin" || { echo "upload-cpu: the web upload did not arrive whole" >&2; exit 1; }
    rm -rf "$WORK/$tag/web"
}

# localsend NEARBY TAG: one LocalSend upload to advertise --localsend --auto-accept.
localsend() {
    local bin=$1 tag=$2 pid answer api=https://10.99.0.1:53317/api/localsend/v2
    mkdir -p "$WORK/$tag/ls"
    lab_bg 1 "$WORK/$tag/ls.jsonl" env "$QUOTA" "$bin" advertise --localsend --auto-accept --save-dir "$WORK/$tag/ls" >/dev/null
    pid=$LAB_PID
    lab_wait_line "$WORK/$tag/ls.jsonl" 'select(.event=="advertising" and .service=="localsend")' 30 >/dev/null
    local info='{"alias":"bench","version":"2.1","deviceModel":"bench","deviceType":"desktop","fingerprint":"'$(printf 'f%.0s' {1..64})'","port":53317,"protocol":"https","download":false}'
    local files='{"f1":{"id":"f1","fileName":"data.bin","size":'$((MIB << 20))',"fileType":"application/octet-stream"}}'
    answer=$(lab_run 2 curl -sSk --fail -H 'Content-Type: application/json' -d "{\"info\":$info,\"files\":$files}" "$api/prepare-upload")
    local session token
    session=$(jq -r .sessionId <<<"$answer") token=$(jq -r .files.f1 <<<"$answer")
    upload "$tag localsend" "$pid" curl -sSk --fail -H 'Expect:' -X POST -T "$WORK/data.bin" "$api/upload?sessionId=$session&fileId=f1&token=$token"
    kill -INT "$pid"; lab_wait_pid "$pid" 20 >/dev/null || true
    cmp -s "$WORK/data.bin" "$WORK/$tag/ls/data.bin" || { echo "upload-cpu: the LocalSend upload did not arrive whole" >&2; exit 1; }
    rm -rf "$WORK/$tag/ls"
}

tags=()
for ((round = 1; round <= ROUNDS; round++)); do
    n=0
    for bin in "$@"; do
        n=$((n + 1)) tag="#$n"
        (( round > 1 )) || tags+=("$tag")
        web "$(readlink -f "$bin")" "$tag"
        localsend "$(readlink -f "$bin")" "$tag"
    done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%s MiB upload, median of %s rounds        CPU s/GiB    MB/s   web ÷ LocalSend\n' "$MIB" "$ROUNDS"
n=0
for bin in "$@"; do
    n=$((n + 1)) tag="#$n"
    w=$(median "${cpu[$tag web]}") l=$(median "${cpu[$tag localsend]}")
    printf '%-44s %9s %7s %10s\n' "$tag $bin: web (multipart)" "$w" "$(median "${rate[$tag web]}")" \
        "$(awk -v a="$w" -v b="$l" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
    printf '%-44s %9s %7s\n' "$tag $bin: LocalSend (raw body)" "$l" "$(median "${rate[$tag localsend]}")"
done
