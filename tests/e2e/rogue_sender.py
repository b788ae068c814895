#!/usr/bin/env python3
"""A hostile nearby peer for the file e2e tests (tests/e2e/files.sh): speaks the session protocol
(docs/protocol.md) in plaintext (the receiving node runs with `--encryption none`), gets invited in
with a fresh P-256 identity, then offers files on channels 1, 3, 5 … whose paths, hashes or sizes
lie. Needs the `cryptography` package.

    rogue_sender.py HOST PORT SPEC

SPEC is a JSON list of files: {"path": CLAIMED, "size": N, "mode": "ok" | "bad-sha" | "oversize" | "short"}.
  ok        announce N bytes, send N random bytes, close with their true SHA-256
  bad-sha   the same, but close with a wrong SHA-256
  oversize  announce N bytes, send N, then 100 more
  short     announce N bytes, send only "sent" of them (a key of the item), close with the SHA-256
            of what was sent, as if that were the file
Prints one JSON line per file: {"channel", "path", "mode", "size", "sha256" (of the N bytes sent),
"reply" (the openReply), "end" ({"frame": "close"|"reset", …the body})}. Exits 0 when every file got
an answer, 1 (with a reason on stderr) when the node broke the protocol or went silent.

Other hostile behaviours for tests/e2e/security.sh, chosen with --mode (SPEC is then ignored; pass "[]"):
  change-nonce  commit to one nonce in hello, reveal another in auth; prints {"refused": true} when
                the node closes the connection before answering an invitation (exit 0), else exit 1
  handshakes    --count N handshakes one after the other, each closed right after auth, no invitation;
                prints {"handshakes": N}
  idle          one handshake, then no invitation (pings answered); prints {"closed_after": seconds}
                when the node closes the link, or exits 1 after --hold seconds
  invite        one handshake and an invitation with --invite-timeout; prints {"answer": …} (or
                {"closed": true} when the node closed instead), then stays until the node closes or
                --hold seconds pass
  probe         two links: on the first, one doctor probe for an instance nobody publishes (the
                answer is printed: {"features": the node's hello features, "reply": …, "took": s}); on
                the second, two probes at once, which break the protocol ({"second_probe_closed": true}
                when the node closes the link without answering)
  flood         --count N TCP connections that send nothing, held for --hold seconds; prints
                {"opened": n, "closed_by_node": m}
"""
import argparse
import base64
import hashlib
import json
import os
import resource
import select
import socket
import struct
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

HELLO, AUTH, INVITE, ANSWER, MESSAGE, PING, PONG, GOODBYE = range(1, 9)
OPEN, OPEN_REPLY, START, DATA, WINDOW, CLOSE, RESET = range(0x10, 0x17)
PROBE, PROBE_REPLY = 0x09, 0x0A  # nearby doctor's question after the handshake (docs/protocol.md, 10)
DATAGRAMS = 0x20  # the node's datagram setup after `connected` (send --unreliable); not used here
NAMES = {HELLO: "hello", AUTH: "auth", ANSWER: "answer", GOODBYE: "goodbye", OPEN_REPLY: "openReply",
         CLOSE: "close", RESET: "reset", WINDOW: "window", PING: "ping", PONG: "pong", PROBE_REPLY: "probeReply"}


class Peer:
    def __init__(self, host, port, timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)

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
            if kind in (PONG, WINDOW, DATAGRAMS):
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


PROTOCOL_VERSION = 2


def transcript(role, client_key, server_key, client_commitment, server_commitment):
    data = b"nearby auth v2 " + role
    for part in (client_key, server_key, client_commitment, server_commitment):
        data += struct.pack(">I", len(part)) + part
    return data


def commitment(nonce):
    return hashlib.sha256(b"nearby nonce commitment v2" + nonce).digest()


class Identity:
    def __init__(self, name="rogue"):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.spki = self.key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.peer_id = base36(int.from_bytes(hashlib.sha256(self.spki).digest()[:8], "big"))
        self.name = name


