#!/usr/bin/env python3
"""Folders over LocalSend against a receiving `nearby advertise --localsend`, for
tests/e2e/localsend_folders.sh. Written from the official app's source, not from nearby's:
a folder goes in one prepare-upload whose `fileName`s are the folder's name, '/', the path inside
it (app/lib/provider/selection/selected_sending_files_provider.dart, AddDirectoryAction), under
UUID v4 IDs, with `sha256` and `preview` null and `metadata` times; then one upload per file, two
at a time. Each case prints one JSON line.

  rogue_localsend_folder.py official HOST PORT DIR   sends DIR as the official app does
  rogue_localsend_folder.py million HOST PORT        a list of 1,000,000 entries, streamed; prints
                                                     the status and how much was sent before it
  rogue_localsend_folder.py gigabyte HOST PORT       Content-Length 1 GB, one entry whose name never ends
  rogue_localsend_folder.py paths HOST PORT          names that climb out, are absolute, or 100 deep;
                                                     uploads each
  rogue_localsend_folder.py trickle HOST PORT        a small list, one byte every 0.2 s
"""
import json
import os
import socket
import ssl
import sys
import threading
import time
import uuid

API = "/api/localsend/v2"
INFO = {"alias": "Official Folder", "version": "2.2", "deviceModel": "Linux", "deviceType": "desktop",
        "fingerprint": "9" * 64, "port": 53317, "protocol": "https", "download": False}


def out(**fields):
    print(json.dumps(fields), flush=True)


def tls(host, port, timeout=30):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(socket.create_connection((host, port), timeout=timeout))


def answer(s):
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        pass
    if not data:
        return "closed", b""
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[-1]


def request(host, port, path, body):
    try:
        with tls(host, port) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            return answer(s)
    except OSError as error:
        return f"failed: {error}", b""


def streamed(host, port, length, chunks):
    """POSTs a prepare-upload whose body comes from `chunks`; the status and the bytes sent."""
    sent = 0
    started = time.monotonic()
    with tls(host, port, timeout=120) as s:
        s.sendall(f"POST {API}/prepare-upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n".encode())
        try:
            for chunk in chunks:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the receiver stopped reading: its answer, if any, is read below
        status, body = answer(s)
    return dict(status=status, said=body.decode(errors="replace")[:300], sent=sent, seconds=round(time.monotonic() - started, 1))


def file_type(name):
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return {"jpg": "image/jpeg", "png": "image/png", "mp4": "video/mp4", "pdf": "application/pdf", "txt": "text/plain"}.get(ext, "application/octet-stream")


def official(host, port, directory):
    name = os.path.basename(os.path.normpath(directory))
    files, sources = {}, {}
    for root, _, names in os.walk(directory):
        for entry in names:
            path = os.path.join(root, entry)
            relative = name + "/" + os.path.relpath(path, directory).replace("\\", "/")
            stat = os.stat(path)
            fid = str(uuid.uuid4())
            files[fid] = {"id": fid, "fileName": relative, "size": stat.st_size, "fileType": file_type(entry), "sha256": None, "preview": None,
                          "metadata": {"modified": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(stat.st_mtime)),
                                       "accessed": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(stat.st_atime))}}
            sources[fid] = path
    status, body = request(host, port, API + "/prepare-upload", json.dumps({"info": INFO, "files": files}).encode())
    if status != 200:
        out(prepare=status, said=body.decode(errors="replace")[:300])
        return
    session = json.loads(body)
    pending = list(session["files"].items())
    lock = threading.Lock()
    failed = []

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                fid, token = pending.pop()
            content = open(sources[fid], "rb").read()
            status, _ = request(host, port, f"{API}/upload?sessionId={session['sessionId']}&fileId={fid}&token={token}", content)
            if status != 200:
                with lock:
                    failed.append([files[fid]["fileName"], status])
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out(prepare=200, files=len(files), accepted=len(session["files"]), failed=failed[:10])


def million(host, port):
    head = b'{"info":' + json.dumps(INFO).encode() + b',"files":{'

    def chunks():
        yield head
        block = []
        for i in range(1_000_000):
            block.append(f'{"," if i else ""}"m{i}":{{"id":"m{i}","fileName":"m{i}.bin","size":1,"fileType":"application/octet-stream"}}')
            if len(block) == 1000:
                yield "".join(block).encode()
                block = []
        yield b"}}"
    out(case="million", **streamed(host, port, 90_000_000, chunks()))


def gigabyte(host, port):
    head = b'{"info":' + json.dumps(INFO).encode() + b',"files":{"g":{"id":"g","size":1,"fileName":"'

    def chunks():
        yield head
        for _ in range(1 << 14):
            yield b"g" * 65536
    out(case="gigabyte", **streamed(host, port, 1 << 30, chunks()))


def paths(host, port):
    names = ["../../../../tmp/escaped.bin", "/etc/absolute.bin", "..\\..\\windows.bin", "a/" + "d/" * 100 + "deep.bin",
             "ok/./../x/../fine.bin", "dots/.../three.bin"]
    files = {f"p{i}": {"id": f"p{i}", "fileName": n, "size": 2, "fileType": "application/octet-stream"} for i, n in enumerate(names)}
    status, body = request(host, port, API + "/prepare-upload", json.dumps({"info": dict(INFO, alias="Paths"), "files": files}).encode())
    if status != 200:
        out(case="paths", prepare=status)
        return
    session = json.loads(body)
    uploads = [request(host, port, f"{API}/upload?sessionId={session['sessionId']}&fileId={fid}&token={token}", b"p!")[0]
               for fid, token in session["files"].items()]
    out(case="paths", prepare=status, uploads=uploads)


def trickle(host, port):
    body = json.dumps({"info": dict(INFO, alias="Trickle"),
                       "files": {"t": {"id": "t", "fileName": "t.bin", "size": 1, "fileType": "application/octet-stream"}}}).encode()

    def chunks():
        for byte in body:
            yield bytes([byte])
            time.sleep(0.2)
    out(case="trickle", **streamed(host, port, len(body), chunks()))


if __name__ == "__main__":
    case, args = sys.argv[1], sys.argv[2:]
    if case == "official":
        official(args[0], int(args[1]), args[2])
    else:
        {"million": million, "gigabyte": gigabyte, "paths": paths, "trickle": trickle}[case](args[0], int(args[1]))
