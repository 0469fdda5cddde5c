#!/usr/bin/env python3
# One table from the JSON the benchmarks left under a results directory:
# each headline number beside its goal (issue 14, issue 3 for cold starts)
# and, where a goal is missed, by how much. Prints Markdown (the README's
# table) and writes summary.json. A benchmark without JSON is a row saying so.
#   bench/summary.py [RESULTS_DIR]          (default bench/results)
import json, os, sys

RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
MiB = 2 ** 20


def load(name):
    p = os.path.join(RESULTS, name)
    return json.load(open(p)) if os.path.exists(p) else None


rows = []   # (benchmark, measure, value, goal, verdict)


def row(bench, what, value, goal="-", met=None, missed_by=""):
    verdict = "-" if met is None else ("met" if met else "missed" + (f" by {missed_by}" if missed_by else ""))
    rows.append({"benchmark": bench, "measure": what, "value": value, "goal": goal, "verdict": verdict})


def start_latency():
    r = load("start-latency.json")
    if not r:
        return row("start latency", "no start-latency.json", "-")
    rs = r["rows"]
    for name, label in (("sandboxd-trusted", "trusted, CreateWorker to first byte"),
                        ("sandboxd-gvisor", "gVisor cold, CreateWorker to first byte")):
        if name not in rs:
            continue
        x = rs[name]
        ratio = x.get("p50_ratio_to_bare")
        goal = r.get("goal_p50_ratio_max", 1.2)
        row("start latency", f"{label}: p50 / p95", f"{x['p50_us'] / 1000:.1f} / {x['p95_us'] / 1000:.1f} ms")
        if ratio is not None:
            row("start latency", f"{label}: p50 over the bare runtime", f"{ratio:.2f}x", f"<= {goal}x",
                ratio <= goal, f"{ratio - goal:.2f}x")
    pooled = {k: v for k, v in rs.items() if "pool" in k}
    pooled.update({k + " pooled": v["pooled"] for k, v in rs.items() if isinstance(v.get("pooled"), dict)})
    bare = rs.get("bare-runsc", {}).get("p50_us")
    if not pooled:
        row("start latency", "gVisor pooled", "not measured (no pooled series in start-latency.json)",
            "p50 < 100 ms and < 0.5x bare runsc")
    for k, v in pooled.items():
        p50 = v["p50_us"] / 1000
        row("start latency", f"{k}: p50", f"{p50:.1f} ms", "< 100 ms", p50 < 100, f"{p50 - 100:.1f} ms")
        if bare:
            ratio = v["p50_us"] / bare
            row("start latency", f"{k}: p50 / bare runsc", f"{ratio:.2f}x", "< 0.5x", ratio < 0.5, f"{ratio - 0.5:.2f}x")


def ms(op):
    return "-" if op.get("p50_ms") is None else f"{op['p50_ms']:.0f}"


def density():
    runs = [load(n) for n in sorted(os.listdir(RESULTS)) if n.startswith("density") and n.endswith(".json")]
    runs = [r for r in runs if r and r.get("series")]
    if not runs:
        return row(tag, "no density*.json", "-")
    for r in runs:
        density_run(r)


