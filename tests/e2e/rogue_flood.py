#!/usr/bin/env python3
"""A hostile nearby peer that tries to make a node hold memory or descriptors (tests/e2e/bounds.sh).
Joins a session like rogue_sender.py (plaintext: the node runs with `--encryption none`), then:

    rogue_flood.py HOST PORT stream-unread MIB   open a stream nobody listens for and send MIB MiB
                                                  on it at once, without waiting for an answer
    rogue_flood.py HOST PORT stream-past-window MIB
                                                  open a stream, wait until it is accepted, then
                                                  send MIB MiB ignoring the window
    rogue_flood.py HOST PORT channels N [HOLD]   offer N files and never start any of them; then
                                                  stay connected HOLD seconds (default 0)

Prints one JSON line: {"mode", "sent" (bytes or offers), "accepted", "refused", "cut" (the node
closed the connection), "error" (the node's last words, if any)}. Exit 0 when it ran to the end or
was cut off, 1 when something else broke.
"""
import json
import socket
import sys

from rogue_sender import DATA, OPEN, OPEN_REPLY, RESET, join, run

CHUNK = 1 << 20


def flood(peer, channel, mib):
    payload = b"\x00" * CHUNK
    header = bytes([DATA]) + channel.to_bytes(4, "big") + CHUNK.to_bytes(4, "big")
    sent = 0
    for _ in range(mib):
        peer.sock.sendall(header + payload)
        sent += CHUNK
    return sent


def main():
    host, port, mode, amount = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    peer, _ = join(host, port)
    result = {"mode": mode, "sent": 0, "accepted": 0, "refused": 0, "cut": False}
    try:
        if mode == "stream-unread":
            peer.send(OPEN, {"kind": "stream", "path": "flood", "size": 0, "key": ""}, 1)
            result["sent"] = flood(peer, 1, amount)
        elif mode == "stream-past-window":
            peer.send(OPEN, {"kind": "stream", "path": "flood", "size": 0, "key": ""}, 1)
            _, payload = peer.expect([OPEN_REPLY], 1)
            if not json.loads(payload).get("accept"):
                raise RuntimeError(f"the stream was refused: {payload!r}")
            result["accepted"] = 1
            result["sent"] = flood(peer, 1, amount)
        elif mode == "channels":
            for index in range(amount):
                channel = 2 * index + 1
                peer.send(OPEN, {"kind": "file", "path": f"offer-{index}.bin", "size": 1 << 20,
                                 "key": f"{channel:032x}"}, channel)
                result["sent"] += 1
            for index in range(amount):
                kind, payload = peer.expect([OPEN_REPLY, RESET], 2 * index + 1)
                if json.loads(payload).get("accept"):
                    result["accepted"] += 1
                else:
                    result["refused"] += 1
            if len(sys.argv) > 5:
                # Say how it went now, then hold the offers open (answering pings) while others work.
                print(json.dumps(dict(result, holding=True)), flush=True)
                peer.sock.settimeout(float(sys.argv[5]))
                try:
                    while True:
                        peer.expect([])
                except socket.timeout:
                    pass
        else:
            raise RuntimeError(f"unknown mode {mode}")
        peer.sock.shutdown(socket.SHUT_WR)
        peer.sock.settimeout(10)
        while peer.sock.recv(65536):
            pass
    except (ConnectionError, EOFError, BrokenPipeError, socket.timeout) as error:
        result["cut"] = True
        result["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    run(main, "rogue_flood")
