#!/usr/bin/env bash
# Suspend/resume of a gVisor worker that keeps TCP handshakes in flight
# through its egress proxy and on its loopback (issue 22, item 7): the long
# version of tests/attacks/loss-checkpoint.sh, N cycles (default 200) in one
# throwaway test bed (tests/run-all.sh boots it with this tree's .deb). Per
# cycle: ok (suspended, resumed, counting on with working connections),
# failed (SuspendFailed with the worker still running, or no progress after
# the resume), lost (the worker ended: what runsc 0.0~20240729's "encoding
# error" did), seconds (SuspendWorker to the first good line after the
# resume) and the launcher's retries (SANDBOXD_EVENT=suspend-retry). A lost
# worker ends the run. Prints a table and writes
# bench/results/checkpoint-handshakes-LABEL.json.
#   sudo bash bench/checkpoint-handshakes.sh [N] [LABEL]   (LABEL default: new)
#   BENCH_CYCLES_FILE=F [BENCH_TEST_EXIT=RC] bash bench/checkpoint-handshakes.sh N LABEL
#                         summarise the RESULT_FILE F of a run made elsewhere
#   BENCH_STAGE=DIR       boot the test bed with DIR (a staged install, e.g.
#                         another checkout's build-deb/stage) instead of
#                         building this tree through tests/run-all.sh; the
#                         container's journal goes to BENCH_JOURNAL
#                         (default /tmp/checkpoint-handshakes-LABEL.journal)
#   BENCH_COMMIT=C        the commit the cycles ran on (with BENCH_CYCLES_FILE)
#   CONTINUE_AFTER_LOSS=1 go on with a new worker after a lost one (to count
#                         the losses of an old build)
# To show the old behaviour, run it from a checkout of the base commit with
# this script and tests/attacks/loss-checkpoint* copied in, LABEL old.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-200}
LABEL=${2:-new}
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
t0=$SECONDS
rc=0
if [ -n "${BENCH_CYCLES_FILE:-}" ]; then
    # The per-cycle lines of a run made elsewhere (RESULT_FILE of the test,
    # e.g. in a checkout of the old build): only summarised.
    cycles=$BENCH_CYCLES_FILE
    rc=${BENCH_TEST_EXIT:-0}
else
    cycles=$(mktemp)
    trap 'rm -f "$cycles" "$cycles.quiesce" "$cycles.memory"' EXIT
    if [ -n "${BENCH_STAGE:-}" ]; then
        # A package staged already (run-all's build-deb/stage, of this tree
        # or of another checkout): one test bed booted here.
        # In a subshell: testbed.sh sets traps of its own. The container's
        # journal is kept beside the results' log (why a cycle failed).
        (
            . "$SRC/tests/testbed/testbed.sh"
            name=sbx-bench-ckpt-$$
            testbed_boot "$name" "$BENCH_STAGE" || exit 1
            rc=0
            CYCLES=$N RESULT_FILE=$cycles CONTINUE_AFTER_LOSS=${CONTINUE_AFTER_LOSS:-0} SANDBOXD_SRC=$SRC \
                SANDBOXD_STAGE=$BENCH_STAGE TESTBED_MACHINE=$name \
                bash "$SRC/tests/attacks/loss-checkpoint.sh" "$(testbed_pid "$name")" "$BENCH_STAGE" || rc=$?
            testbed_journal "$name" "${BENCH_JOURNAL:-/tmp/checkpoint-handshakes-$LABEL.journal}" || true
            testbed_stop "$name"
            exit $rc
        ) || rc=$?
    else
        # About 10 s a cycle on a loaded 2-core machine; the test's own
        # bound is the run's.
        CYCLES=$N RESULT_FILE=$cycles CONTINUE_AFTER_LOSS=${CONTINUE_AFTER_LOSS:-0} \
            INTEGRATION_TIMEOUT=$((600 + N * 30)) \
            bash "$SRC/tests/run-all.sh" --integration-only --no-asan --only tests/attacks/loss-checkpoint.sh || rc=$?
    fi
fi
. "$SRC/bench/lib.sh"
python3 - "$cycles" "$OUT/checkpoint-handshakes-$LABEL.json" "$N" "$LABEL" "$rc" "$((SECONDS - t0))" \
    "${BENCH_COMMIT:-$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')}" "$(bench_machine)" <<'PY'
import json, statistics, sys
path, out, asked, label, rc, wall, commit, machine = sys.argv[1:9]
rows = []
for line in open(path):
    c, result, secs, retries = line.split()
    rows.append({"cycle": int(c), "result": result, "seconds": float(secs), "retries": int(retries)})
