#!/usr/bin/env python3
# One table from the JSON the benchmarks left under a results directory:
# each headline number beside its goal (issue 14, issue 3 for cold starts)
# and, where a goal is missed, by how much. Prints Markdown (the README's
# table) and writes summary.json beside the JSON.
#   bench/summary.py [RESULTS_DIR]      every benchmark with JSON there (default
#                                       bench/results), a row saying so for one without
#   bench/summary.py --run RUN [--earlier DIR] [--only NAMES]
#                                       the table of one bench/run.sh run: RUN/status.tsv
#                                       (NAME RC SECONDS LOG a line), RUN/run.json (date,
#                                       commit, quick) and RUN/results/*.json. A benchmark
#                                       that failed, or exited 0 without its JSON, is one
#                                       row "failed" with its log and no figure; one not
#                                       run (--only) is one row naming DIR's file of it
#                                       with its date and commit, no figure. In a --quick
#                                       run no verdict is given. Exits 1 when a benchmark
#                                       failed.
#   bench/summary.py --run RUN --publish DIR
#                                       copies the JSON (and figures) of each benchmark
#                                       that succeeded in RUN to DIR, each JSON stamped
#                                       with "measured": {date, commit}
import argparse, datetime, json, os, shutil, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("results", nargs="?")
ap.add_argument("--run")
ap.add_argument("--earlier")
ap.add_argument("--only")
ap.add_argument("--publish")
args = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(args.run, "results") if args.run else (args.results or os.path.join(HERE, "results"))
MiB = 2 ** 20
# Each benchmark of bench/run.sh and the JSON it writes, in run order.
BENCHMARKS = {"start": ["start-latency.json"], "runtime": ["runtime-start.json"], "egress": ["egress.json"],
              "density": ["density.json"], "churn": ["churn.json"], "broker": ["broker.json"],
              "suspend": ["suspend.json"], "wake": ["wake.json"], "checkpoint": ["checkpoint-handshakes-new.json"],
              "exec": ["exec.json"], "files": ["files-copy.json"], "siblings": ["start-siblings.json"], "top": ["top.json"],
              "gate": ["gate.json"]}
FIGURES = {"start": ["start-latency.png"], "density": ["density.png"], "egress": ["egress-latency.png"]}


def load(name):
    p = os.path.join(RESULTS, name)
    return json.load(open(p)) if os.path.exists(p) else None


rows = []   # (benchmark, measure, value, goal, verdict)


def row(bench, what, value, goal="-", met=None, missed_by="", verdict=None):
    if verdict is None:
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
        if "gvisor" in name:      # issue 27: 1.4x bare runsc, 1.2x the same walls
            goal = r.get("goal_gvisor_p50_ratio_to_bare_max", goal)
        row("start latency", f"{label}: p50 / p95", f"{x['p50_us'] / 1000:.1f} / {x['p95_us'] / 1000:.1f} ms")
        if ratio is not None:
            row("start latency", f"{label}: p50 over the bare runtime", f"{ratio:.2f}x", f"<= {goal}x",
                ratio <= goal, f"{ratio - goal:.2f}x")
        walls = x.get("p50_ratio_to_same_walls")
        if walls is not None:
            wgoal = r.get("goal_p50_ratio_to_same_walls_max", 1.2)
            base = "systemd-run-same-walls" if "trusted" in name else "runsc-same-walls"
            row("start latency", f"{label}: p50 over the same walls without sandboxd "
                f"({rs[base]['p50_us'] / 1000:.1f} ms)", f"{walls:.2f}x", f"<= {wgoal}x", walls <= wgoal,
                f"{walls - wgoal:.2f}x")
    if r.get("gvisor_cold_phases_p50_ms"):
        row("start latency", f"gVisor cold, p50 of each step ({r['gvisor_cold_phases_workers']} workers)",
            "; ".join(f"{k} {v} ms" for k, v in r["gvisor_cold_phases_p50_ms"].items()))
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
        return row("density", "no density*.json", "-")
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
        # The difference of two percentiles, each measured: below zero when
        # direct's own tail was the longer one in this run, so both are shown.
        d = r.get("direct", {})
        for q, goal in (("p50", 200), ("p99", 1000)):
            added = e[f"added_latency_{q}_us"]
            both = (f" ({e[f'latency_{q}_us']} against {d[f'latency_{q}_us']} us direct)"
                    if f"latency_{q}_us" in e and f"latency_{q}_us" in d else "")
            row("egress", f"added connect latency {q}", f"{added} us{both}", f"< {goal} us", added < goal,
                f"{added - goal} us")
    if e.get("tunnels_per_s") and t.get("tunnels_per_s"):
        ratio = e["tunnels_per_s"] / t["tunnels_per_s"]
        row("egress", "tunnels/s over tinyproxy", f"{ratio:.2f}x ({e['tunnels_per_s']} / {t['tunnels_per_s']})", ">= 2x",
            ratio >= 2, f"{2 - ratio:.2f}x")
    egress_cpu(e, t)


