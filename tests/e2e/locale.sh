# Names in any locale: the harness runs the tests in C.UTF-8 (run.sh), but a person's nearby may run
# with LANG and LC_ALL unset, or C, or POSIX (containers, CI images, ssh from elsewhere). A peer's
# name is UTF-8 on the wire and in the identity file, and nearby prints it as those bytes whatever the
# locale: JSON lines are UTF-8 (RFC 8259), and a terminal gets the name itself, not escapes or '?'.
# Sourced by run.sh; uses terminal.sh's helpers. Captures of terminals are *.txt.
# shellcheck shell=bash

test_a_peer_name_prints_right_without_a_utf8_locale() {
    local name="Zoë's Pi 日本" locale got
    lab_run 2 "$NEARBY" identity --rename "$name" >/dev/null || { fail "h2 could not take the name $name"; return 1; }
    advertise 2 locale || return 1
    for locale in unset C POSIX; do
        local vars=()
        [[ $locale == unset ]] || vars=("LC_ALL=$locale")
        # JSON, in a pipe
        lab_run 1 env -u LANG -u LC_ALL -u LC_CTYPE -u TERM "${vars[@]}" "$NEARBY" browse --service locale --peer "$name" --timeout 20 \
            >"$OUT/browse-$locale.jsonl" 2>"$OUT/browse-$locale.err" || { fail "LC_ALL $locale: browse --peer did not find $name"; cat "$OUT/browse-$locale.err" >&2; return 1; }
        got=$(jq -r 'select(.event=="found") | .peer.name' "$OUT/browse-$locale.jsonl")
        expect_eq "$got" "$name" "LC_ALL $locale: the found event's peer.name" || return 1
        grep -qF "\"name\":\"$name\"" "$OUT/browse-$locale.jsonl" || { fail "LC_ALL $locale: the JSON line does not carry the name's UTF-8 bytes as they are"; cat "$OUT/browse-$locale.jsonl" >&2; return 1; }
        # a person at a terminal
        term_args "${vars[@]}" -- browse --service locale --peer "$name" --timeout 20
        lab_run 1 env -u LANG -u LC_ALL -u LC_CTYPE "${TERM_ARGV[@]}" >"$OUT/term-$locale.txt" 2>&1 || { fail "LC_ALL $locale: browse --peer at a terminal failed"; show "$OUT/term-$locale.txt"; return 1; }
        term_has "$OUT/term-$locale.txt" "found .*Zoë's Pi 日本" "LC_ALL $locale: the terminal's found line" || return 1
    done
    stop "$ADV_PID"
}