count = {k: sum(r["result"] == k for r in rows) for k in ("ok", "failed", "lost")}
# The launcher's wait before each checkpoint (none on a build without it):
# HANDSHAKES-left SEEN READS WAIT_MSEC.
q = []
try:
    for line in open(path + ".quiesce"):
        f = line.split()
        if len(f) == 4:
            q.append({"left": f[0], "seen": int(f[1]), "reads": int(f[2]), "wait_ms": int(f[3])})
except FileNotFoundError:
    pass
waits = sorted(x["wait_ms"] for x in q)
quiesce = {"checkpoints": len(q), "saw_handshakes": sum(x["seen"] > 0 for x in q),
           "left_or_unknown": sum(x["left"] != "0" for x in q),
           "wait_ms_p50": waits[len(waits) // 2] if waits else None,
           "wait_ms_max": waits[-1] if waits else None} if q else None
# The worker unit's memory per cycle (none on a build before it was
# recorded): CYCLE CHECKPOINT_LIMIT CHECKPOINT_PEAK RUNNING_LIMIT
# RUNNING_PEAK IMAGE_BYTES; the peaks are the cgroup's high-water marks
# (during the checkpoint: since the restore, the save included).
mem = []
try:
    for line in open(path + ".memory"):
        f = line.split()
        if len(f) >= 5:
            mem.append({"cycle": int(f[0]), "checkpoint_limit": int(f[1]), "checkpoint_peak": int(f[2]),
                        "running_limit": int(f[3]), "running_peak": int(f[4]),
                        "image_bytes": int(f[5]) if len(f) > 5 and f[5].isdigit() else None})
except FileNotFoundError:
    pass
MiB = 1 << 20
def at(c):
    m = [x for x in mem if x["cycle"] == c]
    return m[0] if m else None
memory = None
if mem:
    memory = {"checkpoint_peak_max_mib": round(max(x["checkpoint_peak"] for x in mem) / MiB, 1),
              # Checkpoints whose unit went past its MemoryMax: each was an
              # OOM kill, the worker lost, before CheckpointExtraMemory.
              "checkpoints_over_running_limit": sum(x["checkpoint_peak"] > x["running_limit"] > 0 for x in mem),
              "per_cycle": mem,
              "checkpoint_limit_mib": round(max(x["checkpoint_limit"] for x in mem) / MiB, 1),
              "running_limit_mib": round(mem[-1]["running_limit"] / MiB, 1),
              "by_cycle": [{"cycle": x["cycle"], "checkpoint_peak_mib": round(x["checkpoint_peak"] / MiB, 1),
                            "image_mib": round(x["image_bytes"] / MiB, 1) if x["image_bytes"] else None}
                           for x in mem if x["cycle"] in (1, 10, 50, 90, 100, 150, 200) or x is mem[-1]]}
t = sorted(r["seconds"] for r in rows if r["result"] == "ok")
def pct(p):
    return round(t[min(len(t) - 1, int(p / 100 * len(t)))], 2) if t else None
res = {"label": label, "commit": commit, "cycles_asked": int(asked), "cycles_run": len(rows), **count,
       "retries": sum(r["retries"] for r in rows),
       "cycles_with_retries": sum(r["retries"] > 0 for r in rows),
       "seconds_per_ok_cycle": {"mean": round(statistics.mean(t), 2) if t else None, "p50": pct(50), "p95": pct(95),
                                "max": t[-1] if t else None},
       "quiesce": quiesce, "memory": memory, "test_exit": int(rc), "wall_seconds": int(wall), "machine": json.loads(machine), "per_cycle": rows}
json.dump(res, open(out, "w"), indent=1)
print("| build | cycles run/asked | ok | failed | lost | retries | s/cycle p50 | p95 |")
print("|---|---|---|---|---|---|---|---|")
print("| %s (%s) | %d/%d | %d | %d | %d | %d | %s | %s |" % (label, commit, len(rows), int(asked), count["ok"],
      count["failed"], count["lost"], res["retries"], pct(50), pct(95)))
if quiesce:
    print("launcher's wait: %(checkpoints)d checkpoints, %(saw_handshakes)d saw handshakes in flight, "
          "%(left_or_unknown)d went ahead with some left or unknown; wait p50 %(wait_ms_p50)s ms, max %(wait_ms_max)s ms"
          % quiesce)
if memory:
    print("worker unit's memory: checkpoint peak at most %(checkpoint_peak_max_mib)s MiB under a limit of "
          "%(checkpoint_limit_mib)s MiB during the save, %(running_limit_mib)s MiB running" % memory)
    for x in memory["by_cycle"]:
        print("  cycle %(cycle)d: checkpoint peak %(checkpoint_peak_mib)s MiB, image %(image_mib)s MiB" % x)
print("written:", out)
PY
