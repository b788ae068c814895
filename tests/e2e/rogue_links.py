#!/usr/bin/env python3
"""A stranger that holds links open to a node (tests/e2e/hostile_links.sh), in plaintext: the node
runs --encryption none. Uses the protocol helpers of rogue_sender.py.

    rogue_links.py HOST PORT --mode MODE [--sources IP,IP,…] [--count N] [--hold S]

Connections are spread over --sources (local addresses to bind, round robin; default: any).

  invited   --count links, each a fresh identity that proves itself and sends an invitation (60 s),
            then all held open, pings answered, for --hold seconds. Prints
            {"attempted", "invited" (links whose invitation went out), "refused" (closed before the
            handshake ended), "closed_by_node" (of the invited, closed while held), "held" (open at the end)}.
  slow      --count connections per source that trickle their preamble and hello one byte every
            --interval seconds and never finish. Prints {"opened", "closed_by_node", "max_held" (the
            longest a connection lived before the node closed it, seconds), "never_closed"}.
"""
import argparse
import json
import os
import resource
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rogue_sender import (HELLO, INVITE, PING, PONG, PROTOCOL_VERSION, Identity, Peer,  # noqa: E402
                          commitment, handshake)
import base64  # noqa: E402


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))


def bound_connect(host, port, source, timeout=5):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        sock.bind((source, 0))
    sock.settimeout(timeout)
    sock.connect((host, port))
    return sock


class BoundPeer(Peer):
    def __init__(self, host, port, source):  # noqa: D107 — a Peer whose socket is bound to `source`
        self.sock = bound_connect(host, port, source)


def mode_invited(args, sources):
    raise_fd_limit(args.count + 64)
    held, refused = [], 0
    import rogue_sender
    original = rogue_sender.Peer
    for i in range(args.count):
        source = sources[i % len(sources)]
        rogue_sender.Peer = lambda h, p, timeout=10, s=source: BoundPeer(h, p, s)
        try:
            peer, _ = handshake(args.host, args.port, Identity(f"rogue{i}"))
            peer.send(INVITE, {"invitation": f"r{i}", "context": None, "timeout": 60})
            peer.sock.setblocking(False)
            held.append(peer)
        except (OSError, EOFError, RuntimeError, ValueError):
            refused += 1
        finally:
            rogue_sender.Peer = original
    print(json.dumps({"progress": "invited", "invited": len(held), "refused": refused}), flush=True)
    closed = hold(held, args.hold)
    print(json.dumps({"attempted": args.count, "invited": len(held), "refused": refused,
                      "closed_by_node": len(closed), "held": len(held) - len(closed)}), flush=True)
    for peer in held:
        peer.sock.close()
    return 0


def hold(peers, seconds):
    """Keeps `peers` open for `seconds`, answering pings; the set of fds the node closed."""
    poller = select.poll()
    by_fd = {peer.sock.fileno(): peer for peer in peers}
    buffers = {fd: b"" for fd in by_fd}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    closed = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(closed) < len(by_fd):
        for fd, _ in poller.poll(200):
            try:
                data = by_fd[fd].sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed.add(fd)
                poller.unregister(fd)
                continue
            buffers[fd] += data
            while len(buffers[fd]) >= 9:
                kind, _, length = struct.unpack(">BII", buffers[fd][:9])
                if len(buffers[fd]) < 9 + length:
                    break
                buffers[fd] = buffers[fd][9 + length:]
                if kind == PING:
                    try:
                        by_fd[fd].sock.send(struct.pack(">BII", PONG, 0, 0))
                    except OSError:
                        pass
    return closed


def mode_slow(args, sources):
    total = args.count * len(sources)
    raise_fd_limit(total + 64)
    me = Identity("slow")
    hello = json.dumps({"version": PROTOCOL_VERSION, "id": me.peer_id, "name": me.name,
                        "key": base64.b64encode(me.spki).decode(),
                        "commitment": base64.b64encode(commitment(os.urandom(32))).decode()}).encode()
    script = b"NBY1\x00" + struct.pack(">BII", HELLO, 0, len(hello)) + hello
    conns = []  # [sock, opened_at, bytes_sent, closed_at]
    for i in range(total):
        try:
            sock = bound_connect(args.host, args.port, sources[i % len(sources)])
            sock.setblocking(False)
            conns.append([sock, time.monotonic(), 0, None])
        except OSError:
            pass
    print(json.dumps({"progress": "opened", "opened": len(conns)}), flush=True)
    deadline = time.monotonic() + args.hold
    next_byte = time.monotonic()
    while time.monotonic() < deadline and any(c[3] is None for c in conns):
        now = time.monotonic()
        if now >= next_byte:
            for conn in conns:
                if conn[3] is None and conn[2] < len(script):
                    try:
                        conn[0].send(script[conn[2]:conn[2] + 1])
                        conn[2] += 1
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        conn[3] = now
            next_byte = now + args.interval
        for conn in conns:
            if conn[3] is not None:
                continue
            try:
                if conn[0].recv(4096) == b"":
                    conn[3] = time.monotonic()
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                conn[3] = time.monotonic()
        time.sleep(0.05)
    closed = [c for c in conns if c[3] is not None]
    held = [c[3] - c[1] for c in closed]
    print(json.dumps({"opened": len(conns), "closed_by_node": len(closed), "never_closed": len(conns) - len(closed),
                      "max_held": round(max(held), 2) if held else None}), flush=True)
    for conn in conns:
        conn[0].close()
    return 0


def main():
    parser = argparse.ArgumentParser(description="a stranger holding links open (see the module docstring)")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--mode", required=True, choices=["invited", "slow"])
    parser.add_argument("--sources", default="")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--hold", type=float, default=10)
    parser.add_argument("--interval", type=float, default=1)
    args = parser.parse_args()
    sources = [s for s in args.sources.split(",") if s] or [None]
    return {"invited": mode_invited, "slow": mode_slow}[args.mode](args, sources)


if __name__ == "__main__":
    sys.exit(main())
