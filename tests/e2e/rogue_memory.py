#!/usr/bin/env python3
"""Hostile peers that try to make a node hold memory (tests/e2e/budget_memory.sh). Needs the
`cryptography` package (rogue_sender.py's identities and the TLS client certificate).

    rogue_memory.py messages HOST PORT --count N --messages M [--hold S]
        N sessions (plaintext: the node runs --auto-accept --encryption none), each a fresh
        identity; once all are in, each sends M messages of 1 MiB as fast as the node takes them,
        for at most --hold seconds. Prints {"progress": true, "sessions": n} once all are in, then
        {"sessions", "sent" (messages written whole), "cut" (sessions the node closed)}.

    rogue_memory.py hellos HOST PORT --sources IP,IP,... --per-source K --seconds S
        K connections from each source address at once, over TLS (the node requires it), each
        sending the header of a 1 MiB `hello` and as much of its body as the node takes; every
        connection the node closes is opened again, for S seconds. Prints {"progress": true} after
        the first round, then {"connections" (made), "tls" (that finished TLS), "closed_by_node"}.

    rogue_memory.py control SOCKET --count N --mib M [--hold S]
        N connections to a node's control socket (the same user), each sending M MiB without a
        newline, held --hold seconds. Prints {"progress": true, "opened": n} once written, then
        {"opened", "closed_by_node", "busy" (told the node serves as many clients as it does),
        "written" (bytes the node took, all connections)}.

    rogue_memory.py stalled HOST PORT --count N --messages M [--hold S]
        N sessions (plaintext, --auto-accept, no --save-dir) that read nothing: each offers files
        with long paths until the node's refusals fill the connection both ways (the node then
        waits to write its next answer, and handles nothing more of that link), then sends up to
        M messages of 1 MiB, which wait for the node above the frame decoder. Holds S seconds:
        {"progress": true, "sessions", "opens", "mib_sent"} once sent, then {"sessions", "cut"}.

    rogue_memory.py quiet-client SOCKET --peer PEER --seconds S [--hold H] [--pace SECONDS]
        One control client asking the node for `send --lines` to PEER that writes a short line at
        a time for S seconds and reads nothing of the node's answer (one `sent` event per batch),
        then holds H seconds: {"progress": true, "lines": n}. Then it ends its lines and reads
        everything to the end: {"lines", "events" (lines read, by event), "suppressed" (counted in
        `suppressed` events), "status"}.
"""
import argparse
import datetime
import json
import os
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rogue_sender import HELLO, MESSAGE, join, run  # noqa: E402

MIB = 1 << 20


def raise_fd_limit(want):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))


def mode_messages(args):
    raise_fd_limit(args.count + 64)
    peers = []
    for _ in range(args.count):
        peer, _ = join(args.host, args.port)
        peers.append(peer)
    print(json.dumps({"progress": True, "sessions": len(peers)}), flush=True)
    frame = struct.pack(">BII", MESSAGE, 0, MIB) + b"m" * MIB
    deadline = time.monotonic() + args.hold
    sent, cut = [0], [0]
    lock = threading.Lock()

    def flood(peer):
        done, was_cut = 0, False
        try:
            for _ in range(args.messages):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                peer.sock.settimeout(left)
                peer.sock.sendall(frame)
                done += 1
        except socket.timeout:
            pass
        except OSError:
            was_cut = True
        with lock:
            sent[0] += done
            cut[0] += was_cut

    threads = [threading.Thread(target=flood, args=(peer,), daemon=True) for peer in peers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 5)
    print(json.dumps({"sessions": len(peers), "sent": sent[0], "cut": cut[0]}), flush=True)
    for peer in peers:
        peer.sock.close()
    return 0


