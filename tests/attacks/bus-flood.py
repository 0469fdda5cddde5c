#!/usr/bin/env python3
# A D-Bus flood client for tests/attacks/bus-flood.sh, standard library only
# (the test bed has python3 but no python3-dbus): it speaks the wire protocol
# over the system bus socket itself, authenticates with EXTERNAL as the user
# it runs as, and pipelines many calls on a few connections, as an attacker
# would, without waiting for answers.
#
#   bus-flood.py --calls N --conns C [--window W] [--duration S] [--timeout S]
#                [--interactive] [--path P] [--id ID] METHOD...
#
# METHOD: ListWorkers, ListWorkersEx, ListWorkspaces, GetManagedObjects,
# ReadWorkerLog (a random worker id each call), Introspect (of --path),
# GetWorker (of --id: never with a prompt, for another user's worker),
# CreateWorker (of /bin/true: the call that may prompt), used in turn. With --duration, each connection keeps W calls outstanding for S
# seconds (a sustained flood); without, it sends N/C calls at once. Prints one
# JSON object: calls sent, answered, by result ("ok" or the error name),
# "timeout" for calls unanswered after --timeout seconds, latencies.
import argparse
import json
import os
import secrets
import select
import socket
import struct
import sys
import time

BUS = os.environ.get("SBX_FLOOD_BUS", "/run/dbus/system_bus_socket")
DEST = "org.sandboxd1"
PATH = "/org/sandboxd1"
MGR = "org.sandboxd1.Manager"
FLAG_ALLOW_INTERACTIVE = 0x4


def pad(buf, n):
    buf.extend(b"\0" * (-len(buf) % n))


def put_str(buf, s, code="s"):
    b = s.encode()
    if code == "g":
        buf.append(len(b))
    else:
        pad(buf, 4)
        buf.extend(struct.pack("<I", len(b)))
    buf.extend(b + b"\0")


def marshal(sig, args):
    """The body for SIG, of s, o, u, b and an empty a{sv} only."""
    buf = bytearray()
    i = 0
    for a in args:
        code = sig[i]
        if code in "so":
            put_str(buf, a)
            i += 1
        elif code in "ub":
            pad(buf, 4)
            buf.extend(struct.pack("<I", int(a)))
            i += 1
        elif sig.startswith("a{sv}", i):
            pad(buf, 4)
            buf.extend(struct.pack("<I", 0))
            pad(buf, 8)
            i += 5
        else:
            raise ValueError(sig)
    return bytes(buf)


def message(serial, path, iface, member, dest, sig="", body=b"", flags=0):
    fields = bytearray()

    def field(code, tcode, value):
        pad(fields, 8)
        fields.append(code)
        put_str(fields, tcode, "g")
        put_str(fields, value, tcode)

    field(1, "o", path)
    if iface:
        field(2, "s", iface)
    field(3, "s", member)
    field(6, "s", dest)
    if sig:
        field(8, "g", sig)
    head = bytearray(struct.pack("<cBBBII", b"l", 1, flags, 1, len(body), serial))
    head.extend(struct.pack("<I", len(fields)))
    head.extend(fields)
    pad(head, 8)
    return bytes(head) + body


def parse_fields(data, start, end):
    """REPLY_SERIAL and ERROR_NAME of a header's field array."""
    out = {}
    p = start
    while p < end:
        p += -p % 8
        if p >= end:
            break
        code = data[p]
        slen = data[p + 1]
        tcode = data[p + 2:p + 2 + slen].decode()
        p += 3 + slen
        if tcode in "so":
            p += -p % 4
            (n,) = struct.unpack_from("<I", data, p)
            v = data[p + 4:p + 4 + n].decode(errors="replace")
            p += 5 + n
        elif tcode == "g":
            n = data[p]
            v = data[p + 1:p + 1 + n].decode()
            p += 2 + n
        elif tcode in "uh":
            p += -p % 4
            (v,) = struct.unpack_from("<I", data, p)
            p += 4
        else:
            raise ValueError("header field type " + tcode)
        out[code] = v
    return out


