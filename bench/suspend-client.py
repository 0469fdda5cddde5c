#!/usr/bin/env python3
# Runs inside the test bed (bench/suspend.sh copies it there). For a workload
# that holds SIZE MiB of touched memory and answers each input line with a
# count it keeps in memory, measures, N times each:
#   cold    `sandboxctl run` of it until its first answer
#   suspend SuspendWorker (returns once the image is written and the unit gone)
#   resume  `sandboxctl attach` of the suspended worker until its answer: the
#           auto-resume path (OpenChannel resumes, then relays)
#   image   bytes the suspended worker's image takes on disk (st_blocks)
# Prints one JSON object.
import json, os, subprocess, sys, time

SIZE, N = int(sys.argv[1]), int(sys.argv[2])
MEMORY = f"{SIZE * 2 + 256}M"
WORKLOAD = f"""import sys, threading, time
buf = bytearray({SIZE} << 20)
for i in range(0, len(buf), 4096): buf[i] = 1
n = [0]
def count():
    while True:
        n[0] += 1
        time.sleep(0.1)
threading.Thread(target=count, daemon=True).start()
for line in sys.stdin:
    print(n[0], flush=True)
"""
ARGS = ["--class", "standard", "--memory", MEMORY, "--idle", "1h", "--", "/usr/bin/python3", "-c", WORKLOAD]


def answer_after(cmd):
    """Starts cmd, sends one line, returns (seconds to the answer, process)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write("x\n")
    p.stdin.flush()
    line = p.stdout.readline()
    dt = time.monotonic() - t0
    if not line.strip().isdigit():
        raise SystemExit(f"no answer from {cmd[:2]}: {line!r}")
    return dt, p


def close(p):
    p.terminate()
    p.wait(timeout=60)


def busctl(method, wid):
    subprocess.run(["busctl", "call", "--timeout=300", "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager",
                    method, "s", wid], check=True, stdout=subprocess.DEVNULL)


def image_bytes(wid):
    d = f"/var/lib/sandboxd/suspend/{wid}"
    return sum(os.lstat(os.path.join(d, f)).st_blocks * 512 for f in os.listdir(d))


res = {"cold_s": [], "suspend_s": [], "resume_s": [], "image_bytes": [], "unit_memory_bytes": []}
for _ in range(N):
    dt, p = answer_after(["sandboxctl", "run"] + ARGS)
    res["cold_s"].append(dt)
    close(p)     # sandboxctl run stops its worker on SIGTERM

    wid = subprocess.run(["sandboxctl", "create"] + ARGS, check=True, capture_output=True, text=True).stdout.strip()
    _, p = answer_after(["sandboxctl", "attach", wid])
    close(p)     # attach only detaches
    mem = subprocess.run(["systemctl", "show", "-P", "MemoryCurrent", f"sandbox-{wid}.service"],
                         capture_output=True, text=True).stdout.strip()
    res["unit_memory_bytes"].append(int(mem) if mem.isdigit() else None)
    t0 = time.monotonic()
    busctl("SuspendWorker", wid)
    res["suspend_s"].append(time.monotonic() - t0)
    res["image_bytes"].append(image_bytes(wid))
    dt, p = answer_after(["sandboxctl", "attach", wid])
    res["resume_s"].append(dt)
    close(p)
    subprocess.run(["sandboxctl", "stop", wid], check=True)
json.dump({"size_mib": SIZE, "n": N, **res}, sys.stdout)
print()
