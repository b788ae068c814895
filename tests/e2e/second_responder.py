#!/usr/bin/env python3
"""A second mDNS stack: binds UDP 0.0.0.0:5353 beside avahi-daemon (SO_REUSEADDR and SO_REUSEPORT,
as avahi allows) and joins 224.0.0.251 on ADDRESS's interface, as python-zeroconf does. Prints
"bound" once it holds the port, then reads (and drops) what arrives until SECONDS pass.

    second_responder.py ADDRESS SECONDS
"""
import socket
import struct
import sys
import time

address, seconds = sys.argv[1], float(sys.argv[2])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
sock.bind(("0.0.0.0", 5353))
sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton("224.0.0.251"), socket.inet_aton(address)))
print("bound", flush=True)
end = time.monotonic() + seconds
sock.settimeout(0.5)
while time.monotonic() < end:
    try:
        sock.recv(9000)
    except socket.timeout:
        pass
