# Every word a person reads is right (issue 47): errors on a terminal wrapped to its width and never
# cut, no library text in any line, names near the one typed as a person mistypes them, and a final
# `error` event for every usage error. Sourced by run.sh; uses the helpers of sessions.sh,
# terminal.sh, doctor.sh and explain.sh. Captures of terminals are *.txt.
# shellcheck shell=bash

# What no line for people or programs may hold: NIO's and Swift's words instead of ours.
WORDS_LIBRARY_TEXT='SingleConnectionFailure|NIOConnectionError|connectionErrors|NIOCore|NIOPosix|NIOSSL|ChannelError|IOError|errno|Optional\(|[A-Za-z]Error\('

# An error on a terminal is wrapped between words to its width, never cut: the hint at its end is
# what a person acts on.
test_words_an_error_on_a_terminal_is_wrapped_never_cut() {
    local status query="Somebody With A Rather Long Display Name Nobody Has"
    term_run 1 "$OUT/tty.txt" --columns 80 -- send --service s-wd-cut --timeout 2 "$query" hi; status=$?
    expect_eq "$status" 2 "send to nobody on a terminal" || { show "$OUT/tty.txt"; return 1; }
    plain "$OUT/tty.txt" >"$OUT/plain.txt"
    (( $(LC_ALL=C.UTF-8 wc -L <"$OUT/plain.txt") < 80 )) || { fail "a line wider than the terminal"; show "$OUT/plain.txt"; return 1; }
    ! grep -q "…" "$OUT/plain.txt" || { fail "the error was cut"; show "$OUT/plain.txt"; return 1; }
    # The lines joined again: the whole sentence, its hint and its code.
    tr -s ' \n' ' ' <"$OUT/plain.txt" >"$OUT/joined.txt"
    ex_says "$OUT/joined.txt" "next: \`nearby doctor --service s-wd-cut '$query'\` (peer-not-found, exit 2)" "the whole hint" || return 1
}
