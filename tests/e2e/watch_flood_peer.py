#!/usr/bin/env python3
"""A flood of mDNS for `nearby watch` to survive (issue 60, item 3): multicast answers at a steady
rate, from many (forged) sources and under many names, written as Ethernet frames on a packet
socket so each can carry a source address of its own. Needs root (CAP_NET_RAW) on the lab host.

    watch_flood_peer.py flood --interface nb0 --rate R --seconds S [--kind K] [--sources N]
                              [--names N] [--from ADDR]
        R datagrams a second for S seconds, to 224.0.0.251:5353. KIND:
          nsec     an NSEC answer of ~1,400 bytes whose bitmap names thousands of types (the
                   amplifying record), for NAME-i.local
          service  a service announced: PTR _flood-j._tcp → NAME-i, its SRV, TXT and the host's A
          txt      a TXT record of --size bytes (default 1,300; more leave in IP fragments) for
                   NAME-i.local, its data new in each packet
          mixed    nsec, service, txt and a query for NAME-i.local in turn
        --sources N: from N addresses 10.99.(100 + i / 250).(1 + i % 250) in turn (default 1:
        --from, or the interface's own address); --names N: NAME-0 … NAME-(N-1) in turn
    watch_flood_peer.py probe --to ADDR --name NAME --count N [--every SECONDS] [--wait SECONDS]
        N legacy unicast queries (from a port of its own, RFC 6762 §6.7) for NAME A to ADDR:5353,
        one every SECONDS (default 0.02), and counts those answered within --wait (default 1 s) of
        being asked
Prints one JSON line: flood {"sent", "seconds", "rate"}; probe {"sent", "answered", "late"}.
"""
import argparse, fcntl, json, random, select, socket, struct, time

GROUP = "224.0.0.251"
GROUP_MAC = b"\x01\x00\x5e\x00\x00\xfb"


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        raw = label.encode()
        out += bytes([len(raw)]) + raw
    return out + b"\0"


def record(owner, rtype, rdata, ttl=120, flush=True):
    return name(owner) + struct.pack("!2HIH", rtype, 0x8001 if flush else 1, ttl, len(rdata)) + rdata


def message(answers=(), questions=(), response=True):
    return struct.pack("!6H", 0, 0x8400 if response else 0, len(questions), len(answers), 0, 0) + b"".join(questions) + b"".join(answers)


