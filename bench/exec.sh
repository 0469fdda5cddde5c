#!/usr/bin/env bash
# Exec latency (issue 24): `sandboxctl exec ID -- /bin/echo x` into a running
# trusted and gVisor (standard) worker, from the call to the first byte of its
# output, beside what the same process costs without sandboxd:
#   trusted: a transient unit with every wall of the worker's own unit
#            (start-baselines.py systemd-run-same: systemd-run --wait --pipe)
#   gVisor:  a bare `runsc exec` of the same command into the very same
#            sandbox, with the root and flags the worker's launcher uses
# Goal: at most 1.2x each. The workers get CPUQuotaPercent=400, as in
# bench/start-latency.sh, so that the series measure the path and not the
# cap: an Exec's `runsc exec` client runs in the worker's unit (an Exec flood
# stays under the worker's quota) and a bare one outside it, so back to back
# under the default 50% the sandboxd series waits out throttled periods its
# baseline does not. That cost is measured too, as a second gVisor pair on a
# worker with the default quota (its own rows; no goal). The series are
# interleaved in five rounds, so a machine that slows down weighs on all
# alike. Runs in a throwaway test bed, prints a table, writes exec.json in BENCH_OUT (default bench/results).
# A benchmark: it measures and asserts nothing about times.
#   sudo bash bench/exec.sh [N]        (N samples per series, default 50)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-50}
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
install -D -m 0755 "$SRC/bench/start-baselines.py" "$STAGE/usr/lib/sandboxd-bench/start-baselines.py"

# shellcheck source=tests/testbed/testbed.sh
. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-bench-exec-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
ct sh -c 'printf "[Pool]\nStandardSize=0\nUntrustedSize=0\n" > /etc/sandboxd/sandboxd.conf'
ct systemctl start sandboxd
tmp=$(mktemp -d)
testbed_on_exit "rm -rf '$tmp'"
BASE=/usr/lib/sandboxd-bench/start-baselines.py

trusted=$(ct sandboxctl create --class trusted --idle 1h --cpu 400 -- /bin/sleep infinity)
gvisor=$(ct sandboxctl create --class standard --idle 1h --cpu 400 -- /bin/sleep infinity)
capped=$(ct sandboxctl create --class standard --idle 1h -- /bin/sleep infinity)
ct cp "/run/systemd/transient/sandbox-$trusted.service" /run/bench-worker.service
# The launcher's runsc flags, from its unit's command line; its state root
# and container name are sandbox-launch's (daemon/runtime/launch.h).
exec_start=$(ct systemctl show -P ExecStart "sandbox-$gvisor.service")
platform=$(grep -o -- '--platform=[a-z]*' <<<"$exec_start" || echo --platform=systrap)
RUNSC=(runsc --root=/run/sandboxd/runsc --ignore-cgroups "$platform" exec "sandbox-$gvisor" /bin/echo x)
RUNSC_CAPPED=(runsc --root=/run/sandboxd/runsc --ignore-cgroups "$platform" exec "sandbox-$capped" /bin/echo x)

# Warm caches (and check that every series works before timing it).
ct python3 $BASE argv 3 sandboxctl exec "$trusted" -- /bin/echo x >/dev/null
ct python3 $BASE argv 3 sandboxctl exec "$gvisor" -- /bin/echo x >/dev/null
ct python3 $BASE argv 3 "${RUNSC[@]}" >/dev/null
ct python3 $BASE argv 3 sandboxctl exec "$capped" -- /bin/echo x >/dev/null
ct python3 $BASE argv 3 "${RUNSC_CAPPED[@]}" >/dev/null
ct python3 $BASE systemd-run-same /run/bench-worker.service 3 >/dev/null
ROUNDS=5
per=$(( (N + ROUNDS - 1) / ROUNDS ))
for _ in $(seq $ROUNDS); do
    ct python3 $BASE argv "$per" sandboxctl exec "$trusted" -- /bin/echo x >> "$tmp/sandboxd-exec-trusted"
    ct python3 $BASE systemd-run-same /run/bench-worker.service "$per" >> "$tmp/unit-same-walls"
    ct python3 $BASE argv "$per" sandboxctl exec "$gvisor" -- /bin/echo x >> "$tmp/sandboxd-exec-gvisor"
    ct python3 $BASE argv "$per" "${RUNSC[@]}" >> "$tmp/bare-runsc-exec"
    ct python3 $BASE argv "$per" sandboxctl exec "$capped" -- /bin/echo x >> "$tmp/sandboxd-exec-gvisor-cpu50"
    ct python3 $BASE argv "$per" "${RUNSC_CAPPED[@]}" >> "$tmp/bare-runsc-exec-cpu50"
done
ct sandboxctl stop "$trusted" "$gvisor" "$capped" >/dev/null 2>&1 || :

python3 - "$tmp" "$OUT/exec.json" "$(bench_machine)" "${RUNSC[*]}" <<'PY'
import json, statistics, sys
tmp, out, machine, runsc = sys.argv[1:5]
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
rows = {}
for name in ("sandboxd-exec-trusted", "unit-same-walls", "sandboxd-exec-gvisor", "bare-runsc-exec",
             "sandboxd-exec-gvisor-cpu50", "bare-runsc-exec-cpu50"):
    v = [int(x) for x in open(f"{tmp}/{name}") if x.strip()]
    rows[name] = {"n": len(v), "p50_us": statistics.median(v), "p95_us": pct(v, 95), "samples_us": v}
def ratio(mine, base):
    return {"p50": rows[mine]["p50_us"] / rows[base]["p50_us"], "p95": rows[mine]["p95_us"] / rows[base]["p95_us"],
            "baseline": base}
ratios = {
    "trusted": ratio("sandboxd-exec-trusted", "unit-same-walls"),
    "gvisor": ratio("sandboxd-exec-gvisor", "bare-runsc-exec"),
    # No goal: what the default 50% quota adds (see the header).
    "gvisor-cpu50": ratio("sandboxd-exec-gvisor-cpu50", "bare-runsc-exec-cpu50"),
}
print(f"{'series':<24} {'n':>4} {'p50 ms':>8} {'p95 ms':>8}")
for name, r in rows.items():
    print(f"{name:<24} {r['n']:>4} {r['p50_us'] / 1000:>8.1f} {r['p95_us'] / 1000:>8.1f}")
for cls, r in ratios.items():
    goal = "no goal: the default quota's cost" if cls.endswith("-cpu50") else "goal <= 1.2x"
    print(f"{cls}: exec / {r['baseline']}: p50 {r['p50']:.2f}x, p95 {r['p95']:.2f}x ({goal})")
json.dump({"rows": rows, "ratios": ratios, "goal_ratio": 1.2, "bare_runsc": runsc,
           "workers": "CPUQuotaPercent=400; the -cpu50 pair on a standard worker with the default quota",
           "machine": json.loads(machine)}, open(out, "w"), indent=2)
PY