def client_context():
    """A TLS 1.3 client context with a fresh self-signed certificate (the node asks for one)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rogue")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)).sign(key, hashes.SHA256()))
    directory = tempfile.mkdtemp(prefix="rogue-memory-")
    cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert_path, key_path)
    return context


def mode_hellos(args):
    sources = [s for s in args.sources.split(",") if s] or [None]
    raise_fd_limit(len(sources) * args.per_source + 64)
    context = client_context()
    header = struct.pack(">BII", HELLO, 0, MIB)
    body = b"h" * (MIB - 1)  # never the whole frame
    deadline = time.monotonic() + args.seconds
    counts = {"connections": 0, "tls": 0, "closed_by_node": 0}
    lock = threading.Lock()
    first_round = threading.Barrier(len(sources) * args.per_source + 1)

    def attacker(source):
        first = True
        while time.monotonic() < deadline:
            made = tls = closed = 0
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.settimeout(5)
                if source:
                    sock.bind((source, 0))
                sock.connect((args.host, args.port))
                made = 1
                sock.sendall(b"NBY1\x02")  # encryption required
                if sock.recv(5) != b"NBY1\x01":
                    raise OSError("no TLS")
                tls_sock = context.wrap_socket(sock)
                tls = 1
                tls_sock.settimeout(max(0.1, deadline - time.monotonic()))
                tls_sock.sendall(header + body)
            except socket.timeout:
                pass
            except (OSError, ssl.SSLError):
                closed = made
            finally:
                try:
                    sock.close()
                except OSError:
                    pass
            with lock:
                counts["connections"] += made
                counts["tls"] += tls
                counts["closed_by_node"] += closed
            if first:
                first = False
                try:
                    first_round.wait(max(0.1, deadline - time.monotonic()))
                except threading.BrokenBarrierError:
                    pass
            if not made:
                time.sleep(0.05)

    threads = [threading.Thread(target=attacker, args=(source,), daemon=True)
               for source in sources for _ in range(args.per_source)]
    for thread in threads:
        thread.start()
    try:
        first_round.wait(args.seconds)
    except threading.BrokenBarrierError:
        pass
    with lock:
        print(json.dumps(dict(counts, progress=True)), flush=True)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 10)
    print(json.dumps(counts), flush=True)
    return 0


def mode_control(args):
    raise_fd_limit(args.count + 64)
    chunk = b"x" * (256 << 10)
    conns, written = [], 0
    for _ in range(args.count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(args.socket)
        sock.setblocking(False)
        conns.append(sock)
    # What the node says at once (to the clients over its cap), before it could be lost in a reset.
    answers = {sock: b"" for sock in conns}
    time.sleep(0.5)
    for sock in conns:
        try:
            answers[sock] += sock.recv(65536)[:4096]
        except (BlockingIOError, OSError):
            pass
    # Round robin, as far as each connection takes it.
    want = args.mib * MIB
    left = {sock: want for sock in conns}
    closed = set()
    stalled_since = time.monotonic()
    while left and time.monotonic() - stalled_since < 2:
        progress = False
        for sock in list(left):
            try:
                n = sock.send(chunk[:min(len(chunk), left[sock])])
                written += n
                left[sock] -= n
                progress = progress or n > 0
                if left[sock] == 0:
                    del left[sock]
            except BlockingIOError:
                pass
            except OSError:
                closed.add(sock)
                del left[sock]
        if progress:
            stalled_since = time.monotonic()
        else:
            time.sleep(0.02)
    print(json.dumps({"progress": True, "opened": len(conns)}), flush=True)
    # Every connection is read to its end, those whose send already failed too: on a loaded
    # machine the node's "clients at once" answer may come after the first read above and before
    # the send that found the connection closed, and it is still there to read.
    deadline = time.monotonic() + args.hold
    ended = set()
    while time.monotonic() < deadline:
        for sock in conns:
            if sock in ended:
                continue
            try:
                data = sock.recv(65536)
                answers[sock] += data[:4096]
                if not data:
                    closed.add(sock)
                    ended.add(sock)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(sock)
                ended.add(sock)
        time.sleep(0.1)
    busy = sum(1 for answer in answers.values() if b"clients at once" in answer)
    print(json.dumps({"opened": len(conns), "closed_by_node": len(closed), "busy": busy, "written": written}), flush=True)
    for sock in conns:
        sock.close()
    return 0


def mode_stalled(args):
    raise_fd_limit(args.count + 64)
    from rogue_sender import OPEN, PING  # noqa: E402
    peers = []
    for _ in range(args.count):
        peer, _ = join(args.host, args.port)
        peer.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        peers.append(peer)
    path = "x"
    opens, sent = [0], [0]
    lock = threading.Lock()
    message = struct.pack(">BII", MESSAGE, 0, MIB) + b"m" * MIB

    def stall(peer):
        channel, done_opens, done = 1, 0, 0
        try:
            # Pings the node answers at once, unread: its connection stops being writable. Then one
            # offer, whose refusal the node waits to write, handling nothing more of this link.
            peer.sock.settimeout(5)
            peer.sock.sendall(struct.pack(">BII", PING, 0, 0) * args.pings)
            time.sleep(1)
            peer.send(OPEN, {"kind": "file", "path": path, "size": 1, "key": ""}, channel)
            done_opens += 1
        except (socket.timeout, OSError):
            pass
        try:
            # In pieces, to count what the node took before it stopped reading.
            peer.sock.settimeout(3)
            for _ in range(args.messages):
                for at in range(0, len(message), 64 << 10):
                    peer.sock.sendall(message[at:at + (64 << 10)])
                    done += min(64 << 10, len(message) - at)
        except (socket.timeout, OSError):
            pass
        with lock:
            opens[0] += done_opens
            sent[0] += done

    threads = [threading.Thread(target=stall, args=(peer,), daemon=True) for peer in peers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"progress": True, "sessions": len(peers), "opens": opens[0], "mib_sent": round(sent[0] / MIB, 1)}), flush=True)
    time.sleep(args.hold)
    cut = 0
    for peer in peers:
        try:
            peer.sock.setblocking(False)
            if peer.sock.recv(1) == b"":
                cut += 1
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        peer.sock.close()
    print(json.dumps({"sessions": len(peers), "cut": cut}), flush=True)
    return 0


def mode_quiet_client(args):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args.socket)
    request = {"sendLines": {"peers": [args.peer], "all": False, "timeout": 20, "unreliable": False}}
    sock.sendall(json.dumps(request).encode() + b"\n")
    sock.settimeout(5)
    lines, end = 0, time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            sock.sendall(b"line %d of a client that reads nothing\n" % lines)
            lines += 1
            if args.pace:
                time.sleep(args.pace)
    except socket.timeout:
        pass
    print(json.dumps({"progress": True, "lines": lines}), flush=True)
    time.sleep(args.hold)
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(180)  # the node first sends every line it took on to the peer
    data = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    events, suppressed, status = {}, 0, None
    for line in data.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "status" in obj:
            status = obj["status"]
            continue
        kind = obj.get("event", "?")
        events[kind] = events.get(kind, 0) + 1
        if kind == "suppressed":
            suppressed += obj.get("count", 0)
    print(json.dumps({"lines": lines, "events": events, "suppressed": suppressed, "status": status}), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description="hostile peers that make a node hold memory (see the docstring)")
    parser.add_argument("mode", choices=["messages", "hellos", "control", "stalled", "quiet-client"])
    parser.add_argument("target", help="HOST (messages, hellos) or the control socket's path (control)")
    parser.add_argument("port", type=int, nargs="?", default=0)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--hold", type=float, default=20)
    parser.add_argument("--sources", default="")
    parser.add_argument("--per-source", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--mib", type=int, default=8)
    parser.add_argument("--peer", default="")
    parser.add_argument("--pings", type=int, default=20000)
    parser.add_argument("--pace", type=float, default=0, help="quiet-client: seconds between lines")
    args = parser.parse_args()
    args.host = args.socket = args.target
    return {"messages": mode_messages, "hellos": mode_hellos, "control": mode_control, "stalled": mode_stalled,
            "quiet-client": mode_quiet_client}[args.mode](args)


if __name__ == "__main__":
    run(main, "rogue_memory")
