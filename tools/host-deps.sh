# shellcheck shell=bash
# What a fresh Debian 12 host needs to build sandboxd and boot its test bed,
# installed with apt where missing: debian/control's Build-Depends (read from
# the file itself, so no list here can drift from it) and the packages the
# caller names. The demo, tests/run-all.sh and bench/run.sh source it.
#
#   host_deps_install SRC [--nocheck] [PACKAGE...]
#       --nocheck   the build profile without the package's tests (the demo)
# Returns non-zero, having said what is missing, when not root.

host_deps_missing() {
    local src=$1 profile=$2 p
    shift 2
    for p in dpkg-dev "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
    if command -v dpkg-checkbuilddeps >/dev/null; then
        (cd "$src" && dpkg-checkbuilddeps ${profile:+-P "$profile"} >/dev/null 2>&1) || echo "debian/control's-Build-Depends"
    fi
}

host_deps_install() {
    local src=$1 profile='' missing
    shift
    if [ "${1-}" = --nocheck ]; then
        profile=nocheck
        shift
    fi
    missing=$(host_deps_missing "$src" "$profile" "$@" | tr '\n' ' ')
    [ -n "$missing" ] || return 0
    if [ "$(id -u)" != 0 ]; then
        echo "host-deps: missing (install them as root): $missing" >&2
        return 1
    fi
    echo "host-deps: installing $missing" >&2
    # A fresh machine's package lists may be empty or stale.
    apt-get update -q >&2 || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q dpkg-dev "$@" >&2 || return 1
    (cd "$src" && DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q ${profile:+-P "$profile"} ./) >&2
}
