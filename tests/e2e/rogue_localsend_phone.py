#!/usr/bin/env python3
"""A LocalSend peer that plays the official app (localsend/localsend 1.18.2) where issue 50 found
nearby differing, written from the app's source and the protocol (v2), not from nearby's: one JSON
line per thing it saw.

  rogue_localsend_phone.py receiver PORT CERT KEY DIR
      HTTPS receiver: every file accepted; its fileType and metadata said; each upload stored and
      given the sender's dates (os.utime, as core/http/server/v2.rs applies metadata); a file whose
      name starts with "refuse" answered 403 "Rejected"; one starting with "damaged" 422 twice.
  rogue_localsend_phone.py http-receiver PORT DIR
      The same over plain HTTP (the app with encryption off), fingerprint a claim.
  rogue_localsend_phone.py canceller PORT CERT KEY DIR
      Takes the first upload and, before answering it, cancels as the app's receiver does (receive_controller.dart
      cancelSession): POST /cancel?sessionId= to the sender's info port and protocol, showing CERT
      as its client certificate; later uploads get 403 "Invalid token or IP address".
  rogue_localsend_phone.py text HOST PORT SIZE
      A text of SIZE bytes, as the app sends one (the whole text in the offer's preview).
  rogue_localsend_phone.py sender HOST PORT CERT KEY MYPORT FILE FILE
      Serves HTTPS on MYPORT (named in its info), offers both files to HOST:PORT, uploads the
      first, then waits (60 s at most) for the receiver's /cancel naming its session.
"""
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime

from localsend_http import answer, requests

lock = threading.Lock()


def out(**fields):
    with lock:
        print(json.dumps(fields), flush=True)


def fingerprint_of(cert):
    with open(cert) as pem:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.read())).hexdigest().upper()


def message(text):
    return json.dumps({"message": text}).encode()


def parse_date(value):
    # RFC 3339 with an offset, as the app's core reads it; anything else is ignored.
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return parsed.timestamp() if parsed.tzinfo else None