def handshake(host, port, me, reveal_other_nonce=False):
    """Preamble, hello (committing to a nonce), auth (revealing it). Returns (peer, node's hello)."""
    nonce = os.urandom(32)
    peer = Peer(host, port)
    peer.sock.sendall(b"NBY1\x00")
    reply = peer.exact(5)
    if reply != b"NBY1\x00":
        raise RuntimeError(f"preamble answer {reply!r}, expected b'NBY1\\x00' (is the node running --encryption none?)")
    mine = commitment(nonce)
    hello = {"version": PROTOCOL_VERSION, "id": me.peer_id, "name": me.name, "key": base64.b64encode(me.spki).decode(),
             "commitment": base64.b64encode(mine).decode()}
    # ROGUE_FEATURES=a,b: the hello lists these features (tests/e2e/there.sh); by default none, as
    # the oldest nodes.
    if os.environ.get("ROGUE_FEATURES"):
        hello["features"] = os.environ["ROGUE_FEATURES"].split(",")
    peer.send(HELLO, hello)
    _, payload = peer.expect([HELLO])
    theirs = json.loads(payload)
    server_key, server_commitment = base64.b64decode(theirs["key"]), base64.b64decode(theirs["commitment"])
    signature = me.key.sign(transcript(b"c", me.spki, server_key, mine, server_commitment), ec.ECDSA(hashes.SHA256()))
    # A party in the middle would want to pick its nonce now, having seen the other side's: the
    # commitment it already sent says otherwise.
    revealed = os.urandom(32) if reveal_other_nonce else nonce
    peer.send(AUTH, {"nonce": base64.b64encode(revealed).decode(), "signature": base64.b64encode(signature).decode()})
    _, payload = peer.expect([AUTH])  # the node's nonce and proof
    node_nonce = base64.b64decode(json.loads(payload)["nonce"])
    if commitment(node_nonce) != server_commitment:
        raise RuntimeError("the node's nonce does not match its commitment")
    return peer, theirs


def invite(peer, timeout=30, invitation="rogue1"):
    peer.send(INVITE, {"invitation": invitation, "context": None, "timeout": timeout})
    _, payload = peer.expect([ANSWER])
    return json.loads(payload)


def closed_by_node(peer, seconds):
    """Waits up to `seconds` for the node to close the connection, answering pings; True if it did."""
    deadline = time.monotonic() + seconds
    peer.sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            peer.expect([GOODBYE])
            return True
        except socket.timeout:
            continue
        except (EOFError, OSError):
            return True
        except RuntimeError:
            return False
    return False


def join(host, port):
    """Connects in plaintext, proves a fresh identity and gets invited in: the session's Peer and
    the node's hello (rogue_flood.py uses this too)."""
    me = Identity()
    peer, theirs = handshake(host, port, me)
    answer = invite(peer)
    if not answer.get("accept"):
        raise RuntimeError(f"invitation declined: {answer}")
    print(json.dumps({"event": "connected", "id": me.peer_id, "node": {"id": theirs["id"], "name": theirs["name"]}}), flush=True)
    return peer, theirs


def mode_change_nonce(args):
    try:
        peer, _ = handshake(args.host, args.port, Identity(), reveal_other_nonce=True)
        answer = invite(peer)
    except (EOFError, OSError):
        print(json.dumps({"refused": True}), flush=True)
        return 0
    print(json.dumps({"refused": False, "answer": answer}), flush=True)
    return 1


def mode_handshakes(args):
    done = 0
    for _ in range(args.count):
        peer, _ = handshake(args.host, args.port, Identity())
        peer.sock.close()
        done += 1
    print(json.dumps({"handshakes": done}), flush=True)
    return 0


def mode_idle(args):
    peer, _ = handshake(args.host, args.port, Identity())
    started = time.monotonic()
    if closed_by_node(peer, args.hold):
        print(json.dumps({"closed_after": round(time.monotonic() - started, 3)}), flush=True)
        return 0
    print(f"rogue_sender: the node kept the uninvited link open for {args.hold} s", file=sys.stderr)
    return 1


