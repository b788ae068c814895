#!/usr/bin/env python3
"""Hostile strangers against a receiving `nearby advertise --localsend --auto-accept`, for
tests/e2e/localsend_strangers.sh (issue 39's measured failures). Each runs until killed unless said
otherwise, and prints JSON lines.

  rogue_localsend_stranger.py trickle HOST PORT N     N TLS connections, each trickling a request head
                                                     one byte a second, reopened when closed
  rogue_localsend_stranger.py hold HOST PORT N        N TLS connections held silent, reopened the
                                                     moment they are closed
  rogue_localsend_stranger.py half-hello HOST PORT N  N TCP connections that send half a ClientHello
  rogue_localsend_stranger.py monopoly HOST PORT SECONDS
                                                     prepare-upload of 60 one-byte files, then one
                                                     upload every SECONDS (a session kept alive)
  rogue_localsend_stranger.py terabyte HOST PORT      prepare-upload of a 1 TB file; if accepted,
                                                     uploads as fast as it can for 2 s; ends
  rogue_localsend_stranger.py slow-upload HOST PORT BYTES
                                                     prepare-upload of BYTES, then uploads them at
                                                     ~4 MB/s ("started" once 1 MB is in)
  rogue_localsend_stranger.py strict CERT KEY FILE    an official-like sender: hears the receiver's
                                                     announcement, pins its certificate to the
                                                     fingerprint *as written* (the official app's
                                                     uppercase), then sends FILE; prints the status; ends
  rogue_localsend_stranger.py decoys N                answers every announcement it hears with N fake
                                                     devices (multicast), for 60 s
  rogue_localsend_stranger.py forge VICTIM PORT N     N announcements whose IP source is VICTIM (raw
                                                     socket), naming PORT; ends
"""
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the tests
from rogue_localsend import listen  # noqa: E402

GROUP, MPORT = "224.0.0.167", 53317
API = "/api/localsend/v2"
INFO = {"alias": "Stranger", "version": "2.1", "deviceModel": "rogue", "deviceType": "desktop",
        "fingerprint": "5" * 64, "port": 53317, "protocol": "https", "download": False}


def out(**fields):
    print(json.dumps(fields), flush=True)


def tls(host, port, cert=None, timeout=10):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(*cert)
    return ctx.wrap_socket(socket.create_connection((host, port), timeout=timeout))


