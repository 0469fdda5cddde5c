#!/usr/bin/env python3
# How long the bench's own tasks waited for a CPU after being woken, and
# what ran on that CPU meanwhile, from a scheduler trace of a latency run:
#   perf sched record -o sched.data -- nsenter -t LEADER -a \
#       /run/egress-bench/egress-load latency 127.0.0.1:3128 bench.egress.test:8444 2000 /run/egress-bench/hello.bin
#   perf sched timehist -i sched.data > timehist.txt
#   sched-delay.py timehist.txt
# (with bench.sh's units up: upstream, proxy, tinyproxy).
import collections, sys

OURS = ("egress-load", "sandbox-egress", "tinyproxy", "systemd-journal")
runs = collections.defaultdict(list)   # cpu -> (end, task, delay ms, run ms)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 6 or not f[0][0].isdigit():
        continue
    try:
        end, cpu, task, delay, run = float(f[0]), f[1], f[2].split("[")[0], float(f[4]), float(f[5])
    except ValueError:
        continue
    runs[cpu].append((end, task, delay, run))

buckets = collections.defaultdict(collections.Counter)
culprits = collections.Counter()
for cpu, rs in runs.items():
    for i, (end, task, delay, run) in enumerate(rs):
        if task not in OURS:
            continue
        buckets[task]["< 0.1 ms" if delay < 0.1 else "< 1 ms" if delay < 1 else "< 4 ms" if delay < 4 else ">= 4 ms"] += 1
        if task in ("egress-load", "sandbox-egress") and delay >= 1:
            # Whatever ran on this CPU while it waited.
            start = end - run / 1000
            woken = start - delay / 1000
            for e2, t2, _, r2 in rs[max(0, i - 64):i]:
                if e2 > woken:
                    culprits[t2] += min(r2, (e2 - woken) * 1000)
print("wake-up to running (sched delay), per task:")
for task, c in sorted(buckets.items()):
    n = sum(c.values())
    print(f"  {task:16} {n:6} wake-ups: " + ", ".join(f"{k} {v} ({100 * v / n:.1f}%)" for k, v in
                                                      sorted(c.items(), key=lambda kv: kv[0])))
print("ran on the CPU while egress-load or sandbox-egress waited >= 1 ms (ms):")
for task, ms in culprits.most_common(10):
    print(f"  {task:16} {ms:8.1f}")
