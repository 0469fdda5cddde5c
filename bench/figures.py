#!/usr/bin/env python3
# Draws the benchmark figures from the JSON under a results directory, with
# gnuplot (Debian: gnuplot-nox), as PNG beside the JSON:
#   start-latency.png   CreateWorker to first byte, one cumulative distribution
#                       per path (cold gVisor, pooled gVisor where the run has
#                       it, bare runsc, trusted, bare systemd-run)
#   density.png         memory per idle gVisor worker, by part, against the
#                       number of workers, and sandboxd's RSS
#   egress-latency.png  connect latency through sandbox-egress, tinyproxy and
#                       direct, one cumulative distribution each
# A figure whose JSON is missing (or has no samples) is skipped with a line
# saying so.
#   bench/figures.py [RESULTS_DIR]          (default bench/results)
import json, os, subprocess, sys, tempfile

RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
MiB = 2 ** 20
COMMON = "set terminal pngcairo size 960,600 font 'DejaVu Sans,11'\nset grid\nset key bottom right\n"


def load(name):
    p = os.path.join(RESULTS, name)
    return json.load(open(p)) if os.path.exists(p) else None


def cdf_file(tmp, name, samples, scale):
    v = sorted(samples)
    path = os.path.join(tmp, name + ".dat")
    with open(path, "w") as f:
        for i, x in enumerate(v):
            f.write(f"{x * scale} {(i + 1) / len(v)}\n")
    return path


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def start_latency(tmp):
    r = load("start-latency.json")
    rows = (r or {}).get("rows", {})
    series = [(k, v["samples_us"]) for k, v in rows.items() if v.get("samples_us")]
    # A pooled series, where the run has one: a row of its own, or a
    # "pooled" column of samples in a row.
    series += [(k + " pooled", v["pooled"]["samples_us"]) for k, v in rows.items()
               if isinstance(v.get("pooled"), dict) and v["pooled"].get("samples_us")]
    if not series:
        return "start-latency.png: skipped (no start-latency.json with samples)"
    plots = ", ".join(f"'{cdf_file(tmp, 'start-' + str(i), s, 1e-3)}' using 1:2 with steps lw 2 title '{k}'"
                      for i, (k, s) in enumerate(series))
    out = os.path.join(RESULTS, "start-latency.png")
    gnuplot(COMMON + f"set output '{out}'\nset title 'Start latency: request to first byte (cumulative)'\n"
            "set xlabel 'milliseconds'\nset ylabel 'fraction of starts'\nset logscale x\nset yrange [0:1]\n"
            f"plot {plots}\n")
    return f"start-latency.png: {len(series)} series"


def density_series(tmp, tag, r):
    """Data files of one density run: the plain series, and with egress."""
    pts = r.get("series", {}).get("plain", [])
    parts = ["sentry", "gofer", "runsc-run", "runsc-events", "launcher", "sentry-stubs"]
    path = os.path.join(tmp, f"density-{tag}.dat")
    with open(path, "w") as f:
        for p in pts:
            pr = p["per_worker_process_bytes"]
            cells = [pr.get(q, {}).get("pss", 0) / MiB for q in parts]
            f.write(" ".join(str(x) for x in [p["workers"], p["per_worker_unit_bytes"].get("worker-unit", 0) / MiB,
                                               p["per_worker_pss_total_bytes"] / MiB] + cells +
                             [p["sandboxd"]["vmrss_bytes"] / MiB]) + "\n")
    epath = os.path.join(tmp, f"density-{tag}-egress.dat")
    eg = r.get("series", {}).get("egress", [])
    with open(epath, "w") as f:
        for p in eg:
            u = p["per_worker_unit_bytes"]
            proxy = u.get("proxy-unit", 0) * p["proxies_active"] / max(p["workers"], 1)
            f.write(f"{p['workers']} {(u.get('worker-unit', 0) + proxy) / MiB}\n")
    return path, epath, parts, len(pts), len(eg)


def density(tmp):
    runs = []
    for name in sorted(os.listdir(RESULTS)):
        if name.startswith("density") and name.endswith(".json"):
            r = load(name)
            if r and r.get("series", {}).get("plain"):
                runs.append((r.get("runsc_platform", "systrap"), r))
    if not runs:
        return "density.png: skipped (no density*.json)"
    lines = []
    for i, (platform, r) in enumerate(runs):
        path, epath, parts, n, ne = density_series(tmp, str(i), r)
        lines += [f"'{path}' using 1:2 with linespoints lw 2 title '{platform}: worker unit (cgroup)'",
                  f"'{path}' using 1:3 with linespoints lw 2 title '{platform}: PSS of its processes'"]
        if i == 0:
            present = {q for p in r["series"]["plain"] for q in p["per_worker_process_bytes"]}
            lines += [f"'{path}' using 1:{4 + j} with linespoints title '{platform}: {q} (PSS)'"
                      for j, q in enumerate(parts) if q in present]
        if ne:
            lines.append(f"'{epath}' using 1:2 with linespoints lw 2 dt 2 title '{platform}, egress: worker + proxy unit'")
        lines.append(f"'{path}' using 1:{4 + len(parts)} axes x1y2 with linespoints lw 2 dt 3 "
                     f"title '{platform}: sandboxd RSS (right axis)'")
    out = os.path.join(RESULTS, "density.png")
    gnuplot(COMMON.replace("960,600", "1200,850") +
            f"set output '{out}'\nset title 'Memory per idle gVisor worker against the number of workers'\n"
            "set xlabel 'idle gVisor workers'\nset ylabel 'MiB per worker'\nset logscale x\nset xrange [1:400]\nset y2label 'sandboxd RSS, MiB'\n"
            "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\nset key outside below maxcols 3 font ',9'\n"
            f"plot {', '.join(lines)}\n")
    return f"density.png: {len(runs)} runs"


def egress(tmp):
    r = load("egress.json")
    series = [(k, v["latency_samples_us"]) for k, v in (r or {}).items()
              if isinstance(v, dict) and v.get("latency_samples_us")]
    if not series:
        return "egress-latency.png: skipped (no egress.json with latency samples)"
    plots = ", ".join(f"'{cdf_file(tmp, 'egress-' + str(i), s, 1)}' using 1:2 with steps lw 2 title '{k}'"
                      for i, (k, s) in enumerate(series))
    out = os.path.join(RESULTS, "egress-latency.png")
    gnuplot(COMMON + f"set output '{out}'\nset title 'Egress: connect latency, CONNECT + ClientHello to first byte (cumulative)'\n"
            "set xlabel 'microseconds'\nset ylabel 'fraction of connections'\nset logscale x\nset yrange [0:1]\n"
            f"plot {plots}\n")
    return f"egress-latency.png: {len(series)} series"


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for f in (start_latency, density, egress):
            print("figures: " + f(tmp))


main()
