#!/usr/bin/env python3
"""What a gVisor worker with egress can reach besides its proxy, run inside
one (suspend-egress.sh). Prints one line per finding:
  open PORT               a TCP port of the proxy's address that accepted
  direct ADDR:PORT RESULT a connection around the proxy
  v6 ADDR RESULT          the same over IPv6
Usage: attack.py PROXY_ADDR PORT_MAX ADDR:PORT..."""
import socket
import sys

proxy, port_max = sys.argv[1], int(sys.argv[2])


def try_connect(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.connect(addr)
        return "connected"
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()


for port in range(1, port_max + 1):
    if try_connect(socket.AF_INET, (proxy, port)) == "connected":
        print("open", port, flush=True)
for target in sys.argv[3:]:
    host, port = target.rsplit(":", 1)
    if host.startswith("["):
        print("v6", target, try_connect(socket.AF_INET6, (host.strip("[]"), int(port))), flush=True)
    else:
        print("direct", target, try_connect(socket.AF_INET, (host, int(port))), flush=True)
print("done", flush=True)
