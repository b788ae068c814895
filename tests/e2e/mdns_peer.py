#!/usr/bin/env python3
"""A hand-made mDNS peer for the watch tests and benchmark (no avahi, no library: the packets are
built here byte by byte), run on a lab host.

    mdns_peer.py query --to ADDR --name NAME [--count N] [--wait S]
                                                         legacy unicast queries (from an ephemeral
                                                         port) to ADDR:5353, each waiting S s (3)
                                                         for its answer; prints {"sent", "answered", "port"}
    mdns_peer.py chatty --from ADDR --name NAME --every S --count N
                                                         one multicast question, over and over
    mdns_peer.py claim --from ADDR --name NAME --address A [--count N]
                                                         multicast answers claiming NAME is at A (cache-flush)
    mdns_peer.py flood --from ADDR --rate R --seconds S  R announcements a second for S seconds;
                                                         prints {"sent": N}
    mdns_peer.py broken --from ADDR --kind KIND [--name NAME]
                                                         one multicast packet a broken responder
                                                         sends: malformed (a header promising
                                                         records that are not there), ttl (an A
                                                         record with a 10-day TTL), truncated (a
                                                         response with the TC bit), oversize (a
                                                         3,000-byte TXT answer: IP fragments)
    mdns_peer.py squat --from ADDR --name INSTANCE.TYPE.local --host HOST.local --seconds S
                                                         a responder bound to 5353 beside the host's
                                                         daemon that answers every question for
                                                         INSTANCE (SRV: HOST) as its own, to the
                                                         asker's port (legacy unicast, RFC 6762 §6.7);
                                                         prints "bound", then {"answered": N}
"""
import argparse, json, random, socket, struct, sys, time

GROUP = ("224.0.0.251", 5353)


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(qname, qtype=1, ident=0):
    return struct.pack("!6H", ident, 0, 1, 0, 0, 0) + name(qname) + struct.pack("!2H", qtype, 1)


def a_response(owner, address, ttl=120, flush=True):
    rdata = socket.inet_aton(address)
    record = name(owner) + struct.pack("!2HIH", 1, 0x8001 if flush else 1, ttl, len(rdata)) + rdata
    return struct.pack("!6H", 0, 0x8400, 0, 1, 0, 0) + record


def multicast_socket(source, port=0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("0.0.0.0", port))
    except OSError:
        sock.bind(("0.0.0.0", 0))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    return sock


def read_name(data, offset):
    """The name at offset (compression followed), lower-cased, and the offset after it."""
    labels, end, jumps = [], None, 0
    while offset < len(data) and jumps < 16:
        length = data[offset]
        if length & 0xC0 == 0xC0:
            end = end or offset + 2
            offset = ((length & 0x3F) << 8) | data[offset + 1]
            jumps += 1
            continue
        if length == 0:
            return ".".join(labels).lower(), end or offset + 1
        labels.append(data[offset + 1:offset + 1 + length].decode("utf-8", "replace"))
        offset += 1 + length
    return None, len(data)


