#!/usr/bin/env bash
# A cold start beside other workers (daemon/shared/worker-disk-layout.h):
# CreateWorker to the first byte of a cold worker, and its unit's set-up
# (systemd's "Starting" to "Started" of the worker unit, from the test bed's
# journal), p50 over N starts, with K idle workers of the same class with
# disks running beside it, for each K of COUNTS: gVisor (class untrusted, no
# pool), then trusted (whose home is still bound on the host). systemd
# unmounts everything below /var/lib/private in every unit it starts, one
# mount at a time: a worker's mounts there make every later start slower by
# all of them, and this shows whether they do. Asserts nothing, measures.
#   sudo bash bench/start-siblings.sh [N] [COUNTS]   (default 5 "0 10 30 60")
# JSON to BENCH_OUT (default bench/results)/start-siblings.json.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-5}
COUNTS=${2:-0 10 30 60}
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
install -D -m 0755 "$SRC/build-bench/bench/sbx-bench-start" "$STAGE/usr/lib/sandboxd-bench/sbx-bench-start"
. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-siblings-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
ct sh -c 'printf "[Pool]\nStandardSize=0\nUntrustedSize=0\n" > /etc/sandboxd/sandboxd.conf'
ct systemctl start sandboxd
tmp=$(mktemp -d)
# series CLASS: the starts of CLASS beside 0..K idle workers of CLASS; the
# idle ones are stopped after it, so that the next series is beside none.
series() {
    local class=$1 have=0 k since
    ct /usr/lib/sandboxd-bench/sbx-bench-start "$class" 2 cold >/dev/null     # warm caches
    for k in $COUNTS; do
        while [ "$have" -lt "$k" ]; do
            ct sandboxctl create --class "$class" --cpu 400 -- /bin/sleep 100000 >/dev/null
            have=$((have + 1))
        done
        sleep 2
        since=$(ct date +%s.%N)
        ct /usr/lib/sandboxd-bench/sbx-bench-start "$class" "$N" cold > "$tmp/$class-start-$k"
        ct journalctl -o json --since "@$since" -q > "$tmp/$class-journal-$k"
        echo "$k $(ct awk 'index($5, "/var/lib/private/") == 1 { n++ } END { print n + 0 }' /proc/self/mountinfo)" \
            >> "$tmp/$class-private-mounts"
    done
    ct sh -c 'for id in $(sandboxctl list --no-legend | cut -d" " -f1); do sandboxctl stop "$id" >/dev/null; done'
    # The next series is beside none of them: not while their units still
    # stop, and never silently beside some that did not.
    for _ in $(seq 120); do
        if [ -z "$(ct sandboxctl list --no-legend)" ] &&
            [ -z "$(ct systemctl list-units --no-legend --plain --state=active,activating,deactivating 'sandbox-*')" ]; then
            return 0
        fi
        sleep 1
    done
    echo "start-siblings: the idle $class workers did not all end" >&2
    return 1
}
series untrusted
series trusted
python3 - "$tmp" "$OUT/start-siblings.json" "$N" "$COUNTS" <<'PY'
import json, os, statistics, sys
tmp, out, n, counts = sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(c) for c in sys.argv[4].split()]
def series(cls):
    mounts = dict(tuple(int(x) for x in l.split()) for l in open(os.path.join(tmp, f"{cls}-private-mounts")))
    points = []
    for k in counts:
        starts = sorted(int(x) for x in open(os.path.join(tmp, f"{cls}-start-{k}")).read().split())
        units = {}
        for line in open(os.path.join(tmp, f"{cls}-journal-{k}")):
            e = json.loads(line)
            m, u = e.get("MESSAGE"), e.get("UNIT", "")
            if not isinstance(m, str) or e.get("_COMM") != "systemd" or not u.startswith("sandbox-") \
                    or not u.endswith(".service") or u.endswith(("-disk.service", "-workspace.service")):
                continue
            t = int(e["__MONOTONIC_TIMESTAMP"])
            if m.startswith("Starting "):
                units.setdefault(u, {})["start"] = t
            elif m.startswith("Started "):
                units.setdefault(u, {})["started"] = t
        setup = sorted((v["started"] - v["start"]) / 1000 for v in units.values() if "start" in v and "started" in v)
        points.append({"siblings": k, "mounts_under_var_lib_private": mounts.get(k),
                       "cold_start_p50_ms": round(statistics.median(starts) / 1000, 1),
                       "unit_setup_p50_ms": round(statistics.median(setup), 1) if setup else None,
                       "samples_us": starts})
    print(f"{cls}:")
    print(f"{'idle disk workers':>18} {'mounts under /var/lib/private':>30} {'cold start p50 ms':>18} {'unit set-up p50 ms':>19}")
    for p in points:
        print(f"{p['siblings']:>18} {p['mounts_under_var_lib_private']:>30} {p['cold_start_p50_ms']:>18} {p['unit_setup_p50_ms']:>19}")
    return points
json.dump({"benchmark": "start-siblings", "n": n,
           "class": "points: untrusted (gVisor, cold, no pool); trusted_points: trusted",
           "siblings": "idle workers of the same class, each with the default 1 GiB disk",
           "points": series("untrusted"), "trusted_points": series("trusted")},
          open(out, "w"), indent=2)
print(f"wrote {out}")
PY
rm -rf "$tmp"
