#!/usr/bin/env python3
"""A hostile LocalSend announcer for tests/e2e/localsend.sh.

  rogue_localsend.py flood N          N fake devices, then malformed datagrams: a huge alias full of
                                      terminal escapes, JSON nested 10,000 deep, a 60 KB datagram,
                                      bytes that are not JSON; repeated for 4 s
  rogue_localsend.py impostor ALIAS FINGERPRINT PORT
                                      announces ALIAS with a fingerprint that is not its certificate's,
                                      every second for 20 s
  rogue_localsend.py official ALIAS CERT KEY
                                      behaves as the official app's discovery does since 1.18: never
                                      announces, never answers over UDP; answers every announcement
                                      only with POST /register (its client certificate shown, the
                                      announcer's certificate pinned to the fingerprint announced) to
                                      the port announced; prints one JSON line per register; 30 s
"""
import json
import socket
import struct
import sys
import time

GROUP, PORT = "224.0.0.167", 53317


def sock():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    return s


def announce(s, alias, fingerprint, port=PORT, extra=None):
    msg = {"alias": alias, "version": "2.1", "deviceModel": "rogue", "deviceType": "desktop",
           "fingerprint": fingerprint, "port": port, "protocol": "https", "download": False, "announce": False}
    msg.update(extra or {})
    s.sendto(json.dumps(msg).encode(), (GROUP, PORT))


def flood(n):
    s = sock()
    end = time.time() + 4
    while time.time() < end:
        announce(s, "\x1b]0;owned\x07\x1b[2J" + "A" * 6000, "e" * 64)
        deep = '{"alias":"deep","fingerprint":"' + "d" * 64 + '","x":' + "[" * 3000 + "]" * 3000 + "}"
        s.sendto(deep.encode(), (GROUP, PORT))
        s.sendto(b"x" * 60000, (GROUP, PORT))
        s.sendto(b"\xff\xfe not json", (GROUP, PORT))
        for i in range(n):
            announce(s, f"fake-{i}", f"{i:064x}")
            if i % 200 == 0:
                time.sleep(0.01)
        time.sleep(0.2)


def impostor(alias, fingerprint, port):
    s = sock()
    end = time.time() + 20
    while time.time() < end:
        announce(s, alias, fingerprint, int(port))
        time.sleep(1)


def listen(seconds, ready=None):
    """The multicast messages heard on the group for `seconds`: (source address, message) for
    each that is JSON; `ready` is called once the group is joined. Also used by
    rogue_localsend_stranger.py."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", PORT))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton("0.0.0.0")))
    s.settimeout(1)
    if ready:
        ready()
    end = time.time() + seconds
    while time.time() < end:
        try:
            data, (host, _) = s.recvfrom(65536)
            message = json.loads(data)
        except (socket.timeout, ValueError):
            continue
        if isinstance(message, dict):
            yield host, message


def official(alias, cert, key):
    import hashlib
    import ssl
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    fingerprint = hashlib.sha256(der).hexdigest().upper()  # the official app's case
    info = {"alias": alias, "version": "2.2", "deviceModel": "Pixel", "deviceType": "mobile",
            "fingerprint": fingerprint, "port": 53317, "protocol": "https", "download": False}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert, key)
    for host, message in listen(30):
        if message.get("fingerprint", "").upper() == fingerprint:
            continue
        status = None
        try:
            body = json.dumps(info).encode()
            with ctx.wrap_socket(socket.create_connection((host, int(message["port"])), timeout=3)) as c:
                shown = hashlib.sha256(c.getpeercert(binary_form=True)).hexdigest()
                if shown != message["fingerprint"].lower():
                    status = "pin-mismatch"
                else:
                    c.sendall((f"POST /api/localsend/v2/register HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
                    answer = b""
                    while chunk := c.recv(65536):
                        answer += chunk
                    status = int(answer.split(b" ", 2)[1])
        except (OSError, ValueError, KeyError, IndexError) as error:
            status = f"failed: {error}"
        print(json.dumps({"register": host, "status": status}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "flood":
        flood(int(sys.argv[2]))
    elif sys.argv[1] == "official":
        official(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        impostor(sys.argv[2], sys.argv[3], sys.argv[4])
