#!/usr/bin/env bash
# LocalSend by name against by address (issue 59): `send-file --localsend NAME` to a phone that
# answers announcements only by POST /register and keeps that connection open (as the official app
# 1.18 does: tests/e2e/rogue_localsend_person.py), against `send-file --localsend ADDRESS` to the
# same phone, alternating, in the same run. Each time is the whole command, start to exit; by name
# should cost one announcement's round trip more.
#
#   bench/localsend-byname.sh [TRIALS]   (root; default 5; NEARBY=path, default .build/debug/nearby)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEARBY=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
TRIALS=${1:-5}
source "$ROOT/tests/lab/netlab.sh"

ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( 10#$t / 1000 )); }
timed() { local t0; t0=$(ms); lab_run 2 "$@" >/dev/null 2>"$LAB_DIR/send.err" || { cat "$LAB_DIR/send.err" >&2; exit 1; }; echo $(( $(ms) - t0 )); }

lab_up 2 >/dev/null
trap 'lab_down' EXIT
for k in 1 2; do ip -n "$(lab_ns "$k")" route replace 224.0.0.0/4 dev "$LAB_IFACE"; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$LAB_DIR/phone.key" -out "$LAB_DIR/phone.pem" \
    -days 2 -subj /CN=phone >/dev/null 2>&1
mkdir -p "$LAB_DIR/phone" && chmod 777 "$LAB_DIR" "$LAB_DIR/phone"
head -c 1000 /dev/urandom >"$LAB_DIR/a.bin" && chmod 644 "$LAB_DIR/a.bin"
lab_bg 1 "$LAB_DIR/person.out" python3 "$ROOT/tests/e2e/rogue_localsend_person.py" phone "Pia's phone" 53317 \
    "$LAB_DIR/phone.pem" "$LAB_DIR/phone.key" "$LAB_DIR/phone" >/dev/null
lab_wait_line "$LAB_DIR/person.out" 'select(.listening)' 15 >/dev/null
names=() addresses=()
for ((i = 1; i <= TRIALS; i++)); do
    if ((i % 2)); then
        names+=("$(timed "$NEARBY" send-file --localsend "Pia's phone" "$LAB_DIR/a.bin")")
        addresses+=("$(timed "$NEARBY" send-file --localsend 10.99.0.1 "$LAB_DIR/a.bin")")
    else
        addresses+=("$(timed "$NEARBY" send-file --localsend 10.99.0.1 "$LAB_DIR/a.bin")")
        names+=("$(timed "$NEARBY" send-file --localsend "Pia's phone" "$LAB_DIR/a.bin")")
    fi
    printf 'trial %2d: by name %5d ms   by address %5d ms\n' "$i" "${names[-1]}" "${addresses[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
printf '\nmedian: by name %s ms, by address %s ms (send-file of 1 KB, whole command)\n' "$(median "${names[@]}")" "$(median "${addresses[@]}")"
