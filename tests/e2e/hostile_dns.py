#!/usr/bin/env python3
"""A hostile DNS server for `--domain` (tests/e2e/widearea.sh): it never answers a question, it
only tries to make the asking node hold memory or wait forever.

    hostile_dns.py HOST PORT MODE

MODE:
    tc-flood       every UDP query gets an empty reply with its ID and TC set ("ask over TCP");
                   every TCP query gets endless complete 65,535-byte messages with another ID
    oversized-udp  every UDP query gets 60,000-byte replies with its ID (and TC clear), then more
                   with other IDs; TCP connections are closed at once
    wrong-id       every UDP query gets replies with other IDs only

Prints one JSON line per connection or query it served to stdout:
{"mode", "proto", "sent" (bytes)}. Runs until killed.
"""
import json
import socket
import struct
import sys
import threading

FRAME = 65535


def header(qid, flags, qd=0, an=0):
    return struct.pack(">HHHHHH", qid, flags, qd, an, 0, 0)


def report(mode, proto, sent):
    print(json.dumps({"mode": mode, "proto": proto, "sent": sent}), flush=True)


def serve_udp(sock, mode):
    while True:
        data, peer = sock.recvfrom(65535)
        if len(data) < 12:
            continue
        qid = struct.unpack(">H", data[:2])[0]
        question = data[12:]
        sent = 0
        if mode == "tc-flood":
            # QR, TC; the question echoed so that a careful client takes it as its answer's header.
            reply = header(qid, 0x8200, qd=1) + question
            sock.sendto(reply, peer)
            sent += len(reply)
        elif mode == "oversized-udp":
            for other in (qid, qid ^ 0x5A5A, qid ^ 1):
                reply = header(other, 0x8000, an=0xFFFF) + b"\xc0" * 60000
                try:
                    sock.sendto(reply, peer)
                    sent += len(reply)
                except OSError:
                    pass
        elif mode == "wrong-id":
            for delta in range(1, 17):
                reply = header(qid ^ delta, 0x8000, qd=1) + question
                sock.sendto(reply, peer)
                sent += len(reply)
        report(mode, "udp", sent)


def flood_tcp(conn, mode):
    sent = 0
    try:
        if mode != "tc-flood":
            return
        length = conn.recv(2)
        if len(length) < 2:
            return
        want = struct.unpack(">H", length)[0]
        query = b""
        while len(query) < want:
            more = conn.recv(want - len(query))
            if not more:
                return
            query += more
        qid = struct.unpack(">H", query[:2])[0]
        # A complete message, but never the one asked for: another ID, then 65,523 bytes of junk.
        frame = struct.pack(">H", FRAME) + header(qid ^ 0x8001, 0x8000) + b"\x00" * (FRAME - 12)
        while True:
            conn.sendall(frame)
            sent += len(frame)
    except OSError:
        pass
    finally:
        report(mode, "tcp", sent)
        conn.close()


def serve_tcp(listener, mode):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=flood_tcp, args=(conn, mode), daemon=True).start()


def main():
    host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode not in ("tc-flood", "oversized-udp", "wrong-id"):
        sys.exit(f"unknown mode {mode}")
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    udp.bind((host, port))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((host, port))
    tcp.listen(16)
    threading.Thread(target=serve_tcp, args=(tcp, mode), daemon=True).start()
    print(json.dumps({"listening": f"{host}:{port}", "mode": mode}), flush=True)
    serve_udp(udp, mode)


if __name__ == "__main__":
    main()
