#!/usr/bin/env python3
"""A receiver that takes bundles (docs/protocol.md, "Bundles"; issue 43) and answers them wrongly,
for `nearby send-file --encryption none HOST:PORT DIR` (plaintext). It listens on PORT, plays the
server's side of the handshake with a hello that lists `bundle`, accepts the invitation and the
first bundle, reads its records, then:

    rogue_bundle_receiver.py PORT --case twice|unknown|close-early|bad-status

  twice        answers file 0 twice              unknown      answers a file the bundle does not have
  close-early  closes after answering file 0     bad-status   a result of status 9
It prints {"ready": true} once listening, then {"case", "files": records read, "closed_by_sender": bool}
(the sender ended the session within 10 s of the bad answer).
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rogue_bundle import cut_by_node  # noqa: E402  (the other side's end: it reads frames the same way)
from rogue_sender import (ANSWER, AUTH, CLOSE, DATA, HELLO, INVITE, OPEN, OPEN_REPLY, PING, PONG,  # noqa: E402
                          PROTOCOL_VERSION, Identity, Peer, commitment, run, transcript)


class Accepted(Peer):
    """The server's end of one connection."""
    def __init__(self, sock):  # noqa: super().__init__ connects; this one is accepted
        self.sock = sock


def serve_handshake(peer, me):
    if peer.exact(5)[:4] != b"NBY1":
        raise RuntimeError("not a nearby client")
    peer.sock.sendall(b"NBY1\x00")  # plaintext
    nonce = os.urandom(32)
    mine = commitment(nonce)
    _, payload = peer.expect([HELLO])
    theirs = json.loads(payload)
    peer.send(HELLO, {"version": PROTOCOL_VERSION, "id": me.peer_id, "name": me.name, "key": base64.b64encode(me.spki).decode(),
                      "commitment": base64.b64encode(mine).decode(), "features": ["probe", "bundle"]})
    client_key, client_commitment = base64.b64decode(theirs["key"]), base64.b64decode(theirs["commitment"])
    signature = me.key.sign(transcript(b"s", client_key, me.spki, client_commitment, mine), ec.ECDSA(hashes.SHA256()))
    peer.send(AUTH, {"nonce": base64.b64encode(nonce).decode(), "signature": base64.b64encode(signature).decode()})
    peer.expect([AUTH])


def result(index, status, code=b"", text=b""):
    return struct.pack(">IBB", index, status, len(code)) + code + struct.pack(">H", len(text)) + text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--case", default="twice")
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", args.port))
    listener.listen(1)
    print(json.dumps({"ready": True}), flush=True)
    listener.settimeout(60)
    sock, _ = listener.accept()
    sock.settimeout(20)
    peer = Accepted(sock)
    serve_handshake(peer, Identity(name="bad-receiver"))
    _, payload = peer.expect([INVITE])
    peer.send(ANSWER, {"invitation": json.loads(payload)["invitation"], "accept": True})
    _, channel, payload = next_of(peer, [OPEN])
    offer = json.loads(payload)
    if offer.get("kind") != "bundle":
        raise RuntimeError(f"expected a bundle, the sender offered {offer}")
    peer.send(OPEN_REPLY, {"accept": True, "offset": 0}, channel)
    data = b""
    while True:
        kind, got, payload = next_of(peer, [DATA, CLOSE])
        if got != channel:
            continue
        if kind == CLOSE:
            break
        data += payload
    files, at = 0, 0
    while at < len(data):  # count the records: path, key, size, bytes, digest
        path_length = struct.unpack(">H", data[at:at + 2])[0]
        at += 2 + path_length
        at += 1 + data[at]
        at += 8 + struct.unpack(">Q", data[at:at + 8])[0] + 32
        files += 1
    answers = {
        "twice": result(0, 0) + result(0, 0),
        "unknown": result(files + 5, 0),
        "close-early": result(0, 0),
        "bad-status": result(0, 9),
    }[args.case]
    peer.send(DATA, answers, channel)
    if args.case == "close-early":
        peer.send(CLOSE, {"sha256": "", "bytes": offer["size"]}, channel)
    print(json.dumps({"case": args.case, "files": files, "closed_by_sender": cut_by_node(peer, 10)}), flush=True)
    return 0


def next_of(peer, kinds):
    """The next frame of one of `kinds` (any channel), answering pings and passing over the rest."""
    while True:
        kind, channel, payload = peer.frame()
        if kind == PING:
            peer.send(PONG)
        elif kind in kinds:
            return kind, channel, payload


if __name__ == "__main__":
    run(main, "rogue_bundle_receiver")
