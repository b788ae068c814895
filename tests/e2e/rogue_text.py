#!/usr/bin/env python3
"""A hostile peer that writes to the terminal of the person running nearby, or floods their screen
(tests/e2e/hostile_text.sh). Plaintext sessions (the node runs with `--encryption none`).

    rogue_text.py client HOST PORT     prove an identity whose display name carries U+202E and U+200B,
                                       invite with an invitation ID and a context full of terminal
                                       escapes (OSC 52, OSC 0, CSI 2J, C1 CSI, DEL, bidi), send a
                                       message of them once accepted, then leave with a goodbye
                                       whose reason carries them too
    rogue_text.py server PORT          listen on PORT (one connection), complete the handshake as
                                       the listening side under that name, and decline the
                                       invitation with such a reason
    rogue_text.py flood HOST PORT N    N connections that are not nearby (an HTTP request, then
                                       close), 8 at a time
    rogue_text.py datagrams HOST PORT N   N UDP datagrams that are not nearby datagrams
    rogue_text.py violations HOST PORT N  N links, one after the other, each proving a fresh identity
                                       under that name and then sending a message before any
                                       invitation (a protocol violation: the node cuts the link)

The first line printed is JSON with the strings used ({"name", "invitation", "context", "text",
"reason"}), so the test can check that a JSON reader gets exactly them back. Exit 0 when it ran to
the end, 1 (with a reason on stderr) when something else broke.
"""
import base64
import json
import os
import socket
import sys
import threading

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from rogue_sender import (ANSWER, AUTH, GOODBYE, HELLO, INVITE, MESSAGE, PROTOCOL_VERSION, Identity, Peer,
                          commitment, handshake, closed_by_node, run, transcript)

ESC = "\x1b"
# A name the node keeps as sent (no control characters: the naming rule), yet reorders and hides text.
NAME = "rogue\u202egpj.exe\u200b"
HOSTILE = {
    "name": NAME,
    "invitation": ESC + "]0;pwned" + ESC + "\\\u202e\u200b",
    "context": ESC + "]52;c;cm0gLXJmIH4=\x07" + ESC + "[2J\x9b2J\x7f\u202e\u200b\ufeff",
    "text": "hi" + ESC + "[2J" + ESC + "]0;title\x07\x9b31m\x7f\u202e\u200b",
    "reason": "bye" + ESC + "]52;c;ZXZpbA==\x07" + ESC + "[2J\x9b2J\x7f\u202e\u200b",
}


def mode_client(host, port):
    print(json.dumps(HOSTILE), flush=True)
    peer, _ = handshake(host, port, Identity(NAME))
    peer.send(INVITE, {"invitation": HOSTILE["invitation"], "context": HOSTILE["context"], "timeout": 10})
    _, payload = peer.expect([ANSWER])
    answer = json.loads(payload)
    print(json.dumps({"answer": answer}), flush=True)
    if answer.get("accept"):
        peer.send(MESSAGE, HOSTILE["text"].encode())
    peer.send(GOODBYE, {"reason": HOSTILE["reason"]})
    # Stay (answering pings) until the node closes: a close of ours could race our goodbye.
    closed_by_node(peer, 5)
    return 0


def mode_server(port):
    """The listening side of docs/protocol.md 1 and 3, then a declined invitation."""
    print(json.dumps(HOSTILE), flush=True)
    me = Identity(NAME)
    listener = socket.create_server(("0.0.0.0", port))
    print(json.dumps({"listening": port}), flush=True)
    sock, _ = listener.accept()
    listener.close()
    peer = Peer.__new__(Peer)
    peer.sock = sock
    sock.settimeout(10)
    if peer.exact(5)[:4] != b"NBY1":
        raise RuntimeError("not a nearby client")
    sock.sendall(b"NBY1\x00")
    nonce = os.urandom(32)
    mine = commitment(nonce)
    peer.send(HELLO, {"version": PROTOCOL_VERSION, "id": me.peer_id, "name": me.name,
                      "key": base64.b64encode(me.spki).decode(), "commitment": base64.b64encode(mine).decode()})
    _, payload = peer.expect([HELLO])
    theirs = json.loads(payload)
    client_key, client_commitment = base64.b64decode(theirs["key"]), base64.b64decode(theirs["commitment"])
    signature = me.key.sign(transcript(b"s", client_key, me.spki, client_commitment, mine), ec.ECDSA(hashes.SHA256()))
    _, payload = peer.expect([AUTH])
    peer.send(AUTH, {"nonce": base64.b64encode(nonce).decode(), "signature": base64.b64encode(signature).decode()})
    _, payload = peer.expect([INVITE])
    invitation = json.loads(payload)["invitation"]
    peer.send(ANSWER, {"invitation": invitation, "accept": False, "reason": HOSTILE["reason"]})
    print(json.dumps({"declined": invitation}), flush=True)
    closed_by_node(peer, 5)
    return 0


def mode_flood(host, port, count):
    done = [0, 0]  # tried, sent their request
    lock = threading.Lock()

    def worker(share):
        for _ in range(share):
            sent = 0
            try:
                with socket.create_connection((host, port), timeout=5) as sock:
                    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    sent = 1
                    sock.shutdown(socket.SHUT_WR)
                    while sock.recv(4096):
                        pass
            except OSError:
                pass
            with lock:
                done[0] += 1
                done[1] += sent

    workers = [threading.Thread(target=worker, args=(count // 8 + (1 if i < count % 8 else 0),)) for i in range(8)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    print(json.dumps({"connections": done[0], "sent": done[1]}), flush=True)
    return 0


def mode_datagrams(host, port, count):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for index in range(count):
            sock.sendto(b"not nearby " + index.to_bytes(4, "big"), (host, port))
    print(json.dumps({"datagrams": count}), flush=True)
    return 0


def mode_violations(host, port, count):
    cut = 0
    for _ in range(count):
        peer, _ = handshake(host, port, Identity(NAME))
        peer.send(MESSAGE, HOSTILE["text"].encode())
        if closed_by_node(peer, 5):
            cut += 1
        peer.sock.close()
    print(json.dumps({"links": count, "cut": cut}), flush=True)
    return 0


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "client":
        return mode_client(args[0], int(args[1]))
    if mode == "server":
        return mode_server(int(args[0]))
    if mode == "flood":
        return mode_flood(args[0], int(args[1]), int(args[2]))
    if mode == "datagrams":
        return mode_datagrams(args[0], int(args[1]), int(args[2]))
    if mode == "violations":
        return mode_violations(args[0], int(args[1]), int(args[2]))
    raise RuntimeError(f"unknown mode {mode}")


if __name__ == "__main__":
    run(main, "rogue_text")
