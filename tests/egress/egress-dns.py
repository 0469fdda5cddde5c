#!/usr/bin/env python3
"""A tiny authoritative DNS server for the egress tests: answers A queries
for the names given, NXDOMAIN for everything else, and appends every query
name to LOGFILE (one per line), so a test can prove a name was never asked
(or, for the proxy's cache, asked once). LOGFILE exists as soon as the
server answers. Answers carry a TTL of 60 s unless NAME=IPV4/TTL says.
Usage: egress-dns.py ADDRESS PORT LOGFILE NAME=IPV4[/TTL]..."""
import socket
import struct
import sys


def parse_name(data, pos):
    labels = []
    while data[pos]:
        n = data[pos]
        labels.append(data[pos + 1:pos + 1 + n].decode("ascii", "replace"))
        pos += 1 + n
    return ".".join(labels).lower(), pos + 1


def main():
    address, port, logfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    records = {}
    for a in sys.argv[4:]:
        name, value = a.split("=", 1)
        ipv4, _, ttl = value.partition("/")
        records[name] = (ipv4, int(ttl or 60))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((address, port))
    open(logfile, "a").close()   # exists once queries can be answered
    while True:
        data, peer = s.recvfrom(4096)
        if len(data) < 12:
            continue
        qid, flags, qd = struct.unpack(">HHH", data[:6])
        name, end = parse_name(data, 12)
        qtype = struct.unpack(">H", data[end:end + 2])[0]
        with open(logfile, "a") as f:
            f.write(name + "\n")
        question = data[12:end + 4]
        answers = b""
        rcode = 3  # NXDOMAIN
        if name in records:
            rcode = 0
            if qtype == 1:
                answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, records[name][1], 4) + \
                    socket.inet_aton(records[name][0])
        header = struct.pack(">HHHHHH", qid, 0x8400 | (flags & 0x0100) | rcode, 1, 1 if answers else 0, 0, 0)
        s.sendto(header + question + answers, peer)


if __name__ == "__main__":
    main()
