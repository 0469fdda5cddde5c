#!/usr/bin/env bash
# A long run of the worker spec fuzzer for the bus (tests/busfuzz): the CI
# script tests/busfuzz/integration.sh, with N specs instead of CI's 3000,
# in a fresh test-bed container through tests/run-all.sh (which builds
# build-ci and stages the install and the fuzzer). Prints the fuzzer's
# summary and the checks, and writes JSON to bench/results/fuzz-bus.json
# (or OUT). A failure prints the seed and case number to replay with
# sbx-busfuzz --seed S --first I --count 1 --verbose.
#   sudo bash bench/fuzz-bus.sh [N] [SEED]     (default N=50000, SEED random)
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-50000}
SEED=${2:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[[ $N =~ ^[0-9]+$ && $SEED =~ ^[0-9]+$ ]] || { echo "usage: bench/fuzz-bus.sh [N] [SEED]" >&2; exit 2; }
OUT=${OUT:-$SRC/bench/results/fuzz-bus.json}
mkdir -p "$(dirname "$OUT")"

# About 50 specs a second on a loaded 2-core machine; an hour's margin on top.
export BUSFUZZ_COUNT=$N BUSFUZZ_SEED=$SEED INTEGRATION_TIMEOUT=$((N / 10 + 3600))
echo "fuzz-bus: $N specs, seed $SEED" >&2
t0=$SECONDS
bash "$SRC/tests/run-all.sh" --integration-only --no-asan --only tests/busfuzz/integration.sh
rc=$?
secs=$((SECONDS - t0))
log=$SRC/build-ci/test-logs/tests_busfuzz_integration.sh.log

python3 - "$log" "$OUT" "$N" "$SEED" "$secs" "$rc" <<'EOF'
import json, re, sys
log, out, n, seed, secs, rc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
text = open(log, errors="replace").read() if log else ""
result = {"specs_asked": n, "seed": seed, "seconds": secs, "exit_status": rc, "checks": {}, "answers": {}}
m = re.search(r"busfuzz: seed \d+, cases \S+: (\d+) sent \((\d+) valid, (\d+) mutated, (\d+) random, (\d+) wrong signature\), "
              r"(\d+) accepted and stopped, (\d+) refused, (\d+) failures, ([\d.]+) s", text)
if m:
    keys = ["sent", "valid", "mutated", "random", "wrong_signature", "accepted", "refused", "failures"]
    result.update({k: int(v) for k, v in zip(keys, m.groups()[:8])})
    result["fuzzer_seconds"] = float(m.group(9))
for count, name in re.findall(r"^# busfuzz:\s+(\d+)\s+(\S+)$", text, re.M):
    result["answers"][name] = int(count)
for status, name in re.findall(r"^(ok|not ok) \d+ - (.*)$", text, re.M):
    result["checks"][name] = status == "ok"
result["ok"] = rc == 0 and bool(result["checks"]) and all(result["checks"].values())
json.dump(result, open(out, "w"), indent=2)
print("fuzz-bus: %s specs, seed %s: %s accepted, %s refused, %s failures, %d s; checks %d/%d ok -> %s" % (
    result.get("sent", 0), seed, result.get("accepted", 0), result.get("refused", 0), result.get("failures", "?"),
    secs, sum(result["checks"].values()), len(result["checks"]), out))
EOF
exit $rc
