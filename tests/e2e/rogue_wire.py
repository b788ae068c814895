#!/usr/bin/env python3
"""A hostile nearby peer for tests/e2e/hostile_wire.sh (issue 23): the wire-level probes. Speaks the
plaintext session protocol through rogue_sender.py's helpers (the node runs --encryption none).

    rogue_wire.py MODE [ARGS]

  big-hello HOST PORT --count N [--hold S] [--fill BYTES] [--trickle BYTES]
        N connections, each: the preamble, then a header announcing a 1 MiB hello, then FILL bytes at
        once (default all but one) and TRICKLE bytes a second after, never finishing. Prints
        {"opened": n, "closed_by_node": m, "closed_within": s} after HOLD seconds (default 5) or once
        every connection was closed.
  sessions HOST PORT --count N [--window W]
        N sessions one after the other, each with a fresh identity: handshake, invitation, answer,
        goodbye. Prints {"sessions": n, "failed": f, "first_rate": r1, "last_rate": r2} (sessions a
        second over the first and the last W, default 200).
  invite-as HOST PORT --invitation ID [--name NAME] [--hold S]
        One fresh identity inviting with the invitation ID given; prints {"id": its peer ID,
        "answer": …} (or {"closed": true}), then holds the session until the node closes or HOLD.
  malformed HOST PORT --frame reset|openReply|close [--hold S]
        One fresh identity in session (the node must let it in: --auto-accept), then on an open
        channel a frame whose JSON body does not say what its type must: a reset or a close on a
        file it offers (a 4-byte file, accepted, started), or an openReply to the node's own offer
        (the test makes the node send it a file). Prints {"id": its peer ID} once in session, then
        {"sent": FRAME, "closed_by_node": bool} (the node cut the link within HOLD seconds).
  sniff-tag PORT
        On the receiving host: prints {"ready": true}, then the tag and sequence number of the first
        nearby datagram to PORT: {"tag": hex, "length": n}.
  forge HOST PORT --tag HEX --count N
        N datagrams carrying that tag, fresh sequence numbers and random sealed bytes (they fail
        authentication), from this host; prints {"sent": n, "from": "IP:PORT"}.
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
from rogue_sender import (CLOSE, DATA, GOODBYE, HELLO, OPEN, OPEN_REPLY, PING, PONG, RESET, START,  # noqa: E402
                          Identity, closed_by_node, handshake, invite, run)

MIB = 1 << 20


def mode_big_hello(args):
    fill = args.fill if args.fill is not None else MIB - 1
    socks = []
    for _ in range(args.count):
        try:
            sock = socket.create_connection((args.host, args.port), timeout=5)
            sock.sendall(b"NBY1\x00")
            sock.setblocking(False)
            socks.append(sock)
        except OSError:
            break
    opened = len(socks)
    # The preamble's answer first, then the announced 1 MiB hello, then the bytes.
    header = struct.pack(">BII", HELLO, 0, MIB)
    started = time.monotonic()
    pending = {sock: header + b"{" + b" " * max(0, fill - 1) for sock in socks}
    closed = set()
    closed_at = None
    deadline = started + args.hold
    last_trickle = started
    while time.monotonic() < deadline and len(closed) < opened:
        live = [s for s in socks if s not in closed]
        readable, writable, _ = select.select(live, [s for s in live if pending.get(s)], [], 0.1)
        for sock in readable:
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                closed.add(sock)
                closed_at = time.monotonic() - started
        for sock in writable:
            if sock in closed:
                continue
            try:
                sent = sock.send(pending[sock])
                pending[sock] = pending[sock][sent:]
            except OSError:
                closed.add(sock)
                closed_at = time.monotonic() - started
        if args.trickle and time.monotonic() - last_trickle >= 1:
            last_trickle = time.monotonic()
            for sock in live:
                if sock not in closed and not pending.get(sock):
                    pending[sock] = b" " * args.trickle
    print(json.dumps({"opened": opened, "closed_by_node": len(closed), "closed_within": closed_at}), flush=True)
    for sock in socks:
        sock.close()
    return 0


def mode_sessions(args):
    done = failed = 0
    stamps = []
    for number in range(args.count):
        me = Identity(name=f"stranger-{number}")
        try:
            peer, _ = handshake(args.host, args.port, me)
            answer = invite(peer, invitation=f"s{number}")
            if not answer.get("accept"):
                raise RuntimeError(f"declined: {answer}")
            peer.send(GOODBYE, {"reason": "done"})
            peer.sock.close()
            done += 1
            stamps.append(time.monotonic())
        except (OSError, EOFError, RuntimeError) as error:
            failed += 1
            if failed <= 5:
                print(f"rogue_wire: session {number}: {error}", file=sys.stderr)
    window = min(args.window, max(2, len(stamps) // 2))

    def rate(part):
        return round((len(part) - 1) / (part[-1] - part[0]), 1) if len(part) >= 2 and part[-1] > part[0] else None

    rates = [rate(stamps[i:i + window]) for i in range(0, len(stamps) - 1, window)]
    print(json.dumps({"sessions": done, "failed": failed, "first_rate": rate(stamps[:window]),
                      "last_rate": rate(stamps[-window:]), "rates": rates}), flush=True)
    return 0 if failed == 0 else 1


def mode_invite_as(args):
    me = Identity(name=args.name)
    try:
        peer, _ = handshake(args.host, args.port, me)
        answer = invite(peer, timeout=args.invite_timeout, invitation=args.invitation)
    except (EOFError, OSError):
        print(json.dumps({"id": me.peer_id, "closed": True}), flush=True)
        return 0
    print(json.dumps({"id": me.peer_id, "answer": answer}), flush=True)
    if answer.get("accept"):
        print(json.dumps({"closed_after_hold": closed_by_node(peer, args.hold)}), flush=True)
    return 0


def mode_malformed(args):
    me = Identity(name=args.name)
    peer, _ = handshake(args.host, args.port, me)
    answer = invite(peer, invitation=args.invitation)
    if not answer.get("accept"):
        raise RuntimeError(f"invitation declined: {answer}")
    print(json.dumps({"id": me.peer_id}), flush=True)
    if args.frame == "openReply":
        # The node offers us a file on its own channel; the answer's `accept` is a string.
        while True:
            kind, channel, _ = peer.frame()
            if kind == PING:
                peer.send(PONG)
            elif kind == OPEN:
                break
        peer.send(OPEN_REPLY, {"accept": "yes", "offset": 0}, channel)
    else:
        peer.send(OPEN, {"kind": "file", "path": "malformed.bin", "size": 4, "key": "00"}, 1)
        _, payload = peer.expect([OPEN_REPLY], 1)
        if not json.loads(payload).get("accept"):
            raise RuntimeError(f"the node refused the file: {payload!r}")
        if args.frame == "reset":
            peer.send(RESET, {"reason": 5, "code": "cancelled"}, 1)
        else:
            peer.send(START, {"offset": 0}, 1)
            peer.send(DATA, b"abcd", 1)
            peer.send(CLOSE, {"sha256": 5, "bytes": "four"}, 1)
    print(json.dumps({"sent": args.frame, "closed_by_node": closed_by_node(peer, args.hold)}), flush=True)
    return 0


def mode_sniff_tag(args):
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    sniffer.settimeout(15)
    print(json.dumps({"ready": True}), flush=True)
    while True:
        frame = sniffer.recv(65535)
        if len(frame) < 14 + 20 + 8 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
            continue
        ip = frame[14:]
        if ip[9] != 17:
            continue
        udp = ip[(ip[0] & 0x0F) * 4:]
        destination, length = struct.unpack("!HH", udp[2:6])
        if destination == args.port and length - 8 >= 32:
            datagram = udp[8:length]
            print(json.dumps({"tag": datagram[:8].hex(), "length": len(datagram)}), flush=True)
            return 0


def mode_forge(args):
    tag = bytes.fromhex(args.tag)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind(("0.0.0.0", 0))
    for number in range(args.count):
        # The tag of a real session, a sequence number never used, bytes sealed with no key.
        sequence = (1 << 40) + number
        sender.sendto(tag + struct.pack(">Q", sequence) + os.urandom(64), (args.host, args.port))
        if number % 50 == 49:
            time.sleep(0.05)  # paced a little: the point is what the node says, not its socket buffer
    address = f"{sender.getsockname()[0]}:{sender.getsockname()[1]}"
    print(json.dumps({"sent": args.count, "port": sender.getsockname()[1], "from": address}), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["big-hello", "sessions", "invite-as", "malformed", "sniff-tag", "forge"])
    parser.add_argument("rest", nargs="*")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--hold", type=float, default=5)
    parser.add_argument("--fill", type=int)
    parser.add_argument("--trickle", type=int, default=0)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--invitation", default="rogue1")
    parser.add_argument("--invite-timeout", type=float, default=30)
    parser.add_argument("--name", default="rogue")
    parser.add_argument("--tag")
    parser.add_argument("--frame", choices=["reset", "openReply", "close"], default="reset")
    args = parser.parse_args()
    if args.mode == "sniff-tag":
        args.port = int(args.rest[0])
        return mode_sniff_tag(args)
    args.host, args.port = args.rest[0], int(args.rest[1])
    return {"big-hello": mode_big_hello, "sessions": mode_sessions, "invite-as": mode_invite_as,
            "malformed": mode_malformed, "forge": mode_forge}[args.mode](args)


if __name__ == "__main__":
    run(main, "rogue_wire")
