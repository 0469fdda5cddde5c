#!/usr/bin/env bash
# Builds the Debian package the way an operator does (dpkg-buildpackage -us
# -uc -b), from a copy of this tree (its tracked and untracked files, no build
# directories) in OUTDIR/src, so neither the tree nor its parent directory
# collects build products. The .debs land in OUTDIR; prints the path of the
# sandboxd one (python3-sandboxd_*.deb lies beside it). Needs the Build-Depends of debian/control.
#
#   tools/build-deb.sh OUTDIR     (DEB_BUILD_OPTIONS passes through, e.g. nocheck;
#                                  the build's output goes to OUTDIR/build.log)
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: tools/build-deb.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/src" "$OUT"/sandboxd*_*.deb "$OUT"/python3-sandboxd_*.deb "$OUT"/sandboxd_*.changes "$OUT"/sandboxd_*.buildinfo "$OUT/build.log"
mkdir "$OUT/src"

if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files deleted in the work tree are not copied.
    git -C "$SRC" ls-files -z --cached --others --exclude-standard |
        (cd "$SRC" && xargs -0 sh -c 'for f; do if [ -e "$f" ] || [ -L "$f" ]; then printf "%s\0" "$f"; fi; done' sh) |
        tar -C "$SRC" --null -T - -cf - | tar -C "$OUT/src" -xf -
else
    tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$OUT/src" -xf -
fi

if ! (cd "$OUT/src" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log" >&2
    echo "build-deb: dpkg-buildpackage failed (log: $OUT/build.log)" >&2
    exit 1
fi
ls "$OUT"/sandboxd_*.deb
