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
                                     for that worker, read from the worker's unit"""
import json, os, shutil, subprocess, sys, tempfile, time

def first_byte_us(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    p.stdout.read(1)
    t1 = time.perf_counter()
    p.stdout.read()
    p.wait()
    return int((t1 - t0) * 1e6)

def systemd_run(n):
    for _ in range(n):
        print(first_byte_us(["systemd-run", "--quiet", "--wait", "--pipe", "--collect",
                             "-p", "DynamicUser=yes", "-p", "PrivateNetwork=yes",
                             "/bin/echo", "x"]), flush=True)

# Properties that name the worker itself or its channel rather than its walls.
SKIP = ("Description", "ExecStart", "Environment", "WorkingDirectory", "StateDirectory", "User", "Type",
        "Slice", "StandardInput", "StandardOutput", "StandardError", "CollectMode", "TimeoutStopSec")

def systemd_run_same(unitfile, n):
    props = []
    for line in open(unitfile):
        line = line.strip()
        if not line or line.startswith(("#", "[")) or line.startswith(SKIP) or line.endswith("="):
            continue
        props += ["-p", line]
    for _ in range(n):
        print(first_byte_us(["systemd-run", "--quiet", "--wait", "--pipe", "--collect", "-p", "Type=exec",
                             "-p", "StateDirectory=bench-home", "-p", "StateDirectoryMode=0700"] + props +
                            ["/bin/echo", "x"]), flush=True)

def runsc(bundle_json, n):
    """The same sandbox without sandboxd, its unit or the launcher: the
    worker's bundle, its home recreated (the worker's was removed with it)."""
    spec = json.load(open(bundle_json))
    spec["process"]["args"] = ["/bin/echo", "x"]
    uid, gid = spec["process"]["user"]["uid"], spec["process"]["user"]["gid"]
    for m in spec["mounts"]:
        if m.get("type") == "bind" and not os.path.exists(m["source"]):
            os.makedirs(m["source"], mode=0o700)
            os.chown(m["source"], uid, gid)
    d = tempfile.mkdtemp(prefix="bench-bundle-")
    json.dump(spec, open(os.path.join(d, "config.json"), "w"))
    flags = open(os.path.join(os.path.dirname(bundle_json), "runsc-flags")).read().split()
    root = "/run/bench-runsc"
    for i in range(n):
        print(first_byte_us(["runsc", f"--root={root}"] + flags + ["run", "--bundle", d,
                             f"bench-{os.getpid()}-{i}"]), flush=True)
    shutil.rmtree(d, ignore_errors=True)

if __name__ == "__main__":
    if sys.argv[1] == "systemd-run-same":
        systemd_run_same(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "runsc":
        runsc(sys.argv[2], int(sys.argv[3]))
    else:
        systemd_run(int(sys.argv[2]))
