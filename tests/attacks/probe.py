#!/usr/bin/env python3
"""The attacker inside a worker: tries each sibling and host attack of the
suite and prints one line per attack, "PROBE NAME FACTS", where FACTS are
what happened (errno names, what it could list, every secret-looking string
it found). It judges nothing: the suite matches each line against the
refusal it expects.

  probe.py VICTIM_PID VICTIM_HOME VICTIM_ID NONCE OTHER_IDS

Secrets of the suite start with a marker this file never spells out whole,
so finding this file does not count as finding a secret."""
import ctypes
import errno
import os
import re
import socket
import struct
import subprocess
import sys

MARK = "SBX" + "ATK"
SECRET_RE = re.compile((MARK + r"[a-z]*-[0-9a-f]{8,}").encode())
victim_pid, victim_home, victim_id, nonce = sys.argv[1:5]
other_ids = sys.argv[5].split(",")
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def say(name, **facts):
    print("PROBE %s %s" % (name, " ".join("%s=%s" % kv for kv in facts.items())), flush=True)


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "0"


def hits_in(data):
    return sorted({m.decode() for m in SECRET_RE.findall(data)})


def fmt(hits):
    return ",".join(hits) if hits else "none"


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit), "0"
    except OSError as e:
        return b"", ename(e.errno)


def scan_tree(root, limit_files=4000):
    """Every secret found in what this worker can read under root."""
    found, nread = set(), 0
    for d, dirs, files in os.walk(root, onerror=lambda e: None):
        if d.startswith("/proc") or d.startswith("/sys"):
            dirs[:] = []
            continue
        for f in files:
            p = os.path.join(d, f)
            if nread >= limit_files or not os.path.isfile(p) or os.path.islink(p):
                continue
            data, err = read(p, 1 << 18)
            if err == "0":
                nread += 1
                found.update(hits_in(data))
    return sorted(found), nread


def sys_call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *args)
    return "0" if r >= 0 else ename(ctypes.get_errno())


def connect_unix(path, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_UNIX, kind)
    s.settimeout(2)
    try:
        s.connect(path)
        return s, "0"
    except OSError as e:
        s.close()
        return None, ename(e.errno)


# ---- secrets ---------------------------------------------------------------
found, n = scan_tree("/run/systemd/transient")
say("transient-files", read=n, hits=fmt(found))

out = b""
for cmd in (["busctl", "--system", "get-property", "org.freedesktop.systemd1",
             "/org/freedesktop/systemd1/unit/sandbox_2d%s_2eservice" % victim_id.replace("-", "_2d"),
             "org.freedesktop.systemd1.Service", "Environment"],
            ["systemctl", "show", "--all", "sandbox-*"]):
    try:
        out += subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        out += str(e).encode()
say("unit-properties", hits=fmt(hits_in(out)), answered=int(b"Id=sandbox-" in out or out.startswith(b"as ")),
    said=re.sub(r"\s+", "_", out[:120].decode(errors="replace")) or "nothing")

found, readable = set(), 0
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    for f in ("cmdline", "environ"):
        data, err = read("/proc/%s/%s" % (p, f))
        if err == "0" and data:
            readable += 1
            found.update(hits_in(data))
