#!/usr/bin/env python3
"""A worker for metrics-egress.sh: holds one TLS tunnel open to each HOST
through its egress proxy (https_proxy), then every 0.3 s probes each HOST
with a fresh tunnel and a GET, and appends to $HOME/log one line per change
it sees: "N held HOST CODE" at the start, "N closed HOST" when a held
tunnel ends, "N probe HOST CODE" when a probe's result differs from the
last one. N counts the rounds.
Usage: live.py CA_FILE HOST..."""
import os
import socket
import ssl
import sys
import time

ca, hosts = sys.argv[1], sys.argv[2:]
proxy = (os.environ.get("https_proxy") or os.environ["HTTPS_PROXY"]).split("//", 1)[1].rstrip("/")
proxy_host, proxy_port = proxy.rsplit(":", 1)
log = open(os.path.join(os.environ["HOME"], "log"), "a", buffering=1)
ctx = ssl.create_default_context(cafile=ca)


def say(*words):
    log.write(" ".join(str(w) for w in words) + "\n")


def tunnel(host):
    s = socket.create_connection((proxy_host, int(proxy_port)), timeout=10)
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    words = head.split()
    code = words[1].decode() if len(words) > 1 else "closed"
    if code != "200":
        s.close()
        return None, code
    return ctx.wrap_socket(s, server_hostname=host), code


def probe(host):
    try:
        t, code = tunnel(host)
        if not t:
            return code
        t.sendall(b"GET /5 HTTP/1.0\r\nHost: %s\r\n\r\n" % host.encode())
        data = b""
        while True:
            d = t.recv(4096)
            if not d:
                break
            data += d
        t.close()
        return "200" if data.endswith(b"xxxxx") else "short"
    except Exception as e:
        return "error:" + type(e).__name__


held = {}
for h in hosts:
    try:
        t, code = tunnel(h)
    except Exception as e:
        t, code = None, "error:" + type(e).__name__
    if t:
        t.settimeout(0.01)
        held[h] = t
    say(0, "held", h, code)

last = {}
n = 0
while True:
    n += 1
    for h in list(held):
        try:
            if held[h].recv(1) == b"":
                raise ConnectionResetError()
        except socket.timeout:
            continue
        except (ssl.SSLError, OSError):
            pass
        say(n, "closed", h)
        del held[h]
    for h in hosts:
        c = probe(h)
        if last.get(h) != c:
            say(n, "probe", h, c)
            last[h] = c
    time.sleep(0.3)
