#!/usr/bin/env python3
# Every relative link in the Markdown documentation resolves: the file (or
# folder) exists, and an anchor names a heading of that file, as GitHub
# makes anchors from headings. External links (scheme:) are not fetched.
#   test-doc-links.py SOURCE_ROOT
import os, re, sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FILES = ["README.md", "daemon/README.md", "daemon/runtime/README.md", "daemon/exec/README.md",
         "daemon/egress/README.md", "tests/attacks/README.md", "tests/k8s/golden/policy-table.md"]
FILES += sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def lines_outside_code(path):
    fenced = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("    "):
            yield n, re.sub(r"`[^`]*`", "", line)


def anchors(path):
    seen, out = {}, set()
    for _, line in lines_outside_code(path):
        m = re.match(r"#+\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else "%s-%d" % (s, k))
    return out


bad = 0
for rel in FILES:
    path = os.path.join(ROOT, rel)
    if not os.path.exists(path):
        continue
    for n, line in lines_outside_code(path):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                print("%s:%d: %s: no such file" % (rel, n, target))
                bad += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print("%s:%d: %s: no such heading" % (rel, n, target))
                bad += 1
print("%d broken link(s)" % bad if bad else "every relative link resolves")
sys.exit(1 if bad else 0)