say("proc-cmdline-environ", readable=readable, hits=fmt(sorted(found)))
try:
    ps = subprocess.run(["ps", "-eo", "args"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20).stdout
except (OSError, subprocess.TimeoutExpired) as e:
    ps = str(e).encode()
say("ps", hits=fmt(hits_in(ps)), lines=len(ps.splitlines()))

# ---- siblings ----------------------------------------------------------------
data, err = read(os.path.join(victim_home, "secret"))
try:
    os.listdir(victim_home)
    lerr = "0"
except OSError as e:
    lerr = ename(e.errno)
say("sibling-home", read=err, list=lerr, hits=fmt(hits_in(data)))

e1 = read("/proc/%s/environ" % victim_pid)
e2 = read("/proc/%s/cmdline" % victim_pid)
e3 = read("/proc/%s/mem" % victim_pid, 64)
say("sibling-proc", environ=e1[1], cmdline=e2[1], mem=e3[1], hits=fmt(hits_in(e1[0] + e2[0])))

try:
    os.kill(int(victim_pid), 9)
    kerr = "0"
except OSError as e:
    kerr = ename(e.errno)
say("sibling-kill", errno=kerr)

PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
a = sys_call(101, ctypes.c_long(PTRACE_ATTACH), ctypes.c_long(int(victim_pid)), None, None)
b = sys_call(101, ctypes.c_long(PTRACE_SEIZE), ctypes.c_long(int(victim_pid)), None, None)
say("sibling-ptrace", attach=a, seize=b)

try:
    shm = sorted(os.listdir("/dev/shm"))
except OSError as e:
    shm = ["error:" + ename(e.errno)]
data, err = read("/dev/shm/sbx-victim-secret")
say("sibling-dev-shm", visible=int("sbx-victim-secret" in shm), read=err, hits=fmt(hits_in(data)))

shmid = libc.shmget(ctypes.c_int(0x5b0a7700), ctypes.c_size_t(0), ctypes.c_int(0))
gerr = "0" if shmid >= 0 else ename(ctypes.get_errno())
listed, _ = read("/proc/sysvipc/shm")
say("sibling-sysv-shm", shmget=gerr, listed=int(b"1527412480" in listed))

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
got = b""
try:
    s.settimeout(5)
    s.connect("\0sbx-attack-victim")
    got = s.recv(4096)
    aerr = "0"
except OSError as e:
    aerr = ename(e.errno)
say("sibling-abstract-socket", connect=aerr, hits=fmt(hits_in(got)))

data, err = read("/tmp/sbx-victim-secret")
say("sibling-tmp", read=err, hits=fmt(hits_in(data)))

# ---- host sockets --------------------------------------------------------------
forged = ("MESSAGE=sbx-attack-forged-%s\nSANDBOXD_WORKER_ID=%s\nEGRESS_DECISION=allow\n"
          "SYSLOG_IDENTIFIER=sandbox-egress\n" % (nonce, victim_id)).encode()
s, cerr = connect_unix("/run/systemd/journal/socket", socket.SOCK_DGRAM)
serr = "-"
if s:
    try:
        s.send(forged)
        serr = "0"
    except OSError as e:
        serr = ename(e.errno)
say("journal-socket", connect=cerr, send=serr)

s, cerr = connect_unix("/dev/log", socket.SOCK_DGRAM)
serr = "-"
if s:
    try:
        s.send(("<13>sandboxd[1]: sbx-attack-syslog-%s worker %s egress allow" % (nonce, victim_id)).encode())
        serr = "0"
    except OSError as e:
        serr = ename(e.errno)
say("dev-log", connect=cerr, send=serr)

s, cerr = connect_unix("/run/systemd/journal/stdout")
say("journal-stdout", connect=cerr)

s, cerr = connect_unix("/run/dbus/system_bus_socket")
say("system-bus", connect=cerr)

s, cerr = connect_unix("/run/systemd/private")
say("systemd-private", connect=cerr)

s, cerr = connect_unix("/run/sandboxd/credentials.sock")
got = b""
if s:
    s.settimeout(5)
    try:
        got = s.recv(4096)
    except OSError:
        pass
say("credentials-socket", connect=cerr, hits=fmt(hits_in(got)))

reached = []
for d, dirs, files in os.walk("/run", onerror=lambda e: None):
    for f in files + dirs:
        p = os.path.join(d, f)
        try:
            if not (os.lstat(p).st_mode & 0o170000) == 0o140000:
                continue
        except OSError:
            continue
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
            s, cerr = connect_unix(p, kind)
            if s:
                reached.append(p)
                s.close()
                break
say("run-sockets", reached=",".join(sorted(set(reached))) or "none")

found, seen = set(), set()
for root in ("/var/lib/private", "/var/lib/sandboxd", "/run/sandboxd", "/run/credentials"):
    found.update(scan_tree(root)[0])
    for d, dirs, files in os.walk(root, onerror=lambda e: None):
        seen.update(os.path.join(d, n) for n in dirs + files if any(i in n for i in other_ids))
# Another worker's id may be listed (its home's name); what counts is
# whether anything of it can be opened.
opened = []
for p in sorted(seen):
    try:
        if os.path.isdir(p):
            os.listdir(p)
        else:
            open(p, "rb").close()
        opened.append(p)
    except OSError:
        pass
say("sandboxd-state", others_opened=fmt(opened), hits=fmt(sorted(found)), others_listed=len(seen))

# ---- privilege -------------------------------------------------------------------
outs = []
for cmd in (["su", "root", "-c", "id -u"], ["mount", "-t", "tmpfs", "none", os.environ.get("HOME", "/tmp")],
            ["passwd", "-d", "root"], ["newgrp", "root"]):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
        outs.append("%s:%d" % (cmd[0], p.returncode))
    except (OSError, subprocess.TimeoutExpired) as e:
        outs.append("%s:%s" % (cmd[0], type(e).__name__))
status = read("/proc/self/status")[0].decode()
euid = re.search(r"^Uid:\s+\d+\s+(\d+)", status, re.M)
say("setuid", runs=",".join(outs), euid_after=euid.group(1) if euid else "?",
    shadow=read("/etc/shadow")[1])

CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS = 0x10000000, 0x40000000, 0x00020000


def in_child(fn):
    """Runs fn in a forked child (namespace changes must not touch the
    probe itself) and returns what it printed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 - any failure is a fact to report
            res = "exception:" + type(e).__name__
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    return out


def unshare(flags):
    return "0" if libc.unshare(ctypes.c_int(flags)) == 0 else ename(ctypes.get_errno())


def unshare_then_root():
    r = unshare(CLONE_NEWUSER)
    if r != "0":
        return r
    # In a new user namespace one is "root" of it: the attack is to use that
    # against the host, here by mounting over the home.
    m = libc.mount(b"none", os.environ.get("HOME", "/tmp").encode(), b"tmpfs", 0, None)
    return "0/mount=" + ("0" if m == 0 else ename(ctypes.get_errno()))


say("unshare-user", errno=in_child(unshare_then_root))
say("unshare-net", errno=in_child(lambda: unshare(CLONE_NEWNET)))
say("mount", errno="0" if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0 else ename(ctypes.get_errno()))

KEY_SPEC_SESSION_KEYRING = -3
say("keyctl", add_key=sys_call(248, b"user", b"sbx-attack", b"x", ctypes.c_size_t(1),
                               ctypes.c_int(KEY_SPEC_SESSION_KEYRING)),
    keyctl=sys_call(250, ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)))

attr = (ctypes.c_char * 128)()   # bpf(BPF_MAP_CREATE, array map)
struct.pack_into("IIII", attr, 0, 2, 4, 4, 1)
say("bpf", errno=sys_call(321, ctypes.c_long(0), attr, ctypes.c_long(128)))

pattr = (ctypes.c_char * 128)()  # perf_event_open: a software cpu-clock counter
struct.pack_into("IIQ", pattr, 0, 1, 128, 0)
say("perf-event-open", errno=sys_call(298, pattr, ctypes.c_long(0), ctypes.c_long(-1),
                                      ctypes.c_long(-1), ctypes.c_long(0)))

params = (ctypes.c_char * 120)()
say("io-uring-setup", errno=sys_call(425, ctypes.c_long(4), params))


def sock(fam, typ, proto=0):
    try:
        socket.socket(fam, typ, proto).close()
        return "0"
    except OSError as e:
        return ename(e.errno)


say("raw-socket", inet=sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    inet6=sock(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))
say("packet-socket", errno=sock(socket.AF_PACKET, socket.SOCK_RAW, 0x0300))


def netlink_add_address():
    """RTM_NEWADDR 11.0.0.99/32 on lo over NETLINK_ROUTE: the kernel's ack
    says whether the worker may change its network."""
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    except OSError as e:
        return "socket=" + ename(e.errno)
    ifa = struct.pack("BBBBI", socket.AF_INET, 32, 0, 0, 1)
    rta = struct.pack("HH", 8, 2) + socket.inet_aton("11.0.0.99")      # IFA_LOCAL
    body = ifa + rta
    hdr = struct.pack("IHHII", 16 + len(body), 20, 0x1 | 0x4 | 0x400 | 0x200, 1, 0)  # NEWADDR, REQUEST|ACK|CREATE|EXCL
    try:
        s.settimeout(5)
        s.send(hdr + body)
        reply = s.recv(4096)
    except OSError as e:
        return "send=" + ename(e.errno)
    if len(reply) >= 20 and struct.unpack("H", reply[4:6])[0] == 2:   # NLMSG_ERROR
        return "ack=" + ename(-struct.unpack("i", reply[16:20])[0])
    return "ack=unknown"


uevent = sock(socket.AF_NETLINK, socket.SOCK_RAW, 15)
audit = sock(socket.AF_NETLINK, socket.SOCK_RAW, 9)
say("netlink", route=netlink_add_address(), uevent=uevent, audit=audit)
