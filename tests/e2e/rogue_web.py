#!/usr/bin/env python3
"""Clients a browser would never be, for tests/e2e/web.sh (raw sockets, bounded in count and time).

  rogue_web.py trickle HOST PORT N SECONDS   N connections sending a request head a byte at a time
  rogue_web.py guess HOST PORT N             N requests with guessed tokens: each must be the wrong link's 404
  rogue_web.py wrong URL                     wrong, missing and partial tokens on URL's host
  rogue_web.py names URL                     uploads whose file names try paths and escapes
  rogue_web.py liar URL                      a part larger than it declared; a body longer than declared
  rogue_web.py resume URL OUT CUT            GET, cut after CUT bytes; then Range for the rest
  rogue_web.py hold HOST PORT N SECONDS      N silent connections held open (prints when all are up)
  rogue_web.py probe HOST PORT               one connection: closed by the server within 5 s, or not
Prints one JSON object; exits non-zero when the server answered what it must not.
"""
import hashlib
import json
import os
import random
import socket
import string
import sys
import time
from urllib.parse import urlsplit


def connect(host, port, timeout=30):
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(s, limit=1 << 20):
    out = b""
    try:
        while len(out) < limit:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return out


WRONG_LINK_BODIES = set()


def bare_404(answer, token=""):
    """A wrong link's 404: the same short page for every wrong path (the first one seen is the
    reference), saying the link is wrong or expired, with no header that names what serves here
    and nothing of the token asked; the connection closes."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not lines or not lines[0].startswith(b"HTTP/1.1 404"):
        return False
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in (line.partition(b":") for line in lines[1:]))
    allowed = {b"connection", b"content-length", b"content-type", b"content-security-policy", b"x-content-type-options",
               b"referrer-policy", b"cache-control"}
    if set(headers) - allowed or headers.get(b"connection", b"").lower() != b"close":
        return False
    if headers.get(b"content-length") != str(len(body)).encode() or b"This link is wrong or has expired" not in body:
        return False
    if token and token[:8].encode() in body:
        return False
    WRONG_LINK_BODIES.add(body)
    return len(WRONG_LINK_BODIES) == 1


def trickle(host, port, n, seconds):
    n, seconds = int(n), float(seconds)
    sockets, refused = [], 0
    for _ in range(n):
        try:
            sockets.append(connect(host, port, timeout=5))
        except OSError:
            refused += 1
    opened = time.monotonic()
    request = b"GET /" + b"a" * 4000
    closed_at = {}
    position = 0
    while sockets and time.monotonic() - opened < seconds:
        for s in list(sockets):
            try:
                s.send(request[position:position + 1])
            except OSError:
                closed_at[id(s)] = time.monotonic() - opened
                sockets.remove(s)
                continue
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed_at[id(s)] = time.monotonic() - opened
                    sockets.remove(s)
            except BlockingIOError:
                pass
            except OSError:
                closed_at[id(s)] = time.monotonic() - opened
                sockets.remove(s)
            s.setblocking(True)
        position = (position + 1) % len(request)
        time.sleep(0.5)
    for s in sockets:
        s.close()
    print(json.dumps({"opened": n - refused, "refused": refused, "closed_by_server": len(closed_at),
                      "still_open": len(sockets), "latest_close_s": round(max(closed_at.values(), default=0), 1)}))


def guess(host, port, n):
    bad = 0
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    started = time.monotonic()
    for _ in range(int(n)):
        token = "".join(random.choice(alphabet) for _ in range(26))
        s = connect(host, port)
        s.sendall(f"GET /{token}/ HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        if not bare_404(read_all(s), token):
            bad += 1
        s.close()
    print(json.dumps({"guesses": int(n), "not_bare_404": bad, "seconds": round(time.monotonic() - started, 1)}))
    sys.exit(1 if bad else 0)


def wrong(url):
    parts = urlsplit(url)
    token = parts.path.strip("/")
    paths = ["/", "/index.html", f"/{token[:-1]}/", f"/{token}x/", f"/{token.upper()}/", f"/{token[:-1]}/0/x",
             f"/x/{token}/", f"/{token}", f"/{token}/../", f"/{token}/99/x", f"/{token}/upload"]
    results = {}
    for path in paths:
        s = connect(parts.hostname, parts.port)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
        answer = read_all(s)
        s.close()
        results[path.replace(token, "TOKEN")] = bare_404(answer, token)
    print(json.dumps({"bare_404": results}))
    sys.exit(0 if all(results.values()) else 1)


def multipart(parts, boundary="----rogue7MA4YWxkTrZu0gW"):
    body = b""
    for headers, data in parts:
        body += f"--{boundary}\r\n".encode() + headers + b"\r\n\r\n" + data + b"\r\n"
    return body + f"--{boundary}--\r\n".encode(), boundary


def post(url, body, boundary, length=None):
    parts = urlsplit(url)
    s = connect(parts.hostname, parts.port)
    head = (f"POST {parts.path}upload HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: text/plain\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    try:
        s.sendall(head.encode() + body)
    except OSError:
        pass  # the server refused before reading it all: its answer is still there to read
    answer = read_all(s)
    s.close()
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    return status, answer.partition(b"\r\n\r\n")[2].decode(errors="replace")


# (A name starting with '.' is refused unless --allow-dotfiles, and the form stops there:
# test_web_dotfiles_refused_unless_allowed; so none here does — \\. unquotes to '.'.)
NAMES = [
    b"../../escape-1.txt", b"/etc/escape-2.txt", b"..", b".", b"a/../../escape-3.txt", b"x..\\..\\escape-4.txt",
    b"red\x1b[31mtext.txt", b"bell\x07.txt", b"\xe2\x80\xaegnp.exe", b"tab\tname.txt", b"nul%00byte.txt",
    b"quote\\\"d.txt", b"con.txt", "caf\u00e9 \u2603.txt".encode(),
]


def names(url):
    parts = [(b'Content-Disposition: form-data; name="file"; filename="' + name + b'"\r\nContent-Type: text/plain',
              b"payload %d\n" % i) for i, name in enumerate(NAMES)]
    body, boundary = multipart(parts)
    status, text = post(url, body, boundary)
    print(json.dumps({"status": status, "answer": text, "sent": len(NAMES)}))


def liar(url):
    # A part that says 10 bytes and carries 100 000.
    body, boundary = multipart([(b'Content-Disposition: form-data; name="file"; filename="liar.bin"\r\nContent-Length: 10',
                                 b"x" * 100_000)])
    first = post(url, body, boundary)
    # A request that declares 1000 bytes and sends a part of 100 000 (the rest is no request).
    body, boundary = multipart([(b'Content-Disposition: form-data; name="file"; filename="short.bin"', b"y" * 100_000)])
    second = post(url, body, boundary, length=1000)
    # A body that declares more than the receiver takes (its quota): refused before it is read.
    third = post(url, b"", boundary, length=50_000_000)
    print(json.dumps({"part_larger_than_declared": first, "body_longer_than_declared": second, "too_large": third}))


def resume(url, out, cut):
    parts = urlsplit(url)
    cut = int(cut)
    s = connect(parts.hostname, parts.port, timeout=120)
    s.sendall(f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: rogue-resume\r\n\r\n".encode())
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += s.recv(65536)
    head, _, rest = buffer.partition(b"\r\n\r\n")
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    total = int(headers[b"Content-Length"])
    etag = headers.get(b"ETag", b"").decode()
    with open(out, "wb") as f:
        f.write(rest[:cut])
        while f.tell() < cut:
            chunk = s.recv(min(1 << 20, cut - f.tell()))
            if not chunk:
                break
            f.write(chunk)
        have = f.tell()
    s.close()  # interrupted, as a phone losing Wi-Fi
    s = connect(parts.hostname, parts.port, timeout=120)
    s.sendall(f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nRange: bytes={have}-\r\nIf-Range: {etag}\r\n"
              f"User-Agent: rogue-resume\r\n\r\n".encode())
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += s.recv(65536)
    head, _, rest = buffer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode()
    content_range = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-range")]
    with open(out, "ab") as f:
        f.write(rest)
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            f.write(chunk)
            if f.tell() >= total:
                break
    s.close()
    digest = hashlib.sha256()
    with open(out, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    print(json.dumps({"first_part": have, "total": total, "resumed_status": status,
                      "content_range": content_range[0].decode() if content_range else None,
                      "size": os.path.getsize(out), "sha256": digest.hexdigest()}))


def hold(host, port, n, seconds):
    """Holds N connections that send nothing: places in the server's admission table."""
    held = [connect(host, port) for _ in range(int(n))]
    print(json.dumps({"held": len(held)}), flush=True)
    time.sleep(float(seconds))
    for s in held:
        s.close()


def probe(host, port):
    """Connects and waits up to 5 s: a server that refused the place closes the connection at once."""
    try:
        s = connect(host, port, timeout=5)
        closed = s.recv(1) == b""
    except socket.timeout:
        closed = False
    except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
        closed = True
    print(json.dumps({"closed": closed}))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"trickle": trickle, "guess": guess, "wrong": wrong, "names": names, "liar": liar, "resume": resume,
     "hold": hold, "probe": probe}[mode](*args)
