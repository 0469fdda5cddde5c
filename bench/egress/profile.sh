#!/usr/bin/env bash
# Where sandbox-egress spends its CPU (issue 27, item 4): one round of
# bench/egress/bench.sh (its --quick sizes: throughput, connect latency and
# tunnels/s, beside direct and tinyproxy) in a throwaway test bed of this
# tree's build, while perf (Debian: linux-perf) samples the proxy alone
# (cpu-clock at 1999 Hz, DWARF call graphs, every thread). Then
# bench/egress/flamegraph.py folds the stacks into OUTDIR/egress-flame.svg
# and prints (and keeps in OUTDIR/top.txt) the kernel's share, the share of
# each system call and the functions with the most self time. The bench's
# own table and JSON land in OUTDIR too. EGRESS_BENCH_PIN=1 pins as the
# bench does. A measurement; it asserts nothing.
#   sudo bash bench/egress/profile.sh OUTDIR
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:?usage: profile.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
command -v perf >/dev/null || { echo "profile.sh: no perf (Debian: apt-get install linux-perf)" >&2; exit 2; }
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
. "$SRC/tests/testbed/testbed.sh"
NAME=sbx-egress-prof-$$
testbed_boot "$NAME" "$STAGE"
LEADER=$(testbed_pid "$NAME")

EGRESS_BENCH_ROUNDS=1 bash "$SRC/bench/egress/bench.sh" "$LEADER" "$STAGE" "$OUT/egress.json" --quick \
    > "$OUT/bench.log" 2>&1 &
bench=$!
# The proxy under test, as the host sees it: the sandbox-egress of the
# bench's unit, started by the bench's first connections through it.
pid=
for _ in $(seq 1200); do
    for p in $(pgrep -x sandbox-egress || true); do
        grep -q 'egress-bench-proxy\.service' "/proc/$p/cgroup" 2>/dev/null && pid=$p
    done
    [ -n "$pid" ] && break
    kill -0 "$bench" 2>/dev/null || break
    sleep 0.05
done
[ -n "$pid" ] || { cat "$OUT/bench.log"; echo "profile.sh: the bench's proxy never ran" >&2; exit 1; }
# perf ends with the proxy, which the bench stops when it is done.
perf record -e cpu-clock -F 1999 --call-graph dwarf,8192 -p "$pid" -o "$OUT/perf.data" > "$OUT/perf.log" 2>&1 &
perf=$!
rc=0
wait "$bench" || rc=$?
wait "$perf" || true
cat "$OUT/bench.log"
[ "$rc" = 0 ] || { echo "profile.sh: the bench failed (exit $rc)" >&2; exit 1; }
# The binaries perf saw: the proxy from the stage, the libraries the test
# bed's rootfs shares with this host (Debian 12 both; perf checks build-ids).
# perf could not read the proxy's own build-id, gone with its unit.
SYMFS=$(mktemp -d)
testbed_on_exit "rm -rf '$SYMFS'"
mkdir -p "$SYMFS/usr/libexec/sandboxd" "$SYMFS/usr/lib"
cp "$STAGE/usr/libexec/sandboxd/sandbox-egress" "$SYMFS/usr/libexec/sandboxd/"
ln -s /usr/lib/x86_64-linux-gnu "$SYMFS/usr/lib/x86_64-linux-gnu"
ln -s /proc "$SYMFS/proc"
perf script -i "$OUT/perf.data" --symfs="$SYMFS" --kallsyms=/proc/kallsyms > "$OUT/perf.script" 2> "$OUT/perf-script.log"
python3 "$SRC/bench/egress/flamegraph.py" "$OUT/perf.script" "$OUT/egress-flame.svg" \
    "sandbox-egress during one quick round of bench/egress/bench.sh (cpu-clock)" | tee "$OUT/top.txt"
rm -f "$OUT/perf.script"
echo "written: $OUT/egress-flame.svg, $OUT/top.txt, $OUT/egress.json (perf data: $OUT/perf.data)"
