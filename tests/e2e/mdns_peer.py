#!/usr/bin/env python3
"""A hand-made mDNS peer for the watch tests and benchmark (no avahi, no library: the packets are
built here byte by byte), run on a lab host.

    mdns_peer.py query --to ADDR --name NAME [--count N]   legacy unicast queries (from an ephemeral
                                                         port) to ADDR:5353; prints {"sent", "answered", "port"}
    mdns_peer.py chatty --from ADDR --name NAME --every S --count N
                                                         one multicast question, over and over
    mdns_peer.py claim --from ADDR --name NAME --address A [--count N]
                                                         multicast answers claiming NAME is at A (cache-flush)
    mdns_peer.py flood --from ADDR --rate R --seconds S  R announcements a second for S seconds;
                                                         prints {"sent": N}
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["query", "chatty", "claim", "flood"])
    parser.add_argument("--to")
    parser.add_argument("--from", dest="source")
    parser.add_argument("--name", default="h1.local")
    parser.add_argument("--address")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument("--rate", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()

    if args.mode == "query":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", 0))
        sock.settimeout(3)
        answered = 0
        for index in range(args.count):
            ident = random.randrange(1, 65535)
            sock.sendto(query(args.name, 1, ident), (args.to, 5353))
            deadline = time.monotonic() + 3
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
