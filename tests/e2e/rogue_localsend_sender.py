#!/usr/bin/env python3
"""A hostile LocalSend sender for tests/e2e/localsend.sh: each case breaks one rule of a
receiving `nearby advertise --localsend` and prints one JSON line with the status it got.

  rogue_localsend_sender.py HOST PORT CASE
    cut          prepare-upload (accepted), then an upload that stops half way and closes
    big-json     a prepare-upload body of 300 KB
    deep-json    a prepare-upload body nested 5,000 deep
    many-files   a prepare-upload offering 10,001 files (one more than the node takes)
    huge-header  a request with a 40 KB header
    overrun      an upload of more bytes than announced
    bad-token    an upload with a wrong token (then the session is cancelled)
    parallel     three files of one session uploaded at once on three connections: the second and
                 third are sent whole and answered while the first is still half sent
    wait         a prepare-upload that waits for its answer (until killed: the test kills it)
    v1-info      GET /api/localsend/v1/info (what official apps up to 1.17 probe)
    cancel-none  a cancel naming no session this node has
    bad-sha      a file whose bytes do not match its SHA-256, then again with the right bytes
    cert CERT KEY  a prepare-upload over TLS with this client certificate, announcing another fingerprint
    cancel-pending a prepare-upload that waits for its answer, and /cancel without a session ID
                   from the same address (every 100 ms until the prepare-upload is answered, 10 s at most)
"""
import json
import socket
import ssl
import sys

HOST, PORT, CASE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
API = "/api/localsend/v2"
INFO = {"alias": "Rogue", "version": "2.1", "deviceModel": "rogue", "deviceType": "desktop",
        "fingerprint": "f" * 64, "port": 53317, "protocol": "https", "download": False}


CLIENT_CERT = None


def connect():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if CLIENT_CERT:
        ctx.load_cert_chain(*CLIENT_CERT)
    # Generous: what is tested is the node's answer, and a loaded machine parses a 900 KB list slowly.
    return ctx.wrap_socket(socket.create_connection((HOST, PORT), timeout=60))


def read_all(s):
    """Everything the server sends until it closes (Connection: close)."""
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def answer(s):
    """Reads one whole answer (the server closes after it: Connection: close)."""
    data = read_all(s)
    s.close()
    return int(data.split(b" ", 2)[1]) if data else "closed"


def start_upload(path, size):
    s = connect()
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n").encode())
    return s


def request(path, body=b"", extra_headers="", cut_after=None, length=None, method="POST"):
    s = connect()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body) if length is None else length}\r\n"
            f"Connection: close\r\n{extra_headers}\r\n").encode()
    try:
        s.sendall(head)
        if cut_after is not None:
            s.sendall(body[:cut_after])
            s.close()
            return None, b""
        s.sendall(body)
        data = read_all(s)
    except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
        return "closed", b""
    finally:
        s.close()
    if not data:
        return "closed", b""
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[-1]


def prepare(files):
    status, body = request(API + "/prepare-upload", json.dumps({"info": INFO, "files": files}).encode())
    return status, (json.loads(body) if status == 200 else None)


def one_file(name="victim.bin", size=1000000):
    return {"f1": {"id": "f1", "fileName": name, "size": size, "fileType": "application/octet-stream"}}


if CASE == "cut":
    status, answer = prepare(one_file())
    request(f"{API}/upload?sessionId={answer['sessionId']}&fileId=f1&token={answer['files']['f1']}",
            b"x" * 1000000, cut_after=500000)
    result = "cut"
elif CASE == "big-json":
    result, _ = request(API + "/prepare-upload", b'{"info":' + json.dumps(INFO).encode() + b',"pad":"' + b"p" * 300000 + b'"}')
elif CASE == "deep-json":
    result, _ = request(API + "/prepare-upload", b'{"info":' + json.dumps(INFO).encode() + b',"files":' + b"[" * 5000 + b"]" * 5000 + b"}")
elif CASE == "many-files":
    files = {f"f{i}": {"id": f"f{i}", "fileName": f"n{i}", "size": 1, "fileType": "x"} for i in range(10001)}
    result, _ = prepare(files)
elif CASE == "huge-header":
    result, _ = request(API + "/info", extra_headers="X-Pad: " + "h" * 40000 + "\r\n")
elif CASE == "overrun":
    status, answer = prepare(one_file("over.bin", 10))
    result, _ = request(f"{API}/upload?sessionId={answer['sessionId']}&fileId=f1&token={answer['files']['f1']}", b"y" * 20)
elif CASE == "bad-token":
    status, answer = prepare(one_file("token.bin", 10))
    result, _ = request(f"{API}/upload?sessionId={answer['sessionId']}&fileId=f1&token=nope", b"z" * 10)
    request(f"{API}/cancel?sessionId={answer['sessionId']}")  # frees the node for the next sender
elif CASE == "parallel":
    size = 2000000
    files = {f"p{i}": {"id": f"p{i}", "fileName": f"par{i}.bin", "size": size, "fileType": "application/octet-stream"} for i in (1, 2, 3)}
    status, answer_ = prepare(files)
    path = lambda i: f"{API}/upload?sessionId={answer_['sessionId']}&fileId=p{i}&token={answer_['files'][f'p{i}']}"
    body = lambda i: bytes([i]) * size
    first = start_upload(path(1), size)
    first.sendall(body(1)[:size // 2])
    # While the first is half sent, the others go whole and are answered.
    others = []
    for i in (2, 3):
        s = start_upload(path(i), size)
        s.sendall(body(i))
        others.append(answer(s))
    first.sendall(body(1)[size // 2:])
    result = others + [answer(first)]
elif CASE == "wait":
    print(json.dumps({"case": CASE, "status": "asking"}), flush=True)
    result, _ = prepare(one_file("waited.bin", 10))
elif CASE == "v1-info":
    result, body = request("/api/localsend/v1/info", method="GET")
    result = [result, json.loads(body).get("alias") if result == 200 else None]
elif CASE == "cancel-none":
    result, _ = request(f"{API}/cancel?sessionId=nothing-here")
elif CASE == "bad-sha":
    import hashlib
    good = b"g" * 1000
    file = {"s1": {"id": "s1", "fileName": "sha.bin", "size": 1000, "fileType": "application/octet-stream",
                   "sha256": hashlib.sha256(good).hexdigest()}}
    status, answer_ = prepare(file)
    path = f"{API}/upload?sessionId={answer_['sessionId']}&fileId=s1&token={answer_['files']['s1']}"
    result = [request(path, b"b" * 1000)[0], request(path, good)[0]]
elif CASE == "cert":
    CLIENT_CERT = (sys.argv[4], sys.argv[5])
    result, _ = prepare(one_file("cert.bin", 10))
elif CASE == "cancel-pending":
    import threading
    import time
    answered = []
    asking = threading.Thread(target=lambda: answered.append(prepare(one_file("pending.bin", 10))[0]))
    asking.start()
    deadline = time.monotonic() + 10
    while asking.is_alive() and time.monotonic() < deadline:
        request(f"{API}/cancel")
        asking.join(0.1)
    result = answered[0] if answered else "unanswered"
print(json.dumps({"case": CASE, "status": result}), flush=True)
