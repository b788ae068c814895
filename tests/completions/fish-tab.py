#!/usr/bin/env python3
"""Presses TAB after a command line in an interactive fish and prints what the screen shows then.

Usage: fish-tab.py COMPLETIONS_DIR 'nearby invite ' WORD...
Waits (at most 10 s) until every WORD is on the screen, then prints the screen's text without
terminal escapes; exits 1 when some WORD never showed up.

fish's `complete -C` cannot run ArgumentParser's custom completions in fish 3: they ask
`commandline -C` for the cursor, which only the line editor knows. So this types into a real fish
in a pseudo-terminal, as a user does.
"""
import os
import pty
import re
import select
import signal
import sys
import time

ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def main():
    directory, line, words = sys.argv[1], sys.argv[2], [w.encode() for w in sys.argv[3:]]
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execvp("fish", ["fish", "--no-config", "--interactive", "--private"])
    screen = b""

    def read_until(done, seconds):
        nonlocal screen
        deadline = time.monotonic() + seconds
        while not done() and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break

    quoted = "'" + directory.replace("\\", "\\\\").replace("'", "\\'") + "'"
    os.write(fd, f"set -g fish_greeting; set -p fish_complete_path {quoted}; echo READY-$status\r".encode())
    read_until(lambda: b"READY-0" in ESCAPES.sub(b"", screen), 10)
    screen = b""
    os.write(fd, line.encode() + b"\t")
    read_until(lambda: all(w in ESCAPES.sub(b"", screen) for w in words), 10)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    text = ESCAPES.sub(b"", screen)
    sys.stdout.write(text.replace(b"\r", b"").decode("utf-8", "replace") + "\n")
    return 0 if all(w in text for w in words) else 1


if __name__ == "__main__":
    sys.exit(main())
