#!/usr/bin/env bash
# bench/run.sh tells the truth about its own run (issue 27): in a copy of the
# runner beside stand-in benchmarks (no test bed), a benchmark that fails
# makes run.sh exit non-zero with "failed" and its log's path in its row,
# never the figure an earlier run left in bench/results; one that exits 0
# without its JSON is failed too; one not asked for shows no figure, only
# where its last figures are and when they were measured. The control: the
# same runner with only the working stand-in exits 0 with its figure.
# run.sh wants root (it boots containers); a user namespace gives it that.
#   usage: test-run.sh SOURCE_ROOT
set -uo pipefail
SRC=${1:?usage: $0 SOURCE_ROOT}
. "$SRC/tests/lib/tap.sh"

as_root=()
if [ "$(id -u)" != 0 ]; then
    unshare -r true 2>/dev/null || { echo "no user namespaces here and not root: skipping"; exit 77; }
    as_root=(unshare -r)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=$tmp/tree
mkdir -p "$T/bench/results" "$tmp/runs"
cp "$SRC/bench/run.sh" "$SRC/bench/summary.py" "$SRC/bench/lib.sh" "$SRC/bench/figures.py" "$T/bench/"

# Stand-ins: churn measures (its JSON into BENCH_OUT, as the real one),
# density breaks, suspend exits 0 having written nothing.
cat > "$T/bench/churn.sh" <<'SH'
echo "churn stand-in: $*"
cat > "$BENCH_OUT/churn.json" <<'J'
{"cycles": 10, "failed_cycles": 0, "leaks": {"units": 0}, "cycles_per_second": 4.25, "rss_kb_before": 4000, "rss_kb_after": 4100}
J
SH
cat > "$T/bench/density.sh" <<'SH'
echo "density stand-in: broke on purpose" >&2
exit 3
SH
echo 'echo "suspend stand-in: measured nothing"' > "$T/bench/suspend.sh"
# What an earlier run left: figures no run below measures (777.7 MiB, 31337 tunnels/s).
cat > "$T/bench/results/density.json" <<'J'
{"series": {"plain": [{"workers": 300, "per_worker_unit_bytes": {"worker-unit": 815475507}, "per_worker_pss_total_bytes": 815475507,
 "per_worker_process_bytes": {}, "sandboxd": {"vmrss_bytes": 815475507},
 "ops": {"list_workers": {"p50_ms": 777.7}, "create": {"p50_ms": 777.7}, "stop_until_gone": {"p50_ms": 777.7}, "busctl_noop": {"p50_ms": 777.7}}}]}}
J
cat > "$T/bench/results/egress.json" <<'J'
{"sandbox-egress": {"throughput_ratio": 0.777, "tunnels_per_s": 31337}, "tinyproxy": {"tunnels_per_s": 1000},
 "measured": {"date": "2026-11-30T10:00:00Z", "commit": "abc1234"}}
J
cat > "$T/bench/results/churn.json" <<'J'
{"cycles": 777, "failed_cycles": 0, "leaks": {}, "cycles_per_second": 777.7, "rss_kb_before": 777, "rss_kb_after": 777}
J

runsh() { "${as_root[@]}" bash "$T/bench/run.sh" --dir "$tmp/runs" "$@"; }

out=$(runsh --quick --only churn,density,suspend 2>&1)
rc=$?
check "a failed benchmark makes run.sh exit non-zero" test "$rc" != 0
runs=("$tmp"/runs/sandboxd-bench-run.*)
log=${runs[0]}/density.log
check_match "its row says failed, with its exit status and log" ".*\| density \| failed \| failed \(exit 3; log $log\) \|.*" "$out"
check_output "the log named there holds its output" 'broke on purpose' cat "$log"
check_match "a benchmark that exits 0 without its JSON is failed too" \
    '.*\| suspend \| failed \| failed \(exit 0 without suspend.json; log [^ ]*/suspend.log\) \|.*' "$out"
check_match "the benchmark that ran shows this run's figure" '.*\| churn \| 10 cycles: failed / left behind \[[0-9]+ s\] \| 0 / 0 \|.*' "$out"
check_fails "no earlier figure appears (777.7, 31337)" grep -E '777|31337' <<<"$out"
check_match "a benchmark not asked for names its last figures' file, date and commit" \
    ".*\| egress \| not run in this run \| last figures: $T/bench/results/egress.json, measured 2026-11-30T10:00:00Z at abc1234 \|.*" "$out"
check_match "the quick run gives no verdict" '.*\| churn \| 10 cycles[^|]*\| 0 / 0 \| 0 / 0 \| - \(quick\) \|.*' "$out"
check "a quick run leaves bench/results alone" grep -q '"cycles": 777' "$T/bench/results/churn.json"
if [ "$rc" = 0 ] || grep -q -E "777|31337" <<<"$out"; then diag "$out"; fi

out=$(runsh --quick --only churn 2>&1)
rc=$?
check_eq "(control) with only the working benchmark run.sh exits 0" 0 "$rc"
check_fails "(control) and no row says failed" grep -F '| failed' <<<"$out"
[ "$rc" = 0 ] || diag "$out"

out=$(runsh --quick --only nosuch 2>&1)
check_exit "an unknown benchmark name is refused" 2 "no benchmark 'nosuch'" $? "$out"

# A size must be a count: refused before anything runs; the control, a
# count, runs (the stand-in churn gets it).
out=$(runsh --quick --only churn --churn 10x 2>&1)
check_exit "a size that is not a positive whole number is refused" 2 "--churn takes a positive whole number, not '10x'" \
    $? "$out"
check_fails "... before any benchmark ran" grep -F '=== churn' <<<"$out"
out=$(runsh --quick --only churn --churn 12 --checkpoint 4 2>&1)
check_eq "(control) whole numbers are taken: run.sh exits 0" 0 $?
check_match "(control) ... and churn ran with the count asked for" '.*churn stand-in: 12 .*' "$out"
tap_done