def egress_cpu(e, t):
    if "cpu_ms_per_gib" in e:
        row("egress", "proxy CPU per GiB moved / per 1,000 tunnels: sandbox-egress; tinyproxy",
            f"{e['cpu_ms_per_gib'] / 1000:.2f} / {e.get('cpu_ms_per_1000_tunnels', 0) / 1000:.2f} s; "
            f"{t.get('cpu_ms_per_gib', 0) / 1000:.2f} / {t.get('cpu_ms_per_1000_tunnels', 0) / 1000:.2f} s")


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
    keys = [k for k in ("bare-systemd-run", "bare-runsc", "runsc-unit", "launcher-unit") if k in rs]
    row("runtime", "p50: " + " / ".join(k.replace("-", " ") for k in keys),
        " / ".join(f"{rs[k]['p50_ms']}" for k in keys) + " ms")
    if r.get("split_p50_ms"):
        row("runtime", "a gVisor start without sandboxd, split (p50 differences)",
            "; ".join(f"{k} {v} ms" for k, v in r["split_p50_ms"].items()))


def broker():
    r = load("broker.json")
    if not r:
        return row("broker", "no broker.json", "-")
    p50 = r["added_latency_p50_us"]
    lat = {k: r.get(k, {}).get("latency", {}) for k in ("direct", "brokered")}
    both = (f" ({lat['brokered']['p99_us']:.1f} against {lat['direct']['p99_us']:.1f} us direct at p99)"
            if "p99_us" in lat["direct"] and "p99_us" in lat["brokered"] else "")
    row("broker", "added latency over direct TLS p50 / p99", f"{p50} / {r['added_latency_p99_us']} us{both}",
        f"p50 < {r.get('goal_added_p50_us', 500)} us", p50 < r.get("goal_added_p50_us", 500),
        f"{p50 - r.get('goal_added_p50_us', 500):.1f} us")
    row("broker", "requests/s direct / brokered",
        f"{r['direct']['rate']['requests_per_s']:.0f} / {r['brokered']['rate']['requests_per_s']:.0f}")


def suspend():
    r = load("suspend.json")
    if not r:
        return row("suspend", "no suspend.json", "-")
    for size, x in r["rows"].items():
        row("suspend", f"{size}: suspend / resume / cold start p50 (n={x['n']})",
            f"{x['suspend_p50_us'] / 1000:.0f} / {x['resume_p50_us'] / 1000:.0f} / {x['cold_p50_us'] / 1000:.0f} ms")


def wake():
    r = load("wake.json")
    if not r:
        return row("wake", "no wake.json", "-")
    w, a, goal = r["wake"], r["awake"], r.get("goal_first_request_us", 1000000)
    row("wake", f"first request to a sleeping endpoint, 50 MiB, p50 / p95 (n={w['n']}); awake p50",
        f"{w['p50_us'] / 1000:.0f} / {w['p95_us'] / 1000:.0f} ms; {a['p50_us'] / 1000:.1f} ms",
        f"< {goal / 1e6:.0f} s", w["p95_us"] < goal, f"{(w['p95_us'] - goal) / 1000:.0f} ms")


def checkpoint():
    r = load("checkpoint-handshakes-new.json")
    if not r:
        return row("checkpoint", "no checkpoint-handshakes-new.json", "-")
    row("checkpoint", f"{r['cycles_asked']} suspend/resume cycles with handshakes in flight: ok / failed / lost",
        f"{r['ok']} / {r['failed']} / {r['lost']}", "0 failed, 0 lost", r["failed"] == 0 and r["lost"] == 0)


def exec_latency():
    r = load("exec.json")
    if not r:
        return row("exec", "no exec.json", "-")
    goal = r.get("goal_ratio", 1.2)
    for cls, label, mine in (("trusted", "trusted, beside a unit with the same walls", "sandboxd-exec-trusted"),
                             ("gvisor", "gVisor, beside a bare runsc exec into the same sandbox",
                              "sandboxd-exec-gvisor")):
        x, base = r["ratios"][cls], r["rows"][r["ratios"][cls]["baseline"]]
        row("exec", f"{label}: p50 / p95 (baseline p50 / p95)",
            f"{r['rows'][mine]['p50_us'] / 1000:.1f} / {r['rows'][mine]['p95_us'] / 1000:.1f} ms "
            f"({base['p50_us'] / 1000:.1f} / {base['p95_us'] / 1000:.1f} ms): {x['p50']:.2f}x / {x['p95']:.2f}x",
            f"<= {goal}x", x["p50"] <= goal and x["p95"] <= goal, f"{max(x['p50'], x['p95']) - goal:.2f}x")
    capped = r["ratios"].get("gvisor-cpu50")
    if capped:
        mine, base = r["rows"]["sandboxd-exec-gvisor-cpu50"], r["rows"][capped["baseline"]]
        row("exec", "gVisor at the default 50% quota (the runsc client in the unit), beside a bare runsc exec",
            f"{mine['p50_us'] / 1000:.1f} / {mine['p95_us'] / 1000:.1f} ms "
            f"({base['p50_us'] / 1000:.1f} / {base['p95_us'] / 1000:.1f} ms): "
            f"{capped['p50']:.2f}x / {capped['p95']:.2f}x")


