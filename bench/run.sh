#!/usr/bin/env bash
# Every benchmark in one run, each beside its baselines, one after another
# (never two at once: they would measure each other), then the figures and
# one summary table. Writes bench/results/*.json and bench/results/*.png.
#   start latency  bench/start-latency.sh: CreateWorker to first byte, trusted
#                  and gVisor (cold, and pooled where the script measures it),
#                  beside bare systemd-run and bare runsc of the same bundle
#   runtime        bench/runtime/bench-start.sh: where a gVisor start goes
#   egress         bench/egress/bench.sh: throughput, connect latency and
#                  tunnels/s, beside direct and tinyproxy
#   density        bench/density.sh: memory per idle gVisor worker and
#                  sandboxd's RSS up to N workers, list/create/stop times
#   churn          bench/churn.sh: the reliability churn at length
#   checkpoint     bench/checkpoint-handshakes.sh: 200 suspend/resume cycles of a
#                  worker opening connections (20 with --quick)
#   files          bench/files-copy.sh: 1 GiB copied into and out of a trusted and
#                  a gVisor worker beside host cp, and sandboxd's RSS meanwhile
#   broker         bench/broker/*.sh, suspend: bench/suspend.sh, where they exist,
#                  run without arguments (BENCH_QUICK=1 in the environment with --quick)
# A benchmark whose script is absent is skipped with a line saying so; one
# that fails is reported and the others still run (exit status 1 at the end).
# Benchmarks measure; they assert nothing about times.
#
#   sudo bash bench/run.sh [--quick] [--churn COUNT] [--density N] [--start N] [--only NAME[,NAME...]]
#     --quick        small sizes, to try it (a few minutes)
#     --churn COUNT  churn cycles (default 300; 10000 for the long run, about 90 min)
#     --density N    idle workers (default 300)
#     --density-platform P  runsc platform for density (default: the configured
#                    one, systrap; 300 idle systrap sentries saturate 2 cores)
#     --start N      start-latency samples per series (default 50)
#     --only NAMES   only these of: start runtime egress density churn broker suspend checkpoint files
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$SRC/bench/results
QUICK=
CHURN=300
DENSITY=300
DENSITY_PLATFORM=
START=50
ONLY=
while [ $# -gt 0 ]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --churn) CHURN=$2; shift 2 ;;
        --density) DENSITY=$2; shift 2 ;;
        --density-platform) DENSITY_PLATFORM=$2; shift 2 ;;
        --start) START=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$QUICK" ]; then
    CHURN=20; START=10
    DENSITY_ARGS=(20 --egress 10 --points "1 10 20" --samples 1)
    RUNTIME_N=5
else
    DENSITY_ARGS=("$DENSITY")
    RUNTIME_N=30
fi
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (it boots test-bed containers)" >&2; exit 2; }
mkdir -p "$OUT"
if ! command -v gnuplot >/dev/null; then
    echo "run.sh: installing gnuplot-nox for the figures"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null || echo "run.sh: no gnuplot: no figures"
fi

declare -A status=()
order=()
wanted() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
# NAME LOG CMD...: runs one benchmark, its output shown and kept in LOG.
bench() {
    local name=$1 log=$2 t0=$SECONDS rc
    shift 2
    order+=("$name")
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    status[$name]="exit $rc, $((SECONDS - t0)) s"
    [ "$rc" = 0 ] || echo "=== $name FAILED (exit $rc; log $log)"
}
skip() { order+=("$1"); status[$1]="skipped: $2"; echo "=== $1: skipped: $2"; }

LOGS=$(mktemp -d /tmp/sandboxd-bench-run.XXXXXX)
echo "run.sh: logs in $LOGS"
. "$SRC/bench/lib.sh"
bench_machine > "$OUT/machine.json"

wanted start && bench start "$LOGS/start.log" bash "$SRC/bench/start-latency.sh" "$START"

# runtime and egress run in one test bed of their own.
if wanted runtime || wanted egress; then
    STAGE=$(bench_stage "$SRC")
    (
        . "$SRC/tests/testbed/testbed.sh"
        name=bench-run-$$
        testbed_boot "$name" "$STAGE" || exit 1
        pid=$(testbed_pid "$name")
        rc=0
        if wanted runtime; then
            bench runtime "$LOGS/runtime.log" bash "$SRC/bench/runtime/bench-start.sh" "$pid" "$RUNTIME_N" \
                "$OUT/runtime-start.json"
            echo "${status[runtime]}" > "$LOGS/runtime.status"
        fi
        if wanted egress; then
            bench egress "$LOGS/egress.log" bash "$SRC/bench/egress/bench.sh" "$pid" "$STAGE" "$OUT/egress.json" \
                ${QUICK:+--quick}
            echo "${status[egress]}" > "$LOGS/egress.status"
        fi
        exit $rc
    ) || echo "run.sh: the test bed for runtime and egress did not boot"
    for n in runtime egress; do
        wanted $n || continue
        order+=("$n")
        status[$n]=$(cat "$LOGS/$n.status" 2>/dev/null || echo "not run: the test bed did not boot")
    done
fi

[ -n "$DENSITY_PLATFORM" ] && DENSITY_ARGS+=(--platform "$DENSITY_PLATFORM")
wanted density && bench density "$LOGS/density.log" bash "$SRC/bench/density.sh" "${DENSITY_ARGS[@]}"
wanted churn && bench churn "$LOGS/churn.log" bash "$SRC/bench/churn.sh" "$CHURN" 4242

if wanted broker; then
    shopt -s nullglob
    brokers=("$SRC"/bench/broker/*.sh)
    shopt -u nullglob
    if [ ${#brokers[@]} = 0 ]; then
        skip broker "no bench/broker/*.sh in this tree"
    else
        for f in "${brokers[@]}"; do
            bench "broker/$(basename "$f" .sh)" "$LOGS/broker-$(basename "$f" .sh).log" env BENCH_QUICK="$QUICK" bash "$f"
        done
    fi
fi
if wanted suspend; then
    if [ -f "$SRC/bench/suspend.sh" ]; then
        bench suspend "$LOGS/suspend.log" env BENCH_QUICK="$QUICK" bash "$SRC/bench/suspend.sh"
    else
        skip suspend "no bench/suspend.sh in this tree"
    fi
fi
if wanted files; then
    bench files "$LOGS/files.log" bash "$SRC/bench/files-copy.sh" "$([ -n "$QUICK" ] && echo 64 || echo 1024)"
fi
if wanted checkpoint; then
    bench checkpoint "$LOGS/checkpoint.log" bash "$SRC/bench/checkpoint-handshakes.sh" "$([ -n "$QUICK" ] && echo 20 || echo 200)"
fi

command -v gnuplot >/dev/null && python3 "$SRC/bench/figures.py" "$OUT"
python3 "$SRC/bench/summary.py" "$OUT"
echo "=== runs"
failed=0
for n in "${order[@]}"; do
    printf '%-16s %s\n' "$n" "${status[$n]}"
    [[ "${status[$n]}" == "exit 0"* || "${status[$n]}" == skipped* ]] || failed=1
done
exit $failed
