#!/usr/bin/env python3
"""The attacker inside a worker with egress: tries every way out and prints
one line per attack, "EGRESS NAME RESULT", where RESULT is what it saw (the
proxy's status and X-Sandbox-Egress-Reason, "200 closed" for a tunnel the
proxy shut after its 200, an errno name for a dial that failed). The suite
matches each line against the refusal it expects and checks the upstreams'
contact log.

  egress-attack.py batch     every attack below, in order
  egress-attack.py flood N   N refused CONNECTs, then one allowed tunnel"""
import errno
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

# tls_hello.py is tests/egress's; the test bed copies it beside this file.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "egress"))
from tls_hello import client_hello, with_ech_extension  # noqa: E402

# Where the worker's proxy listens: 127.0.0.1 in a trusted worker's namespace,
# the veth peer's address for a gVisor one (README "Egress").
_url = urllib.parse.urlsplit(os.environ.get("HTTPS_PROXY", "http://127.0.0.1:3128"))
PROXY = (_url.hostname, _url.port or 3128)


def say(name, result):
    print("EGRESS %s %s" % (name, result), flush=True)


def ename(e):
    return errno.errorcode.get(e, str(e))


def status(s):
    data = b""
    s.settimeout(15)
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    if not data:
        return "closed"
    lines = data.split(b"\r\n")
    code = lines[0].split(b" ")[1].decode() if len(lines[0].split(b" ")) > 1 else "garbage"
    reason = ""
    for line in lines[1:]:
        if line.lower().startswith(b"x-sandbox-egress-reason:"):
            reason = line.split(b":", 1)[1].strip().decode()
    return ("%s %s" % (code, reason)).strip()


def proxy_conn():
    s = socket.create_connection(PROXY, timeout=10)
    return s


def raw(request):
    s = proxy_conn()
    s.sendall(request)
    r = status(s)
    s.close()
    return r


def connect(target):
    return raw(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())


def tunnel_then(target, payload):
    """CONNECT, then payload (a ClientHello) after the 200; "200 closed" if the
    proxy shuts the tunnel, "200 answered" if the upstream replied."""
    s = proxy_conn()
    s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % target).encode())
    r = status(s)
    if not r.startswith("200"):
        return r
    s.sendall(payload)
    s.settimeout(10)
    try:
        data = s.recv(4096)
    except OSError:
        data = b""
    return "200 answered" if data else "200 closed"


def tls_get(target, sni):
    s = proxy_conn()
    s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % target).encode())
    r = status(s)
    if not r.startswith("200"):
        return r
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /5 HTTP/1.0\r\n\r\n")
        return "200 tls-ok" if t.recv(100).startswith(b"HTTP/1.") else "200 tls-garbage"
    except (OSError, ssl.SSLError) as e:
        return "200 tls-failed-" + type(e).__name__


def dial(fam, typ, addr, port):
    s = socket.socket(fam, typ)
    s.settimeout(5)
    try:
        if typ == socket.SOCK_STREAM:
            s.connect((addr, port))
            return "connected"
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03api\x06attack\x04test\x00\x00\x01\x00\x01",
                 (addr, port))
        s.recv(512)
        return "answered"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return ename(e.errno)


def slow_drip(result):
    """Request headers one byte a second: the proxy must give up on its own."""
    s = proxy_conn()
    t0 = time.monotonic()
    s.sendall(b"CONNECT api.attack.test:443 HTTP/1.1\r\n")
    closed = "open"
    for c in b"X-Drip: " + b"a" * 12:   # 20 s: twice the proxy's request timeout
        try:
            s.sendall(bytes([c]))
        except OSError:
            closed = "closed"
            break
        s.settimeout(1)
        try:
            if s.recv(4096) == b"":
                closed = "closed"
                break
            closed = "answered"
            break
        except socket.timeout:
            continue
        except OSError:
            closed = "closed"
            break
    result.append("%s after %ds" % (closed, int(time.monotonic() - t0)))


def resolver():
    try:
        for line in open("/etc/resolv.conf"):
            if line.startswith("nameserver"):
                return line.split()[1]
    except OSError:
        pass
    return "11.0.0.1"


def batch():
    drip = []
    dripper = threading.Thread(target=slow_drip, args=(drip,))
    dripper.start()
    say("control-allowed", tls_get("api.attack.test:443", "api.attack.test"))
    say("direct-v4", dial(socket.AF_INET, socket.SOCK_STREAM, "11.0.0.13", 443))
    say("direct-v6", dial(socket.AF_INET6, socket.SOCK_STREAM, "2a0b:1100::13", 443))
    say("dns-direct", "%s,%s" % (dial(socket.AF_INET, socket.SOCK_DGRAM, resolver(), 53),
                                 dial(socket.AF_INET, socket.SOCK_DGRAM, "11.0.0.10", 53)))
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    p = subprocess.run(["curl", "-sk", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                        "https://noproxy.attack.test/"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    say("no-proxy-env", "curl-exit=%d" % p.returncode)
    say("ip-literal", connect("11.0.0.10:443"))
    say("spelled-0x7f.1", connect("0x7f.1:443"))
    say("spelled-2130706433", connect("2130706433:443"))
    say("literal-v6-loopback", connect("[::1]:443"))
    say("private-answer", connect("priv.attack.test:443"))
    say("hostlocal-answer", connect("hostlocal.attack.test:443"))
    for n in ("testnet1", "testnet2", "testnet3", "docv6", "bench6"):
        say("special-" + n, connect("%s.attack.test:443" % n))
    say("rebind-mixed", connect("mixed.attack.test:443"))
    say("search-list", connect("nx.attack.test:443"))
    say("sni-mismatch", tunnel_then("sni.attack.test:443", client_hello("api.attack.test")))
    say("no-sni", tunnel_then("sni.attack.test:443", client_hello(None)))
    say("ech-outer-mismatch", tunnel_then("sni.attack.test:443", with_ech_extension(client_hello("api.attack.test"))))
    say("other-port", connect("api.attack.test:22"))
    say("plain-http", raw(b"GET http://api.attack.test/ HTTP/1.1\r\nHost: api.attack.test\r\n\r\n"))
    say("http10-not-allowed", raw(b"CONNECT noproxy.attack.test:443 HTTP/1.0\r\n\r\n"))
    say("pipelined", raw(b"CONNECT api.attack.test:443 HTTP/1.1\r\n\r\n"
                         b"CONNECT pipe.attack.test:443 HTTP/1.1\r\n\r\n"))
    # The drip's connection must be gone before the tunnels are counted.
    dripper.join()
    say("slow-drip", drip[0].replace(" ", "-"))
    held = []
    for _ in range(int(os.environ.get("SBX_ATTACK_MAX_TUNNELS", "3"))):
        s = proxy_conn()
        s.sendall(b"CONNECT api.attack.test:443 HTTP/1.1\r\n\r\n")
        held.append((s, status(s)))
    say("tunnel-exhaustion", "held=%s next=%s" % (",".join(r.split()[0] for _, r in held),
                                                  connect("api.attack.test:443").replace(" ", "/")))
    for s, _ in held:
        s.close()


def flood(n):
    refused = 0
    for _ in range(n):
        try:
            if connect("flood.attack.test:443").startswith("403"):
                refused += 1
        except OSError:
            pass
    say("flood", "refused=%d" % refused)
    say("flood-then-allowed", tls_get("api.attack.test:443", "api.attack.test"))


if __name__ == "__main__":
    if sys.argv[1] == "batch":
        batch()
    else:
        flood(int(sys.argv[2]))