def files_copy():
    r = load("files-copy.json")
    if not r:
        return row("files", "no files-copy.json", "-")
    c = r["copies"]
    ratios = [c[k]["ratio_to_cp"] for k in ("trusted-in", "trusted-out", "standard-in", "standard-out")]
    row("files", f"{r['size_mib']} MiB in / out beside host cp: trusted; gVisor",
        f"{ratios[0]:.2f}x / {ratios[1]:.2f}x; {ratios[2]:.2f}x / {ratios[3]:.2f}x", ">= 0.9x",
        min(ratios) >= 0.9, f"{0.9 - min(ratios):.2f}x")
    # Since December 2026 also beside a root cp on the host to the home's
    # own file system (with fsync for a copy in: it is a replace), or a cp
    # inside the worker where the host cannot see the home.
    if all("ratios" in c[k] for k in c):
        def same(key, way):
            x = c[key]["ratios"]
            for b in (("home-cp+sync", "in-cp+sync") if way == "in" else ("home-cp", "in-cp")):
                if b in x:
                    return x[b]
            return x["cp"]
        s = [same("trusted-in", "in"), same("trusted-out", "out"), same("standard-in", "in"),
             same("standard-out", "out")]
        row("files", f"{r['size_mib']} MiB in / out beside cp on the home's file system (in: with fsync): "
            "trusted; gVisor", f"{s[0]:.2f}x / {s[1]:.2f}x; {s[2]:.2f}x / {s[3]:.2f}x", ">= 0.9x",
            min(s) >= 0.9, f"{0.9 - min(s):.2f}x")
    m = r["sandboxd_rss"]
    row("files", "sandboxd RSS before / after / peak", f"{m['start_kib']} / {m['end_kib']} / {m['peak_kib']} KiB")


def siblings():
    r = load("start-siblings.json")
    if not r:
        return row("siblings", "no start-siblings.json", "-")
    for name, key in (("gVisor", "points"), ("trusted", "trusted_points")):
        pts = r.get(key)
        if not pts:
            continue
        row("siblings", f"{name} cold start p50 (unit set-up p50) beside " +
            " / ".join(str(p["siblings"]) for p in pts) + f" idle {name} disk workers",
            " / ".join(f"{p['cold_start_p50_ms']:.0f} ({p['unit_setup_p50_ms']:.0f})" for p in pts) + " ms")
        if len(pts) > 1:
            ratio = pts[-1]["cold_start_p50_ms"] / pts[0]["cold_start_p50_ms"]
            row("siblings", f"{name} cold start p50 beside {pts[-1]['siblings']} over beside {pts[0]['siblings']}",
                f"{ratio:.2f}x", "<= 1.1x (a start does not pay for the workers beside it)", ratio <= 1.1,
                f"{ratio - 1.1:.2f}x")


def top():
    r = load("top.json")
    if not r:
        return row("top", "no top.json", "-")
    t, b = r["top_json_one_sample"], r["baseline_list"]
    row("top", f"at {r['workers']} workers ({r['with_running_proxy']} proxies): top --json / list p50; "
        "sandboxd CPU per call", f"{t['wall_ms_p50']:.0f} / {b['wall_ms_p50']:.0f} ms; "
        f"{t['daemon_cpu_ms_per_run']:.0f} / {b['daemon_cpu_ms_per_run']:.0f} ms")


def gate():
    r = load("gate.json")
    if not r:
        return row("gate", "no gate.json", "-")
    g = r["goals"]
    for k, label in (("unix", "UNIX socket, beside direct"), ("tcp", "loopback port, beside direct"),
                     ("nginx-gate", "nginx -> gate, beside nginx -> handler")):
        if k not in r:
            row("gate", f"{label}", "not measured (no nginx where it ran)" if k == "nginx-gate" else "-")
            continue
        x = r[k]
        met = x["added_p50_us"] < g["added_p50_us_max"] and x["rate_ratio"] >= g["rate_ratio_min"]
        row("gate", f"{label}: added p50 / p99; requests/s ratio",
            f"{x['added_p50_us']} / {x['added_p99_us']} us; {x['rate_ratio']:.2f}x",
            f"p50 < {g['added_p50_us_max']} us, >= {g['rate_ratio_min']}x", met,
            f"{max(x['added_p50_us'] - g['added_p50_us_max'], 0):.0f} us, "
            f"{max(g['rate_ratio_min'] - x['rate_ratio'], 0):.2f}x")


