#!/usr/bin/env bash
# Every benchmark in one run, each beside its baselines, one after another
# (never two at once: they would measure each other), then the figures and
# one summary table. Benchmarks measure; they assert nothing about times.
#   start latency  bench/start-latency.sh: CreateWorker to first byte, trusted
#                  and gVisor (cold, and pooled where the script measures it),
#                  beside bare systemd-run and bare runsc of the same bundle
#   runtime        bench/runtime/bench-start.sh: where a gVisor start goes
#   egress         bench/egress/bench.sh: throughput, connect latency and
#                  tunnels/s, beside direct and tinyproxy
#   density        bench/density.sh: memory per idle gVisor worker and
#                  sandboxd's RSS up to N workers, list/create/stop times
#   churn          bench/churn.sh: the reliability churn at length (with --quick:
#                  no warm-up, and so one 30 s wait fewer for workers to leave the bus)
#   broker         bench/broker/bench.sh: brokered requests beside direct TLS
#   suspend        bench/suspend.sh: suspend and resume beside a cold start
#                  (50 and 500 MiB; 50 MiB with --quick)
#   checkpoint     bench/checkpoint-handshakes.sh: suspend/resume cycles of a
#                  worker opening connections (200; 3 with --quick)
#   exec           bench/exec.sh: sandboxctl exec into a trusted and a gVisor
#                  worker beside a unit with the same walls and a bare runsc exec
#   files          bench/files-copy.sh: 1 GiB in and out of both classes
#                  beside host cp (16 MiB with --quick), sandboxd's RSS
#   siblings       bench/start-siblings.sh: a cold gVisor, then trusted, start beside 0, 10,
#                  30 and 60 idle workers with disks (0 and 3 with --quick)
#   top            bench/top.sh: sandboxctl top at N workers (--top, default
#                  300; 5 with --quick) beside sandboxctl list
# The table tells the truth about this run only: every figure in it was
# measured now, from this run's JSON (RUN/results, RUN the directory printed
# first). A benchmark that fails, or exits 0 without its JSON, has one row,
# "failed", with its log's path, and the run exits 1; the others still run.
# A benchmark not asked for (--only) is one row naming the file of its last
# figures with that run's date and commit, and no figure. A run without
# --quick then copies the JSON of each benchmark that succeeded, stamped with
# date and commit, to bench/results/ (the figures the README's benchmark page
# cites); a --quick run leaves bench/results/ alone.
#
#   sudo bash bench/run.sh [--quick] [--churn COUNT] [--checkpoint COUNT] [--density N] [--start N]
#                          [--only NAME[,NAME...]]
#     --quick        the smallest sizes: a smoke run of every benchmark in a few
#                    minutes (what CI runs); its figures are not worth comparing
#     --churn COUNT  churn cycles (default 300; 10000 for the long run, about 90 min)
#     --checkpoint COUNT  suspend/resume cycles of the checkpoint benchmark
#                    (default 200, about 45 min; 3 with --quick)
#     --density N    idle workers (default 300)
#     --density-platform P  runsc platform for density (default: the configured
#                    one, systrap; 300 idle systrap sentries saturate 2 cores)
#     --start N      start-latency samples per series (default 50)
#     --top N        workers for top (default 300)
#     --only NAMES   only these of: start runtime egress gate density churn broker suspend wake checkpoint exec files siblings top
#     --dir DIR      make this run's directory under DIR (default $TMPDIR or /tmp)
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PUBLISH=$SRC/bench/results
ALL="start runtime egress gate density churn broker suspend wake checkpoint exec files siblings top"
QUICK=
CHURN=
CHECKPOINT=
DENSITY=300
TOP=300
DENSITY_PLATFORM=
START=
ONLY=
DIR=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --churn) CHURN=$2; shift 2 ;;
        --checkpoint) CHECKPOINT=$2; shift 2 ;;
        --density) DENSITY=$2; shift 2 ;;
        --density-platform) DENSITY_PLATFORM=$2; shift 2 ;;
        --start) START=$2; shift 2 ;;
        --top) TOP=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --dir) DIR=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for opt in "--churn:$CHURN" "--checkpoint:$CHECKPOINT" "--density:$DENSITY" "--start:$START" "--top:$TOP"; do
    [[ -z ${opt#*:} || ${opt#*:} =~ ^[1-9][0-9]*$ ]] ||
        { echo "run.sh: ${opt%%:*} takes a positive whole number, not '${opt#*:}'" >&2; exit 2; }
done
for n in ${ONLY//,/ }; do
    [[ " $ALL " == *" $n "* ]] || { echo "run.sh: no benchmark '$n' (one of: $ALL)" >&2; exit 2; }
done
# --churn, --checkpoint and --start win over either mode's sizes.
if [ -n "$QUICK" ]; then
    CHURN=${CHURN:-10}; START=${START:-5}
    DENSITY_ARGS=(5 --egress 2 --points "1 5" --samples 1 --cpu-window 2)
    RUNTIME_N=3; SUSPEND_ARGS=(1 50); WAKE_N=2; CHECKPOINT_N=${CHECKPOINT:-3}; CHURN_WARMUP=0
    EXEC_N=5; FILES_ARGS=(16 1); TOP_ARGS=(5 --samples 3); SIBLINGS_ARGS=(2 "0 3")
else
    CHURN=${CHURN:-300}; START=${START:-50}
    DENSITY_ARGS=("$DENSITY")
    RUNTIME_N=30; SUSPEND_ARGS=(5); WAKE_N=10; CHECKPOINT_N=${CHECKPOINT:-200}; CHURN_WARMUP=12
    EXEC_N=50; FILES_ARGS=(1024 3); TOP_ARGS=("$TOP"); SIBLINGS_ARGS=(5 "0 10 30 60")
fi
[ -n "$DENSITY_PLATFORM" ] && DENSITY_ARGS+=(--platform "$DENSITY_PLATFORM")
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (it boots test-bed containers)" >&2; exit 2; }

# This run's logs, status and JSON, apart from any earlier run's: the
# benchmarks write to BENCH_OUT, and the table reads only from there.
mkdir -p "$DIR"
RUN=$(mktemp -d "$DIR/sandboxd-bench-run.XXXXXX")
export BENCH_OUT=$RUN/results
mkdir -p "$BENCH_OUT"
# "-dirty" only for changes outside bench/results/: an earlier run's copied
# figures there are not a change to what is measured.
COMMIT=$(git -C "$SRC" describe --always 2>/dev/null || echo unknown)
git -C "$SRC" diff --quiet HEAD -- . ':(exclude)bench/results' 2>/dev/null || COMMIT=$COMMIT-dirty
echo "run.sh: logs and this run's results in $RUN (commit $COMMIT)"
. "$SRC/bench/lib.sh"
bench_machine > "$BENCH_OUT/machine.json"
python3 - "$RUN/run.json" "$COMMIT" "$*" "$QUICK" "$ONLY" <<'PY'
import datetime, json, sys
json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": sys.argv[2], "quick": bool(sys.argv[4]), "only": sys.argv[5] or None}, open(sys.argv[1], "w"))
PY
: > "$RUN/status.tsv"

wanted() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
# NAME RC SECONDS LOG: one line of this run's status (a file: the test bed's
# benchmarks run in a subshell).
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RUN/status.tsv"; }
# NAME CMD...: runs one benchmark, its output shown and kept in RUN/NAME.log.
bench() {
    local name=$1 log=$RUN/$1.log t0=$SECONDS rc
    shift
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    record "$name" "$rc" $((SECONDS - t0)) "$log"
    [ "$rc" = 0 ] || echo "=== $name FAILED (exit $rc; log $log)"
}
# NAME... : these benchmarks could not start; LOG says why.
cannot() {
    local log=$1 n
    shift
    for n in "$@"; do
        wanted "$n" || continue
        record "$n" 1 0 "$log"
        echo "=== $n FAILED (could not start; log $log)"
    done
}

# One build and install of this tree for the benchmarks that take a staged
# install (bench/lib.sh); the others build their own the same way.
STAGE=
if wanted runtime || wanted egress || wanted gate || wanted broker || wanted checkpoint; then
    echo "=== build: $SRC/build-bench (log $RUN/build.log)"
    STAGE=$(bench_stage "$SRC" 2> "$RUN/build.log") && [ -d "$STAGE" ] || STAGE=
    # The integration tests' channel client, for the checkpoint test bed.
    [ -z "$STAGE" ] || { client=$(bench_sbx_channel "$SRC/build-bench" "$SRC" 2>> "$RUN/build.log") &&
        install -D -m 0755 "$client" "$STAGE/usr/lib/sandboxd-tests/sbx-channel"; } || STAGE=
fi

wanted start && bench start bash "$SRC/bench/start-latency.sh" "$START"

# runtime, egress and gate run in one test bed of their own (the gate's
# for its nginx, which the host need not have).
if [ -z "$STAGE" ]; then
    cannot "$RUN/build.log" runtime egress gate
elif wanted runtime || wanted egress || wanted gate; then
    (
        . "$SRC/tests/testbed/testbed.sh"
        name=bench-run-$$
        echo "=== test bed for runtime, egress and gate (log $RUN/testbed.log)"
        testbed_boot "$name" "$STAGE" > "$RUN/testbed.log" 2>&1 ||
            { cannot "$RUN/testbed.log" runtime egress gate; exit 0; }
        pid=$(testbed_pid "$name")
        wanted runtime && bench runtime bash "$SRC/bench/runtime/bench-start.sh" "$pid" "$RUNTIME_N" \
            "$BENCH_OUT/runtime-start.json"
        wanted egress && bench egress bash "$SRC/bench/egress/bench.sh" "$pid" "$STAGE" "$BENCH_OUT/egress.json" \
            ${QUICK:+--quick}
        if wanted gate; then
            gd=/var/tmp/sandboxd-gate-bench
            mkdir -p "/proc/$pid/root$gd" && cp "$SRC/bench/gate/bench.sh" "$SRC/bench/gate/load.js" "/proc/$pid/root$gd/"
            bench gate nsenter -t "$pid" -a bash "$gd/bench.sh" /usr/libexec/sandboxd/sandbox-gate "$gd/gate.json" \
                ${QUICK:+--quick}
            cp "/proc/$pid/root$gd/gate.json" "$BENCH_OUT/gate.json" 2>/dev/null
        fi
        exit 0
    )
fi

wanted density && bench density bash "$SRC/bench/density.sh" "${DENSITY_ARGS[@]}"
wanted churn && bench churn bash "$SRC/bench/churn.sh" "$CHURN" 4242 1 "$CHURN_WARMUP"
if wanted broker; then
    if [ -z "$STAGE" ]; then
        cannot "$RUN/build.log" broker
    else
        bench broker bash "$SRC/bench/broker/bench.sh" "$STAGE/usr/libexec/sandboxd/sandbox-egress" \
            "$BENCH_OUT/broker.json" ${QUICK:+--quick}
    fi
fi
wanted suspend && bench suspend bash "$SRC/bench/suspend.sh" "${SUSPEND_ARGS[@]}"
wanted wake && bench wake bash "$SRC/bench/wake.sh" "$WAKE_N"
if wanted checkpoint; then
    if [ -z "$STAGE" ]; then
        cannot "$RUN/build.log" checkpoint
    else
        bench checkpoint env BENCH_STAGE="$STAGE" BENCH_JOURNAL="$RUN/checkpoint.journal" \
            bash "$SRC/bench/checkpoint-handshakes.sh" "$CHECKPOINT_N" new
    fi
fi

wanted exec && bench exec bash "$SRC/bench/exec.sh" "$EXEC_N"
wanted files && bench files bash "$SRC/bench/files-copy.sh" "${FILES_ARGS[@]}"
wanted siblings && bench siblings bash "$SRC/bench/start-siblings.sh" "${SIBLINGS_ARGS[@]}"
wanted top && bench top bash "$SRC/bench/top.sh" "${TOP_ARGS[@]}"

if [ -z "$QUICK" ] && ! command -v gnuplot >/dev/null; then
    echo "run.sh: installing gnuplot-nox for the figures"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null || echo "run.sh: no gnuplot: no figures"
fi
command -v gnuplot >/dev/null && python3 "$SRC/bench/figures.py" "$BENCH_OUT"
# The table: this run's rows, failed ones as such; exits 1 when a benchmark
# failed or left no JSON.
failed=0
python3 "$SRC/bench/summary.py" --run "$RUN" --earlier "$PUBLISH" ${ONLY:+--only "$ONLY"} || failed=1
if [ -z "$QUICK" ]; then
    python3 "$SRC/bench/summary.py" --run "$RUN" --publish "$PUBLISH" >/dev/null &&
        echo "run.sh: this run's JSON and figures copied to $PUBLISH" || failed=1
fi
exit $failed