def squat(args):
    """Answers for another host's instance: SRV INSTANCE -> HOST (port 9), A HOST -> --from."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("0.0.0.0", 5353))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP[0]) + socket.inet_aton(args.source))
    sock.settimeout(0.2)
    wanted = args.name.rstrip(".").lower()
    print("bound", flush=True)
    answered, end = 0, time.monotonic() + args.seconds
    while time.monotonic() < end:
        try:
            data, sender = sock.recvfrom(9000)
        except socket.timeout:
            continue
        if len(data) < 12 or data[2] & 0x80 or sender[1] == 5353:
            continue
        ident, _, count = struct.unpack("!3H", data[:6])
        offset, asked = 12, []
        for _ in range(count):
            qname, offset = read_name(data, offset)
            if qname is None or offset + 4 > len(data):
                break
            qtype, _ = struct.unpack("!2H", data[offset:offset + 4])
            offset += 4
            asked.append((qname, qtype))
        if not any(qname == wanted and qtype in (33, 255) for qname, qtype in asked):
            continue
        srv_data = struct.pack("!3H", 0, 0, 9) + name(args.host)
        srv = name(wanted) + struct.pack("!2HIH", 33, 1, 120, len(srv_data)) + srv_data
        address = socket.inet_aton(args.source)
        a = name(args.host) + struct.pack("!2HIH", 1, 1, 120, 4) + address
        question = name(wanted) + struct.pack("!2H", 33, 1)
        sock.sendto(struct.pack("!6H", ident, 0x8400, 1, 1, 0, 1) + question + srv + a, sender)
        answered += 1
    print(json.dumps({"answered": answered}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["query", "chatty", "claim", "flood", "squat", "broken"])
    parser.add_argument("--kind", choices=["malformed", "ttl", "truncated", "oversize"])
    parser.add_argument("--host", default="h3.local")
    parser.add_argument("--to")
    parser.add_argument("--from", dest="source")
    parser.add_argument("--name", default="h1.local")
    parser.add_argument("--address")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument("--rate", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--wait", type=float, default=3)
    args = parser.parse_args()

    if args.mode == "query":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", 0))
        sock.settimeout(args.wait)
        answered = 0
        for index in range(args.count):
            ident = random.randrange(1, 65535)
            sock.sendto(query(args.name, 1, ident), (args.to, 5353))
            deadline = time.monotonic() + args.wait
            while time.monotonic() < deadline:
                try:
                    data, _ = sock.recvfrom(9000)
                except socket.timeout:
                    break
                if len(data) >= 12 and struct.unpack("!H", data[:2])[0] == ident and data[2] & 0x80:
                    answered += 1
                    break
        print(json.dumps({"sent": args.count, "answered": answered, "port": sock.getsockname()[1]}))
    elif args.mode == "chatty":
        sock = multicast_socket(args.source)
        packet = query(args.name, 12)
        for _ in range(args.count):
            sock.sendto(packet, GROUP)
            time.sleep(args.every)
    elif args.mode == "claim":
        sock = multicast_socket(args.source, 5353)
        packet = a_response(args.name, args.address)
        for _ in range(args.count):
            sock.sendto(packet, GROUP)
            time.sleep(args.every)
    elif args.mode == "squat":
        squat(args)
    elif args.mode == "broken":
        sock = multicast_socket(args.source, 5353)
        address = args.address or args.source
        if args.kind == "malformed":
            # Two answers promised, half of one there.
            packet = struct.pack("!6H", 0, 0x8400, 0, 2, 0, 0) + name(args.name)[:5]
        elif args.kind == "ttl":
            packet = a_response(args.name, address, ttl=864000)
        elif args.kind == "truncated":
            packet = bytearray(a_response(args.name, address))
            packet[2] |= 0x02
            packet = bytes(packet)
        else:
            strings = b"".join(bytes([250]) + b"k=" + b"x" * 248 for _ in range(12))
            record = name(args.name) + struct.pack("!2HIH", 16, 0x8001, 4500, len(strings)) + strings
            packet = struct.pack("!6H", 0, 0x8400, 0, 1, 0, 0) + record
        sock.sendto(packet, GROUP)
        print(json.dumps({"sent": len(packet)}))
    else:
        sock = multicast_socket(args.source)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        packets = [a_response("flood%d.local" % index, "10.99.0.%d" % (index % 250 + 1), ttl=120) for index in range(64)]
        total = int(args.rate * args.seconds)
        start = time.monotonic()
        sent = 0
        while sent < total:
            due = int((time.monotonic() - start) * args.rate) + 1
            while sent < min(due, total):
                try:
                    sock.sendto(packets[sent % 64], GROUP)
                    sent += 1
                except BlockingIOError:
                    break
            time.sleep(0.0005)
        print(json.dumps({"sent": sent, "seconds": round(time.monotonic() - start, 3)}))


if __name__ == "__main__":
    main()
