#!/usr/bin/env bash
# Builds (once) a Debian rootfs that boots a real systemd under systemd-nspawn.
# Prints the rootfs path. The cache key is the package list, so editing the
# list rebuilds it; everything else reuses the cached tree.
set -euo pipefail

CACHE=${SANDBOXD_TESTBED_CACHE:-/var/cache/sandboxd-testbed}
# man-db and bash-completion: the package's man pages and completion are tested inside;
# python3-jeepney: python3-sandboxd's dependency, for apt to install it offline.
PACKAGES=systemd,systemd-sysv,dbus,man-db,bash-completion,libpam-systemd,libnss-systemd,polkitd,iproute2,curl,python3,openssl,ca-certificates,procps,util-linux,passwd,libseccomp2,libcap2,libiniparser1,libjson-c5,libc-ares2,libhttp-parser2.9,libssl3,tinyproxy-bin,strace,python3-jeepney
BACKPORTS_PACKAGES="runsc"
# The clients of the client matrix (tests/clients): apt inside the rootfs,
# since debootstrap's resolver cannot configure npm's dependency tree.
CLIENT_PACKAGES="wget git python3-pip python3-pytest nodejs npm"
# A front people run before a worker's endpoint (tests/attacks/endpoint.sh):
# Debian's nginx and Caddy, their services disabled (the test starts each
# with docs/endpoints.md's configuration; no other test sees a web server),
# and ab as a load client.
FRONT_PACKAGES="nginx caddy apache2-utils"
key=$(printf '%s|%s|%s|%s|v3' "$PACKAGES" "$BACKPORTS_PACKAGES" "$CLIENT_PACKAGES" "$FRONT_PACKAGES" | sha256sum | cut -c1-12)
ROOTFS=$CACHE/rootfs-$key

if [ -f "$ROOTFS/.complete" ]; then
    echo "$ROOTFS"
    exit 0
fi

command -v debootstrap >/dev/null && command -v systemd-nspawn >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap systemd-container >&2
}

mkdir -p "$CACHE"
# Concurrent callers (parallel test runs, several engineers) wait for the one
# build in progress instead of racing on $ROOTFS.tmp; the lock dies with its
# holder, so a killed build does not wedge the next caller.
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
    echo "mkrootfs: another build of the testbed rootfs is running; waiting for it" >&2
    flock 9
fi
if [ -f "$ROOTFS/.complete" ]; then
    echo "$ROOTFS"
    exit 0
fi
rm -rf "$ROOTFS.tmp"
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS.tmp" "$mirror" >&2

# runsc: bookworm's own 2022 build breaks statx on current kernels (testbed.md),
# so it comes from bookworm-backports.
echo "deb $mirror bookworm-backports main" > "$ROOTFS.tmp/etc/apt/sources.list.d/backports.list"
cp /etc/resolv.conf "$ROOTFS.tmp/etc/resolv.conf"
chroot "$ROOTFS.tmp" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports $BACKPORTS_PACKAGES &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $CLIENT_PACKAGES $FRONT_PACKAGES &&
    apt-get clean" >&2
chroot "$ROOTFS.tmp" systemctl disable -q nginx.service caddy.service >&2

# A plain user for access checks; a fixed machine-id keeps boots quiet.
chroot "$ROOTFS.tmp" useradd -m -u 1500 tester >&2
: > "$ROOTFS.tmp/etc/machine-id"
systemd-machine-id-setup --root="$ROOTFS.tmp" >&2 || true
touch "$ROOTFS.tmp/.complete"
mv "$ROOTFS.tmp" "$ROOTFS"
echo "$ROOTFS"
