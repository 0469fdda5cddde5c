#!/usr/bin/env python3
"""Upstreams for the attack suite that record every contact.

  upstream.py LOG CERT KEY LISTEN...

LISTEN is tcp:ADDR:PORT (TLS; GET /N answers N bytes of 'x'), udp:ADDR:PORT
(logs each datagram) or dns:ADDR:PORT (a tiny resolver: A records from
$SBX_ATTACK_DNS, "name=addr,name=addr", NXDOMAIN for every other name).
Each contact appends one line to LOG, named by the listener's own address
(a wildcard listener's by the address it was reached at):
  accept tcp:11.0.0.10:443 PEER     a TCP connection was accepted
  data tcp:11.0.0.10:443 N          its client sent N bytes (a ClientHello...)
  udp udp:11.0.0.10:53 PEER N       a datagram arrived
  dns dns:11.0.0.1:53 PEER QNAME    a query arrived
so a check can prove that an attack never reached a listener. Prints
"listening" once every listener is bound."""
import os
import socket
import ssl
import struct
import sys
import threading

LOCK = threading.Lock()


def log(path, line):
    with LOCK, open(path, "a") as f:
        f.write(line + "\n")


def split(spec):
    kind, rest = spec.split(":", 1)
    addr, port = rest.rsplit(":", 1)
    return kind, addr.strip("[]"), int(port)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve_conn(path, name, ctx, conn, peer):
    if name.startswith(("tcp:0.0.0.0:", "tcp:[::]:")):
        # A wildcard listener names the address it was reached at.
        local = conn.getsockname()
        name = "tcp:%s:%d" % ("[%s]" % local[0] if ":" in local[0] else local[0], local[1])
    log(path, "accept %s %s" % (name, peer[0]))
    conn.settimeout(30)
    try:
        first = conn.recv(16384, socket.MSG_PEEK)
    except OSError:
        first = b""
    if not first:
        conn.close()
        return
    log(path, "data %s %d" % (name, len(first)))
    try:
        t = ctx.wrap_socket(conn, server_side=True)
        req = t.recv(4096).decode(errors="replace")
        n = 5
        parts = req.split(" ")
        if len(parts) > 1 and parts[1].strip("/").isdigit():
            n = int(parts[1].strip("/"))
        t.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % n + b"x" * n)
        t.close()
    except (OSError, ssl.SSLError):
        conn.close()


def tcp(path, name, ctx, addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family(addr) == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    s.listen(64)

    def loop():
        while True:
            conn, peer = s.accept()
            threading.Thread(target=serve_conn, args=(path, name, ctx, conn, peer), daemon=True).start()
    return loop


def dns_answer(query, table):
    qid, _flags, qd = struct.unpack(">HHH", query[:6])
    pos, labels = 12, []
    while query[pos]:
        labels.append(query[pos + 1:pos + 1 + query[pos]].decode(errors="replace"))
        pos += 1 + query[pos]
    qname = ".".join(labels).lower()
    question = query[12:pos + 5]
    qtype = struct.unpack(">H", query[pos + 1:pos + 3])[0]
    addr = table.get(qname)
    if addr is None:
        return qname, struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    if qtype != 1:
        return qname, struct.pack(">HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question
    rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton(addr)
    return qname, struct.pack(">HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr


def udp(path, name, addr, port, dns):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, port))
    table = {}
    for item in filter(None, os.environ.get("SBX_ATTACK_DNS", "").split(",")):
        k, v = item.split("=", 1)
        table[k.lower()] = v

    def loop():
        while True:
            data, peer = s.recvfrom(4096)
            if not dns:
                log(path, "udp %s %s %d" % (name, peer[0], len(data)))
                continue
            try:
                qname, reply = dns_answer(data, table)
            except (IndexError, struct.error):
                continue
            log(path, "dns %s %s %s" % (name, peer[0], qname))
            s.sendto(reply, peer)
    return loop


def main():
    path, cert, key = sys.argv[1:4]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    loops = []
    for spec in sys.argv[4:]:
        kind, addr, port = split(spec)
        if kind == "tcp":
            loops.append(tcp(path, spec, ctx, addr, port))
        else:
            loops.append(udp(path, spec, addr, port, kind == "dns"))
    for fn in loops:
        threading.Thread(target=fn, daemon=True).start()
    print("listening", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
