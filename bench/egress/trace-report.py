#!/usr/bin/env python3
# Matches the latency client's samples (EGRESS_LOAD_TRACE) with the
# proxy's per-tunnel phase timestamps (sandbox-egress built with
# -Degress_trace=true) from one bench.sh EGRESS_BENCH_TRACE=DIR run, and
# shows where the time of the slowest connections went next to the median.
#   trace-report.py DIR [PERCENT]   (PERCENT: the slowest share, default 3)
import bisect, glob, os, statistics, sys

PHASES = ["request", "resolved", "connected", "ok_sent", "hello", "forward", "first_down", "close"]
d = sys.argv[1]
share = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
tunnels, spans = [], []
for line in open(os.path.join(d, "proxy.trace")):
    f = line.split()
    if f[0] == "T":
        tunnels.append((int(f[2]), int(f[1]), [int(x) for x in f[3:]]))
    elif f[0] == "S":
        spans.append((int(f[3]), int(f[4]), f[2], int(f[1]), int(f[5])))
tunnels.sort()
spans.sort()
accepts = [t[0] for t in tunnels]
span_starts = [s[0] for s in spans]

rows = []
for path in sorted(glob.glob(os.path.join(d, "client-sandbox-egress-*"))):
    for line in open(path):
        _, start, dur = line.split()
        start, dur = int(float(start)), int(dur)
        i = bisect.bisect_left(accepts, start)
        if i == len(tunnels) or tunnels[i][0] - start > dur * 1000:
            continue
        acc, tid, marks = tunnels[i]
        # Client-side view: connect() to accept, then the proxy's phases
        # (offsets from accept, us), then after the first byte down to the client's end.
        pre = (acc - start) // 1000
        first_down = marks[PHASES.index("first_down")]
        post = dur - pre - first_down if first_down >= 0 else -1
        # Journal flushes of any loop that ran while this connection was open.
        j = bisect.bisect_left(span_starts, start - 1000000)
        flush = sum(s[1] for s in spans[j:] if s[0] < start + dur * 1000 and s[0] + s[1] * 1000 > start)
        # How long before this connection's end the last flush began: journald
        # works through a batch right after it, on one of the same CPUs.
        k = bisect.bisect_left(span_starts, start + dur * 1000) - 1
        since = (start + dur * 1000 - spans[k][0]) // 1000 if k >= 0 else 10**9
        rows.append((dur, pre, marks, post, flush, tid, since))

if not rows:
    sys.exit("no client sample matched a proxy tunnel")
rows.sort(key=lambda r: r[0])
def deltas(r):
    dur, pre, marks, post, flush, tid, since = r
    prev, out = 0, [pre]
    for m in marks[:PHASES.index("first_down") + 1]:
        out.append(m - prev if m >= 0 and prev >= 0 else -1)
        prev = m if m >= 0 else prev
    return out + [post, flush]
head = ["total", "pre-accept"] + ["->" + p for p in PHASES[:PHASES.index("first_down") + 1]] + ["after", "journal"]
print(f"{len(rows)} samples matched; us, each phase since the one before (pre-accept: client connect() start to accept)")
print("".join(f"{h:>12}" for h in head))
med = [statistics.median(x) for x in zip(*[[r[0]] + deltas(r) for r in rows])]
print("".join(f"{int(v):>12}" for v in med) + "   median")
n = max(1, int(len(rows) * share / 100))
for r in rows[-n:]:
    print("".join(f"{v:>12}" for v in [r[0]] + deltas(r)) + f"   tid {r[5]}")
def near_flush(rs, window):
    return sum(1 for r in rs if r[6] <= window) / len(rs)
for w in (1000, 3000, 10000):
    print(f"share with a journal flush begun within {w} us before its end: all {near_flush(rows, w):.2f}, "
          f"slowest {near_flush(rows[-n:], w):.2f}")
fl = [s[1] for s in spans if s[2] == "journal-flush"]
if fl:
    fl.sort()
    print(f"journal flushes: {len(fl)}, p50 {fl[len(fl)//2]} us, p99 {fl[int(len(fl)*0.99)]} us, max {fl[-1]} us")