def request(host, port, path, body=b"", cert=None):
    try:
        with tls(host, port, cert) as s:
            s.sendall((f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError as error:
        return f"failed: {error}", b""
    if not data:
        return "closed", b""
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[-1]


def prepare(host, port, files, info=INFO, cert=None):
    status, body = request(host, port, API + "/prepare-upload", json.dumps({"info": info, "files": files}).encode(), cert)
    return status, (json.loads(body) if status == 200 else body.decode(errors="replace"))


def keep(n, one):
    """Runs `one` in n threads, each again as soon as it returns (the connection closed)."""
    opened = [0]
    go = threading.Event()

    def loop():
        go.wait()  # every thread made first: 300 reconnecting ones starve the one making them
        while True:
            try:
                opened[0] += 1
                one()
            except OSError:
                pass
            time.sleep(0.2)
    threading.stack_size(256 * 1024)
    for _ in range(n):
        threading.Thread(target=loop, daemon=True).start()
    go.set()
    out(started=n)
    while True:
        time.sleep(5)
        out(opened=opened[0])


def trickle(host, port):
    with tls(host, port) as s:
        for byte in f"POST {API}/prepare-upload HTTP/1.1\r\nHost: x\r\nX-Pad: " .encode() + b"p" * 100000:
            s.send(bytes([byte]))
            time.sleep(1)


def hold(host, port):
    with tls(host, port) as s:
        s.recv(1)


def half_hello(host, port):
    # The first 60 bytes of a TLS 1.2 ClientHello record announcing 512 bytes.
    with socket.create_connection((host, port), timeout=600) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(49))
        s.recv(1)


def kept_idle(host, port):
    """Two requests on one kept-alive connection, then silence: how long until the node closes it."""
    with tls(host, port, timeout=120) as s:
        answers, kept, data = [], [], b""
        for _ in range(2):
            s.sendall(f"GET {API}/info HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n".encode())
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    out(answers=answers, closed="before an answer")
                    return
                data += chunk
            head, data = data.split(b"\r\n\r\n", 1)
            lines = head.decode(errors="replace").split("\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(fields.get("content-length", "0"))
            while len(data) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            data = data[length:]
            answers.append(int(lines[0].split(" ", 2)[1]))
            kept.append(fields.get("connection", ""))
        idle = time.monotonic()
        try:
            closed = s.recv(1) == b""
        except OSError:
            closed = True
        out(answers=answers, kept=kept, closed=closed, closed_after=round(time.monotonic() - idle, 1))


def monopoly(host, port, every):
    files = {f"m{i}": {"id": f"m{i}", "fileName": f"m{i}.bin", "size": 1, "fileType": "application/octet-stream"} for i in range(60)}
    status, answer = prepare(host, port, files)
    out(prepare=status)
    if status != 200:
        return
    for i in range(60):
        status, _ = request(host, port, f"{API}/upload?sessionId={answer['sessionId']}&fileId=m{i}&token={answer['files'][f'm{i}']}", b"x")
        out(upload=i, status=status)
        time.sleep(every)


def terabyte(host, port):
    status, answer = prepare(host, port, {"t": {"id": "t", "fileName": "tera.bin", "size": 1 << 40, "fileType": "application/octet-stream"}})
    out(prepare=status, said=answer if status != 200 else None)
    if status != 200:
        return
    sent = 0
    try:
        with tls(host, port) as s:
            s.sendall((f"POST {API}/upload?sessionId={answer['sessionId']}&fileId=t&token={answer['files']['t']} HTTP/1.1\r\n"
                       f"Host: {host}\r\nContent-Length: {1 << 40}\r\n\r\n").encode())
            end = time.time() + 2
            block = b"\0" * (1 << 20)
            while time.time() < end:
                s.sendall(block)
                sent += len(block)
    except OSError:
        pass
    out(sent=sent)


def slow_upload(host, port, size):
    status, answer = prepare(host, port, {"b": {"id": "b", "fileName": "tera.bin", "size": size, "fileType": "application/octet-stream"}})
    out(prepare=status)
    with tls(host, port) as s:
        s.sendall((f"POST {API}/upload?sessionId={answer['sessionId']}&fileId=b&token={answer['files']['b']} HTTP/1.1\r\n"
                   f"Host: {host}\r\nContent-Length: {size}\r\n\r\n").encode())
        sent, block = 0, b"\1" * 65536
        while sent < size:
            s.sendall(block[:size - sent])
            sent += min(len(block), size - sent)
            if sent >= 1 << 20 and sent - len(block) < 1 << 20:
                out(started=sent)
            time.sleep(0.016)


def strict(cert, key, path):
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    mine = hashlib.sha256(der).hexdigest().upper()
    info = dict(INFO, alias="Strict Peer", version="2.2", fingerprint=mine)
    for host, message in listen(30):
        if message.get("fingerprint") == mine or "port" not in message:
            continue
        port = int(message["port"])
        with tls(host, port, (cert, key)) as c:
            shown = hashlib.sha256(c.getpeercert(binary_form=True)).hexdigest().upper()
        # As written, no case folding: the official app's own fingerprint is uppercase.
        if shown != message["fingerprint"]:
            out(status="fingerprint-mismatch", announced=message["fingerprint"], shown=shown)
            return
        content = open(path, "rb").read()
        files = {"s": {"id": "s", "fileName": os.path.basename(path), "size": len(content), "fileType": "application/octet-stream",
                       "sha256": hashlib.sha256(content).hexdigest()}}
        status, answer = prepare(host, port, files, info, (cert, key))
        if status != 200:
            out(status=status)
            return
        status, _ = request(host, port, f"{API}/upload?sessionId={answer['sessionId']}&fileId=s&token={answer['files']['s']}", content, (cert, key))
        out(status=status)
        return
    out(status="no-announcement")


def decoys(n):
    send = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    send.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    bursts = 0
    for _, message in listen(60, ready=lambda: out(listening=True)):
        if message.get("deviceModel") == "decoy":
            continue
        for i in range(n):
            decoy = dict(INFO, alias=f"decoy-{bursts}-{i}", deviceModel="decoy", fingerprint=f"{bursts * 1000 + i:064X}", announce=False)
            send.sendto(json.dumps(decoy).encode(), (GROUP, MPORT))
        bursts += 1
        out(bursts=bursts)


def checksum(data):
    total = sum(struct.unpack(f"!{len(data) // 2}H", data + (b"\0" if len(data) % 2 else b"")))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def forge(victim, port, n):
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    for i in range(n):
        payload = json.dumps(dict(INFO, alias=f"forged-{i}", fingerprint=f"{i:064X}", port=port, announce=True)).encode()
        udp = struct.pack("!HHHH", MPORT, MPORT, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 1, socket.IPPROTO_UDP, 0,
                         socket.inet_aton(victim), socket.inet_aton(GROUP))
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        raw.sendto(ip + udp, (GROUP, 0))
        if i % 100 == 99:
            time.sleep(0.01)
    out(forged=n)


if __name__ == "__main__":
    case, args = sys.argv[1], sys.argv[2:]
    if case in ("trickle", "hold", "half-hello"):
        host, port, n = args[0], int(args[1]), int(args[2])
        one = {"trickle": trickle, "hold": hold, "half-hello": half_hello}[case]
        keep(n, lambda: one(host, port))
    elif case == "monopoly":
        monopoly(args[0], int(args[1]), float(args[2]))
    elif case == "kept-idle":
        kept_idle(args[0], int(args[1]))
    elif case == "terabyte":
        terabyte(args[0], int(args[1]))
    elif case == "slow-upload":
        slow_upload(args[0], int(args[1]), int(args[2]))
    elif case == "strict":
        strict(args[0], args[1], args[2])
    elif case == "decoys":
        decoys(int(args[0]))
    elif case == "forge":
        forge(args[0], int(args[1]), int(args[2]))