class Receiver:
    def __init__(self, mode, port, directory, fingerprint):
        self.mode, self.port, self.dir = mode, port, directory
        self.files, self.tokens, self.uploads = {}, {}, {}
        self.session, self.sender, self.cancelled = None, None, False
        self.info = {"alias": "Phone", "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
                     "fingerprint": fingerprint, "port": port, "protocol": "http" if mode == "http-receiver" else "https",
                     "download": False}

    def serve(self, conn, peer):
        for method, path, query, _, body in requests(conn):
            if path.endswith("/prepare-upload"):
                offer = json.loads(body)
                with lock:
                    self.session = str(uuid.uuid4())
                    self.files = offer["files"]
                    self.tokens = {fid: str(uuid.uuid4()) for fid in self.files}
                    self.sender = (peer, offer["info"].get("port", 53317), offer["info"].get("protocol", "https"))
                for f in self.files.values():
                    out(offered=f["fileName"], fileType=f.get("fileType"), metadata=f.get("metadata"))
                answer(conn, 200, json.dumps({"sessionId": self.session, "files": self.tokens}).encode())
            elif path.endswith("/upload"):
                fid = query.get("fileId")
                if self.cancelled or query.get("sessionId") != self.session or self.tokens.get(fid) != query.get("token"):
                    out(upload=fid, status=403)
                    answer(conn, 403, message("Invalid token or IP address"))
                    continue
                f = self.files[fid]
                name = f["fileName"]
                self.uploads[name] = self.uploads.get(name, 0) + 1
                if os.path.basename(name).startswith("refuse"):
                    out(upload=name, status=403)
                    answer(conn, 403, message("Rejected"))
                    continue
                if os.path.basename(name).startswith("damaged") and self.uploads[name] <= 2:
                    out(upload=name, status=422, attempt=self.uploads[name])
                    answer(conn, 422, message("Checksum mismatch"))
                    continue
                path = os.path.join(self.dir, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as stored:
                    stored.write(body)
                dates = f.get("metadata") or {}
                modified, accessed = parse_date(dates.get("modified")), parse_date(dates.get("accessed"))
                if modified is not None:
                    os.utime(path, (accessed if accessed is not None else modified, modified))
                if self.mode == "canceller" and not self.cancelled:
                    # Cancelled while the sender waits for this answer: it must stop at once.
                    self.cancelled = True
                    self.cancel_sender()
                out(upload=name, status=200, attempt=self.uploads[name])
                answer(conn, 200)
            elif path.endswith("/info") or path.endswith("/register"):
                answer(conn, 200, json.dumps(self.info).encode())
            else:
                answer(conn, 200 if path.endswith("/cancel") else 404)

    def cancel_sender(self):
        host, port, protocol = self.sender
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(sys.argv[3], sys.argv[4])
        try:
            raw = socket.create_connection((host, port), timeout=10)
            conn = ctx.wrap_socket(raw) if protocol == "https" else raw
            with conn:
                conn.sendall((f"POST /api/localsend/v2/cancel?sessionId={self.session} HTTP/1.1\r\nHost: {host}\r\n"
                              "Content-Length: 0\r\nConnection: close\r\n\r\n").encode())
                reply = conn.recv(4096).decode("latin-1")
            out(cancel_sent=self.session, to=f"{host}:{port}", status=int(reply.split(" ")[1]) if reply else None)
        except OSError as error:
            out(cancel_sent=self.session, to=f"{host}:{port}", error=str(error))


def listen(port, ctx, serve):
    try:
        server = socket.create_server(("0.0.0.0", port))
    except OSError as error:
        # Said in one line (not a traceback), and the whole peer ends: nobody could reach it.
        out(listen_failed=port, error=str(error))
        os._exit(3)
    with server:
        out(listening=port)
        while True:
            raw, peer = server.accept()
            try:
                conn = ctx.wrap_socket(raw, server_side=True) if ctx else raw
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            threading.Thread(target=serve, args=(conn, peer[0]), daemon=True).start()


def tls_server(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def sender(host, port, cert, key, myport, paths):
    session = {"id": None}
    heard = threading.Event()

    def serve(conn, peer):
        for _, path, query, _, _ in requests(conn):
            if path.endswith("/cancel"):
                out(cancel=query.get("sessionId"), ours=query.get("sessionId") == session["id"], sender=peer)
                if query.get("sessionId") == session["id"]:
                    heard.set()
            answer(conn, 200)

    threading.Thread(target=listen, args=(myport, tls_server(cert, key), serve), daemon=True).start()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert, key)
    files = {}
    for n, path in enumerate(paths):
        data = open(path, "rb").read()
        files[f"f{n}"] = {"id": f"f{n}", "fileName": os.path.basename(path), "size": len(data),
                          "fileType": "application/octet-stream", "sha256": hashlib.sha256(data).hexdigest()}
    info = {"alias": "Phone Sender", "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": fingerprint_of(cert), "port": myport, "protocol": "https", "download": False}

    def call(path, body):
        with ctx.wrap_socket(socket.create_connection((host, port), timeout=30)) as conn:
            conn.sendall((f"POST /api/localsend/v2/{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
                          "Connection: close\r\n\r\n").encode() + body)
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        head, _, rest = reply.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), rest

    status, body = call("prepare-upload", json.dumps({"info": info, "files": files}).encode())
    out(prepare=status)
    if status != 200:
        return
    accepted = json.loads(body)
    session["id"] = accepted["sessionId"]
    first = open(paths[0], "rb").read()
    status, _ = call(f"upload?sessionId={session['id']}&fileId=f0&token={accepted['files']['f0']}", first)
    out(upload="f0", status=status)
    out(waiting=True)
    out(heard=heard.wait(60))


def text(host, port, size):
    """A text message as the app sends one: one text/plain file, the whole text in its preview."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    words = ("x" * size)
    info = {"alias": "Phone Texter", "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": "e" * 64, "port": 53317, "protocol": "https", "download": False}
    files = {"t": {"id": "t", "fileName": "message.txt", "size": len(words), "fileType": "text/plain", "preview": words}}
    body = json.dumps({"info": info, "files": files}).encode()
    with ctx.wrap_socket(socket.create_connection((host, port), timeout=30)) as conn:
        conn.sendall((f"POST /api/localsend/v2/prepare-upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
                      "Connection: close\r\n\r\n").encode())
        try:
            conn.sendall(body)
        except OSError:
            pass
        reply = b""
        try:
            while chunk := conn.recv(65536):
                reply += chunk
        except OSError:
            pass
    head, _, rest = reply.partition(b"\r\n\r\n")
    out(text=size, status=int(head.split(b" ")[1]) if head else None, said=rest.decode("utf-8", "replace")[:300])


def main():
    mode = sys.argv[1]
    if mode == "text":
        text(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    if mode == "sender":
        sender(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7:])
        return
    if mode == "http-receiver":
        port, directory = int(sys.argv[2]), sys.argv[3]
        receiver = Receiver(mode, port, directory, "a-claim-" + uuid.uuid4().hex)
        listen(port, None, receiver.serve)
        return
    port, cert, key, directory = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    receiver = Receiver(mode, port, directory, fingerprint_of(cert))
    listen(port, tls_server(cert, key), receiver.serve)


if __name__ == "__main__":
    main()
