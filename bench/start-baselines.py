#!/usr/bin/env python3
"""Bare-runtime baselines for bench/start-latency.sh, run inside the test bed.
Prints one latency in microseconds per line: from starting the runtime to the
first byte the command writes.
  start-baselines.py systemd-run N   systemd-run --wait --pipe of a DynamicUser unit
  start-baselines.py systemd-run-same UNITFILE N
                                     the same with every hardening and cap property of
                                     UNITFILE (a worker's transient unit), so the ratio
                                     isolates what sandboxd itself adds
  start-baselines.py runsc BUNDLE N  runsc run of BUNDLE (a live worker's own config.json, its
                                     command replaced) with the flags sandbox-launch gives runsc
                                     for that worker, read from the worker's unit
  start-baselines.py runsc-same-walls UNITFILE BUNDLE N
                                     the same runsc run as the ExecStart=+ of a unit with
                                     every property of UNITFILE (a gVisor worker's transient
                                     unit, its launcher's command left out), socket-activated
                                     with its stdout the connection: the gVisor twin of
                                     systemd-run-same, so that what sandboxd and its launcher
                                     add is told apart from what the unit's walls cost
  start-baselines.py argv N CMD...  CMD itself, N times (bench/exec.sh: sandboxctl exec and
                                     a bare runsc exec, each running /bin/echo x)
A sample counts only when the command wrote "x" and exited 0: a baseline that
fails at once (a property systemd refuses, a missing unit it requires) would
otherwise be the fastest series of the run. The first failure ends the script
with status 1 and what the command said.
Environment: UNITFILE properties that name the worker's own companion units
(Requires=/After=/Sockets= its disk service, its exec channel's and its
proxy's sockets, gone with the worker) are left out, and so is the bind
of its disk's home on its home; its /tmp bind gets a fresh directory of the
baseline's own."""
import json, os, shutil, socket, subprocess, sys, tempfile, time

