#!/usr/bin/env python3
# A flame graph (SVG) and a self-time table from `perf script` output, for
# bench/egress/profile.sh: each sample's stack, root first, folded; a frame's
# width is its share of the samples. No dependency beyond Python.
#   bench/egress/flamegraph.py PERF_SCRIPT OUT.svg [TITLE]
# Prints the functions with the most self time, the kernel's share and the
# share under each system call entry, as the report's figures.
import collections, html, re, sys, zlib

src, out = sys.argv[1], sys.argv[2]
title = sys.argv[3] if len(sys.argv) > 3 else "sandbox-egress, cpu-clock samples"
FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.+?)\s+\((.*)\)\s*$")


def frame_name(sym, dso):
    if sym.startswith("[unknown]"):
        return dso if dso.startswith("[") else "[" + dso.rsplit("/", 1)[-1] + "]"
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    return sym + ("_[k]" if "kernel" in dso else "")


stacks = collections.Counter()
cur = None
for line in open(src, errors="replace"):
    if not line.strip():
        if cur:
            stacks[tuple(reversed(cur))] += 1
        cur = None
        continue
    if cur is None:
        cur = []
        continue
    m = FRAME.match(line)
    if m:
        cur.append(frame_name(m.group(1), m.group(2)))
if cur:
    stacks[tuple(reversed(cur))] += 1
total = sum(stacks.values())
if not total:
    sys.exit("flamegraph.py: no samples in " + src)


def tree():
    root = {"n": 0, "kids": {}}
    for st, n in stacks.items():
        node = root
        node["n"] += n
        for f in st:
            node = node["kids"].setdefault(f, {"n": 0, "kids": {}})
            node["n"] += n
    return root


W, H, PAD = 1200, 16, 10
rects = []
depth_max = [0]


def layout(node, x, depth):
    for name, kid in sorted(node["kids"].items()):
        w = kid["n"] / total * (W - 2 * PAD)
        if w >= 0.3:
            rects.append((name, x, depth, w, kid["n"]))
            depth_max[0] = max(depth_max[0], depth)
            layout(kid, x, depth + 1)
        x += w


layout(tree(), PAD, 0)
height = (depth_max[0] + 1) * H + 3 * PAD + 20


def color(name):
    h = zlib.crc32(name.encode()) % 60
    if name.endswith("_[k]"):
        return f"rgb(230,{120 + h},{60 + h // 2})"
    return f"rgb(240,{190 + h // 2},{60 + h})"


with open(out, "w") as f:
    f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="Verdana" '
            f'font-size="11">\n<rect width="100%" height="100%" fill="#f8f8f8"/>\n')
    f.write(f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">{html.escape(title)} '
            f'({total} samples; kernel frames end in _[k])</text>\n')
    for name, x, depth, w, n in rects:
        y = height - PAD - (depth + 1) * H
        label = html.escape(f"{name} ({n} samples, {100 * n / total:.1f}%)")
        f.write(f'<g><title>{label}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{H - 1}" '
                f'fill="{color(name)}" rx="2"/>')
        if w > 40:
            chars = int(w / 7)
            text = name if len(name) <= chars else name[:max(chars - 2, 1)] + ".."
            f.write(f'<text x="{x + 3:.1f}" y="{y + 12}">{html.escape(text)}</text>')
        f.write("</g>\n")
    f.write("</svg>\n")

selfs = collections.Counter()
kernel = 0
entries = collections.Counter()
for st, n in stacks.items():
    selfs[st[-1]] += n
    if st[-1].endswith("_[k]"):
        kernel += n
    sc = next((fr for fr in st if re.match(r"__(x64|se)_sys_", fr) or fr.startswith("__x64_sys")), None)
    entries[re.sub(r"^__(x64|se)_sys_", "", sc or "(outside system calls: user space, faults, interrupts)").replace("_[k]", "")] += n
print(f"{total} samples; kernel {100 * kernel / total:.1f}%, user space {100 * (total - kernel) / total:.1f}%")
print("by system call (inclusive):")
for name, n in entries.most_common(10):
    print(f"  {100 * n / total:5.1f}%  {name}")
print("self time, top 20:")
for name, n in selfs.most_common(20):
    print(f"  {100 * n / total:5.1f}%  {name}")
