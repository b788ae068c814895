#!/usr/bin/env python3
"""A peer that sends a drop-box node (`advertise --auto-accept --save-dir D`, plaintext) a bundle of
small files (docs/protocol.md, "Bundles"; issue 43), well formed or breaking one rule. Uses the
protocol helpers of rogue_sender.py.

    rogue_bundle.py HOST PORT --case CASE [--hold S]

  ok           three files (one of 0 bytes) and two whose paths climb out (`../../escape.txt`,
               `/abs/y.txt`): prints {"results": [[index, status, code, text], …], "closed": true}
               once every result and the node's close came.
  too-big      one file announced at 64 KiB + 1        past-offer   20 bytes in a bundle offered as 10
  many         65 empty files                          bad-path     a path that is not UTF-8
  short-close  a close in the middle of a record        bad-key      a key of 65 bytes
Each breaking case prints {"case": CASE, "closed_by_node": bool} (the node cut the link within S).
"""
import argparse
import hashlib
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rogue_sender import CLOSE, DATA, GOODBYE, OPEN, OPEN_REPLY, PING, PONG, Identity, handshake, invite, run  # noqa: E402

OK_FILES = [("a/one.txt", b"hello"), ("a/empty", b""), ("b/x.bin", bytes(range(256)) * 20),
            ("../../escape.txt", b"stay inside"), ("/abs/y.txt", b"absolute")]


def record(path, content, size=None, key=b"0123456789abcdef"):
    path = path if isinstance(path, bytes) else path.encode()
    size = len(content) if size is None else size
    return (struct.pack(">H", len(path)) + path + struct.pack(">B", len(key)) + key + struct.pack(">Q", size)
            + content + hashlib.sha256(content).digest())


def cut_by_node(peer, seconds):
    """Waits up to `seconds` for the node to end the connection (its goodbye or EOF), reading and
    dropping what it sends meanwhile (results of the files before the broken one); True if it did."""
    deadline = time.monotonic() + seconds
    peer.sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            kind, _, _ = peer.frame()
        except socket.timeout:
            continue
        except (EOFError, OSError):
            return True
        if kind == GOODBYE:
            return True
        if kind == PING:
            peer.send(PONG)
    return False


def results(peer, count):
    got, closed, held = [], False, b""
    while not closed:
        kind, payload = peer.expect([DATA, CLOSE], 1)
        if kind == CLOSE:
            closed = True
            continue
        held += payload
        while len(held) >= 6:
            code_length = held[5]
            if len(held) < 8 + code_length:
                break
            text_length = struct.unpack(">H", held[6 + code_length:8 + code_length])[0]
            end = 8 + code_length + text_length
            if len(held) < end:
                break
            index, status = struct.unpack(">IB", held[:5])
            got.append([index, status, held[6:6 + code_length].decode(), held[8 + code_length:end].decode()])
            held = held[end:]
    return {"results": sorted(got), "closed": closed and len(got) == count}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--case", default="ok")
    parser.add_argument("--hold", type=float, default=5)
    args = parser.parse_args()
    me = Identity(name="bundler")
    peer, _ = handshake(args.host, args.port, me)
    answer = invite(peer, invitation=f"bundle-{args.case}")
    if not answer.get("accept"):
        raise RuntimeError(f"invitation declined: {answer}")
    cases = {
        "ok": (sum(len(c) for _, c in OK_FILES), b"".join(record(p, c) for p, c in OK_FILES)),
        "too-big": (1 << 20, record("big.bin", b"", size=(64 << 10) + 1)),
        "past-offer": (10, record("p.bin", b"x" * 20)),
        "many": (0, b"".join(record(f"m{i}", b"") for i in range(65))),
        "bad-path": (1, record(b"\xc3\x28", b"z")),
        "bad-key": (1, record("k.bin", b"z", key=b"k" * 65)),
        "short-close": (100, record("s.bin", b"y" * 100)[:50]),
    }
    size, data = cases[args.case]
    peer.send(OPEN, {"kind": "bundle", "path": "first", "size": size, "key": ""}, 1)
    _, reply = peer.expect([OPEN_REPLY], 1)
    if not json.loads(reply).get("accept"):
        raise RuntimeError(f"the node refused the bundle: {reply!r}")
    for start in range(0, len(data), 1000):
        peer.send(DATA, data[start:start + 1000], 1)
    peer.send(CLOSE, {"sha256": "", "bytes": size}, 1)
    if args.case == "ok":
        print(json.dumps(results(peer, len(OK_FILES))), flush=True)
    else:
        print(json.dumps({"case": args.case, "closed_by_node": cut_by_node(peer, args.hold)}), flush=True)
    return 0


if __name__ == "__main__":
    run(main, "rogue_bundle")
