#!/usr/bin/env python3
"""Writes each fuzz target's seed corpus: Fuzz/seeds.py DIR makes DIR/TARGET/seed-N for every target.

The seeds are what the unit tests feed these decoders (the test each comes from is named beside
it), plus three mDNS packets captured on a real LAN, from another project's test data:
  fabrlyn/dns_parser, src/capture.rs (commit f7e31f59): a _spotify-connect._tcp PTR query, a
  _companion-link._tcp TXT response with an NSEC record, a _googlecast._tcp query with the QU bit.
libFuzzer grows each corpus from these; scripts/fuzz keeps what it finds under the scratch path.
"""
import json
import os
import struct
import sys

def frame(kind, body=b"", channel=0):
    return struct.pack(">BII", kind, channel, len(body)) + body

def j(obj):
    return json.dumps(obj, separators=(",", ":")).encode()

def name(text):
    out = b""
    for label in text.strip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"

def dns(qd=(), an=(), ident=0, flags=0x8400):
    head = struct.pack(">HHHHHH", ident, flags, len(qd), len(an), 0, 0)
    body = b""
    for qname, qtype in qd:
        body += name(qname) + struct.pack(">HH", qtype, 1)
    for rname, rtype, rdata in an:
        body += name(rname) + struct.pack(">HHIH", rtype, 0x8001, 120, len(rdata)) + rdata
    return head + body

def txt(*entries):
    return b"".join(bytes([len(e)]) + e for e in entries)

# fabrlyn/dns_parser src/capture.rs: captured mDNS payloads.
CAPTURED = [
    bytes([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 16]) + b"_spotify-connect" + bytes([4]) + b"_tcp" + bytes([5]) + b"local" + bytes([0, 0, 12, 0, 1]),
    bytes([0, 0, 132, 0, 0, 0, 0, 1, 0, 0, 0, 1, 8]) + b"Macbook1" + bytes([15]) + b"_companion-link" + bytes([4]) + b"_tcp"
    + bytes([5]) + b"local" + bytes([0, 0, 16, 128, 1, 0, 0, 17, 148, 0, 119, 17]) + b"rpHN=7f8714eb8947" + bytes([12])
    + b"rpFl=0x20000" + bytes([10]) + b"rpVr=195.2" + bytes([17]) + b"rpHA=44af0eef5be6" + bytes([17]) + b"rpAD=ee7c4ae68066"
    + bytes([17]) + b"rpHI=465a73ec5563" + bytes([22]) + b"rpBA=B7:0F:AA:9C:79:D6"
    + bytes([192, 12, 0, 47, 128, 1, 0, 0, 17, 148, 0, 9, 192, 12, 0, 5, 0, 0, 128, 0, 64]),
    bytes([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 11]) + b"_googlecast" + bytes([4]) + b"_tcp" + bytes([5]) + b"local" + bytes([0, 0, 12, 128, 1]),
]

# Tests/NearbyWatchTests (Make.swift): a service announced (PTR, SRV, TXT, A), as the rule tests build it.
ANNOUNCE = dns(an=[
    ("_nearby._tcp.local", 12, name("laptop._nearby._tcp.local")),
    ("laptop._nearby._tcp.local", 33, struct.pack(">HHH", 0, 0, 7000) + name("laptop.local")),
    ("laptop._nearby._tcp.local", 16, txt(b"_d=Laptop", b"_nb=2")),
    ("laptop.local", 1, bytes([192, 168, 1, 2])),
])
MDNS = CAPTURED + [ANNOUNCE, dns(qd=[("_nearby._tcp.local", 12)], flags=0)]

def udp4(payload, src=(192, 168, 1, 2)):
    udp = struct.pack(">HHHH", 5353, 5353, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 255, 17, 0, bytes(src), bytes([224, 0, 0, 251]))
    return ip + udp

def udp6(payload):
    udp = struct.pack(">HHHH", 5353, 5353, 8 + len(payload), 0) + payload
    src = bytes([0xfe, 0x80] + [0] * 13 + [2])
    dst = bytes([0xff, 0x02] + [0] * 13 + [0xfb])
    return struct.pack(">IHBB", 0x60000000, len(udp), 17, 255) + src + dst + udp

