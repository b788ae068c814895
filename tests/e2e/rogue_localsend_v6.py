#!/usr/bin/env python3
"""A LocalSend peer on IPv6 as the official app 1.18 is (localsend/localsend 1.18.2,
packages/core/src/multicast/{mod,socket}.rs and discovery/mod.rs), written from the app's source,
not from nearby's: one JSON line per thing it saw; runs SECONDS (default 40).

  rogue_localsend_v6.py peer IFACE ALIAS CERT KEY [SECONDS]
      Joins ff12::fd3a:e420 on IFACE's index (a socket on [::]:53317, IPv6 only, hops 1) and
      announces itself there every second (`announce: true`, as 1.18 still sends it); serves HTTPS
      on [::]:53317 (`/register` answered with its info, `/info`); answers every announcement it
      hears with POST /register to the announcer's scoped address (fe80::..%IFACE) and the port
      announced, its client certificate shown, the announcer's pinned to the fingerprint it claims.
      Lines: {"listening"}, {"heard": HOST, "alias", "announce"}, {"register": HOST, "status"},
      {"registered": HOST, "alias"} (a register it was sent).
  rogue_localsend_v6.py deaf IFACE ALIAS CERT KEY [SECONDS]
      The same without its HTTPS server: a register to it fails, so an answer can come only over UDP.
"""
import hashlib
import json
import socket
import ssl
import struct
import sys
import threading
import time

GROUP, PORT = "ff12::fd3a:e420", 53317
lock = threading.Lock()


def out(**fields):
    with lock:
        print(json.dumps(fields), flush=True)


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk or len(data) > 65536:
            return None, None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return method, target, body[:length]


def serve(ctx, info):
    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    listener.bind(("::", PORT))
    listener.listen(16)

    def one(raw, address):
        try:
            with ctx.wrap_socket(raw, server_side=True) as conn:
                conn.settimeout(5)
                method, target, body = read_request(conn)
                if method is None:
                    return
                if target.startswith("/api/localsend/v2/register"):
                    message = json.loads(body or b"{}")
                    out(registered=address[0], alias=message.get("alias"))
                answer = json.dumps(info).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(answer)).encode() + b"\r\nConnection: close\r\n\r\n" + answer)
        except (OSError, ValueError):
            pass

    while True:
        raw, address = listener.accept()
        threading.Thread(target=one, args=(raw, address), daemon=True).start()


def register(client, info, host, scope, message):
    """POST /register to an announcer, as discovery/mod.rs answer_announcement does."""
    status = None
    try:
        raw = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        raw.settimeout(3)
        raw.connect((host, int(message["port"]), 0, scope))
        with client.wrap_socket(raw) as conn:
            shown = hashlib.sha256(conn.getpeercert(binary_form=True)).hexdigest()
            if shown != str(message.get("fingerprint", "")).lower():
                status = "pin-mismatch"
            else:
                body = json.dumps(info).encode()
                conn.sendall((f"POST /api/localsend/v2/register HTTP/1.1\r\nHost: [{host}]\r\nContent-Type: application/json\r\n"
                              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
                answer = b""
                while chunk := conn.recv(65536):
                    answer += chunk
                status = int(answer.split(b" ", 2)[1])
    except (OSError, ValueError, KeyError, IndexError) as error:
        status = f"failed: {error}"
    out(register=host, status=status)


def main():
    mode, iface, alias, cert, key = sys.argv[1:6]
    seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 40
    index = socket.if_nametoindex(iface)
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    fingerprint = hashlib.sha256(der).hexdigest().upper()
    info = {"alias": alias, "version": "2.2", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": fingerprint, "port": PORT, "protocol": "https", "download": False}
    if mode == "peer":
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cert, key)
        threading.Thread(target=serve, args=(server, info), daemon=True).start()
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    client.load_cert_chain(cert, key)

    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::", PORT))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, socket.inet_pton(socket.AF_INET6, GROUP) + struct.pack("@I", index))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
    s.settimeout(0.2)
    out(listening=True, fingerprint=fingerprint)
    hello = json.dumps(dict(info, announce=True)).encode()
    end = time.time() + seconds
    next_announce = 0
    while time.time() < end:
        if time.time() >= next_announce:
            s.sendto(hello, (GROUP, PORT, 0, index))
            next_announce = time.time() + 1
        try:
            data, source = s.recvfrom(65536)
            message = json.loads(data)
        except (socket.timeout, ValueError):
            continue
        if not isinstance(message, dict) or str(message.get("fingerprint", "")).upper() == fingerprint:
            continue
        host, scope = source[0].split("%")[0], source[3]
        announce = bool(message.get("announce") or message.get("announcement"))
        out(heard=host, scope=scope, alias=message.get("alias"), announce=announce)
        if announce:
            threading.Thread(target=register, args=(client, info, host, scope, message), daemon=True).start()


if __name__ == "__main__":
    main()
