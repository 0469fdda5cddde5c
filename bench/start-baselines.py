#!/usr/bin/env python3
"""Bare-runtime baselines for bench/start-latency.sh, run inside the test bed.
Prints one latency in microseconds per line: from starting the runtime to the
first byte the command writes.
  start-baselines.py systemd-run N   systemd-run --wait --pipe of a DynamicUser unit
  start-baselines.py systemd-run-same UNITFILE N
                                     the same with every hardening and cap property of
                                     UNITFILE (a worker's transient unit), so the ratio
                                     isolates what sandboxd itself adds
  start-baselines.py runsc N         runsc run of a bundle equivalent to a worker's"""
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

def runsc(n):
    d = tempfile.mkdtemp(prefix="bench-bundle-")
    subprocess.run(["runsc", "spec", "--bundle", d], check=True)
    spec = json.load(open(os.path.join(d, "config.json")))
    spec["process"]["args"] = ["/bin/echo", "x"]
    spec["process"]["terminal"] = False
    spec["process"]["user"] = {"uid": 65534, "gid": 65534}
    spec["process"]["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
    spec["process"]["noNewPrivileges"] = True
    spec["root"] = {"path": "/", "readonly": True}
    spec["linux"]["namespaces"] = [ns for ns in spec["linux"]["namespaces"] if ns["type"] != "network"]
    json.dump(spec, open(os.path.join(d, "config.json"), "w"))
    root = "/run/bench-runsc"
    for i in range(n):
        print(first_byte_us(["runsc", "--ignore-cgroups", "--network=host", "--platform=systrap",
                             f"--root={root}", "run", "--bundle", d, f"bench-{os.getpid()}-{i}"]), flush=True)
    shutil.rmtree(d, ignore_errors=True)

if __name__ == "__main__":
    if sys.argv[1] == "systemd-run-same":
        systemd_run_same(sys.argv[2], int(sys.argv[3]))
    else:
        {"systemd-run": systemd_run, "runsc": runsc}[sys.argv[1]](int(sys.argv[2]))
