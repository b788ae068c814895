#!/usr/bin/env python3
"""A hostile peer for tests/e2e/shell.sh: on the receiving host, captures the first UDP datagram
to PORT (a nearby unreliable message), then sends it to ADDRESS:PORT again as it was (a replay) and,
a moment later, with its sequence number altered (tampered). Prints JSON lines: ready, captured, sent."""
import json
import socket
import struct
import sys
import time

port, address = int(sys.argv[1]), sys.argv[2]
sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
sniffer.settimeout(10)
print(json.dumps({"ready": True}), flush=True)
while True:
    frame = sniffer.recv(65535)
    if len(frame) < 14 + 20 + 8 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
        continue
    ip = frame[14:]
    header = (ip[0] & 0x0F) * 4
    if ip[9] != 17:
        continue
    udp = ip[header:]
    destination, length = struct.unpack("!H", udp[2:4])[0], struct.unpack("!H", udp[4:6])[0]
    if destination == port and length - 8 >= 32:
        datagram = udp[8:length]
        break
print(json.dumps({"captured": len(datagram)}), flush=True)
sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
time.sleep(0.3)
sender.sendto(datagram, (address, port))
print(json.dumps({"sent": "replay"}), flush=True)
time.sleep(1.5)
# A new sequence number (byte 14 of the header), so the replay window lets it through to the
# authentication check, which must refuse it.
tampered = datagram[:14] + bytes([datagram[14] ^ 0x01]) + datagram[15:]
sender.sendto(tampered, (address, port))
print(json.dumps({"sent": "tampered"}), flush=True)
