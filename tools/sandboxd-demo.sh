#!/usr/bin/env bash
# The main job, on any Debian 12 machine: build sandboxd, install it into a
# throwaway systemd container (this host's PID 1 need not be systemd), start
# the daemon and run conversation workers through sandboxctl.
#
#   sudo bash tools/sandboxd-demo.sh                    the guided demo below
#   sudo bash tools/sandboxd-demo.sh -- CMD [ARGS...]   run CMD in the container instead,
#        e.g. -- sandboxctl run --class standard -- /bin/sh -c 'uname -a; id'
#
# On a host that does boot systemd, install for real instead:
#   meson setup build --prefix=/usr --sysconfdir=/etc --localstatedir=/var
#   ninja -C build && sudo meson install -C build && sudo systemctl start sandboxd
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$SRC"
[ "$(id -u)" = 0 ] || { echo "sandboxd-demo: run as root (it boots a container)" >&2; exit 1; }

DEPS="meson ninja-build pkg-config gcc libsystemd-dev libseccomp-dev libcap-dev libiniparser-dev
      libcmocka-dev libjson-c-dev libc-ares-dev libhttp-parser-dev systemd-container debootstrap"
missing=$(for p in $DEPS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
fi

BUILD=$SRC/build-demo
STAGE=$BUILD/stage
[ -d "$BUILD" ] || meson setup "$BUILD" --prefix=/usr --sysconfdir=/etc --localstatedir=/var -Dtests=false >/dev/null
ninja -C "$BUILD" >/dev/null
rm -rf "$STAGE"
DESTDIR=$STAGE meson install -C "$BUILD" --quiet >/dev/null

# shellcheck source=../tests/testbed/testbed.sh
. "$SRC/tests/testbed/testbed.sh"
NAME=sandboxd-demo-$$
testbed_boot "$NAME" "$STAGE"
in_container() { testbed_exec "$NAME" "$@"; }
in_container systemctl start sandboxd

if [ "${1:-}" = "--" ]; then
    shift
    in_container "$@"
    exit $?
fi

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
step sandboxctl preflight
in_container sandboxctl preflight
step "sandboxctl run --class trusted -- /bin/sh -c 'id; echo HOME=\$HOME; ls -ld \$HOME'"
in_container sandboxctl run --class trusted -- /bin/sh -c 'id; echo HOME=$HOME; ls -ld "$HOME"/.'
step "sandboxctl run --class standard -- /bin/sh -c 'cat /proc/version; id'   (under gVisor)"
in_container sandboxctl run --class standard -- /bin/sh -c 'cat /proc/version; id'
step "printf 'a secret\n' > /root/token; sandboxctl run --class trusted --credential token:/root/token -- ..."
in_container sh -c 'printf "a secret\n" > /root/token && chmod 600 /root/token'
in_container sandboxctl run --class trusted --credential token:/root/token -- \
    /bin/sh -c 'echo "credential: $(cat "$CREDENTIALS_DIRECTORY/token")"; env | grep -c secret || true'
step "echo hello | sandboxctl run --class untrusted -- /bin/cat"
echo hello | in_container sandboxctl run --class untrusted -- /bin/cat
step "sandboxctl run --class hostile -- /bin/true   (no Kata here: refused, never downgraded)"
in_container sandboxctl run --class hostile -- /bin/true || true
step "sandboxctl list"
in_container sandboxctl list
