#!/usr/bin/env python3
# bench/density.sh's report: reads what a run left in TMPDIR (empty.json,
# machine.json, runsc-version, plain.jsonl and egress.jsonl: one snapshot
# with its timings per count), prints the table and writes OUT.json.
#   density-report.py TMPDIR OUT.json
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
def jl(name):
    p = os.path.join(tmp, name + ".jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
empty = json.load(open(os.path.join(tmp, "empty.json")))
machine = json.load(open(os.path.join(tmp, "machine.json")))
machine["runsc"] = open(os.path.join(tmp, "runsc-version")).read().strip()
platform = open(os.path.join(tmp, "platform")).read().strip() if os.path.exists(os.path.join(tmp, "platform")) else "systrap"
slack_file = os.path.join(tmp, "timer-slack")
slack = open(slack_file).read().strip() if os.path.exists(slack_file) else None
disk_file = os.path.join(tmp, "disk-bytes")
disk = int(open(disk_file).read()) if os.path.exists(disk_file) else None
res = {"benchmark": "density", "runsc_platform": platform, "runsc_timer_slack": slack, "worker_disk_bytes": disk,
       "unit": "bytes (memory), milliseconds (ops)", "machine": machine,
       "sandboxd_empty": empty["sandboxd"], "host_mem_available_empty_bytes": empty["host_mem_available_bytes"],
       "series": {"plain": jl("plain"), "egress": jl("egress")}, "create_failures": jl("failures"),
       "goal": {"sandboxd_rss_at_300_bytes_max": 30 * 2**20},
       "notes": "PSS splits the pages of the runsc binary that every worker maps among them; RSS counts them in "
                "full for each worker. host_mem_available drops also with other jobs on a shared machine."}
for s in res["series"].values():
    for p in s:
        p["host_mem_available_drop_per_worker_bytes"] = int(
            (empty["host_mem_available_bytes"] - p["host_mem_available_bytes"]) / max(p["workers"], 1))
json.dump(res, open(out, "w"), indent=2)
MiB = 2**20
parts = ["launcher", "runsc-run", "runsc-events", "sentry", "sentry-stubs", "gofer", "proxy"]
print(f"{'series':<7} {'N':>4} {'unit MiB':>8} " + " ".join(f"{p[:12]:>12}" for p in parts) +
      f" {'PSS sum':>8} {'avail/w':>8} {'sbxd RSS':>9} {'list ms':>8} {'create ms':>9} {'stop ms':>8} {'cpu ms/s/w':>10} {'cores':>6}")
for name, s in res["series"].items():
    for p in s:
        pr = p["per_worker_process_bytes"]
        cells = " ".join(f"{pr[q]['pss'] / MiB:>12.2f}" if q in pr else f"{'-':>12}" for q in parts)
        print(f"{name:<7} {p['workers']:>4} {p['per_worker_unit_bytes'].get('worker-unit', 0) / MiB:>8.2f} {cells} "
              f"{p['per_worker_pss_total_bytes'] / MiB:>8.2f} {p['host_mem_available_drop_per_worker_bytes'] / MiB:>8.2f} "
              f"{p['sandboxd']['vmrss_bytes'] / MiB:>9.2f} {p['ops']['list_workers']['p50_ms']:>8.1f} "
              f"{p['ops']['create']['p50_ms'] or -1:>9.1f} {p['ops']['stop_until_gone']['p50_ms'] or -1:>8.1f} "
              f"{p.get('cpu', {}).get('per_worker_total_ms_per_s', -1):>10.2f} {p.get('cpu', {}).get('all_workers_cores', -1):>6.2f}")
print("per-part columns: PSS per worker (MiB); unit: the worker unit's cgroup memory; avail/w: host MemAvailable "
      "drop per worker; list: busctl ListWorkers p50 (busctl's own GetId round trip in the JSON); create: "
      "CreateWorker to its reply; stop: StopWorker until the unit is gone; cpu: CPU per idle worker (all its "
      "processes, ms per second, over 10 s) and of all workers together (cores)")
for f in res["create_failures"]:
    what = f"stopping all {f['workers']}" if f.get("stage") == "stop" else f"creating worker {f['workers'] + 1}"
    print(f"{f['series']}: {what} failed: {f['error']}")
print(f"goal: sandboxd RSS under 30 MiB at 300 workers; wrote {out}")
