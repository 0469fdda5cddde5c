#!/usr/bin/env bash
# Root's latency while one plain user floods the authorization path: runs the
# attack script tests/attacks/bus-flood.sh (2,000 concurrent calls of
# tester's; see tests/attacks/README.md) in a fresh test-bed container through
# tests/run-all.sh, RUNS times, and collects its "bench:" lines: root's
# CreateWorker (and ReadWorkerLog) in milliseconds with no flood, under the
# listing flood, under the ReadWorkerLog flood and with polkitd stopped, and
# what each flood got back. The test itself only bounds them generously
# (60 s); these are the figures. Writes JSON to bench/results/bus-flood.json
# (or OUT) and prints a Markdown table.
#   sudo bash bench/bus-flood.sh [RUNS]     (default 1)
#   BENCH_LOGS="LOG..." bash bench/bus-flood.sh   (figures of earlier runs' TAP logs)
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$SRC/bench/lib.sh"
RUNS=${1:-1}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "usage: bench/bus-flood.sh [RUNS]" >&2; exit 2; }
OUT=${OUT:-$SRC/bench/results/bus-flood.json}
mkdir -p "$(dirname "$OUT")"
LOG=$SRC/build-ci/test-logs/tests_attacks_bus-flood.sh.log
logs=()
rc=0
# BENCH_LOGS="A.log B.log": the figures of runs already made (their TAP logs).
if [ -n "${BENCH_LOGS:-}" ]; then
    read -ra logs <<<"$BENCH_LOGS"
else
    for i in $(seq "$RUNS"); do
        bash "$SRC/tests/run-all.sh" --integration-only --no-asan --only tests/attacks/bus-flood.sh >&2 || rc=1
        cp "$LOG" "$OUT.run$i.log" 2>/dev/null && logs+=("$OUT.run$i.log")
    done
fi

python3 - "$OUT" "$(bench_machine)" "${logs[@]}" <<'PY'
import json, re, statistics, sys
out, machine, logs = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
runs = []
for path in logs:
    text = open(path, errors="replace").read()
    run = {"phases": {}, "floods": {}, "checks": {}}
    for phase, kv in re.findall(r"^# bench: (\S+) ((?:\w+=\d+ ?)+)$", text, re.M):
        run["phases"][phase] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", kv)}
    for name, js in re.findall(r"^# bench: flood (\S+) (\{.*\})$", text, re.M):
        run["floods"][name] = json.loads(js)
    for status, name in re.findall(r"^(ok|not ok) \d+ - (.*)$", text, re.M):
        run["checks"][name.split(" ")[0]] = status == "ok"
    runs.append(run)
phases = ["idle", "authz-flood", "log-flood", "polkit-stall"]
summary = {}
for p in phases:
    vals = [r["phases"][p]["create_ms"] for r in runs if p in r["phases"]]
    if vals:
        summary[p] = {"create_ms_median": statistics.median(vals), "create_ms_max": max(vals), "runs": len(vals)}
logv = [r["phases"]["log-flood"]["log_ms"] for r in runs if "log-flood" in r["phases"]]
if logv:
    summary["log-flood"]["root_read_log_ms_median"] = statistics.median(logv)
json.dump({"machine": machine, "summary": summary, "runs": runs}, open(out, "w"), indent=2)
print("| phase (2,000 concurrent calls of tester's) | root's CreateWorker, median ms | max ms | runs |")
print("|---|---|---|---|")
for p in phases:
    if p in summary:
        s = summary[p]
        print("| %s | %d | %d | %d |" % (p, s["create_ms_median"], s["create_ms_max"], s["runs"]))
for name in ("authz", "log", "stall"):
    for i, r in enumerate(runs):
        f = r["floods"].get(name)
        if f:
            print("flood %s (run %d): %d sent, %d answered in %.1f s, %s" % (name, i + 1, f["sent"], f["answered"],
                                                                          f["seconds"], f["results"]))
print("->", out)
PY
exit $rc