def density_run(r):
    tag = "density, " + r.get("runsc_platform", "systrap")
    if r.get("runsc_timer_slack"):
        tag += ", timer slack " + r["runsc_timer_slack"]
    plain = r["series"].get("plain") or []
    if plain:
        top = plain[-1]
        n = top["workers"]
        row(tag, f"memory per idle gVisor worker at {n}: unit cgroup / PSS of its processes",
            f"{top['per_worker_unit_bytes'].get('worker-unit', 0) / MiB:.1f} / {top['per_worker_pss_total_bytes'] / MiB:.1f} MiB")
        parts = top["per_worker_process_bytes"]
        row(tag, f"  of which (PSS) at {n}", ", ".join(f"{k} {v['pss'] / MiB:.1f}" for k, v in
                                                          sorted(parts.items(), key=lambda kv: -kv[1]["pss"])) + " MiB")
        rss = top["sandboxd"]["vmrss_bytes"] / MiB
        if n >= 300:
            row(tag, f"sandboxd RSS at {n} workers", f"{rss:.1f} MiB", "< 30 MiB", rss < 30, f"{rss - 30:.1f} MiB")
        else:
            row(tag, f"sandboxd RSS at {n} workers (goal is at 300)", f"{rss:.1f} MiB", "< 30 MiB at 300")
        if top.get("cpu"):
            row(tag, f"CPU of idle workers at {n}: per worker / all of them",
                f"{top['cpu']['per_worker_total_ms_per_s']:.1f} ms/s / {top['cpu']['all_workers_cores']:.2f} cores")
        ops = top["ops"]
        row(tag, f"at {n}: ListWorkers / create one / stop one (p50)",
            f"{ms(ops['list_workers'])} / {ms(ops['create'])} / {ms(ops['stop_until_gone'])} ms"
            f" (busctl alone {ms(ops['busctl_noop'])} ms)")
    for f in r.get("create_failures", []):
        what = f"stopping all {f['workers']}" if f.get("stage") == "stop" else f"creating worker {f['workers'] + 1}"
        row(tag, f"{f['series']}: {what} failed", f["error"][:160])
    eg = r["series"].get("egress") or []
    if eg:
        top = eg[-1]
        u = top["per_worker_unit_bytes"]
        row(tag, f"with egress at {top['workers']}: worker unit / proxy unit ({top['proxies_active']} proxies running)",
            f"{u.get('worker-unit', 0) / MiB:.1f} / {u.get('proxy-unit', 0) / MiB:.1f} MiB")


def egress():
    r = load("egress.json")
    if not r:
        return row("egress", "no egress.json", "-")
    e, t = r.get("sandbox-egress", {}), r.get("tinyproxy", {})
    if "throughput_ratio" in e:
        row("egress", "throughput / direct", f"{e['throughput_ratio']:.2f}x", ">= 0.95x", e["throughput_ratio"] >= 0.95,
            f"{0.95 - e['throughput_ratio']:.2f}x")
    if "added_latency_p50_us" in e:
        row("egress", "added connect latency p50", f"{e['added_latency_p50_us']} us", "< 200 us",
            e["added_latency_p50_us"] < 200, f"{e['added_latency_p50_us'] - 200} us")
        row("egress", "added connect latency p99", f"{e['added_latency_p99_us']} us", "< 1000 us",
            e["added_latency_p99_us"] < 1000, f"{e['added_latency_p99_us'] - 1000} us")
    if e.get("tunnels_per_s") and t.get("tunnels_per_s"):
        ratio = e["tunnels_per_s"] / t["tunnels_per_s"]
        row("egress", "tunnels/s over tinyproxy", f"{ratio:.2f}x ({e['tunnels_per_s']} / {t['tunnels_per_s']})", ">= 2x",
            ratio >= 2, f"{2 - ratio:.2f}x")


def churn():
    r = load("churn.json")
    if not r:
        return row("churn", "no churn.json", "-")
    left = sum(r["leaks"].values())
    row("churn", f"{r['cycles']} cycles: failed / left behind", f"{r['failed_cycles']} / {left}", "0 / 0",
        r["failed_cycles"] == 0 and left == 0)
    row("churn", "cycles/s; sandboxd VmRSS before / after",
        f"{r['cycles_per_second']}; {r['rss_kb_before']} / {r['rss_kb_after']} kB")


def runtime():
    r = load("runtime-start.json")
    if not r:
        return row("runtime", "no runtime-start.json", "-")
    rs = r["rows"]
    row("runtime", "p50: bare systemd-run / bare runsc / launcher unit",
        " / ".join(f"{rs[k]['p50_ms']}" for k in ("bare-systemd-run", "bare-runsc", "launcher-unit")) + " ms")


for f in (start_latency, runtime, density, egress, churn):
    f()
machine = load("machine.json")
print("| benchmark | measure | value | goal | verdict |")
print("|---|---|---|---|---|")
for r in rows:
    print(f"| {r['benchmark']} | {r['measure']} | {r['value']} | {r['goal']} | {r['verdict']} |")
if machine:
    print(f"\nmachine: {machine['cpu']}, {machine['cores']} cores, {machine['mem_gib']} GiB, kernel {machine['kernel']}, "
          f"load {' '.join(machine['loadavg'])} at the start")
json.dump({"machine": machine, "rows": rows}, open(os.path.join(RESULTS, "summary.json"), "w"), indent=2)
