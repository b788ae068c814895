# End-to-end tests of what a newcomer meets first (issue 57): a daemon that is not running said in
# words with the command that starts it on this system, a mistyped name met with the near one, a
# stream nobody listens for said on both sides at once, an invitation that says what it offers.

# The command that starts SERVICE here, by the rules nearby follows (DaemonWords.start).
fc_start_command() {
    if [[ -d /run/systemd/system ]]; then echo "sudo systemctl start $1"
    elif [[ -x /usr/sbin/service || -x /sbin/service ]] && [[ -e /etc/init.d/$1 ]]; then echo "sudo service $1 start"
    elif [[ $1 == dbus ]]; then echo "sudo dbus-daemon --system --fork"
    else echo "sudo avahi-daemon --daemonize"; fi
}

# No library number in any sentence: avahi-daemon stopped, then D-Bus gone (no system bus socket),
# each named for what it is, with its start command on this system.
test_first_contact_daemon_says_how_to_start_it() {
    local avahi dbus status
    avahi=$(fc_start_command avahi-daemon); dbus=$(fc_start_command dbus)
    lab_stop_avahi 5
    lab_run 5 "$NEARBY" send --service fc1 somebody hello --timeout 30 </dev/null >"$OUT/out.jsonl" 2>"$OUT/err.txt"; status=$?
    lab_start_avahi 5
    expect_eq "$status" 7 "exit status without avahi-daemon" || return 1
    cat "$OUT/err.txt"
    grep -qF "avahi-daemon is not running: start it with \`$avahi\`" "$OUT/err.txt" || fail "no start command '$avahi' in the sentence" || return 1
    expect_json "$OUT/out.jsonl" "select(.event==\"error\" and .code==\"daemon-unavailable\" and (.message | contains(\"$avahi\")))" "the error event names the start command" || return 1
    # D-Bus itself missing: the bus's socket is not there.
    lab_run 5 env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$OUT/no-bus.sock" "$NEARBY" browse --service fc1 --timeout 5 \
        </dev/null >"$OUT/out2.jsonl" 2>"$OUT/err2.txt"; status=$?
    cat "$OUT/err2.txt"
    expect_eq "$status" 7 "exit status without D-Bus" || return 1
    grep -qF "D-Bus is not running (no system bus at $OUT/no-bus.sock), and avahi-daemon needs it: start D-Bus with \`$dbus\`" "$OUT/err2.txt" \
        || fail "no D-Bus sentence with '$dbus'" || return 1
    ! grep -qE 'error -?[0-9]|-6553[0-9]|-655[4-6][0-9]' "$OUT/err.txt" "$OUT/err2.txt" "$OUT/out.jsonl" "$OUT/out2.jsonl" || fail "a library number in a sentence" || return 1
}