ROWS = {"start": start_latency, "runtime": runtime, "egress": egress, "density": density, "churn": churn,
        "broker": broker, "suspend": suspend, "wake": wake, "checkpoint": checkpoint, "exec": exec_latency,
        "files": files_copy, "siblings": siblings, "top": top, "gate": gate}


def stamp_of(path):
    """Where an earlier figure comes from: its "measured" stamp (a published
    run's date and commit), else the commit that last changed the file."""
    try:
        m = json.load(open(path)).get("measured")
    except (OSError, ValueError, AttributeError):
        m = None
    if m:
        return f"measured {m['date']} at {m['commit']}"
    g = subprocess.run(["git", "-C", os.path.dirname(path), "log", "-1", "--format=%cs %h", "--", path],
                       capture_output=True, text=True).stdout.split()
    return f"committed {g[0]} in {g[1]}" if len(g) == 2 else "date and commit unknown"


def run_table():
    """This run's rows only: returns whether every benchmark asked for succeeded."""
    run = json.load(open(os.path.join(args.run, "run.json")))
    status = {}
    for line in open(os.path.join(args.run, "status.tsv")):
        name, rc, secs, log = line.rstrip("\n").split("\t")
        status[name] = (int(rc), int(secs), log)
    only = args.only.split(",") if args.only else list(BENCHMARKS)
    ok = True
    for name, files in BENCHMARKS.items():
        if name not in only:
            if args.earlier:
                old = [f for f in files if os.path.exists(os.path.join(args.earlier, f))]
                row(name, "not run in this run", "; ".join(
                    f"last figures: {os.path.join(args.earlier, f)}, {stamp_of(os.path.join(args.earlier, f))}"
                    for f in old) or "no earlier figures")
            continue
        if name not in status:
            ok = False
            row(name, "failed", "failed: the run never reached it", verdict="failed")
            continue
        rc, secs, log = status[name]
        missing = [f for f in files if not os.path.exists(os.path.join(RESULTS, f))]
        if rc != 0 or missing:
            ok = False
            why = f"exit {rc}" if rc != 0 else "exit 0 without " + ", ".join(missing)
            row(name, "failed", f"failed ({why}; log {log})", verdict="failed")
            continue
        n = len(rows)
        ROWS[name]()
        for r in rows[n:]:
            r["measure"] += f" [{secs} s]" if r is rows[n] else ""
            if run["quick"] and r["verdict"] != "-":
                r["verdict"] = "- (quick)"
    return run, ok


def publish(dest):
    run = json.load(open(os.path.join(args.run, "run.json")))
    os.makedirs(dest, exist_ok=True)
    for line in open(os.path.join(args.run, "status.tsv")):
        name, rc = line.split("\t")[:2]
        if rc != "0" or name not in BENCHMARKS:
            continue
        for f in BENCHMARKS[name]:
            src = os.path.join(RESULTS, f)
            if not os.path.exists(src):
                continue
            d = json.load(open(src))
            d["measured"] = {"date": run["date"], "commit": run["commit"]}
            json.dump(d, open(os.path.join(dest, f), "w"), indent=2)
        for f in FIGURES.get(name, []):
            if os.path.exists(os.path.join(RESULTS, f)):
                shutil.copy(os.path.join(RESULTS, f), os.path.join(dest, f))


if args.publish:
    publish(args.publish)
    sys.exit(0)
ok = True
if args.run:
    run, ok = run_table()
else:
    run = None
    for f in ROWS.values():
        f()
machine = load("machine.json")
if run:
    print(f"bench/run.sh {'--quick ' if run['quick'] else ''}at {run['commit']}, {run['date']}: every figure below "
          "was measured in this run" + (" at the smallest sizes, no verdicts" if run["quick"] else ""))
print("| benchmark | measure | value | goal | verdict |")
print("|---|---|---|---|---|")
for r in rows:
    print(f"| {r['benchmark']} | {r['measure']} | {r['value']} | {r['goal']} | {r['verdict']} |")
if machine:
    print(f"\nmachine: {machine['cpu']}, {machine['cores']} cores, {machine['mem_gib']} GiB, kernel {machine['kernel']}, "
          f"load {' '.join(machine['loadavg'])} at the start")
json.dump({"machine": machine, "run": run, "rows": rows}, open(os.path.join(RESULTS, "summary.json"), "w"), indent=2)
sys.exit(0 if ok else 1)
