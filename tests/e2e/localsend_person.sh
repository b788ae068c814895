# shellcheck shell=bash
# Issue 59: LocalSend with a person holding a phone. Against tests/e2e/rogue_localsend_person.py,
# a phone written from the official app's source (1.18): it answers announcements only by
# POST /register over a connection it keeps, its person taps Accept when they do and unticks
# files. Uses localsend.sh's ls_setup/ls_teardown and localsend_phone.sh's lsp_cert.

LPS_PEER="$ROOT/tests/e2e/rogue_localsend_person.py"

# lps_phone K ALIAS ARGS...: the phone on host K (sets LPS_PID), its lines in $OUT/person.out.
lps_phone() {
    local host=$1 alias=$2; shift 2
    mkdir -p "$OUT/phone"
    lsp_cert phone || return 1
    lab_bg "$host" "$OUT/person.out" python3 "$LPS_PEER" phone "$alias" 53317 "$OUT/phone.pem" "$OUT/phone.key" "$OUT/phone" "$@" >/dev/null
    LPS_PID=$LAB_PID
    LS_PIDS+=("$LPS_PID")
    lab_wait_line "$OUT/person.out" 'select(.listening)' 15 >/dev/null || {
        fail "no phone on h$host"; cat "$OUT/person.out.err" >&2; return 1; }
}

lps_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( 10#$t / 1000 )); }

# By name as fast as by address plus a round trip: the phone's /register is the sighting, and
# nothing waits for that connection (which the phone keeps open) to close. 3 runs of each.
test_localsend_person_by_name_as_fast_as_by_address() {
    ls_setup || return 1
    trap 'ls_teardown; trap - RETURN' RETURN
    lps_phone 1 "Pia's phone" || return 1
    head -c 1000 /dev/urandom >"$OUT/a.bin"
    local run t0 by_name by_address
    for run in 1 2 3; do
        t0=$(lps_ms)
        lab_run 2 "$NEARBY" send-file --localsend 10.99.0.1 "$OUT/a.bin" >/dev/null 2>"$OUT/addr.err" || {
            fail "by address"; cat "$OUT/addr.err" >&2; return 1; }
        by_address=$(( $(lps_ms) - t0 ))
        t0=$(lps_ms)
        lab_run 2 "$NEARBY" send-file --localsend "Pia's phone" "$OUT/a.bin" >"$OUT/name.jsonl" 2>"$OUT/name.err" || {
            fail "by name"; cat "$OUT/name.err" >&2; return 1; }
        by_name=$(( $(lps_ms) - t0 ))
        echo "run $run: by name $by_name ms, by address $by_address ms"
        (( by_name <= 1500 )) || { fail "by name took $by_name ms (by address $by_address ms)"; return 1; }
    done
    expect_json "$OUT/person.out" 'select(.register=="10.99.0.2" and .status==200)' "the phone registered" || return 1
    expect_json "$OUT/name.jsonl" "select(.event==\"file-sent\" and .peer.name==\"Pia's phone\")" "sent by name" || return 1
}
