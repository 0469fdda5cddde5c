#!/usr/bin/env python3
"""The daemon's layers, checked from the sources (TAP).

daemon/LAYERS names the layers, lowest first. The build already refuses an
#include that goes up (each layer's library sees only the headers below it)
and a call that goes up (each layer is linked alone with those below, with
undefined symbols refused); this check says the same from the sources, so a
new file or folder cannot slip past either, and names the offending line:
  - every .c and .h under daemon/ is in a layer's folder or a program's;
  - every layer's meson.build lists each .c of its folder;
  - no #include "..." holds a path (a layer is found through the build's
    include directories, never by climbing);
  - a layer includes only its own headers and those of the layers below it,
    and the egress core; a program (daemon/runtime, daemon/exec, tools,
    daemon/egress) only what it is allowed below;
  - the folders' include graph has no cycle.
usage: check-layers.py SOURCE_ROOT
"""
import os
import re
import sys

root = sys.argv[1]
daemon = os.path.join(root, 'daemon')

layers = []
for line in open(os.path.join(daemon, 'LAYERS')):
    line = line.split('#', 1)[0].strip()
    if line:
        layers.append(line.split()[0])
rank = {name: i for i, name in enumerate(layers)}

# Programs and what they may include besides their own folder.
PROGRAMS = {
    'daemon/egress': ['layer:netcore', 'layer:shared', 'layer:netio'],
    # The gate shares the proxy's confinement (egress-sandbox.c) and nothing else of it.
    'daemon/gate': ['layer:netcore', 'layer:shared', 'layer:netio', 'daemon/egress/egress-sandbox.h'],
    'daemon/runtime': ['layer:netcore', 'layer:shared'],
    'daemon/exec': ['layer:netcore', 'layer:shared'],
    'daemon/files': ['layer:netcore', 'layer:shared'],
    'tools': ['layer:netcore', 'layer:shared', 'layer:systemd'],
    'daemon': ['layer:' + name for name in layers],     # sandboxd.c, the main
}


def folder_of_layer(name):
    return 'daemon/' + name


layer_folders = {folder_of_layer(name): name for name in layers}
all_folders = list(layer_folders) + list(PROGRAMS)

headers = {}            # header name -> folder
for folder in all_folders:
    path = os.path.join(root, folder)
    for f in sorted(os.listdir(path)):
        if f.endswith('.h'):
            if f in headers:
                headers[f] += ' ' + folder
            else:
                headers[f] = folder

n = 0
failed = 0


def report(ok, name, diag=()):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print('%s %d - %s' % ('ok' if ok else 'not ok', n, name))
    for line in diag:
        print('# ' + line)


# Every file of the daemon sits in a known folder.
strays = []
for dirpath, dirnames, filenames in os.walk(daemon):
    rel = os.path.relpath(dirpath, root)
    for f in filenames:
        if f.endswith(('.c', '.h')) and rel not in all_folders:
            strays.append(os.path.join(rel, f))
report(not strays, 'every daemon source file is in a layer or a program folder', strays)

# Header names are unique: the include directories find one file by its name.
dups = ['%s in %s' % (h, where) for h, where in headers.items() if ' ' in where]
report(not dups, 'every header name is used once', dups)

# Each layer's meson.build lists each .c of its folder.
unlisted = []
for folder, name in layer_folders.items():
    meson = open(os.path.join(root, folder, 'meson.build')).read()
    for f in sorted(os.listdir(os.path.join(root, folder))):
        if f.endswith('.c') and "'%s'" % f not in meson:
            unlisted.append('%s/%s' % (folder, f))
report(not unlisted, "every layer's meson.build lists each of its .c files", unlisted)

edges = {}              # folder -> set of folders it includes
climbs, upward = [], []
for folder in all_folders:
    path = os.path.join(root, folder)
    edges[folder] = set()
    for f in sorted(os.listdir(path)):
        if not f.endswith(('.c', '.h')):
            continue
        for lineno, line in enumerate(open(os.path.join(path, f)), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            where = '%s/%s:%d: #include "%s"' % (folder, f, lineno, inc)
            if '/' in inc:
                climbs.append(where)
                continue
            target = headers.get(inc)
            if target is None or ' ' in target:
                continue            # a generated header (build-config.h) or reported above
            if target != folder:
                edges[folder].add(target)
            if folder in layer_folders:
                me = rank[layer_folders[folder]]
                if target in layer_folders and rank[layer_folders[target]] > me:
                    upward.append('%s (layer %s includes layer %s)' % (where, layer_folders[folder], layer_folders[target]))
                elif target in PROGRAMS and target != 'daemon/egress':
                    upward.append('%s (a layer includes the program %s)' % (where, target))
            elif target != folder:
                allowed = PROGRAMS[folder]
                ok = (target in allowed or '%s/%s' % (target, inc) in allowed or
                      (target in layer_folders and 'layer:' + layer_folders[target] in allowed))
                if not ok:
                    upward.append('%s (%s may not include %s)' % (where, folder, target))
report(not climbs, 'no #include holds a path', climbs)
report(not upward, 'every #include goes to the same layer or one below it', upward)

# The folders' include graph is acyclic (a cycle would also need an upward edge).
state, cycle = {}, []


def visit(folder, stack):
    state[folder] = 1
    for t in sorted(edges[folder]):
        if state.get(t) == 1 and not cycle:
            cycle.extend(stack[stack.index(t):] + [folder, t] if t in stack else [folder, t])
        elif t not in state:
            visit(t, stack + [folder])
    state[folder] = 2


for folder in all_folders:
    if folder not in state:
        visit(folder, [])
report(not cycle, "the folders' include graph has no cycle", [' -> '.join(cycle)] if cycle else [])

print('1..%d' % n)
sys.exit(1 if failed else 0)
