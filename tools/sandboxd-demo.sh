#!/usr/bin/env bash
# The main job, on any Debian 12 machine: build the sandboxd package, install
# it with apt into a throwaway systemd container (this host's PID 1 need not
# be systemd; the install starts the daemon) and run conversation workers
# through sandboxctl.
#
#   sudo bash tools/sandboxd-demo.sh                    the guided demo below
#   sudo bash tools/sandboxd-demo.sh -- CMD [ARGS...]   run CMD in the container instead,
#        e.g. -- sandboxctl run --class standard -- /bin/sh -c 'uname -a; id'
#
# On a host that does boot systemd, install the package for real (docs/operator-guide.md, "Install").
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$SRC"
[ "$(id -u)" = 0 ] || { echo "sandboxd-demo: run as root (it boots a container)" >&2; exit 1; }

# debian/control's Build-Depends, and what boots the container.
# shellcheck source=host-deps.sh
. "$SRC/tools/host-deps.sh"
host_deps_install "$SRC" --nocheck systemd-container debootstrap

BUILD=$SRC/build-demo
STAGE=$BUILD/stage
deb=$(DEB_BUILD_OPTIONS=nocheck "$SRC/tools/build-deb.sh" "$BUILD")
rm -rf "$STAGE"
mkdir -p "$STAGE/debs"
cp "$deb" "$STAGE/debs/"

# shellcheck source=../tests/testbed/testbed.sh
. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-demo-$$
# The package is installed below, the way an operator does it.
TESTBED_INSTALL=0 testbed_boot "$NAME" "$STAGE"
in_container() { testbed_exec "$NAME" "$@"; }
if ! out=$(in_container sh -c "cd /run/stage/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./$(basename "$deb")" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "sandboxd-demo: apt install ./$(basename "$deb") failed in the container" >&2
    exit 1
fi

if [ "${1:-}" = "--" ]; then
    shift
    in_container "$@"
    exit $?
fi

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
step sandboxctl preflight
in_container sandboxctl preflight
step "sandboxctl run --class trusted -- sh -c 'id; echo HOME=\$HOME; ls -ld \$HOME'"
in_container sandboxctl run --class trusted -- sh -c 'id; echo HOME=$HOME; ls -ld "$HOME"/.'
step "sandboxctl run --class standard -- sh -c 'cat /proc/version; id'   (under gVisor)"
in_container sandboxctl run --class standard -- sh -c 'cat /proc/version; id'
step "printf 'a secret\n' > /root/token; sandboxctl run --class trusted --credential token:/root/token -- ..."
in_container sh -c 'printf "a secret\n" > /root/token && chmod 600 /root/token'
in_container sandboxctl run --class trusted --credential token:/root/token -- \
    /bin/sh -c 'echo "credential: $(cat "$CREDENTIALS_DIRECTORY/token")"; env | grep -c secret || true'
step "echo hello | sandboxctl run --class untrusted -- cat"
echo hello | in_container sandboxctl run --class untrusted -- cat
step "sandboxctl run --class hostile -- /bin/true   (no Kata here: refused, never downgraded)"
in_container sandboxctl run --class hostile -- /bin/true || true
step "sandboxctl list --all"
in_container sandboxctl list --all
step "man sandboxctl | head"
in_container sh -c 'MANWIDTH=80 man sandboxctl 2>/dev/null | head -n 12'