def ether(packet, v6=False):
    return bytes(6) + bytes([2, 0, 0, 0, 0, 2]) + struct.pack(">H", 0x86DD if v6 else 0x0800) + packet

def pcap(frames, link=1, magic=0xA1B2C3D4, endian=">"):
    out = struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, link)
    for at, data in enumerate(frames):
        out += struct.pack(endian + "IIII", 1_700_000_000 + at, 0, len(data), len(data)) + data
    return out

# Tests/NearbyCoreTests/FlatJSONTests.swift's examples and the bodies peers send (FlatJSONSamples).
FLAT = [b'{"offset":1}', b'{"offset":18446744073709551615}', b'{"offset":1e2}', b'{"offset":1,"offset":2}',
        b'{"offs\\u0065t":1}', b'{"offset":1,"x":[1,{"y":true}]}', b'\xef\xbb\xbf{"offset":1}',
        j({"kind": "file", "path": "a/b.txt", "size": 12, "key": "k1"}),
        j({"accept": True, "offset": 0, "prefixSHA256": None}), j({"accept": False, "offset": 0, "reason": "no", "code": "declined"}),
        j({"sha256": "ab" * 32, "bytes": 12, "alreadyThere": False, "savedAs": "b (1).txt"}),
        j({"reason": "stopped", "code": "cancelled"})]
HELLO = j({"version": 2, "id": "0123456789abcdef", "name": "Laptop", "key": "AAAA", "commitment": "BBBB", "features": ["resume"]})

