#!/usr/bin/env python3
"""Packets real networks carry that a capture filter or decoder may miss (issue 60), built byte by
byte and sent from a lab host as a responder would send them — the host's kernel adds the IPv6
extension header or cuts the datagram into IP fragments, so the wire holds what a daemon takes.

    watch_real_peer.py dstopts --name NAME --address ADDR6 [--interface nb0]
        one IPv6 multicast answer (NAME AAAA ADDR6) behind a Destination Options header (PadN)
    watch_real_peer.py fragmented --from ADDR --name NAME --size 2567
        one IPv4 multicast answer of exactly SIZE bytes (an A record and a TXT): IP fragments on a
        1500-byte link
    watch_real_peer.py nsec --from ADDR --name NAME --size 1404
        one answer of about SIZE bytes: an NSEC record whose bitmap names thousands of types
    watch_real_peer.py pcapng --out FILE
        a pcapng capture (Ethernet): 1,000 malformed packets from 1,000 sources, then two hosts
        claiming h9.local (a conflict)
    watch_real_peer.py announce --from ADDR --name INSTANCE.TYPE.local --every S --count N
        a responder that multicasts one service's records (PTR, SRV, TXT, its host's A) unasked,
        N times S seconds apart, from port 5353: every 0.1 s an over-eager announcer (RFC 6762
        §6.2, §8.3), every 1 s one answering what nobody asked
    watch_real_peer.py ttl-noise --from ADDR --packets P --records R
        P multicast answers of R A records each, every name its own, all with TTL 1
    watch_real_peer.py stack --address ADDR --seconds S
        a second mDNS stack beside the host's daemon: UDP 0.0.0.0:5353 (SO_REUSEADDR, SO_REUSEPORT)
        bound to the lab's interface (SO_BINDTODEVICE, as a stack serving one link binds), joined
        to 224.0.0.251; it reads what comes and answers nothing. Prints "bound", then
        {"received": N, "unicast": M} after S seconds (or SIGTERM)
Each prints {"sent": BYTES} (pcapng: {"packets": N}; announce, ttl-noise: {"sent": PACKETS}).
"""
import argparse, json, signal, socket, struct, sys, time

GROUP4 = ("224.0.0.251", 5353)


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        raw = label.encode()
        out += bytes([len(raw)]) + raw
    return out + b"\0"


def record(owner, rtype, rdata, ttl=120, flush=True):
    return name(owner) + struct.pack("!2HIH", rtype, 0x8001 if flush else 1, ttl, len(rdata)) + rdata


def response(records):
    return struct.pack("!6H", 0, 0x8400, 0, len(records), 0, 0) + b"".join(records)


def socket4(source):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:  # from 5353, beside the host's daemon, as a responder's answer comes (else an ephemeral port)
        sock.bind(("0.0.0.0", 5353))
    except OSError:
        sock.bind(("0.0.0.0", 0))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    return sock


def txt_filling(owner, size, fixed):
    """A TXT record that brings the message to `size` bytes, given `fixed` bytes before it."""
    room = size - fixed - len(name(owner)) - 10
    strings = b""
    while room > 0:
        length = min(room - 1, 255)
        if length < 0:
            break
        strings += bytes([length]) + b"k" * length
        room -= length + 1
    return record(owner, 16, strings, ttl=4500)


