#!/usr/bin/env bash
# Churn at length (issue 11): COUNT cycles of tests/reliability/churn.sh (the
# reliability suite's seeded mix of runs, random stops, idle reaps, killed
# clients and egress through a local upstream, over trusted, standard and
# untrusted) in a throwaway test-bed container. Records cycles per second,
# sandboxd's VmRSS and open fds before and after (fds: after a WARMUP-cycle
# warm-up and once ended workers have left the bus, the warm pool at rest
# both times; RSS: after the warm-up and right after the last cycle), and
# what was left behind (tests/reliability/leaks.sh); prints a table and
# writes churn.json in BENCH_OUT (default bench/results). JOBS drivers run side by side against the
# one sandboxd (seeds SEED, SEED+1, ...; COUNT split between them): more
# cycles per second on an idle host, and concurrent clients as a bonus.
# WARMUP 0 (the quick smoke) measures "before" on the fresh sandboxd: no
# warm-up, and no wait for the warm-up's workers to leave the bus (30 s).
#   sudo bash bench/churn.sh [COUNT] [SEED] [JOBS] [WARMUP]   (default 10000, a random seed, 1, 12)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COUNT=${1:-10000}
SEED=${2:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
JOBS=${3:-1}
WARMUP=${4:-12}
CLASSES=trusted,standard,untrusted
OUT=${BENCH_OUT:-$SRC/bench/results}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
BUILD=$SRC/build-bench
install -D -m 0755 "$(bench_sbx_channel "$BUILD" "$SRC")" "$STAGE/usr/lib/sandboxd-tests/sbx-channel"
W=/usr/lib/sandboxd-bench
for f in churn.sh leaks.sh; do install -D -m 0755 "$SRC/tests/reliability/$f" "$STAGE$W/$f"; done
install -D -m 0755 "$SRC/tests/testbed/upstream-netns.sh" "$STAGE$W/upstream-netns.sh"
install -D -m 0644 "$SRC/tests/egress/egress-upstream.py" "$STAGE$W/upstream.py"

. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-bench-churn-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
UP=11.0.0.14
HOST=api.sbx-bench.test
ct sh -ec "
    $W/upstream-netns.sh up $UP
    echo '$UP $HOST' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout /etc/bench-key.pem -out /etc/bench-cert.pem \
        -subj /CN=$HOST -addext 'subjectAltName=DNS:$HOST' 2>/dev/null
    chmod 644 /etc/bench-cert.pem
    systemd-run -q --unit=bench-upstream ip netns exec upstream python3 $W/upstream.py $UP 443 /etc/bench-cert.pem /etc/bench-key.pem
    printf '[Egress]\nFloor=*.sbx-bench.test\n' > /etc/sandboxd/sandboxd.conf
    systemctl restart sandboxd"
for _ in $(seq 100); do ct bash -c "exec 3<>/dev/tcp/$UP/443" 2>/dev/null && break; sleep 0.1; done

main_pid() { ct systemctl show -P MainPID sandboxd.service; }
fds() { ct sh -c "ls /proc/$(main_pid)/fd | wc -l"; }
# shellcheck disable=SC2016  # awk's own $2
rss() { ct awk '/^VmRSS:/ {print $2}' "/proc/$(main_pid)/status"; }
# The warm pool's waiting sandboxes hold their stdio pipes in sandboxd: the
# fds are compared at rest (the same sandboxes waiting, the count unchanged
# over two seconds, no worker left on the bus) on both sides.
pooled() { ct busctl --system get-property org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager PooledSandboxes; }
# Ended workers linger on the bus with their channel for 30 s: at rest means
# none is left either.
worker_objects() { ct busctl --system --list tree org.sandboxd1 | grep -c '^/org/sandboxd1/worker/' || true; }
pool_at_rest() {
    local a b
    for _ in $(seq 300); do
        a="$(pooled) $(fds) $(worker_objects)"
        sleep 2
        b="$(pooled) $(fds) $(worker_objects)"
        [ "$a" = "$b" ] && [ "${b##* }" = 0 ] && return 0
    done
    echo "the pool did not come to rest: $b" >&2
}
pid0=$(main_pid)
tmp=$(mktemp)
[ "$WARMUP" = 0 ] ||
    ct "$W/churn.sh" "$WARMUP" "$SEED" "$CLASSES" "$HOST" /etc/bench-cert.pem >"$tmp" 2>&1 || { echo "warm-up:"; cat "$tmp"; }
rss0=$(rss)
pool_at_rest
pool0=$(pooled)
fds0=$(fds)
rc=0
t0=$(date +%s%N)
pids=()
for ((k = 0; k < JOBS; k++)); do
    n=$((COUNT / JOBS + (k < COUNT % JOBS ? 1 : 0)))
    ct "$W/churn.sh" "$n" "$((SEED + k))" "$CLASSES" "$HOST" /etc/bench-cert.pem >"$tmp.$k" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
wall_ms=$((($(date +%s%N) - t0) / 1000000))
cat "$tmp".* >"$tmp"
rm -f "$tmp".*
grep FAIL "$tmp" | head -n 20 || true
rss1=$(rss)
# Ended workers stay on the bus, with their channel, for 30 s.
for _ in $(seq 900); do
    [ "$(fds)" -le "$fds0" ] && ! ct "$W/leaks.sh" | grep -qv ' 0$' && break
    sleep 0.1
done
pool_at_rest
pool1=$(pooled)
fds1=$(fds)
leaks=$(ct "$W/leaks.sh")
pid1=$(main_pid)

python3 - "$OUT/churn.json" "$COUNT" "$SEED" "$rc" "$pid0" "$pid1" "$fds0" "$fds1" "$rss0" "$rss1" \
    "$(grep '^churn: [0-9]* cycles' "$tmp")" "$leaks" "$JOBS" "$wall_ms" "${pool0#u }" "${pool1#u }" "$WARMUP" <<'PY'
import json, re, sys
out, count, seed, rc, pid0, pid1, fds0, fds1, rss0, rss1, summaries, leaks, jobs, ms, pool0, pool1, warmup = sys.argv[1:]
ms, kinds, failed, done = int(ms), {}, 0, 0
for summary in summaries.splitlines():
    m = re.match(r"churn: (\d+) cycles in (\d+) ms \(seed \d+, classes ([^;]*);([^)]*)\), (\d+) failed", summary)
    done += int(m.group(1))
    classes, failed = m.group(3), failed + int(m.group(5))
    for k, v in (x.split("=") for x in m.group(4).split()):
        kinds[k] = kinds.get(k, 0) + int(v)
if done != int(count):
    sys.exit(f"only {done} of {count} cycles reported a summary")
leak = {l.split()[0]: int(l.split()[1]) for l in leaks.splitlines() if l.strip()}
r = {"benchmark": "churn", "cycles": int(count), "seed": int(seed), "drivers": int(jobs), "classes": classes.split(),
     "kinds": kinds, "failed_cycles": failed, "driver_exit": int(rc),
     "seconds": round(ms / 1000, 1), "cycles_per_second": round(int(count) / (ms / 1000), 2),
     "sandboxd_same_process": pid0 == pid1,
     "fds_before": int(fds0), "fds_after": int(fds1),
     "pooled_before": int(pool0), "pooled_after": int(pool1),
     "rss_kb_before": int(rss0), "rss_kb_after": int(rss1), "leaks": leak, "warmup_cycles": int(warmup),
     "notes": "fds before: after the warm-up, the warm pool at rest; fds after and leaks: once ended workers left "
              "the bus (30 s linger), the pool at rest again (pooled_* waiting sandboxes each time); "
              f"RSS before: after a {warmup}-cycle warm-up; RSS after: right after the last cycle"}
print(f"{'cycles':>7} {'seconds':>8} {'cycles/s':>9} {'failed':>7} {'fds before/after':>17} {'pooled':>7} {'RSS kB before/after':>20} {'leaks':>6}")
print(f"{r['cycles']:>7} {r['seconds']:>8} {r['cycles_per_second']:>9} {failed:>7} "
      f"{str(r['fds_before']) + ' / ' + str(r['fds_after']):>17} {pool0 + '/' + pool1:>7} "
      f"{str(r['rss_kb_before']) + ' / ' + str(r['rss_kb_after']):>20} {sum(leak.values()):>6}")
print("kinds: " + ", ".join(f"{k} {v}" for k, v in kinds.items()) + f"; seed {seed}; sandboxd same process: {pid0 == pid1}")
print("left behind: " + ", ".join(f"{k} {v}" for k, v in leak.items()))
json.dump(r, open(out, "w"), indent=2)
print(f"wrote {out}")
PY
rm -f "$tmp"
[ "$rc" = 0 ]
