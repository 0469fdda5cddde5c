#!/usr/bin/env bash
# Counted fuzz runs of the parsers of hostile input (tests/fuzz): builds the
# libFuzzer targets (clang, ASan+UBSan) in build-fuzz and runs each, one at a
# time, for RUNS executions from its seed corpus, with new inputs kept in a
# scratch directory (never in the source tree). Per target it records
# executions, exec/s, coverage (cov: edges, ft: features), the final corpus
# size, crashes (with the reproducer's path) and wall time; prints a table
# and writes JSON to bench/results/fuzz.json (or OUT). No root needed.
#   bash bench/fuzz.sh [RUNS] [TARGET...]     (default RUNS=10000000, every target)
#   OUT=path.json  where to write the JSON;  FUZZ_TIMEOUT=SEC  per target (default 7200)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${1:-10000000}
shift || true
if ! [[ $RUNS =~ ^[0-9]+$ ]] || [ "$RUNS" -eq 0 ]; then
    echo "fuzz.sh: RUNS must be a positive number, not '$RUNS'" >&2
    exit 2
fi
OUT=${OUT:-$SRC/bench/results/fuzz.json}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-7200}
BUILD=$SRC/build-fuzz
mkdir -p "$(dirname "$OUT")"

# Warnings are not errors here: clang warns where gcc (CI's compiler) does not.
if [ ! -f "$BUILD/build.ninja" ]; then
    CC=clang meson setup "$BUILD" -Dfuzzing=true >/dev/null
fi
mapfile -t all_targets < <(cd "$SRC/tests/fuzz/corpus" && ls)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [ -d "$SRC/tests/fuzz/corpus/$t" ] || { echo "fuzz.sh: no target $t (have: ${all_targets[*]})" >&2; exit 2; }
done
ninja -C "$BUILD" "${targets[@]/#/tests/fuzz/fuzz-}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$SRC/bench/results/fuzz-artifacts
rows=()
json_rows=()
failed=0

# stat NAME LOG: a stat::NAME value from libFuzzer's -print_final_stats.
stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n1; }

for t in "${targets[@]}"; do
    log=$work/$t.log
    mkdir -p "$work/$t-corpus" "$artifacts"
    echo "=== fuzz-$t: $RUNS runs" >&2
    t0=$(date +%s.%N)
    rc=0
    timeout "$FUZZ_TIMEOUT" "$BUILD/tests/fuzz/fuzz-$t" -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
        "$work/$t-corpus" "$SRC/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    # The last status line ("#N DONE cov: ... ft: ... corp: N/SIZE ...") has
    # the totals; after a crash it is the last one printed before it.
    status=$(grep -E '^#[0-9]+' "$log" | tail -n1)
    execs=$(stat number_of_executed_units "$log")
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$status")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/\([0-9a-zA-Z]*\).*/\1/p' <<<"$status")
    corp_bytes=$(sed -n 's/.* corp: \([0-9]*\)\/\([0-9a-zA-Z]*\).*/\2/p' <<<"$status")
    rss=$(stat peak_rss_mb "$log")
    crash_files=$(grep -o "Test unit written to [^ ]*" "$log" | awk '{print $5}' | paste -sd, - || true)
    crashes=$(grep -c "Test unit written to" "$log" || true)
    eps=$(awk -v n="${execs:-0}" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
    ok=true
    if [ "$rc" != 0 ] || [ "$crashes" != 0 ] || [ "${execs:-0}" -lt "$RUNS" ]; then
        ok=false
        failed=$((failed + 1))
        echo "fuzz-$t: exit status $rc, $crashes crash(es) ${crash_files:+($crash_files)}; log tail:" >&2
        tail -n 30 "$log" >&2
    fi
    rows+=("$(printf '%-16s %12s %10s %6s %7s %8s %8s %8s %s' "$t" "${execs:-0}" "$eps" "${cov:-?}" "${ft:-?}" \
        "${corp:-?}" "$crashes" "$secs" "$ok")")
    json_rows+=("$(printf '    {"target": "%s", "runs_asked": %s, "executions": %s, "exec_per_sec": %s, "cov": %s, "ft": %s, "corpus_units": %s, "corpus_size": "%s", "peak_rss_mb": %s, "crashes": %s, "crash_files": "%s", "exit_status": %s, "seconds": %s, "ok": %s}' \
        "$t" "$RUNS" "${execs:-0}" "$eps" "${cov:-0}" "${ft:-0}" "${corp:-0}" "${corp_bytes:-}" "${rss:-0}" \
        "$crashes" "$crash_files" "$rc" "$secs" "$ok")")
done

{
    printf '{\n  "date": "%s",\n  "host": "%s",\n  "cpus": %s,\n  "compiler": "%s",\n  "sanitizers": "address,undefined",\n  "runs_per_target": %s,\n  "targets": [\n' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(uname -srm)" "$(nproc)" "$(clang --version | sed -n 1p)" "$RUNS"
    for i in "${!json_rows[@]}"; do
        printf '%s%s\n' "${json_rows[$i]}" "$([ "$i" -lt $((${#json_rows[@]} - 1)) ] && echo ,)"
    done
    printf '  ]\n}\n'
} >"$OUT"

printf '%-16s %12s %10s %6s %7s %8s %8s %8s %s\n' target executions exec/s cov ft corpus crashes seconds ok
printf '%s\n' "${rows[@]}"
echo "results: $OUT"
[ "$failed" -eq 0 ]