SEEDS = {
    # Tests/NearbyCoreTests/ProtocolTests.swift, FrameLimitTests.swift: frames as a peer writes them.
    "frames": [b"\x05" + frame(1, HELLO) + frame(2, j({"nonce": "n", "signature": "s"})),
               b"\x00" + frame(6) + frame(5, b"hi") + frame(8, j({"reason": "bye"})),
               b"\x10" + frame(0x10, FLAT[7], 3) + frame(0x12, b'{"offset":0}', 3) + frame(0x13, b"x" * 40, 3)
               + frame(0x14, struct.pack(">I", 65536), 3) + frame(0x15, FLAT[10], 3),
               b"\x03" + frame(3, j({"invitation": "i1", "context": "hello", "timeout": 30})) + frame(4, j({"invitation": "i1", "accept": True}))],
    "frames-flatjson": FLAT + [HELLO],
    # Tests/NearbyCoreTests/ControlLineTests.swift: requests and answers on the control socket.
    "control-lines": [b"\x07" + j({"invite": {"peer": "laptop", "context": None, "timeout": 30}}) + b"\n" + j({"status": 0}) + b"\n",
                      b"\x01" + j({"sendLines": {"peers": ["a"], "all": False, "timeout": 5, "unreliable": True}}) + b"\n"
                      + j({"event": "sent", "peer": {"id": "x", "name": "y"}}) + b"\n" + j({"stream_ready": {"name": "s"}}) + b"\n",
                      b"\x10" + j({"pass_descriptors": True}) + b"\n"],
    # Tests/NearbyDNSTests/DNSCodecTests.swift and the captured packets.
    "dns-message": MDNS + [dns(qd=[("example.com", 6)], flags=0x0100, ident=0x1234)],
    "dns-tsig": MDNS,
    "dns-stream": [b"\x05" + b"".join(struct.pack(">H", len(m)) + m for m in MDNS)],
    # Tests/NearbyCoreTests (TXTRecord cases): nearby's own record, an MPC app's, boolean keys.
    "dns-txt": [txt(b"_d=Laptop", b"_nb=2", b"__user=1", b"color=blue"), txt(b"_d=Phone", b"flag", b"=x", b"a=b=c"),
                txt(b"rpHN=7f8714eb8947", b"rpFl=0x20000", b"rpVr=195.2")],
    # Tests/NearbyWatchTests/CaptureFormatTests.swift: both byte orders, nanoseconds, Linux cooked.
    "watch-pcap": [pcap([ether(udp4(m)) for m in MDNS]), pcap([udp6(ANNOUNCE)], link=101, endian="<"),
                   pcap([ether(udp6(CAPTURED[1]), v6=True)], magic=0xA1B23C4D)],
    "watch-ip": [ether(udp4(ANNOUNCE)), udp6(CAPTURED[0]), udp4(CAPTURED[2])],
    "watch-mdns": [b"".join(struct.pack(">HBB", len(m), host, 3) + m for host, m in enumerate(MDNS)),
                   b"".join(struct.pack(">HBB", len(ANNOUNCE), host % 3, 1) + ANNOUNCE for host in range(8))],
    # Tests/NearbyWebTests/MultipartPropertyTests.swift: a browser's upload, a field, the preamble.
    "http-multipart": [b"multipart/form-data; boundary=----WebKitFormBoundaryX\n\x07------WebKitFormBoundaryX\r\n"
                       b'Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n'
                       b"hello\r\n------WebKitFormBoundaryX\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r\n"
                       b"------WebKitFormBoundaryX--\r\n",
                       b'XyZ\n\x02ignored\r\n--XyZ\r\nContent-Disposition: form-data; name="f"; filename="b"\r\nContent-Length: 3\r\n\r\nabc\r\n--XyZ--'],
    # Tests/NearbyWebTests/WebCodecTests.swift: Range headers.
    "http-range": [b"\x02bytes=0-99", b"\x02bytes=-5", b"\x03bytes=10-", b"\x80\x00\x00\x00\x00\x00\x00\x10\x00bytes=5-7",
                   b"\x01bytes=0-0,5-6", b"\x02 bytes = 1 - 2 "],
    "http-route": [b"\x00/abcdefghijklmnopqrstuvwxyz/", b"\x00/abcdefghijklmnopqrstuvwxyz/1/a.txt?x=1",
                   b"\x02/abcdefghijklmnopqrstuvwxyz/upload", b"\x01/abcdefghijklmnopqrstuvwxyz/0/"],
    # Tests/NearbyCoreTests/SafePathTests.swift, Tests/NearbyWebTests/ZipNamesTests.swift.
    "http-names": [b"../../etc/passwd", b"a/./b/../c", b"..\\..\\escape-4", b"\xe2\x80\xaeevil.txt", b" .. / ... /x",
                   b"d/a/b.txt\nd/a\\b.txt\nd/c.txt", b"x" * 300 + b".txt", b"/abs/\x00nul\x1bESC"],
    # Tests/NearbyLocalSendTests/LocalSendCodecTests.swift, OfficialFormatTests.swift.
    "localsend-device": [j({"alias": "Phone", "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile",
                            "fingerprint": "ab" * 32, "port": 53317, "protocol": "https", "download": False, "announce": True}),
                         j({"alias": "Old", "fingerprint": "x", "announcement": False})],
    "localsend-prepare-upload": [b"\x07" + j({"info": {"alias": "Phone", "version": "2.1", "fingerprint": "f"},
                                               "files": {"a": {"id": "a", "fileName": "a.txt", "size": 3, "fileType": "text/plain",
                                                               "metadata": {"modified": "2024-01-01T00:00:00Z"}},
                                                         "b": {"id": "b", "fileName": "dir/b.jpg", "size": 0, "preview": None}}}),
                                 b"\x01" + b'{\n  "files": {"x": {"fileName": "x", "size": 1}},\n  "info": {"alias": "A"}\n}\n'],
    # Tests/NearbyCoreTests/IdentityStoreTests.swift, KnownPeersCapTests.swift.
    "files-identity": [j({"version": 1, "id": "0123456789abcdef", "name": "Laptop",
                          "privateKey": "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n",
                          "created": "2024-01-01T00:00:00Z"})],
    "files-known-peers": [b"0123456789abcdef AAAA Laptop\n# comment\nfedcba9876543210 QUJD Phone\n\x00"
                          b"0011223344556677 QUJD stranger\n"],
    "files-tsig-key": [b'key "nearby-fuzz.key." {\n\talgorithm hmac-sha256;\n\tsecret "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";\n};\n'],
}

def main():
    if len(sys.argv) != 2:
        sys.exit("usage: Fuzz/seeds.py DIR")
    for target, seeds in SEEDS.items():
        os.makedirs(os.path.join(sys.argv[1], target), exist_ok=True)
        for index, seed in enumerate(seeds):
            with open(os.path.join(sys.argv[1], target, "seed-%d" % index), "wb") as out:
                out.write(seed)

if __name__ == "__main__":
    main()
