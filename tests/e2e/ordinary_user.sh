# nearby as its users run it: an ordinary user, no capabilities. Every nearby the suite starts runs
# that way (tests/lab/nearby); these tests check that the harness really does so, and that such a
# user can do what nearby is for: connect, send, send a file, and see doctor pass.
# Sourced by run.sh.
# shellcheck shell=bash

# ou_privileges PID: "uid=U caps=EFFECTIVE/PERMITTED/BOUNDING" of a running process.
ou_privileges() {
    awk '/^Uid:/ {u=$2} /^CapEff:/ {e=$2} /^CapPrm:/ {p=$2} /^CapBnd:/ {b=$2}
         END {printf "uid=%s caps=%s/%s/%s\n", u, e, p, b}' "/proc/$1/status"
}

test_ordinary_user_runs_nearby_without_privilege() {
    trap stop_started RETURN
    local zero=0000000000000000
    start_node 2 s-ou-priv --auto-accept || return 1
    local seen
    seen=$(ou_privileges "$ADV_PID")
    expect_eq "$seen" "uid=$(id -u "$LAB_USER") caps=$zero/$zero/$zero" "the node's uid and capabilities" || return 1
    [[ $(id -u "$LAB_USER") != 0 ]] || fail "the lab's user is root" || return 1
    # The node's files are the user's own, as a user's would be.
    expect_eq "$(stat -c %U "$LAB_DIR/h2/home/identity.json")" "$LAB_USER" "owner of the node's identity file" || return 1
}

test_ordinary_user_connects_sends_a_message_and_a_file() {
    trap stop_started RETURN
    local save=$OUT/save
    mkdir -p "$save"
    start_node 2 s-ou-send --auto-accept --save-dir "$save" || return 1
    local target
    target=$(lab_addr 2):$ADV_PORT
    # Before the fix every connection of a user failed: setsockopt(SOL_SOCKET, SO_DEBUG) is EACCES.
    lab_run 1 "$NEARBY" send --service s-ou-send "$target" "hello from a user" >"$OUT/send.jsonl" 2>"$OUT/send.err"
    expect_eq "$?" 0 "send's exit status" || { cat "$OUT/send.jsonl" "$OUT/send.err" >&2; return 1; }
    expect_json "$OUT/send.jsonl" 'select(.event=="sent")' "sent event" || return 1
    lab_wait_line "$ADV" 'select(.event=="message" and .text=="hello from a user")' 10 >/dev/null ||
        fail "the node did not get the message" || { cat "$ADV" >&2; return 1; }
    head -c 300000 /dev/urandom >"$OUT/file.bin"
    lab_run 1 "$NEARBY" send-file --service s-ou-send "$target" "$OUT/file.bin" >"$OUT/file.jsonl" 2>"$OUT/file.err"
    expect_eq "$?" 0 "send-file's exit status" || { cat "$OUT/file.jsonl" "$OUT/file.err" >&2; return 1; }
    cmp -s "$OUT/file.bin" "$save/file.bin" || fail "the file did not arrive whole" || return 1
    expect_eq "$(stat -c %U "$save/file.bin")" "$LAB_USER" "owner of the received file" || return 1
}

test_ordinary_user_asking_for_a_privileged_port_is_told_so() {
    trap stop_started RETURN
    # Root may listen below 1024; a user may not. The sentence says why and what to do, in words.
    lab_run 1 "$NEARBY" advertise --service s-ou-port --port 80 >"$OUT/adv.jsonl" 2>"$OUT/adv.err"
    local status=$?
    [[ $status -ne 0 ]] || fail "advertise --port 80 as a user succeeded" || return 1
    expect_json "$OUT/adv.jsonl" 'select(.event=="error" and .code=="listen-failed" and (.message | test("port 80") and test("CAP_NET_BIND_SERVICE") and test("1024")))' \
        "a final error naming the privileged port" || return 1
    grep -q "CAP_NET_BIND_SERVICE" "$OUT/adv.err" || fail "stderr does not say why" || { cat "$OUT/adv.err" >&2; return 1; }
    ! grep -qiE 'errno|IOError|bind\(descriptor' "$OUT/adv.jsonl" "$OUT/adv.err" || fail "library text in the error" || return 1
}