class Conn:
    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(BUS)
        uid = str(os.geteuid()).encode().hex()
        self.sock.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
        line = b""
        while not line.endswith(b"\r\n"):
            line += self.sock.recv(1)
        if not line.startswith(b"OK"):
            raise RuntimeError("auth: %r" % line)
        self.sock.sendall(b"BEGIN\r\n")
        self.buf = bytearray()
        self.serial = 0
        self.pending = {}       # serial -> (send time, method)
        self.out = bytearray()
        s = self.send("/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "org.freedesktop.DBus")
        while s in self.pending:
            self.read_some(block=True, on_reply=lambda *a: None)
        self.sock.setblocking(False)

    def send(self, path, iface, member, dest, sig="", body=b"", flags=0, what=None):
        self.serial += 1
        self.out.extend(message(self.serial, path, iface, member, dest, sig, body, flags))
        self.pending[self.serial] = (time.monotonic(), what or member)
        if self.sock.getblocking():
            self.sock.sendall(self.out)
            self.out.clear()
        return self.serial

    def flush(self):
        while self.out:
            try:
                n = self.sock.send(self.out)
            except BlockingIOError:
                return
            del self.out[:n]

    def read_some(self, block, on_reply):
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            raise EOFError("the bus closed the connection")
        self.buf.extend(chunk)
        while len(self.buf) >= 16:
            (blen,) = struct.unpack_from("<I", self.buf, 4)
            (flen,) = struct.unpack_from("<I", self.buf, 12)
            hlen = 16 + flen + (-(16 + flen) % 8)
            if len(self.buf) < hlen + blen:
                break
            mtype = self.buf[1]
            fields = parse_fields(self.buf, 16, 16 + flen)
            del self.buf[:hlen + blen]
            if mtype not in (2, 3):
                continue
            serial = fields.get(5)
            if serial not in self.pending:
                continue
            t0, what = self.pending.pop(serial)
            on_reply(what, "ok" if mtype == 2 else fields.get(4, "?"), time.monotonic() - t0)


def create_worker_body(argv):
    """CreateWorker's a{sv} with one entry, Argv (as)."""
    buf = bytearray()
    outer = len(buf)
    buf.extend(b"\0\0\0\0")
    pad(buf, 8)
    start = len(buf)
    put_str(buf, "Argv")
    put_str(buf, "as", "g")
    pad(buf, 4)
    inner = len(buf)
    buf.extend(b"\0\0\0\0")
    istart = len(buf)
    for a in argv:
        put_str(buf, a)
    struct.pack_into("<I", buf, inner, len(buf) - istart)
    struct.pack_into("<I", buf, outer, len(buf) - start)
    return bytes(buf)


def call_args(method, path, worker_id):
    if method in ("ListWorkers", "ListWorkspaces"):
        return (PATH, MGR, method, "", b"")
    if method == "ListWorkersEx":
        return (PATH, MGR, method, "a{sv}", marshal("a{sv}", [None]))
    if method == "GetManagedObjects":
        return (PATH, "org.freedesktop.DBus.ObjectManager", method, "", b"")
    if method == "ReadWorkerLog":
        return (PATH, MGR, method, "ssbu", marshal("ssbu", [secrets.token_hex(6), "", 0, 10]))
    if method == "CreateWorker":
        return (PATH, MGR, method, "a{sv}", create_worker_body(["/bin/true"]))
    if method == "GetWorker":
        return (PATH, MGR, method, "s", marshal("s", [worker_id]))
    if method == "Introspect":
        return (path, "org.freedesktop.DBus.Introspectable", method, "", b"")
    raise SystemExit("unknown method " + method)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--window", type=int, default=0, help="outstanding calls per connection (sustained)")
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--interactive", action="store_true")
    ap.add_argument("--path", default=PATH)
    ap.add_argument("--id", default="")
    ap.add_argument("methods", nargs="+")
    a = ap.parse_args()

    conns = [Conn() for _ in range(a.conns)]
    flags = FLAG_ALLOW_INTERACTIVE if a.interactive else 0
    results, lat = {}, []
    sent = 0
    t_start = time.monotonic()

    def send_one(c):
        nonlocal sent
        m = a.methods[sent % len(a.methods)]
        path, iface, member, sig, body = call_args(m, a.path, a.id)
        c.send(path, iface, member, DEST, sig, body, flags, what=m)
        sent += 1

    def on_reply(what, result, dt):
        results[result] = results.get(result, 0) + 1
        lat.append(dt)

    sustained = a.duration > 0
    per_conn = a.window if sustained else a.calls // a.conns
    for c in conns:
        for _ in range(per_conn):
            send_one(c)
    deadline = t_start + a.timeout + a.duration
    while time.monotonic() < deadline:
        for c in conns:
            c.flush()
        pending = sum(len(c.pending) for c in conns)
        if pending == 0 and not sustained:
            break
        if sustained and time.monotonic() >= t_start + a.duration and pending == 0:
            break
        rl = [c.sock for c in conns]
        wl = [c.sock for c in conns if c.out]
        r, _, _ = select.select(rl, wl, [], 0.2)
        for c in conns:
            if c.sock in r:
                before = len(c.pending)
                c.read_some(False, on_reply)
                if sustained and time.monotonic() < t_start + a.duration:
                    for _ in range(before - len(c.pending)):
                        send_one(c)
    unanswered = sum(len(c.pending) for c in conns)
    if unanswered:
        results["timeout"] = unanswered
    lat.sort()
    print(json.dumps({
        "sent": sent,
        "answered": sent - unanswered,
        "results": results,
        "seconds": round(time.monotonic() - t_start, 3),
        "latency_p50": round(lat[len(lat) // 2], 4) if lat else None,
        "latency_max": round(lat[-1], 4) if lat else None,
    }, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
