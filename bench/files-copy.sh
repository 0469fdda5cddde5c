#!/usr/bin/env bash
# Files in and out of a worker (issue 24): `sandboxctl cp` of one file of
# SIZE MiB (default 1024) into a trusted and a gVisor (standard) worker's
# home and back out, beside `cp` baselines measured in the same run, and
# sandboxd's RSS before and after (the bytes go through a pipe between the
# client and sandbox-files inside the worker, never through sandboxd: its
# RSS must stay where it was). Each copy out is checked against the source
# by checksum. Runs in a throwaway systemd container (tests/testbed), prints
# a table, writes files-copy.json in BENCH_OUT (default bench/results).
#
# Both workers get --disk, so their homes are not the file system a plain
# `cp` on the host writes to, and a `sandboxctl cp` in is an atomic replace,
# which fsyncs. The baselines, so a reader sees each comparison:
#   cp            host `cp` to /var/tmp (the test bed's tmpfs overlay), no
#                 fsync: the old baseline, memory to memory
#   cp+sync       the same followed by `sync FILE` (an fsync, as a replace does)
#   home-cp       a root `cp` on the host to and from the worker's home on
#                 its own file system (the ext4 image on a loop device the
#                 disk is; run only where the host's path shows the worker's
#                 files), and
#   home-cp+sync  the same with `sync FILE` after a copy in
#   in-cp         `cp` home to home inside the worker through `sandboxctl
#                 exec`, as the workload would copy (for a home that exists
#                 only inside a sandbox the one comparable copy), and
#   in-cp+sync    the same with `sync FILE`
# and for the split: `sandboxctl exec` of `true` (the fixed cost of starting
# a process in the worker), `sandboxctl cp` of an empty file (the fixed cost
# of a copy), and `cat` through `sandboxctl exec -i` in and out (the bytes
# through the worker's stdio pipes, without sandbox-files).
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
ct touch /var/tmp/bench-empty
{
    for run in $(seq "$RUNS"); do
        echo "cp $run $(seconds ct cp /var/tmp/bench-src /var/tmp/bench-cp)"
        ct rm -f /var/tmp/bench-cp
        echo "cp+sync $run $(seconds ct sh -c 'cp /var/tmp/bench-src /var/tmp/bench-cp && sync /var/tmp/bench-cp')"
        ct rm -f /var/tmp/bench-cp
    done
    for class in trusted standard; do
        w=$(ct sandboxctl create --class "$class" --disk "$disk" --memory 1G -- /bin/sleep 3600)
        # The home's real path: where a gVisor sandbox has it (its
        # sandbox-files' --root); a trusted worker sees it as its Home
        # property says. The host sees both on the disk's own mount
        # (worker-disk-layout.h): a gVisor worker's home is bound there only
        # inside its sandbox, a trusted one's at the real path too.
        hosthome=/var/lib/sandboxd/disks/$w/home
        home=/var/lib/private/sandboxd/workers/$w
        if [ "$class" = trusted ]; then
            home=$(ct busctl --system get-property org.sandboxd1 "/org/sandboxd1/worker/$w" org.sandboxd1.Worker Home)
            home=${home#s \"}
            home=${home%\"}
        fi
        for run in $(seq "$RUNS"); do
            echo "$class-exec $run $(seconds ct sandboxctl exec "$w" -- true)"
            echo "$class-empty $run $(seconds ct sandboxctl cp /var/tmp/bench-empty "$w:e")"
            echo "$class-in $run $(seconds ct sandboxctl cp /var/tmp/bench-src "$w:f")"
            echo "$class-out $run $(seconds ct sandboxctl cp "$w:f" /var/tmp/bench-out)"
            got=$(ct sh -c 'sha256sum </var/tmp/bench-out' 2>/dev/null | cut -d' ' -f1) || got=
            [ "$got" = "$want" ] || echo "$class-mismatch $run 1"
            ct rm -f /var/tmp/bench-out
            echo "$class-cat-in $run $(seconds ct sh -c "sandboxctl exec -i $w -- sh -c 'cat >$home/g' </var/tmp/bench-src")"
            echo "$class-cat-out $run $(seconds ct sh -c "sandboxctl exec $w -- cat $home/f >/var/tmp/bench-out")"
            ct rm -f /var/tmp/bench-out
            ct sandboxctl exec "$w" -- rm -f "$home/g"
            # A root cp on the host to and from the home's own file system,
            # where the host sees the worker's files (the copy in above
            # made f there).
            if ct findmnt -n -o FSTYPE -T "$hosthome" | grep -qx ext4 && ct test -f "$hosthome/f"; then
                echo "$class-home-cp-in $run $(seconds ct cp /var/tmp/bench-src "$hosthome/g")"
                ct rm -f "$hosthome/g"
                echo "$class-home-cp+sync-in $run $(seconds ct sh -c "cp /var/tmp/bench-src $hosthome/g && sync $hosthome/g")"
                ct rm -f "$hosthome/g"
                echo "$class-home-cp-out $run $(seconds ct cp "$hosthome/f" /var/tmp/bench-out)"
                ct rm -f /var/tmp/bench-out
            fi
            # The same inside the worker, as the workload would.
            echo "$class-in-cp $run $(seconds ct sandboxctl exec "$w" -- cp "$home/f" "$home/g")"
            ct sandboxctl exec "$w" -- rm -f "$home/g"
            echo "$class-in-cp+sync $run $(seconds ct sandboxctl exec "$w" -- sh -c "cp $home/f $home/g && sync $home/g")"
            ct sandboxctl exec "$w" -- rm -f "$home/g"
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
med = {k: statistics.median(v) for k, v in series.items()}
print(f"{'measure':<24} {'runs':>4} {'median s':>9} {'MiB/s':>8}")
for key in sorted(k for k in series if not k.endswith("-rss")):
    print(f"{key:<24} {len(series[key]):>4} {med[key]:>9.2f} {size / med[key]:>8.0f}")
# Each copy against each baseline that fits it: ratio = baseline s / copy s.
baselines = {}
for cls in ("trusted", "standard"):
    for way in ("in", "out"):
        against = {"cp": "cp"}
        if way == "in":
            against["cp+sync"] = "cp+sync"
        for b in ("home-cp", "home-cp+sync", "in-cp", "in-cp+sync"):
            src = f"{cls}-{b}" + (f"-{way}" if b.startswith("home-") else "")
            if src in med and not (way == "out" and b.endswith("+sync")):
                against[b] = src
        baselines[f"{cls}-{way}"] = against
rows = {}
print()
print(f"{'copy':<14} {'median s':>9} {'MiB/s':>8}  ratios (baseline s / copy s)")
for key, against in baselines.items():
    v = med[key]
    ratios = {b: med[src] / v for b, src in against.items()}
    rows[key] = {"median_s": v, "mib_per_s": size / v, "ratio_to_cp": ratios["cp"], "ratios": ratios,
                 "runs": series[key]}
    print(f"{key:<14} {v:>9.2f} {size / v:>8.0f}  " + "  ".join(f"{b} {r:.2f}x" for b, r in ratios.items()))
base = {k: {"median_s": med[k], "runs": series[k]}
        for k in series if k == "cp+sync" or "-home-cp" in k or "-in-cp" in k}
split = {k: {"median_s": med[k], "runs": series[k]}
         for k in series if k.split("-", 1)[0] in ("trusted", "standard") and k.split("-", 1)[1] in
         ("exec", "empty", "cat-in", "cat-out")}
rss = {"start_kib": int(rss0), "after_trusted_kib": int(series["trusted-rss"][0]),
       "after_standard_kib": int(series["standard-rss"][0]), "end_kib": int(rss1), "peak_kib": int(hwm)}
print(f"sandboxd RSS: {rss['start_kib']} KiB before, {rss['end_kib']} KiB after, peak {rss['peak_kib']} KiB")
json.dump({"size_mib": size, "cp": {"median_s": med["cp"], "runs": series["cp"]}, "baselines": base,
           "copies": rows, "split": split, "sandboxd_rss": rss, "machine": json.loads(machine)},
          open(out, "w"), indent=2)
PY