def first_byte_us(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    first = p.stdout.read(1)
    t1 = time.perf_counter()
    rest = p.stdout.read()
    err = p.stderr.read()
    p.wait()
    if first + rest != b"x\n" or p.returncode != 0:
        sys.stderr.write(f"start-baselines: {argv[0]} failed (exit {p.returncode}, output {first + rest!r}): "
                         f"{err.decode(errors='replace').strip()}\n")
        sys.exit(1)
    return int((t1 - t0) * 1e6)

def systemd_run(n):
    for _ in range(n):
        print(first_byte_us(["systemd-run", "--quiet", "--wait", "--pipe", "--collect",
                             "-p", "DynamicUser=yes", "-p", "PrivateNetwork=yes",
                             "/bin/echo", "x"]), flush=True)

# Properties that name the worker itself or its channel rather than its walls.
SKIP = ("Description", "ExecStart", "Environment", "WorkingDirectory", "StateDirectory", "User", "Type",
        "Slice", "StandardInput", "StandardOutput", "StandardError", "CollectMode", "TimeoutStopSec")

def names_companion(line):
    """Whether a unit-file line ties the unit to one of the worker's own
    companion units (its disk, its exec or proxy socket), which the
    baseline does not have."""
    if not line.startswith(("Requires=", "After=", "Wants=", "BindsTo=", "Sockets=")):
        return False
    return any(u.endswith("-disk.service") or (u.startswith("sandbox-") and u.endswith(".socket"))
               for u in line.split("=", 1)[1].split())

def same_walls(unitfile):
    """UNITFILE's walls as systemd-run properties (see the docstring)."""
    props = []
    for line in open(unitfile):
        line = line.strip()
        if not line or line.startswith(("#", "[")) or line.startswith(SKIP) or line.endswith("="):
            continue
        if names_companion(line):
            continue
        if line.startswith("BindPaths=") and "/home:/var/lib/sandboxd/workers/" in line:
            continue    # the worker's disk as its home: a companion, gone with it
        if line.startswith("BindPaths=") and ":/tmp:" in line:
            tmp = tempfile.mkdtemp(prefix="bench-tmp-", dir="/var/tmp")
            os.chmod(tmp, 0o1777)
            line = f"BindPaths={tmp}:/tmp:norbind"
        props += ["-p", line]
    return props

def systemd_run_same(unitfile, n):
    props = same_walls(unitfile)
    for _ in range(n):
        print(first_byte_us(["systemd-run", "--quiet", "--wait", "--pipe", "--collect", "-p", "Type=exec",
                             "-p", "StateDirectory=bench-home", "-p", "StateDirectoryMode=0700"] + props +
                            ["/bin/echo", "x"]), flush=True)

def bundle_copy(bundle_json):
    """The worker's bundle with "/bin/echo x" for its command and a home of
    its own in place of the worker's (which its disk unit's stop removes, maybe
    only now); returns (dir, runsc flags)."""
    spec = json.load(open(bundle_json))
    spec["process"]["args"] = ["/bin/echo", "x"]
    uid, gid = spec["process"]["user"]["uid"], spec["process"]["user"]["gid"]
    for m in spec["mounts"]:
        if m.get("type") == "bind" and m["source"].startswith("/var/lib/private/sandboxd/"):
            m["source"] = tempfile.mkdtemp(prefix="bench-home-", dir="/var/lib")
            os.chown(m["source"], uid, gid)
    d = tempfile.mkdtemp(prefix="bench-bundle-")
    json.dump(spec, open(os.path.join(d, "config.json"), "w"))
    return d, open(os.path.join(os.path.dirname(bundle_json), "runsc-flags")).read().split()

def runsc(bundle_json, n):
    """The same sandbox without sandboxd, its unit or the launcher."""
    d, flags = bundle_copy(bundle_json)
    root = "/run/bench-runsc"
    for i in range(n):
        print(first_byte_us(["runsc", f"--root={root}"] + flags + ["run", "--bundle", d,
                             f"bench-{os.getpid()}-{i}"]), flush=True)
    shutil.rmtree(d, ignore_errors=True)

# Lines of a gVisor worker's unit that are its launcher's, its name's or its channel's.
SKIP_GVISOR = ("Description=", "ExecStartEx=", "ExecStopPostEx=", "User=", "StateDirectory", "WorkingDirectory=",
               "Environment=", "CollectMode=", "Slice=", "StandardInput=", "StandardOutput=", "StandardError=")

def first_byte_socket_us(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    t0 = time.perf_counter()
    s.connect(path)
    first = s.recv(1)
    t1 = time.perf_counter()
    out = first
    while True:
        b = s.recv(4096)
        if not b:
            break
        out += b
    s.close()
    if out != b"x\n":
        sys.stderr.write(f"start-baselines: the walled runsc unit wrote {out!r} (journalctl -u 'bench-gwalls@*')\n")
        sys.exit(1)
    return int((t1 - t0) * 1e6)

def unit_gone(pattern):
    for _ in range(600):
        out = subprocess.run(["systemctl", "list-units", "--all", "--no-legend", "--plain", pattern],
                             capture_output=True, text=True).stdout
        if not out.strip():
            return
        time.sleep(0.05)
    sys.stderr.write(f"start-baselines: {pattern} still there after 30 s\n")
    sys.exit(1)

def runsc_same_walls(unitfile, bundle_json, n):
    d, flags = bundle_copy(bundle_json)
    lines = []
    for line in open(unitfile):
        line = line.strip()
        if not line or line.startswith("#") or line.startswith(SKIP_GVISOR):
            continue
        if names_companion(line):
            continue
        lines.append(line)
    root = "/run/bench-runsc-walls"
    lines += ["[Service]", "StandardInput=null", "StandardOutput=socket", "StandardError=journal",
              "ExecStart=+/usr/bin/runsc --root=%s %s run --bundle %s bench-walls-%%i" % (root, " ".join(flags), d)]
    sock = "/run/bench-gwalls.sock"
    open("/run/systemd/system/bench-gwalls@.service", "w").write("\n".join(lines) + "\n")
    open("/run/systemd/system/bench-gwalls.socket", "w").write(f"[Socket]\nListenStream={sock}\nAccept=yes\n")
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    subprocess.run(["systemctl", "restart", "bench-gwalls.socket"], check=True)
    try:
        # The first start after the daemon-reload loads the template and
        # is the slowest by far; with one sample per round (start-latency.sh
        # interleaves its series) every sample would be one.
        for i in range(n + 1):
            t = first_byte_socket_us(sock)
            unit_gone("bench-gwalls@*")
            if i:
                print(t, flush=True)
    finally:
        subprocess.run(["systemctl", "stop", "bench-gwalls.socket"])
        subprocess.run(["systemctl", "reset-failed", "bench-gwalls@*"], capture_output=True)
        for f in ("bench-gwalls@.service", "bench-gwalls.socket"):
            os.unlink("/run/systemd/system/" + f)
        subprocess.run(["systemctl", "daemon-reload"])
        shutil.rmtree(d, ignore_errors=True)

if __name__ == "__main__":
    if sys.argv[1] == "argv":
        for _ in range(int(sys.argv[2])):
            print(first_byte_us(sys.argv[3:]), flush=True)
    elif sys.argv[1] == "systemd-run-same":
        systemd_run_same(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "runsc-same-walls":
        runsc_same_walls(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "runsc":
        runsc(sys.argv[2], int(sys.argv[3]))
    else:
        systemd_run(int(sys.argv[2]))
