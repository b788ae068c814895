#!/usr/bin/env python3
"""A hostile HTTP client against the one HTTP layer (LocalSend's HTTPS), for tests/e2e/http_hostile.sh
(issue 58). Prints JSON lines.

  rogue_http.py upgrade HOST PORT MIB        GET /info asking to switch to h2c (Connection: Upgrade),
                                             then MIB MiB as fast as it goes; says the answer, how
                                             much went out and whether the node closed; ends
  rogue_http.py pipeline HOST PORT N SECONDS [SOURCES]
                                             N connections (from the comma-separated SOURCES in turn)
                                             pipelining GET /info and reading nothing for SECONDS
                                             ("opened" once all are open); ends
  rogue_http.py probe HOST PORT              each malformed request of issue 58's list on its own
                                             connection: how many answers came and whether the node
                                             closed it; ends
"""
import json
import socket
import ssl
import sys
import threading
import time

INFO = b"GET /api/localsend/v2/info HTTP/1.1\r\nHost: x\r\n"


def out(**fields):
    print(json.dumps(fields), flush=True)


def tls(host, port, timeout=10, source=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(socket.create_connection((host, port), timeout=timeout, source_address=(source, 0) if source else None))


def upgrade(host, port, mib):
    s = tls(host, port)
    s.sendall(INFO + b"Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        piece = s.recv(4096)
        if not piece:
            break
        head += piece
    lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    junk, sent, closed, started = b"\x00" * (1 << 16), 0, False, time.monotonic()
    s.settimeout(30)
    try:
        while sent < mib << 20:
            s.sendall(junk)
            sent += len(junk)
    except (OSError, ssl.SSLError):
        closed = True
    if not closed:
        try:
            s.settimeout(30)
            closed = s.recv(1) == b""
        except (OSError, ssl.SSLError):
            closed = True
    out(status=status, connection=fields.get("connection", ""), sent=sent, closed=closed,
        seconds=round(time.monotonic() - started, 2))


def pipeline(host, port, n, seconds, sources):
    stop = time.monotonic() + seconds
    counts = [0] * n
    opened = threading.Barrier(n + 1)

    def one(i):
        source = sources[i % len(sources)] if sources else None
        try:
            s = tls(host, port, source=source)
        except OSError:
            opened.wait()
            return
        opened.wait()
        burst = (INFO + b"\r\n") * 64
        s.settimeout(1)
        while time.monotonic() < stop:
            try:
                s.sendall(burst)
                counts[i] += 64
            except socket.timeout:
                continue
            except (OSError, ssl.SSLError):
                try:
                    s = tls(host, port, source=source)
                except OSError:
                    time.sleep(0.2)
        s.close()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    opened.wait()
    out(opened=n)
    for t in threads:
        t.join()
    out(sent=sum(counts))


PROBES = {
    "xchunked": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "negative-chunk": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
    "17-digit-chunk": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
    "crlf-in-extension": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"x\r\ny\"\r\nhello\r\n0\r\n\r\n",
    "trailer-length": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n",
    "1000-trailers": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
    + b"".join(b"X-T%d: v\r\n" % i for i in range(1000)) + b"\r\n",
    "60k-trailer": b"POST /api/localsend/v2/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: "
    + b"a" * 60000 + b"\r\n\r\n",
    "http2": b"GET /api/localsend/v2/info HTTP/2.0\r\nHost: x\r\n\r\n",
    "http09": b"GET /api/localsend/v2/info\r\n",
}


def probe(host, port):
    for name, request in PROBES.items():
        s = tls(host, port)
        try:
            s.sendall(request)
        except (OSError, ssl.SSLError):
            pass
        got, closed, started = b"", False, time.monotonic()
        s.settimeout(15)
        try:
            while True:
                piece = s.recv(65536)
                if not piece:
                    closed = True
                    break
                got += piece
        except (OSError, ssl.SSLError) as error:
            closed = not isinstance(error, socket.timeout)
        statuses = [line.split(b" ")[1].decode() for line in got.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]
        out(probe=name, answers=statuses, closed=closed, seconds=round(time.monotonic() - started, 2))
        s.close()


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "upgrade":
        upgrade(args[0], int(args[1]), int(args[2]))
    elif mode == "pipeline":
        pipeline(args[0], int(args[1]), int(args[2]), float(args[3]), args[4].split(",") if len(args) > 4 else [])
    elif mode == "probe":
        probe(args[0], int(args[1]))
    else:
        sys.exit(f"unknown mode {mode}")
