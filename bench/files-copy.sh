#!/usr/bin/env bash
# Files in and out of a worker (issue 24): `sandboxctl cp` of one file of
# SIZE MiB (default 1024) into a trusted and a gVisor (standard) worker's
# home and back out, beside a plain `cp` of the same file on the same file
# system, and sandboxd's RSS before and after (the bytes go through a pipe
# between the client and sandbox-files inside the worker, never through
# sandboxd: its RSS must stay where it was). Each copy out is checked
# against the source by checksum. Runs in a throwaway systemd container
# (tests/testbed), prints a table, writes files-copy.json in BENCH_OUT (default bench/results).
# Mind that the test bed's / is a tmpfs-backed overlay: every copy here is
# memory to memory, which flatters `cp` most.
#   sudo bash bench/files-copy.sh [SIZE_MIB] [RUNS]     (default 1024 3)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZE=${1:-1024}
RUNS=${2:-3}
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")

# shellcheck source=tests/testbed/testbed.sh
. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-bench-files-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
ct systemctl start sandboxd
tmp=$(mktemp -d)
testbed_on_exit "rm -rf '$tmp'"

rss_kib() { ct sh -c 'awk "/^VmRSS/ {print \$2}" /proc/$(systemctl show -P MainPID sandboxd)/status'; }
hwm_kib() { ct sh -c 'awk "/^VmHWM/ {print \$2}" /proc/$(systemctl show -P MainPID sandboxd)/status'; }
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" "BEGIN { print b - a }"; }

ct sh -c "head -c ${SIZE}M /dev/urandom >/var/tmp/bench-src"
want=$(ct sh -c 'sha256sum </var/tmp/bench-src' | cut -d' ' -f1)
disk=$((SIZE * 2 + 64))M
rss_start=$(rss_kib)
{
    for run in $(seq "$RUNS"); do
        echo "cp $run $(seconds ct cp /var/tmp/bench-src /var/tmp/bench-cp)"
        ct rm -f /var/tmp/bench-cp
    done
    for class in trusted standard; do
        w=$(ct sandboxctl create --class "$class" --disk "$disk" --memory 1G -- /bin/sleep 3600)
        for run in $(seq "$RUNS"); do
            echo "$class-in $run $(seconds ct sandboxctl cp /var/tmp/bench-src "$w:f")"
            echo "$class-out $run $(seconds ct sandboxctl cp "$w:f" /var/tmp/bench-out)"
            got=$(ct sh -c 'sha256sum </var/tmp/bench-out' 2>/dev/null | cut -d' ' -f1) || got=
            [ "$got" = "$want" ] || echo "$class-mismatch $run 1"
            ct rm -f /var/tmp/bench-out
        done
        echo "$class-rss 0 $(rss_kib)"
        ct sandboxctl stop "$w" >/dev/null
    done
} | tee "$tmp/raw"
rss_end=$(rss_kib)
hwm=$(hwm_kib)
machine=$(bench_machine)

python3 - "$tmp/raw" "$OUT/files-copy.json" "$SIZE" "$rss_start" "$rss_end" "$hwm" "$machine" <<'PY'
import json, sys, statistics
raw, out, size, rss0, rss1, hwm, machine = sys.argv[1:8]
size = int(size)
series = {}
for line in open(raw):
    name, run, value = line.split()
    series.setdefault(name, []).append(float(value))
if any(k.endswith("-mismatch") for k in series):
    sys.exit("a copy out differs from its source: " + ", ".join(k for k in series if k.endswith("-mismatch")))
cp = statistics.median(series["cp"])
rows = {}
print(f"{'copy':<14} {'runs':>4} {'median s':>9} {'MiB/s':>8} {'vs cp':>6}")
print(f"{'host cp':<14} {len(series['cp']):>4} {cp:>9.2f} {size / cp:>8.0f} {1.0:>6.2f}")
for key in ("trusted-in", "trusted-out", "standard-in", "standard-out"):
    v = statistics.median(series[key])
    rows[key] = {"median_s": v, "mib_per_s": size / v, "ratio_to_cp": cp / v, "runs": series[key]}
    print(f"{key:<14} {len(series[key]):>4} {v:>9.2f} {size / v:>8.0f} {cp / v:>6.2f}")
rss = {"start_kib": int(rss0), "after_trusted_kib": int(series["trusted-rss"][0]),
       "after_standard_kib": int(series["standard-rss"][0]), "end_kib": int(rss1), "peak_kib": int(hwm)}
print(f"sandboxd RSS: {rss['start_kib']} KiB before, {rss['end_kib']} KiB after, peak {rss['peak_kib']} KiB")
json.dump({"size_mib": size, "cp": {"median_s": cp, "runs": series["cp"]}, "copies": rows,
           "sandboxd_rss": rss, "machine": json.loads(machine)}, open(out, "w"), indent=2)
PY