def mode_invite(args):
    try:
        peer, _ = handshake(args.host, args.port, Identity(args.name))
        answer = invite(peer, timeout=args.invite_timeout, invitation=args.name[:32] or "rogue1")
    except (EOFError, OSError):
        print(json.dumps({"closed": True}), flush=True)
        return 0
    print(json.dumps({"answer": answer}), flush=True)
    if answer.get("accept"):
        closed_by_node(peer, args.hold)
    return 0


def mode_probe(args):
    peer, theirs = handshake(args.host, args.port, Identity())
    started = time.monotonic()
    peer.send(PROBE, {"instance": "rogue-probe-nobody-publishes"})
    peer.sock.settimeout(args.hold)
    _, payload = peer.expect([PROBE_REPLY])
    result = {"features": theirs.get("features"), "reply": json.loads(payload), "took": round(time.monotonic() - started, 3)}
    peer.sock.close()
    peer, _ = handshake(args.host, args.port, Identity())
    peer.send(PROBE, {"instance": "rogue-probe-1"})
    peer.send(PROBE, {"instance": "rogue-probe-2"})
    peer.sock.settimeout(args.hold)
    try:
        kind, payload = peer.expect([PROBE_REPLY, GOODBYE])
        result["second_probe_closed"] = False
        result["got"] = NAMES.get(kind, kind)
    except (EOFError, OSError):
        result["second_probe_closed"] = True
    print(json.dumps(result), flush=True)
    return 0


def mode_flood(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
    sockets = []
    for _ in range(args.count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex((args.host, args.port))
        sockets.append(sock)
    print(json.dumps({"opened": len(sockets)}), flush=True)
    deadline = time.monotonic() + args.hold
    closed = set()
    poller = select.poll()  # select() cannot watch descriptors above 1023
    by_fd = {sock.fileno(): sock for sock in sockets}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while time.monotonic() < deadline and len(closed) < len(sockets):
        for fd, _ in poller.poll(200):
            try:
                if by_fd[fd].recv(64):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            closed.add(fd)
            poller.unregister(fd)
    print(json.dumps({"opened": len(sockets), "closed_by_node": len(closed)}), flush=True)
    for sock in sockets:
        sock.close()
    return 0


def main():
    parser = argparse.ArgumentParser(description="a hostile nearby peer (see the module docstring)")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("spec", nargs="?", default="[]")
    parser.add_argument("--mode", default="files", choices=["files", "change-nonce", "handshakes", "idle", "invite", "flood", "probe"])
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--hold", type=float, default=10)
    parser.add_argument("--invite-timeout", type=float, default=30)
    parser.add_argument("--name", default="rogue")
    args = parser.parse_args()
    modes = {"change-nonce": mode_change_nonce, "handshakes": mode_handshakes, "idle": mode_idle,
             "invite": mode_invite, "flood": mode_flood, "probe": mode_probe}
    if args.mode in modes:
        return modes[args.mode](args)
    peer, _ = join(args.host, args.port)
    spec = json.loads(args.spec)

    for index, item in enumerate(spec):
        channel = 2 * index + 1  # the connecting side numbers its channels odd
        size, mode = int(item["size"]), item.get("mode", "ok")
        data = os.urandom(size)
        sha = hashlib.sha256(data).hexdigest()
        result = {"channel": channel, "path": item["path"], "mode": mode, "size": size, "sha256": sha}
        peer.send(OPEN, {"kind": "file", "path": item["path"], "size": size, "key": f"abcd{channel:04x}"}, channel)
        _, payload = peer.expect([OPEN_REPLY, RESET], channel)
        result["reply"] = json.loads(payload)
        if not result["reply"].get("accept"):
            print(json.dumps(result), flush=True)
            continue
        if result["reply"].get("accept"):
            peer.send(START, {"offset": 0}, channel)
            if mode == "short":
                data = data[:int(item["sent"])]
                sha = hashlib.sha256(data).hexdigest()
            for at in range(0, len(data), 64 << 10):
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
