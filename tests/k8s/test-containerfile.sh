#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# daemon/egress/Containerfile without podman: every COPY source is in the
# tree, the build stage configures this very tree with the options it passes
# and builds the target it copies, nothing is fetched but apt packages, and
# the proxy runs as the exported pods' non-root UID.
#   test-containerfile.sh SOURCE_ROOT BUILD_DIR
set -euo pipefail
src=$1 build=$2
cf=$src/daemon/egress/Containerfile
fail=0
bad() { echo "FAIL: $*"; fail=1; }

while read -r -a words; do
	[[ ${words[1]} == --from=* ]] && continue
	# COPY SOURCE... DEST
	for f in "${words[@]:1:${#words[@]}-2}"; do
		[[ -e $src/$f ]] || bad "COPY source $f is not in the tree"
	done
done < <(grep -E '^COPY ' "$cf")

# What the image's build stage builds must be a target of this tree.
target=$(sed -n 's/.*ninja -C \/build \([^ ]*\).*/\1/p' "$cf")
[[ -n $target ]] || bad "no ninja target in the Containerfile"
targets=$(ninja -C "$build" -t targets all 2>/dev/null)
grep -q "^$target:" <<<"$targets" || bad "ninja target $target does not exist"
[[ $(sed -n 's|^COPY --from=build /build/\([^ ]*\) .*|\1|p' "$cf") == "$target" ]] || bad "the runtime stage copies another file than it builds"

# Its meson options exist.
for opt in $(grep -o -- '-D[a-z_]*=' "$cf" | sed 's/^-D//; s/=$//'); do
	grep -q "option('$opt'" "$src/meson_options.txt" || bad "meson option $opt does not exist"
done

# No download but apt: no curl, wget, git or ADD of a URL.
grep -nE '^(ADD|RUN .*(curl|wget|git clone|pip install))' "$cf" && bad "the build downloads outside apt"

# Non-root, as the exported pods run it; the seccomp filter stays on.
uid=$(sed -n 's/^#define K8S_WORKER_UID \([0-9]*\)/\1/p' "$src/tools/k8s-export.h")
grep -q "^USER $uid:$uid\$" "$cf" || bad "the image does not run as UID $uid"
grep -q 'SANDBOX_EGRESS_NO_SECCOMP=' "$cf" && bad "the image turns the seccomp filter off"
grep -q '^ENTRYPOINT \["/usr/libexec/sandboxd/sandbox-egress"\]' "$cf" || bad "the entrypoint is not sandbox-egress"
# The arguments the exported Deployment passes are the image's default too.
grep -q -- "--policy=$(sed -n 's/^#define K8S_EGRESS_POLICY_DIR "\(.*\)"/\1/p' "$src/tools/k8s-export.h")/policy.json" "$cf" \
	|| bad "the image's default policy path is not the Deployment's"
[[ $fail == 0 ]] && echo "ok: Containerfile"
exit $fail
