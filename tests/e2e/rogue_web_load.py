#!/usr/bin/env python3
"""Clients that hold a web share's resources, for tests/e2e/web_listed.sh (bounded in count and time).

  rogue_web_load.py stall-uploads URL N MB SECONDS   N uploads of MB MB each (a body declared 1 MB
                                                     longer), then 1 byte every 2 s for SECONDS
  rogue_web_load.py stall-downloads URL N SECONDS [SOURCE...]  N downloads of URL (from the SOURCE
                                                     addresses in turn) that read 100 bytes and stop
  rogue_web_load.py empty-uploads URL N [FIRST]      N uploads of one empty file each (eFIRST.txt on,
                                                     FIRST 0 if not given), on one kept-alive
                                                     connection (200 at a time, pipelined): a new
                                                     connection whenever the server closes one
Prints one JSON line when every connection has sent (or read) its share, and one when it ends
(empty-uploads: one line, the count of each answer's status).
"""
import json
import socket
import sys
import time
from urllib.parse import urlsplit


def connect(url, source=None):
    parts = urlsplit(url)
    s = socket.create_connection((parts.hostname, parts.port), timeout=30, source_address=(source, 0) if source else None)
    return s, parts


def stall_uploads(url, n, mb, seconds):
    n, size, seconds = int(n), int(mb) << 20, float(seconds)
    boundary = "----stall9f3Kx"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"stall.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    sockets = []
    for _ in range(n):
        s, parts = connect(url + "upload")
        length = len(head) + size + (1 << 20)
        s.sendall((f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                   f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n\r\n").encode() + head)
        sockets.append(s)
    block = b"\x5a" * (1 << 20)
    sent = 0
    for s in sockets:
        try:
            for _ in range(size >> 20):
                s.sendall(block)
            sent += 1
        except OSError:
            pass
    print(json.dumps({"uploads": n, "sent_whole": sent}), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in sockets:
            try:
                s.send(b"\x5a")
            except OSError:
                pass
        time.sleep(2)
    print(json.dumps({"ended": True}), flush=True)


def stall_downloads(url, n, seconds, *sources):
    n, seconds = int(n), float(seconds)
    sockets = []
    for i in range(n):
        s, parts = connect(url, sources[i % len(sources)] if sources else None)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
        got = b""
        while len(got) < 100:
            chunk = s.recv(100)
            if not chunk:
                break
            got += chunk
        sockets.append(s)
    print(json.dumps({"downloads": len(sockets), "reading": False}), flush=True)
    time.sleep(seconds)
    print(json.dumps({"ended": True}), flush=True)


def read_answer(s, buffered):
    """One HTTP answer from `s` (after `buffered`): (status, connection closes, the bytes after it)."""
    while b"\r\n\r\n" not in buffered:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffered += chunk
    head, rest = buffered.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    return status, headers.get("connection", "").lower() == "close", rest[length:]


def empty_uploads(url, n, first=0):
    n, batch, first = int(n), 200, int(first)
    boundary = "----empty7Qz"
    statuses, done, connections = {}, 0, 0
    s = None
    while done < n:
        if s is None:
            s, parts = connect(url + "upload")
            connections += 1
            buffered = b""
        count = min(batch, n - done)
        requests = []
        for i in range(count):
            body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"e{first + done + i}.txt\"\r\n"
                    f"Content-Type: text/plain\r\n\r\n\r\n--{boundary}--\r\n").encode()
            requests.append((f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: text/plain\r\n"
                             f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
        try:
            s.sendall(b"".join(requests))
        except OSError:
            pass
        for _ in range(count):
            try:
                status, closes, buffered = read_answer(s, buffered)
            except (OSError, ConnectionError, ValueError, IndexError):
                s.close()
                s = None
                break
            statuses[status] = statuses.get(status, 0) + 1
            done += 1
            if closes:
                s.close()
                s = None
                break
    if s is not None:
        s.close()
    print(json.dumps({"uploads": done, "statuses": {str(k): v for k, v in sorted(statuses.items())}, "connections": connections}), flush=True)


if __name__ == "__main__":
    {"stall-uploads": stall_uploads, "stall-downloads": stall_downloads, "empty-uploads": empty_uploads}[sys.argv[1]](*sys.argv[2:])
