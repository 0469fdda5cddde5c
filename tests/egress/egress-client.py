#!/usr/bin/env python3
"""A CONNECT client that misbehaves on request, for the egress integration
tests. Prints one line: the proxy's status code (or "closed") and, for
modes that go past the 200, what happened next ("tls-ok", "closed", ...)."""
import argparse
import socket
import ssl
import struct
import sys
import time

from tls_hello import client_hello, with_ech_extension


def read_status(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    if not data:
        return "closed", {}
    lines = data.split(b"\r\n")
    parts = lines[0].split(b" ")
    headers = {}
    for line in lines[1:]:
        if b":" in line:
            k, v = line.split(b":", 1)
            headers[k.strip().lower().decode()] = v.strip().decode()
    return parts[1].decode() if len(parts) > 1 else "garbage", headers


def peer_closed(s, timeout):
    """True if the proxy closes (or resets) the tunnel within timeout."""
    s.settimeout(timeout)
    try:
        return s.recv(4096) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", default="127.0.0.1:3128")
    ap.add_argument("--target", required=True, help="host:port for the CONNECT line")
    ap.add_argument("--mode", default="tls",
                    choices=["tls", "raw-request", "plain-http", "second-connect", "not-tls",
                             "oversize-hello", "slow-hello", "ip-sni", "ech", "hold", "tls-hold"])
    ap.add_argument("--sni", default=None, help="SNI to send (default: the CONNECT host; '-' for none)")
    ap.add_argument("--cafile")
    ap.add_argument("--hold", type=float, default=3.0)
    ap.add_argument("--hello-out", help="write the ClientHello for --sni (or the target host) to this file and exit")
    args = ap.parse_args()

    if args.hello_out:
        with open(args.hello_out, "wb") as f:
            f.write(client_hello(args.sni or args.target.rsplit(":", 1)[0].strip("[]")))
        return

    target_host = args.target.rsplit(":", 1)[0].strip("[]")
    sni = target_host if args.sni is None else (None if args.sni == "-" else args.sni)
    # Everything that costs CPU is done before connecting: the proxy's hello
    # and request timers run from the accept and from its 200.
    ctx = ssl.create_default_context(cafile=args.cafile) if args.cafile else ssl.create_default_context()
    ctx.check_hostname = False
    if not args.cafile:
        ctx.verify_mode = ssl.CERT_NONE
    ech_hello = with_ech_extension(client_hello(args.sni or target_host)) if args.mode == "ech" else None

    host, port = args.proxy.rsplit(":", 1)
    family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect((host.strip("[]"), int(port)))

    if args.mode == "plain-http":
        s.sendall(f"GET http://{args.target}/ HTTP/1.1\r\nHost: {args.target}\r\n\r\n".encode())
        code, h = read_status(s)
        print(code, h.get("x-sandbox-egress-reason", ""))
        return
    if args.mode == "second-connect":
        s.sendall(f"CONNECT {args.target} HTTP/1.1\r\n\r\nCONNECT {args.target} HTTP/1.1\r\n\r\n".encode())
        code, h = read_status(s)
        print(code, h.get("x-sandbox-egress-reason", ""))
        return

    s.sendall(f"CONNECT {args.target} HTTP/1.1\r\nHost: {args.target}\r\n\r\n".encode())
    code, h = read_status(s)
    if code != "200":
        print(code, h.get("x-sandbox-egress-reason", ""))
        return
    if args.mode == "hold":
        # Flushed at once: a caller that needs the tunnel to be open (to count
        # against max_tunnels) waits for this line instead of guessing a delay.
        print("200 holding", flush=True)
        time.sleep(args.hold)
        print("200 held")
        return
    if args.mode == "not-tls":
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        print("200", "closed" if peer_closed(s, 5) else "open")
        return
    if args.mode == "oversize-hello":
        # A handshake record announcing a 20 KiB ClientHello, then filler.
        body = b"\x01" + struct.pack(">I", 20000)[1:] + b"\x03\x03" + b"\0" * 16000
        rec = b"\x16\x03\x01" + struct.pack(">H", 16384) + body[:16384]
        try:
            s.sendall(rec)
        except OSError:
            pass
        print("200", "closed" if peer_closed(s, 5) else "open")
        return
    if args.mode == "ip-sni":
        # Clients refuse to put an address in SNI; patch one into a real hello.
        ip = b"203.0.113.10"
        hello = client_hello("a" * len(ip)).replace(b"a" * len(ip), ip)
        s.sendall(hello)
        print("200", "closed" if peer_closed(s, 5) else "open")
        return
    if args.mode == "ech":
        # Outer SNI as given; the upstream answers (with a ServerHello or an
        # alert) only if the proxy forwarded the hello.
        s.sendall(ech_hello)
        s.settimeout(5)
        try:
            data = s.recv(100)
        except OSError:
            data = b""
        print("200", "forwarded" if data else "closed")
        return
    if args.mode == "slow-hello":
        hello = client_hello(target_host)
        s.sendall(hello[:10])
        t0 = time.monotonic()
        closed = peer_closed(s, 15)
        print("200", "closed" if closed else "open", f"{time.monotonic() - t0:.1f}s")
        return

    if args.mode == "raw-request":
        s.sendall(client_hello(sni))
        print("200", "closed" if peer_closed(s, 5) else "open")
        return
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /5 HTTP/1.0\r\n\r\n")
        resp = t.recv(100)
        print("200", "tls-ok" if resp.startswith(b"HTTP/1.") else "tls-garbage", flush=True)
        if args.mode == "tls-hold":
            # An established tunnel that stays open: the caller ends the proxy under it.
            print("200 tls-holding", flush=True)
            time.sleep(args.hold)
    except (ssl.SSLError, OSError) as e:
        print("200", "tls-failed", type(e).__name__)


if __name__ == "__main__":
    sys.exit(main())