def pcapng(path):
    def block(btype, body):
        body += b"\0" * ((4 - len(body) % 4) % 4)
        return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    def frame(source, payload):
        udp = struct.pack("!4H", 5353, 5353, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 255, 17, 0, socket.inet_aton(source),
                         socket.inet_aton("224.0.0.251")) + udp
        return b"\x01\x00\x5e\x00\x00\xfb\x02\x00\x00\x00\x00\x02\x08\x00" + ip

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", 1, 0, 262144))
    stamp = 1_700_000_000 * 1_000_000
    packets = []
    for index in range(1000):
        packets.append(("10.1.%d.%d" % (index // 256, index % 256), struct.pack("!6H", 0, 0x8400, 0, 2, 0, 0) + b"\x03abc"))
    claim = lambda address: response([record("h9.local", 1, socket.inet_aton(address))])
    packets += [("10.99.0.9", claim("10.99.0.9")), ("10.99.0.8", claim("10.99.0.8")), ("10.99.0.8", claim("10.99.0.8"))]
    for index, (source, payload) in enumerate(packets):
        data = frame(source, payload)
        when = stamp + index * 1000
        out += block(6, struct.pack("<IIIII", 0, when >> 32, when & 0xFFFFFFFF, len(data), len(data)) + data)
    with open(path, "wb") as handle:
        handle.write(out)
    return len(packets)


def announce(args):
    """PTR TYPE -> INSTANCE, SRV INSTANCE -> HOST:9, TXT, A HOST: what a responder announces."""
    instance = args.name.rstrip(".")
    service = instance.split(".", 1)[1]
    host = "wr-%s.local" % args.source.replace(".", "-")
    srv = struct.pack("!3H", 0, 0, 9) + name(host)
    packet = response([record(service, 12, name(instance), ttl=4500, flush=False), record(instance, 33, srv),
                       record(instance, 16, b"\x05k=one", ttl=4500), record(host, 1, socket.inet_aton(args.source))])
    sock = socket4(args.source)
    start = time.monotonic()
    for index in range(args.count):
        time.sleep(max(0.0, start + index * args.every - time.monotonic()))
        sock.sendto(packet, GROUP4)
    return args.count


def ttl_noise(args):
    sock = socket4(args.source)
    for number in range(args.packets):
        sock.sendto(response([record("t%d-%d.local" % (number, index), 1, socket.inet_aton(args.source), ttl=1, flush=False)
                              for index in range(args.records)]), GROUP4)
    return args.packets


def stack(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, args.interface.encode())
    sock.bind(("0.0.0.0", 5353))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP4[0]) + socket.inet_aton(args.address))
    sock.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_PKTINFO", 8), 1)
    sock.settimeout(0.2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("bound", flush=True)
    received = unicast = 0
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            try:
                _, ancillary, _, _ = sock.recvmsg(9000, 64)
            except socket.timeout:
                continue
            received += 1
            # in_pktinfo's last field: the address the datagram was sent to (this host's, or the group).
            unicast += any(data[-4:] != socket.inet_aton(GROUP4[0]) for _, _, data in ancillary)
    finally:
        print(json.dumps({"received": received, "unicast": unicast}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["dstopts", "fragmented", "nsec", "pcapng", "announce", "ttl-noise", "stack"])
    parser.add_argument("--from", dest="source")
    parser.add_argument("--name", default="real.local")
    parser.add_argument("--address")
    parser.add_argument("--interface", default="nb0")
    parser.add_argument("--size", type=int, default=2567)
    parser.add_argument("--out")
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--packets", type=int, default=21)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    if args.mode in ("announce", "ttl-noise"):
        print(json.dumps({"sent": (announce if args.mode == "announce" else ttl_noise)(args)}))
        return
    if args.mode == "stack":
        stack(args)
        return
    if args.mode == "dstopts":
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("::", 5353))
        except OSError:
            sock.bind(("::", 0))
        index = socket.if_nametoindex(args.interface)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        # A Destination Options header of 8 bytes: next header and length (the kernel's), PadN of 4.
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_DSTOPTS, bytes([0, 0, 1, 4, 0, 0, 0, 0]))
        packet = response([record(args.name, 28, socket.inet_pton(socket.AF_INET6, args.address))])
        sock.sendto(packet, ("ff02::fb", 5353, 0, index))
    elif args.mode == "fragmented":
        owner = args.name
        first = record(owner, 1, socket.inet_aton(args.source))
        packet = response([first, txt_filling(owner, args.size, 12 + len(first))])
        assert len(packet) == args.size, len(packet)
        socket4(args.source).sendto(packet, GROUP4)
    elif args.mode == "nsec":
        owner = name(args.name)
        windows = b""
        room = args.size - 12 - len(owner) - 10 - len(owner)
        for window in range(256):
            if room < 34:
                break
            windows += bytes([window, 32]) + b"\xff" * 32
            room -= 34
        packet = response([name(args.name) + struct.pack("!2HIH", 47, 0x8001, 120, len(owner) + len(windows)) + owner + windows])
        socket4(args.source).sendto(packet, GROUP4)
    else:
        print(json.dumps({"packets": pcapng(args.out)}))
        return
    print(json.dumps({"sent": len(packet)}))


if __name__ == "__main__":
    main()
