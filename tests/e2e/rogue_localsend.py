#!/usr/bin/env python3
"""A hostile LocalSend announcer for tests/e2e/localsend.sh.

  rogue_localsend.py flood N          N fake devices, then malformed datagrams: a huge alias full of
                                      terminal escapes, JSON nested 10,000 deep, a 60 KB datagram,
                                      bytes that are not JSON; repeated for 4 s
  rogue_localsend.py impostor ALIAS FINGERPRINT PORT
                                      announces ALIAS with a fingerprint that is not its certificate's,
                                      every second for 20 s
"""
import json
import socket
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


if __name__ == "__main__":
    if sys.argv[1] == "flood":
        flood(int(sys.argv[2]))
    else:
        impostor(sys.argv[2], sys.argv[3], sys.argv[4])
