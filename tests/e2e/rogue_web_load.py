#!/usr/bin/env python3
"""Clients that hold a web share's resources, for tests/e2e/web_listed.sh (bounded in count and time).

  rogue_web_load.py stall-uploads URL N MB SECONDS   N uploads of MB MB each (a body declared 1 MB
                                                     longer), then 1 byte every 2 s for SECONDS
  rogue_web_load.py stall-downloads URL N SECONDS [SOURCE...]  N downloads of URL (from the SOURCE
                                                     addresses in turn) that read 100 bytes and stop
Prints one JSON line when every connection has sent (or read) its share, and one when it ends.
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


if __name__ == "__main__":
    {"stall-uploads": stall_uploads, "stall-downloads": stall_downloads}[sys.argv[1]](*sys.argv[2:])
