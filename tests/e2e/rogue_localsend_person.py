#!/usr/bin/env python3
"""A LocalSend phone with a person holding it (issue 59), written from the official app's source
(localsend/localsend 1.18: packages/core/src/discovery/mod.rs, send_provider.dart,
receive_controller.dart), not from nearby's. One JSON line per thing it saw.

  rogue_localsend_person.py phone ALIAS PORT CERT KEY DIR [OPTIONS]
      Never announces and never answers over UDP: every announcement heard on 224.0.0.167:53317 is
      answered only by POST /register to the port it names, over a connection then kept open and
      idle, as the app's HTTP client pools it. Serves HTTPS on PORT (its certificate CERT): info,
      register, prepare-upload, upload, cancel. Each upload is stored in DIR.
      --answer-after S   the person taps Accept S seconds after the offer arrives (default 0)
      --take N           ... and ticks only the first N files, by name (default: all)
      --require-cert PEM the TLS server requires a client certificate, as 1.18's does
                         (common/client_cert_verifier.rs takes any self-signed one; Python's ssl
                         cannot, so PEM, the sender's own, is the one it takes)

  rogue_localsend_person.py send ALIAS HOST PORT CERT KEY FILE...
      The phone's person sends FILEs to the receiver at HOST:PORT as 1.18's client does: over TLS
      showing its own self-signed certificate CERT (the fingerprint its info announces), each body
      (prepare-upload's and each upload's) chunked, with no Content-Length. An offer of no files
      goes first, its answer said (the app's receiver answers 400). Exits 0 when every file was
      taken, else 1.
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
import uuid

from localsend_http import answer, read_request, requests

GROUP, MCAST_PORT = "224.0.0.167", 53317
lock = threading.Lock()
held = []  # the register connections, kept open as the app's pool keeps them


def out(**fields):
    with lock:
        print(json.dumps(fields), flush=True)


def fingerprint_of(cert):
    with open(cert) as pem:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.read())).hexdigest().upper()


def client_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert, key)
    return ctx


def register(ctx, host, port, info):
    body = json.dumps(info).encode()
    try:
        conn = ctx.wrap_socket(socket.create_connection((host, port), timeout=5))
        conn.sendall((f"POST /api/localsend/v2/register HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = conn.recv(65536)
            if not chunk:
                break
            reply += chunk
        out(register=host, port=port, status=int(reply.split(b" ", 2)[1]) if reply else None, at=time.time())
        held.append(conn)  # idle, never closed by us
    except (OSError, ValueError, IndexError) as error:
        out(register=host, port=port, error=str(error))


def discovery(ctx, info):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", MCAST_PORT))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton("0.0.0.0")))
    while True:
        data, (host, _) = s.recvfrom(65536)
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if not isinstance(message, dict) or str(message.get("fingerprint", "")).upper() == info["fingerprint"]:
            continue
        # 1.18 answers every announcement so, whatever its `announce` says.
        threading.Thread(target=register, args=(ctx, host, int(message.get("port", MCAST_PORT)), info), daemon=True).start()


class Phone:
    def __init__(self, info, directory, answer_after, take):
        self.info, self.dir, self.answer_after, self.take = info, directory, answer_after, take
        self.files, self.tokens, self.session = {}, {}, None

    def serve(self, conn, peer):
        for method, path, query, fields, body in requests(conn):
            if path.endswith("/prepare-upload"):
                offer = json.loads(body)
                files = offer.get("files") or {}
                if not files:
                    answer(conn, 400, json.dumps({"message": "Request must contain at least one file"}).encode())
                    continue
                out(asked=sorted(f["fileName"] for f in files.values()), sender=offer["info"].get("alias"), at=time.time())
                time.sleep(self.answer_after)
                chosen = sorted(files, key=lambda fid: files[fid]["fileName"])
                if self.take is not None:
                    chosen = chosen[:self.take]
                with lock:
                    self.session = str(uuid.uuid4())
                    self.files = files
                    self.tokens = {fid: str(uuid.uuid4()) for fid in chosen}
                out(took=sorted(files[fid]["fileName"] for fid in chosen), at=time.time())
                answer(conn, 200, json.dumps({"sessionId": self.session, "files": self.tokens}).encode())
            elif path.endswith("/upload"):
                fid = query.get("fileId")
                if query.get("sessionId") != self.session or self.tokens.get(fid) != query.get("token"):
                    out(upload=fid, status=403)
                    answer(conn, 403, json.dumps({"message": "Invalid token or IP address"}).encode())
                    continue
                name = self.files[fid]["fileName"]
                target = os.path.join(self.dir, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as stored:
                    stored.write(body)
                out(upload=name, status=200, chunked="content-length" not in fields)
                answer(conn, 200)
            elif path.endswith("/info") or path.endswith("/register"):
                answer(conn, 200, json.dumps(self.info).encode())
            elif path.endswith("/cancel"):
                out(cancel=query.get("sessionId", ""), at=time.time())
                answer(conn, 200)
            else:
                answer(conn, 404)


def serve_https(port, cert, key, require_cert, serve):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if require_cert:
        # The sender's own self-signed certificate is the only anchor: Python's ssl takes no
        # verifier that accepts any certificate (1.18's does), and refuses a connection showing none.
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=require_cert)
        ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    try:
        server = socket.create_server(("0.0.0.0", port))
    except OSError as error:
        out(listen_failed=port, error=str(error))
        os._exit(3)
    with server:
        out(listening=port)
        while True:
            raw, peer = server.accept()
            try:
                conn = ctx.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError) as error:
                out(handshake_failed=peer[0], error=str(error))
                raw.close()
                continue
            threading.Thread(target=serve, args=(conn, peer[0]), daemon=True).start()


def phone(alias, port, cert, key, directory, options):
    answer_after, take, require_cert = 0.0, None, False
    i = 0
    while i < len(options):
        if options[i] == "--answer-after":
            answer_after = float(options[i + 1])
            i += 2
        elif options[i] == "--take":
            take = int(options[i + 1])
            i += 2
        elif options[i] == "--require-cert":
            require_cert = options[i + 1]
            i += 2
        else:
            raise SystemExit(f"unknown option {options[i]}")
    info = {"alias": alias, "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": fingerprint_of(cert), "port": port, "protocol": "https", "download": False}
    threading.Thread(target=discovery, args=(client_context(cert, key), info), daemon=True).start()
    handler = Phone(info, directory, answer_after, take)
    serve_https(port, cert, key, require_cert, handler.serve)


def post_chunked(ctx, host, port, target, body):
    """POST body to target in 3 chunks, no Content-Length: (status, answer body)."""
    conn = ctx.wrap_socket(socket.create_connection((host, port), timeout=30))
    with conn:
        conn.sendall((f"POST {target} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                      f"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode())
        third = max(1, len(body) // 3)
        for start in range(0, len(body), third):
            piece = body[start:start + third]
            conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        conn.sendall(b"0\r\n\r\n")
        # The answer read as the peers read a request: its status where a request's target is.
        reply, _ = read_request(conn, b"")
        if reply is None:
            return None, b""
        return int(reply[1]), reply[3]


def send(alias, host, port, cert, key, paths):
    ctx = client_context(cert, key)
    info = {"alias": alias, "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": fingerprint_of(cert), "port": 53317, "protocol": "https", "download": False}
    api = "/api/localsend/v2"
    status, _ = post_chunked(ctx, host, port, f"{api}/prepare-upload", json.dumps({"info": info, "files": {}}).encode())
    out(empty_offer=status)
    files, contents = {}, {}
    for n, path in enumerate(paths):
        with open(path, "rb") as source:
            contents[f"f{n}"] = source.read()
        files[f"f{n}"] = {"id": f"f{n}", "fileName": os.path.basename(path), "size": len(contents[f"f{n}"]),
                          "fileType": "application/octet-stream", "sha256": hashlib.sha256(contents[f"f{n}"]).hexdigest()}
    status, body = post_chunked(ctx, host, port, f"{api}/prepare-upload", json.dumps({"info": info, "files": files}).encode())
    out(prepare=status)
    if status != 200:
        sys.exit(1)
    offered = json.loads(body)
    taken = 0
    for fid, token in offered["files"].items():
        status, _ = post_chunked(ctx, host, port, f"{api}/upload?sessionId={offered['sessionId']}&fileId={fid}&token={token}", contents[fid])
        out(uploaded=files[fid]["fileName"], status=status, chunked=True)
        taken += status == 200
    sys.exit(0 if taken == len(files) else 1)


if __name__ == "__main__":
    if sys.argv[1] == "phone":
        phone(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
    elif sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7:])
    else:
        raise SystemExit(__doc__)
