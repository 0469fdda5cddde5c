#!/usr/bin/env bash
# Suspend and resume (issue 13): for a gVisor worker holding 50 MiB and
# 500 MiB of touched memory, the latency of SuspendWorker (image written,
# unit gone), of the resume a `sandboxctl attach` triggers (until the
# workload answers, its in-memory count intact), beside a cold start of the
# same workload (`sandboxctl run` until its first answer, the allocation
# included), and the disk bytes of a suspended worker's image. Runs in a
# throwaway systemd container (tests/testbed), prints a table, writes
# suspend.json in BENCH_OUT (default bench/results). Mind that the test bed's / is a tmpfs-backed
# overlay: the image is written to memory there, so suspend here measures
# runsc's checkpoint rather than a disk.
#   sudo bash bench/suspend.sh [N] [SIZES]  (default N=5 per size, SIZES "50 500" MiB)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-5}
SIZES=${2:-50 500}
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
install -D -m 0755 "$SRC/bench/suspend-client.py" "$STAGE/usr/lib/sandboxd-bench/suspend-client.py"

. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-bench-suspend-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
ct systemctl start sandboxd

tmp=$(mktemp -d)
testbed_on_exit "rm -rf '$tmp'"
ct python3 /usr/lib/sandboxd-bench/suspend-client.py 8 1 >/dev/null     # warm caches
for size in $SIZES; do
    ct python3 /usr/lib/sandboxd-bench/suspend-client.py "$size" "$N" > "$tmp/$size.json"
done
# Not "| head -n1": runsc may still write when head has gone (SIGPIPE, and pipefail).
runsc_version=$(ct runsc --version | sed -n 1p)

python3 - "$tmp" "$OUT/suspend.json" "$runsc_version" "$SIZES" <<'PY'
import json, sys, statistics
tmp, out, runsc, sizes = sys.argv[1], sys.argv[2], sys.argv[3], [int(x) for x in sys.argv[4].split()]
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
rows = {}
print(f"{'workload':<10} {'n':>3} {'cold p50 ms':>12} {'suspend p50 ms':>15} {'resume p50 ms':>14} "
      f"{'resume/cold':>12} {'image MiB':>10} {'unit mem MiB':>13}")
for size in sizes:
    r = json.load(open(f"{tmp}/{size}.json"))
    row = {"n": r["n"]}
    for k in ("cold", "suspend", "resume"):
        v = [x * 1e6 for x in r[f"{k}_s"]]
        row[f"{k}_p50_us"] = int(pct(v, 50))
        row[f"{k}_max_us"] = int(max(v))
        row[f"{k}_mean_us"] = int(statistics.mean(v))
    row["resume_p50_ratio_to_cold"] = row["resume_p50_us"] / row["cold_p50_us"]
    row["image_bytes_p50"] = int(pct(r["image_bytes"], 50))
    mem = [m for m in r["unit_memory_bytes"] if m]
    row["unit_memory_bytes_p50"] = int(pct(mem, 50)) if mem else None
    rows[f"{size}MiB"] = row
    print(f"{size:>4} MiB   {row['n']:>3} {row['cold_p50_us']/1000:>12.0f} {row['suspend_p50_us']/1000:>15.0f} "
          f"{row['resume_p50_us']/1000:>14.0f} {row['resume_p50_ratio_to_cold']:>12.2f} "
          f"{row['image_bytes_p50']/2**20:>10.1f} "
          f"{(row['unit_memory_bytes_p50'] or 0)/2**20:>13.1f}")
json.dump({"benchmark": "suspend", "unit": "microseconds, bytes", "runsc": runsc,
           "checkpoint": "runsc checkpoint --compression=none (sandbox-launch checkpoint)",
           "resume": "sandboxctl attach of the suspended worker until the workload answers",
           "cold": "sandboxctl run of the same workload until its first answer (allocation included)",
           "image_storage": "the test bed's tmpfs-backed overlay", "rows": rows}, open(out, "w"), indent=2)
print(f"wrote {out}")
PY