def checksum(header):
    total = sum(struct.unpack("!%dH" % (len(header) // 2), header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(source, payload, ident):
    """The IPv4 packets of one UDP datagram: one, or fragments of at most 1,500 bytes."""
    udp = struct.pack("!4H", 5353, 5353, 8 + len(payload), 0) + payload
    packets = []
    for offset in range(0, len(udp), 1480):
        piece = udp[offset:offset + 1480]
        flags = (0x2000 if offset + 1480 < len(udp) else 0) | offset // 8
        header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(piece), ident & 0xFFFF, flags, 255, 17, 0,
                             socket.inet_aton(source), socket.inet_aton(GROUP))
        packets.append(header[:10] + struct.pack("!H", checksum(header)) + header[12:] + piece)
    return packets


def interface_address(interface):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", interface.encode()))  # SIOCGIFADDR
    return socket.inet_ntoa(packed[20:24])


WINDOWS = b"".join(bytes([window, 32]) + b"\xff" * 32 for window in range(40))


def nsec(owner):
    return message([record(owner, 47, name(owner) + WINDOWS)])


def service(owner, index, address):
    kind = "_flood-%d._tcp.local" % (index % 16)
    instance = "%s.%s" % (owner.split(".")[0], kind)
    host = owner
    return message([
        record(kind, 12, name(instance), ttl=4500, flush=False),
        record(instance, 33, struct.pack("!3H", 0, 0, 4000 + index % 1000) + name(host)),
        record(instance, 16, b"\x0bflood=%05d" % (index % 100000), ttl=4500),
        record(host, 1, socket.inet_aton(address)),
    ])


def txt(owner, index, size):
    strings = b"".join(bytes([250]) + (b"%010d" % index) * 25 for _ in range(max(1, size // 251)))
    return message([record(owner, 16, strings)])


def query(owner):
    return message(questions=[name(owner) + struct.pack("!2H", 1, 1)], response=False)


def flood(args):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
    sock.bind((args.interface, 0x0800))
    own = args.source or interface_address(args.interface)
    sources = [own] if args.sources <= 1 else ["10.99.%d.%d" % (100 + i // 250, 1 + i % 250) for i in range(args.sources)]
    kinds = ["nsec", "service", "txt", "query"] if args.kind == "mixed" else [args.kind]
    cache = {}

    def frame(index):
        source, named = sources[index % len(sources)], index % args.names
        kind = kinds[index % len(kinds)]
        key = (source, named, kind)
        if key in cache:
            return cache[key]
        owner = "%s-%d.local" % (args.name, named)
        if kind == "txt":  # new data each time: never cached
            return ipv4(source, txt(owner, index, args.size), index)
        payload = nsec(owner) if kind == "nsec" else service(owner, named, source) if kind == "service" else query(owner)
        built = ipv4(source, payload, index)
        if len(cache) < 4096:
            cache[key] = built
        return built

    sent, start = 0, time.monotonic()
    end = start + args.seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        # At most 64 packets between looks at the clock: a slow sender sends less, never longer.
        due = min(int((now - start) * args.rate), sent + 64)
        while sent < due:
            for packet in frame(sent):
                try:
                    sock.sendto(packet, (args.interface, 0x0800, 0, 0, GROUP_MAC))
                except BlockingIOError:
                    pass
                except OSError as error:  # ENOBUFS: the interface's queue is full; the flood goes on
                    if error.errno != 105:
                        raise
            sent += 1
        if due < int((now - start) * args.rate):
            continue
        time.sleep(0.001)
    print(json.dumps({"sent": sent, "seconds": round(time.monotonic() - start, 2), "rate": args.rate}))


def probe(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    asked, answered, late = {}, 0, 0
    start = time.monotonic()
    sent = 0
    last_due = start + args.every * (args.count - 1)
    while True:
        now = time.monotonic()
        if sent < args.count and now >= start + sent * args.every:
            ident = random.randrange(1, 65535)
            while ident in asked:
                ident = random.randrange(1, 65535)
            asked[ident] = now
            sock.sendto(struct.pack("!H", ident) + query(args.name)[2:], (args.to, 5353))
            sent += 1
            continue
        if sent >= args.count and now > last_due + args.wait:
            break
        wait = min(start + sent * args.every if sent < args.count else last_due + args.wait, now + 0.05) - now
        ready, _, _ = select.select([sock], [], [], max(wait, 0))
        while ready:
            try:
                data = sock.recv(9000, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if len(data) < 12 or not data[2] & 0x80:
                continue
            ident = struct.unpack("!H", data[:2])[0]
            if ident in asked:
                if time.monotonic() - asked.pop(ident) <= args.wait:
                    answered += 1
                else:
                    late += 1
    print(json.dumps({"sent": sent, "answered": answered, "late": late}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["flood", "probe"])
    parser.add_argument("--interface", default="nb0")
    parser.add_argument("--kind", choices=["nsec", "service", "txt", "mixed"], default="nsec")
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--names", type=int, default=1)
    parser.add_argument("--size", type=int, default=1300, help="txt: the record's bytes (past ~1,450, IP fragments)")
    parser.add_argument("--name", default="flood")
    parser.add_argument("--from", dest="source")
    parser.add_argument("--to")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--every", type=float, default=0.02)
    parser.add_argument("--wait", type=float, default=1.0)
    args = parser.parse_args()
    flood(args) if args.mode == "flood" else probe(args)


if __name__ == "__main__":
    main()
