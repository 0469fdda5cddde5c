#!/usr/bin/env python3
"""Sends N refused CONNECTs in a row, one connection each, as a worker
flooding its proxy would. Prints "COUNT CODE" per status seen.
Usage: egress-flood.py PROXY_HOST:PORT TARGET_HOST:PORT N"""
import collections
import socket
import sys


def main():
    proxy, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    host, port = proxy.rsplit(":", 1)
    seen = collections.Counter()
    for _ in range(n):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            parts = data.split(b" ", 2)
            seen[parts[1].decode() if len(parts) > 1 else "closed"] += 1
    for code, count in sorted(seen.items()):
        print(count, code)


if __name__ == "__main__":
    main()
