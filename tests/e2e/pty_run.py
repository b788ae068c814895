#!/usr/bin/env python3
"""Runs a command under a pseudo-terminal, as a person's shell would, and copies the raw bytes it
shows there to stdout: colours, carriage returns, line clears and all.

    pty_run.py [--stdin FILE] [--stdout FILE] [--columns N] [--rows N] [--answer TEXT REPLY]... -- CMD ARGS...

stdin, stdout and stderr are the terminal unless --stdin / --stdout redirect one to a file (for
`nearby stream`, whose stdout carries bytes). SIGINT and SIGTERM are passed on to CMD; exits with
CMD's status (128+N when a signal N ended it). --answer types REPLY and Enter, once, as soon as
the terminal shows TEXT (a question the command asks).
"""
import argparse
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdin")
    parser.add_argument("--stdout")
    parser.add_argument("--columns", type=int, default=120)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--answer", nargs=2, action="append", default=[], metavar=("TEXT", "REPLY"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", args.rows, args.columns, 0, 0))
    stdin = open(args.stdin, "rb") if args.stdin else slave
    stdout = open(args.stdout, "wb") if args.stdout else slave
    child = subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=slave, start_new_session=True)
    os.close(slave)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda received, _frame: child.send_signal(received))

    out = sys.stdout.buffer
    shown = b""
    answers = [(text.encode(), reply.encode() + b"\n") for text, reply in args.answer]
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal closed it
            break
        if not data:
            break
        out.write(data)
        out.flush()
        shown = (shown + data)[-65536:]
        while answers and answers[0][0] in shown:
            os.write(master, answers.pop(0)[1])
            shown = b""
    status = child.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main())
