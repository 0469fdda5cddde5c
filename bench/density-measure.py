#!/usr/bin/env python3
# Inside a test-bed container (bench/density.sh copies it there): what the
# idle workers alive right now cost, split by part, and what sandboxd costs.
#   density-measure.py ready COUNT TIMEOUT_S   wait until COUNT workers are running
#                                              inside gVisor (runsc says "running")
#   density-measure.py snapshot LABEL          print one JSON object
#   density-measure.py ops SAMPLES CREATE_ARGS...
#                                              time ListWorkers, and creating one
#                                              more worker and stopping it, at the
#                                              current count; print one JSON object
# Memory of a unit is its cgroup's (v1 memory.usage_in_bytes / memory.stat,
# or v2 memory.current / memory.stat); memory of a process is its PSS from
# /proc/PID/smaps_rollup, which splits the pages the runsc processes of all
# workers share (one binary mapped hundreds of times) among them, and RSS,
# which counts them in full for each.
import json, os, re, statistics, subprocess, sys, time

RUNSC_ROOT = "/run/sandboxd/runsc"
MEM_ROOTS = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"]


def sh(*argv):
    return subprocess.run(argv, capture_output=True, text=True).stdout


def workers():
    """(id, class) of every alive worker, from sandboxd."""
    out = sh("sandboxctl", "list", "--no-legend")
    return [(l.split()[0], l.split()[1]) for l in out.splitlines() if l.strip() and l.split()[2] == "running"]


def runsc_running():
    try:
        listed = json.loads(sh("runsc", "--root=" + RUNSC_ROOT, "list", "--format=json") or "[]") or []
    except json.JSONDecodeError:
        return set()
    return {c["id"][len("sandbox-"):] for c in listed if c.get("status") == "running"}


