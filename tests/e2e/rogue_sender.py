#!/usr/bin/env python3
"""A hostile nearby peer for the file e2e tests (tests/e2e/files.sh): speaks the session protocol
(docs/protocol.md) in plaintext (the receiving node runs with `--encryption none`), gets invited in
with a fresh P-256 identity, then offers files on channels 1, 3, 5 … whose paths, hashes or sizes
lie. Needs the `cryptography` package.

    rogue_sender.py HOST PORT SPEC

SPEC is a JSON list of files: {"path": CLAIMED, "size": N, "mode": "ok" | "bad-sha" | "oversize"}.
  ok        announce N bytes, send N random bytes, close with their true SHA-256
  bad-sha   the same, but close with a wrong SHA-256
  oversize  announce N bytes, send N, then 100 more
Prints one JSON line per file: {"channel", "path", "mode", "size", "sha256" (of the N bytes sent),
"reply" (the openReply), "end" ({"frame": "close"|"reset", …the body})}. Exits 0 when every file got
an answer, 1 (with a reason on stderr) when the node broke the protocol or went silent.
"""
import base64
import hashlib
import json
import os
import socket
import struct
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

HELLO, AUTH, INVITE, ANSWER, MESSAGE, PING, PONG, GOODBYE = range(1, 9)
OPEN, OPEN_REPLY, START, DATA, WINDOW, CLOSE, RESET = range(0x10, 0x17)
NAMES = {HELLO: "hello", AUTH: "auth", ANSWER: "answer", GOODBYE: "goodbye", OPEN_REPLY: "openReply",
         CLOSE: "close", RESET: "reset", WINDOW: "window", PING: "ping", PONG: "pong"}


class Peer:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)

    def exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError(f"the node closed the connection ({len(data)} of {n} bytes read)")
            data += chunk
        return data

    def send(self, kind, payload=b"", channel=0):
        if isinstance(payload, (dict, list)):
            payload = json.dumps(payload).encode()
        self.sock.sendall(struct.pack(">BII", kind, channel, len(payload)) + payload)

    def frame(self):
        kind, channel, length = struct.unpack(">BII", self.exact(9))
        return kind, channel, self.exact(length)

    def expect(self, kinds, channel=None):
        """The next frame of one of `kinds` (on `channel`), answering pings and skipping credit."""
        while True:
            kind, got_channel, payload = self.frame()
            if kind == PING:
                self.send(PONG)
                continue
            if kind in (PONG, WINDOW):
                continue
            if kind in kinds and (channel is None or channel == got_channel):
                return kind, payload
            raise RuntimeError(f"unexpected {NAMES.get(kind, hex(kind))} frame on channel {got_channel}: {payload[:200]!r}")


def base36(value, width=13):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = digits[digit] + out
        if value == 0:
            break
    return out.rjust(width, "0")


def transcript(role, client_key, server_key, client_nonce, server_nonce):
    data = b"nearby auth v1 " + role
    for part in (client_key, server_key, client_nonce, server_nonce):
        data += struct.pack(">I", len(part)) + part
    return data


def join(host, port):
    """Connects in plaintext, proves a fresh identity and gets invited in: the session's Peer and
    the node's hello."""
    key = ec.generate_private_key(ec.SECP256R1())
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    peer_id = base36(int.from_bytes(hashlib.sha256(spki).digest()[:8], "big"))
    nonce = os.urandom(32)

    peer = Peer(host, port)
    peer.sock.sendall(b"NBY1\x00")
    reply = peer.exact(5)
    if reply != b"NBY1\x00":
        raise RuntimeError(f"preamble answer {reply!r}, expected b'NBY1\\x00' (is the node running --encryption none?)")

    peer.send(HELLO, {"version": 1, "id": peer_id, "name": "rogue", "key": base64.b64encode(spki).decode(),
                      "nonce": base64.b64encode(nonce).decode()})
    _, payload = peer.expect([HELLO])
    theirs = json.loads(payload)
    server_key, server_nonce = base64.b64decode(theirs["key"]), base64.b64decode(theirs["nonce"])
    signature = key.sign(transcript(b"c", spki, server_key, nonce, server_nonce), ec.ECDSA(hashes.SHA256()))
    peer.send(AUTH, {"signature": base64.b64encode(signature).decode()})
    peer.expect([AUTH])  # the node's proof; not checked here

    peer.send(INVITE, {"invitation": "rogue1", "context": None, "timeout": 30})
    _, payload = peer.expect([ANSWER])
    answer = json.loads(payload)
    if not answer.get("accept"):
        raise RuntimeError(f"invitation declined: {answer}")
    print(json.dumps({"event": "connected", "id": peer_id, "node": {"id": theirs["id"], "name": theirs["name"]}}), flush=True)
    return peer, theirs


def main():
    host, port, spec = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    peer, _ = join(host, port)

    for index, item in enumerate(spec):
        channel = 2 * index + 1  # the connecting side numbers its channels odd
        size, mode = int(item["size"]), item.get("mode", "ok")
        data = os.urandom(size)
        sha = hashlib.sha256(data).hexdigest()
        result = {"channel": channel, "path": item["path"], "mode": mode, "size": size, "sha256": sha}
        peer.send(OPEN, {"kind": "file", "path": item["path"], "size": size, "key": f"abcd{channel:04x}"}, channel)
        _, payload = peer.expect([OPEN_REPLY, RESET], channel)
        result["reply"] = json.loads(payload)
        if result["reply"].get("accept"):
            peer.send(START, {"offset": 0}, channel)
            for at in range(0, size, 64 << 10):
                peer.send(DATA, data[at:at + (64 << 10)], channel)
            if mode == "oversize":
                peer.send(DATA, os.urandom(100), channel)
            else:
                claimed = hashlib.sha256(b"not " + data).hexdigest() if mode == "bad-sha" else sha
                peer.send(CLOSE, {"sha256": claimed, "bytes": size}, channel)
            kind, payload = peer.expect([CLOSE, RESET], channel)
            result["end"] = dict(json.loads(payload), frame=NAMES[kind])
        print(json.dumps(result), flush=True)

    peer.send(GOODBYE, {"reason": "rogue done"})
    peer.sock.shutdown(socket.SHUT_WR)
    try:
        while peer.sock.recv(65536):
            pass
    except OSError:
        pass
    return 0


def run(entry, name):
    """Runs a test tool's main: its status, or 1 with what broke on stderr."""
    try:
        sys.exit(entry())
    except Exception as error:  # noqa: BLE001 — a test tool: say what broke, exit 1
        print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run(main, "rogue_sender")
