#!/usr/bin/env python3
"""An official-format LocalSend receiver for tests/e2e/localsend_folders.sh, written from the
protocol (v2, sections 4.1-4.2), not from nearby's source: HTTPS on PORT with CERT/KEY, every
prepare-upload accepted (a token a file), every upload stored under DIR by its fileName. It keeps
connections alive, but answers every EVERY-th upload with `Connection: close` and closes, as an
HTTP/1.1 server may at any time. One JSON line a connection accepted and one an upload.

  rogue_localsend_receiver.py closing PORT CERT KEY DIR EVERY
"""
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import uuid

from localsend_http import answer, requests

PORT, CERT, KEY, DIR, EVERY = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
lock = threading.Lock()
state = {"connections": 0, "uploads": 0, "files": {}}
with open(CERT) as pem:
    FINGERPRINT = hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.read())).hexdigest()
INFO = {"alias": "Closer", "version": "2.1", "deviceModel": "rogue", "deviceType": "desktop",
        "fingerprint": FINGERPRINT, "port": PORT, "protocol": "https", "download": False}


def out(**fields):
    with lock:
        print(json.dumps(fields), flush=True)


def serve(conn):
    for method, path, query, fields, body in requests(conn):
        if path.endswith("/prepare-upload"):
            files = json.loads(body)["files"]
            session = str(uuid.uuid4())
            tokens = {fid: str(uuid.uuid4()) for fid in files}
            with lock:
                for fid, f in files.items():
                    state["files"][fid] = (f["fileName"], tokens[fid])
            answer(conn, 200, json.dumps({"sessionId": session, "files": tokens}).encode())
        elif path.endswith("/upload"):
            with lock:
                name, token = state["files"].get(query.get("fileId"), (None, None))
                state["uploads"] += 1
                closing = state["uploads"] % EVERY == 0
            if name is None or token != query.get("token"):
                answer(conn, 403, close=True)
                return
            path = os.path.join(DIR, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(body)
            out(upload=name, closing=closing)
            answer(conn, 200, close=closing)
            if closing:
                return
        elif path.endswith("/info") or path.endswith("/register"):
            answer(conn, 200, json.dumps(INFO).encode())
        else:
            answer(conn, 200 if path.endswith("/cancel") else 404)


def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    with socket.create_server(("0.0.0.0", PORT), reuse_port=False) as server:
        out(listening=PORT)
        while True:
            raw, _ = server.accept()
            with lock:
                state["connections"] += 1
                n = state["connections"]
            out(connection=n)
            try:
                conn = ctx.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