def ready(count, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = {w for w, _ in workers()}
        if len(alive) >= count and len(alive & runsc_running()) >= count:
            return 0
        time.sleep(0.5)
    print(f"density: fewer than {count} workers running after {timeout} s", file=sys.stderr)
    return 1


def control_group(unit):
    return sh("systemctl", "show", "-P", "ControlGroup", unit).strip()


def cgroup_memory(cg):
    """(usage, anon, file) bytes of a cgroup, or None where it has no memory cgroup."""
    if not cg:
        return None
    for root in MEM_ROOTS:
        d = root + cg
        for usage_file in ("memory.usage_in_bytes", "memory.current"):
            try:
                usage = int(open(os.path.join(d, usage_file)).read())
            except (FileNotFoundError, ValueError):
                continue
            stat = dict(l.split() for l in open(os.path.join(d, "memory.stat")))
            anon = int(stat.get("total_rss", stat.get("anon", 0)))
            cache = int(stat.get("total_cache", stat.get("file", 0)))
            return usage, anon, cache
    return None


def cgroup_pids(cg):
    for root in ("/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            return [int(p) for p in open(root + cg + "/cgroup.procs").read().split()]
        except FileNotFoundError:
            continue
    return []


def role(pid):
    """Which part of a gVisor worker a process is."""
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except FileNotFoundError:
        return None
    name = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else ""
    args = [a.decode(errors="replace") for a in argv[1:]]
    if name == "sandbox-launch":
        return "launcher"
    if name == "runsc-sandbox":
        return "sentry"
    if name == "runsc-gofer":
        return "gofer"
    if name == "runsc":
        for a in args:
            if a in ("run", "events", "wait", "state", "delete", "kill"):
                return "runsc-" + a
        return "runsc"
    # systrap's stub processes: forked from the sentry, they hold the
    # address spaces of the sandbox's tasks.
    try:
        ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        parent = open(f"/proc/{ppid}/cmdline", "rb").read().split(b"\0")[0]
        if os.path.basename(parent.decode(errors="replace")) == "runsc-sandbox":
            return "sentry-stubs"
    except (FileNotFoundError, IndexError, ValueError):
        pass
    # systrap's stub processes that are not the sentry's children show
    # only as runsc's re-executed binary.
    comm = open(f"/proc/{pid}/comm").read().strip() if os.path.exists(f"/proc/{pid}/comm") else "?"
    if comm == "exe":
        return "sentry-stubs"
    return "other:" + (open(f"/proc/{pid}/comm").read().strip() if os.path.exists(f"/proc/{pid}/comm") else "?")


def pss_rss(pid):
    """(PSS, RSS) in bytes from smaps_rollup, or (0, 0) for a process that is gone."""
    try:
        text = open(f"/proc/{pid}/smaps_rollup").read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0, 0
    def field(n):
        m = re.search(r"^" + n + r":\s+(\d+) kB", text, re.M)
        return int(m.group(1)) * 1024 if m else 0
    return field("Pss"), field("Rss")


def cpu_ns(pid):
    """CPU time of all of a process's threads so far (schedstat: nanoseconds), 0 if it is gone."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return 0
    for tid in tids:
        try:
            total += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return total


# The smoke run (bench/run.sh --quick) shortens it: SANDBOXD_DENSITY_CPU_WINDOW_S.
CPU_WINDOW_S = float(os.environ.get("SANDBOXD_DENSITY_CPU_WINDOW_S") or 10)


def cpu_per_worker(ws, extra):
    """CPU per second of wall (ms/s) over CPU_WINDOW_S: per worker and part
    (the mean over the workers), and of the named extra processes."""
    pids = {}
    for wid, _cls in ws:
        for pid in cgroup_pids(control_group(f"sandbox-{wid}.service")):
            r = role(pid)
            if r is not None:
                pids[pid] = (wid, r)
    before = {pid: cpu_ns(pid) for pid in list(pids) + list(extra.values())}
    t0 = time.monotonic()
    time.sleep(CPU_WINDOW_S)
    dt = time.monotonic() - t0
    per = {}    # role -> {wid: ns}
    for pid, (wid, r) in pids.items():
        per.setdefault(r, {}).setdefault(wid, 0)
        per[r][wid] += max(cpu_ns(pid) - before[pid], 0)
    n = max(len(ws), 1)
    parts = {r: round(sum(v.values()) / n / dt / 1e6, 3) for r, v in sorted(per.items())}
    return {"window_s": round(dt, 1), "per_worker_ms_per_s": parts,
            "per_worker_total_ms_per_s": round(sum(parts.values()), 3),
            "all_workers_cores": round(sum(sum(v.values()) for v in per.values()) / dt / 1e9, 3),
            "processes_ms_per_s": {name: round(max(cpu_ns(pid) - before[pid], 0) / dt / 1e6, 3)
                                   for name, pid in extra.items()}}


def mean(v):
    return int(statistics.mean(v)) if v else 0


def snapshot(label):
    ws = workers()
    units = {}      # part -> [bytes per worker]
    procs = {}      # role -> {"pss": [...], "rss": [...]} summed per worker
    proxy_active = 0
    for wid, _cls in ws:
        m = cgroup_memory(control_group(f"sandbox-{wid}.service"))
        if m:
            units.setdefault("worker-unit", []).append(m[0])
            units.setdefault("worker-unit-anon", []).append(m[1])
            units.setdefault("worker-unit-file", []).append(m[2])
        per_role = {}
        for pid in cgroup_pids(control_group(f"sandbox-{wid}.service")):
            r = role(pid)
            if r is None:
                continue
            p, s = pss_rss(pid)
            acc = per_role.setdefault(r, [0, 0, 0])
            acc[0] += p; acc[1] += s; acc[2] += 1
        proxy = f"sandbox-{wid}-egress.service"
        if sh("systemctl", "is-active", proxy).strip() == "active":
            proxy_active += 1
            cg = control_group(proxy)
            m = cgroup_memory(cg)
            if m:
                units.setdefault("proxy-unit", []).append(m[0])
            acc = per_role.setdefault("proxy", [0, 0, 0])
            for pid in cgroup_pids(cg):
                p, s = pss_rss(pid)
                acc[0] += p; acc[1] += s; acc[2] += 1
        for r, (p, s, n) in per_role.items():
            d = procs.setdefault(r, {"pss": [], "rss": [], "processes": []})
            d["pss"].append(p); d["rss"].append(s); d["processes"].append(n)
    main = int(sh("systemctl", "show", "-P", "MainPID", "sandboxd.service").strip() or 0)
    status = open(f"/proc/{main}/status").read() if main else ""
    vmrss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1)) * 1024 if status else 0
    sd_pss, _ = pss_rss(main)
    fds = len(os.listdir(f"/proc/{main}/fd")) if main else 0
    cpu = cpu_per_worker(ws, {"sandboxd": main, "systemd": 1})
    meminfo = dict((l.split(":")[0], int(l.split()[1]) * 1024) for l in open("/proc/meminfo"))
    n = len(ws)
    per_worker_pss = sum(mean(d["pss"]) for d in procs.values())
    return {
        "label": label, "workers": n, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "per_worker_unit_bytes": {k: mean(v) for k, v in units.items()},
        "per_worker_process_bytes": {r: {"pss": mean(d["pss"]), "rss": mean(d["rss"]),
                                         "processes": round(statistics.mean(d["processes"]), 2),
                                         "workers_with_it": len(d["pss"])}
                                     for r, d in sorted(procs.items())},
        "per_worker_pss_total_bytes": per_worker_pss,
        "proxies_active": proxy_active,
        "cpu": cpu,
        "sandboxd": {"pid": main, "vmrss_bytes": vmrss, "pss_bytes": sd_pss, "fds": fds},
        "host_mem_available_bytes": meminfo.get("MemAvailable", 0),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def timed(argv):
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return (time.perf_counter() - t0) * 1e3, out


def gone(wid, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if wid not in {w for w, _ in workers()} and \
                sh("systemctl", "is-active", f"sandbox-{wid}.service").strip() not in ("active", "deactivating"):
            return True
        time.sleep(0.02)
    return False


def ops(samples, create_args):
    """Milliseconds, each a list of SAMPLES: busctl's own round trip (a
    GetId to the bus, the baseline), ListWorkers and ListWorkersEx through
    busctl, sandboxctl list, CreateWorker of one more worker (sandboxctl
    create: replies once its unit's start job is done), StopWorker (the
    reply) and the stop until the worker is gone (unit inactive)."""
    r = {k: [] for k in ("busctl_noop", "list_workers", "list_workers_ex", "sandboxctl_list",
                         "create", "stop_reply", "stop_until_gone")}
    bus = ["busctl", "call", "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager"]
    errors = []
    for _ in range(samples):
        r["busctl_noop"].append(timed(["busctl", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetId"])[0])
        r["list_workers"].append(timed(bus + ["ListWorkers"])[0])
        r["list_workers_ex"].append(timed(bus + ["ListWorkersEx", "a{sv}", "0"])[0])
        r["sandboxctl_list"].append(timed(["sandboxctl", "list", "--no-legend"])[0])
        try:
            ms, out = timed(["sandboxctl", "create"] + create_args)
        except subprocess.CalledProcessError as e:
            errors.append(e.stderr.strip())
            continue
        r["create"].append(ms)
        wid = out.split()[0]
        ready_deadline = time.monotonic() + 60
        while wid not in runsc_running() and time.monotonic() < ready_deadline:
            time.sleep(0.05)
        t0 = time.perf_counter()
        subprocess.run(["sandboxctl", "stop", wid], capture_output=True, check=True)
        r["stop_reply"].append((time.perf_counter() - t0) * 1e3)
        if not gone(wid):
            raise SystemExit(f"density: worker {wid} did not end within 120 s of StopWorker")
        r["stop_until_gone"].append((time.perf_counter() - t0) * 1e3)
    res = {k: {"p50_ms": round(statistics.median(v), 1) if v else None, "max_ms": round(max(v), 1) if v else None,
               "samples": [round(x, 1) for x in v]} for k, v in r.items()}
    res["create_errors"] = errors
    return res


def main():
    if sys.argv[1] == "ops":
        json.dump(ops(int(sys.argv[2]), sys.argv[3:]), sys.stdout)
        print()
        return
    if sys.argv[1] == "ready":
        sys.exit(ready(int(sys.argv[2]), float(sys.argv[3])))
    if sys.argv[1] == "snapshot":
        json.dump(snapshot(sys.argv[2]), sys.stdout)
        print()
        return
    sys.exit(f"usage: {sys.argv[0]} ready COUNT TIMEOUT_S | snapshot LABEL | ops SAMPLES CREATE_ARGS...")


main()
