#!/usr/bin/env python3
"""Strangers that make a drop-box node (`advertise --auto-accept --save-dir D`) hold files open and
leave partial files behind (tests/e2e/budget.sh), in plaintext: the node runs --encryption none.
Uses the protocol helpers of rogue_sender.py.

    rogue_files.py HOST PORT [--identities N] [--channels C] [--bytes B] [--hold S] [--resume-after S]
    rogue_files.py HOST PORT --directories D [--deep P] [--identities N]

N fresh identities each get invited in, then offer C files at once (channels 1, 3, 5 …; paths
rN/cK.bin, 8 MiB announced), send `start` and B bytes on each accepted one, and hold every link
open (pings answered) for S seconds. Prints, once every link has been answered for a second:
  {"progress": "holding", "sessions", "offered", "accepted", "resets": {code: count}, "reasons": [a few],
   "refused": {reason: count} (offers answered accept:false)}
and after the hold, the links closed by us:
  {"sessions", "accepted", "resets", "closed_by_node", "held_channels" (accepted, never reset)}
With --resume-after S, S seconds after closing, the last identity comes back and offers its last
file again (the newest partial: the one a quota keeps longest): {"resume": {"accept", "offset"}}
(offset B: the partial was kept; 0: it was not).

With --directories D, each identity instead offers D empty directories (channels of kind
`directory`, paths rN/dK), then P deep paths (rN/deepK/l1/…/l31: 32 levels each), 32 offers at a
time, and prints {"directories": {"offered", "made", "refused": {code: count}, "reasons": [a few]}}.
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rogue_sender import (DATA, GOODBYE, OPEN, OPEN_REPLY, PING, PONG, RESET, START, Identity,  # noqa: E402
                          handshake, invite)
from rogue_links import raise_fd_limit  # noqa: E402

SIZE = 8 << 20


def key(identity, channel):
    return f"{identity:08x}{channel:08x}" + "ab" * 8


class Session:
    def __init__(self, host, port, me, index):
        self.me, self.index = me, index
        self.peer, _ = handshake(host, port, me)
        answer = invite(self.peer, timeout=30, invitation=f"rf{index}-{time.monotonic_ns() % 100000}")
        if not answer.get("accept"):
            raise RuntimeError(f"invitation declined: {answer}")
        self.buffer = b""
        self.accepted, self.resets, self.closed = set(), {}, False
        self.replies, self.refused = {}, {}

    def offer(self, channel, data_bytes):
        self.peer.send(OPEN, {"kind": "file", "path": f"r{self.index}/c{channel}.bin", "size": SIZE,
                              "key": key(self.index, channel)}, channel)
        self.data_bytes = data_bytes

    def frames(self):
        """Reads what is there (poll said so), answering pings; yields (kind, channel, payload)."""
        try:
            data = self.peer.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError, socket.timeout):
            return
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return
        self.buffer += data
        while len(self.buffer) >= 9:
            kind, channel, length = struct.unpack(">BII", self.buffer[:9])
            if len(self.buffer) < 9 + length:
                break
            payload, self.buffer = self.buffer[9:9 + length], self.buffer[9 + length:]
            if kind == PING:
                try:
                    self.peer.send(PONG)
                except OSError:
                    pass
                continue
            yield kind, channel, payload

    def offer_directory(self, channel, path):
        self.peer.send(OPEN, {"kind": "directory", "path": path, "size": 0, "key": ""}, channel)

    def handle(self):
        for kind, channel, payload in self.frames():
            if kind == OPEN_REPLY:
                reply = json.loads(payload)
                self.replies[channel] = reply
                if reply.get("accept") and getattr(self, "directories", False):
                    self.accepted.add(channel)
                elif reply.get("accept"):
                    self.accepted.add(channel)
                    self.peer.send(START, {"offset": 0}, channel)
                    self.peer.send(DATA, os.urandom(self.data_bytes), channel)
                else:
                    self.resets[channel] = reply
                    self.refused[channel] = reply.get("reason")
            elif kind == RESET:
                self.resets[channel] = json.loads(payload)
            elif kind == GOODBYE:
                self.closed = True


def pump(sessions, seconds, quiet=None):
    """Handles frames for `seconds`, or until nothing came for `quiet` seconds."""
    poller = select.poll()
    by_fd = {s.peer.sock.fileno(): s for s in sessions if not s.closed}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    deadline, last = time.monotonic() + seconds, time.monotonic()
    while time.monotonic() < deadline and by_fd:
        events = poller.poll(100)
        if events:
            last = time.monotonic()
        for fd, _ in events:
            session = by_fd[fd]
            session.handle()
            if session.closed:
                poller.unregister(fd)
                del by_fd[fd]
        if quiet is not None and time.monotonic() - last >= quiet:
            break


def summary(sessions):
    resets = {}
    reasons = []
    for session in sessions:
        for reply in session.resets.values():
            code = reply.get("code", "none")
            resets[code] = resets.get(code, 0) + 1
            if len(reasons) < 3 and reply.get("reason") not in reasons:
                reasons.append(reply.get("reason"))
    accepted = sum(len(s.accepted) for s in sessions)
    held = sum(len(s.accepted - set(s.resets)) for s in sessions)
    refused = {}
    for session in sessions:
        for reason in session.refused.values():
            refused[reason] = refused.get(reason, 0) + 1
    return {"sessions": len(sessions), "accepted": accepted, "resets": resets, "reasons": reasons, "held_channels": held,
            "refused": refused}


def offer_directories(sessions, count, deep):
    """Each session offers `count` empty directories and `deep` deep paths, 32 at a time."""
    paths = {}
    for session in sessions:
        paths[session] = [f"r{session.index}/d{k}" for k in range(count)]
        paths[session] += [f"r{session.index}/deep{k}/" + "/".join(f"l{n}" for n in range(1, 32)) for k in range(deep)]
    channel = 1
    while any(paths.values()):
        for session in sessions:
            batch, paths[session] = paths[session][:32], paths[session][32:]
            for path in batch:
                if not session.closed:
                    session.offer_directory(channel, path)
                channel += 2
        pump(sessions, 10, quiet=0.3)
    pump(sessions, 10, quiet=1.0)
    refused, reasons = {}, []
    for session in sessions:
        for reply in session.resets.values():
            code = reply.get("code", "none")
            refused[code] = refused.get(code, 0) + 1
            if len(reasons) < 3 and reply.get("reason") not in reasons:
                reasons.append(reply.get("reason"))
    made = sum(len(s.accepted) for s in sessions)
    return {"offered": len(sessions) * (count + deep), "made": made, "refused": refused, "reasons": reasons,
            "closed_by_node": sum(1 for s in sessions if s.closed)}


def main():
    parser = argparse.ArgumentParser(description="strangers holding files open (see the module docstring)")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--identities", type=int, default=16)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--bytes", type=int, default=1)
    parser.add_argument("--hold", type=float, default=10)
    parser.add_argument("--resume-after", type=float, default=None)
    parser.add_argument("--directories", type=int, default=None)
    parser.add_argument("--deep", type=int, default=0)
    args = parser.parse_args()
    raise_fd_limit(args.identities + 64)
    identities = [Identity(f"dropper{i}") for i in range(args.identities)]
    sessions = []
    if args.directories is not None:
        for index, me in enumerate(identities):
            session = Session(args.host, args.port, me, index)
            session.peer.sock.settimeout(10)
            session.directories = True
            sessions.append(session)
        print(json.dumps({"directories": offer_directories(sessions, args.directories, args.deep)}), flush=True)
        for session in sessions:
            session.peer.sock.close()
        return 0
    for index, me in enumerate(identities):
        session = Session(args.host, args.port, me, index)
        # Blocking sends (a timeout, not a failure, when the node stops reading); reads only when
        # poll says there is something.
        session.peer.sock.settimeout(10)
        for k in range(args.channels):
            session.offer(2 * k + 1, args.bytes)
        sessions.append(session)
        pump(sessions, 5, quiet=0.3)
    pump(sessions, 30, quiet=1.0)
    offered = args.identities * args.channels
    print(json.dumps(dict(summary(sessions), progress="holding", offered=offered)), flush=True)
    pump(sessions, args.hold)
    result = summary(sessions)
    result["closed_by_node"] = sum(1 for s in sessions if s.closed)
    print(json.dumps(result), flush=True)
    for session in sessions:
        session.peer.sock.close()
    if args.resume_after is not None:
        time.sleep(args.resume_after)
        last, channel = args.identities - 1, 2 * args.channels - 1
        session = Session(args.host, args.port, identities[last], last)
        session.peer.sock.settimeout(10)
        session.peer.send(OPEN, {"kind": "file", "path": f"r{last}/c{channel}.bin", "size": SIZE, "key": key(last, channel)}, 1)
        _, payload = session.peer.expect([OPEN_REPLY, RESET], 1)
        reply = json.loads(payload)
        print(json.dumps({"resume": {"accept": reply.get("accept"), "offset": reply.get("offset")}}), flush=True)
        session.peer.sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
