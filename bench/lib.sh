# shellcheck shell=bash
# Helpers shared by the bench scripts that boot a test bed. Source it.
#   bench_stage SRC       install what a fresh host lacks to build (apt), build
#                         SRC/build-bench (no tests) and stage an install in
#                         SRC/build-bench/stage; prints the stage directory
#   bench_machine         one line about the machine a run was made on (CPU
#                         model, cores, memory, kernel, load), as JSON

bench_stage() {
    local build
    # shellcheck source=tools/host-deps.sh
    . "$1/tools/host-deps.sh"
    host_deps_install "$1" --nocheck gcc python3 systemd-container debootstrap || return 1
    build=$(cd "$1" && pwd)/build-bench
    [ -d "$build" ] || meson setup "$build" --prefix=/usr --sysconfdir=/etc --localstatedir=/var -Dtests=false >/dev/null
    ninja -C "$build" >/dev/null
    rm -rf "$build/stage"
    DESTDIR=$build/stage meson install -C "$build" --quiet >/dev/null
    echo "$build/stage"
}

bench_machine() {
    python3 - "$(runsc --version 2>/dev/null | head -n1 || true)" <<'PY'
import json, os, platform, sys
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
print(json.dumps({"cpu": cpu, "cores": os.cpu_count(), "mem_gib": round(mem / 2**20, 1),
                  "kernel": platform.release(), "loadavg": open("/proc/loadavg").read().split()[:3],
                  "runsc_host": sys.argv[1] or None}))
PY
}

# Prints the path of the integration tests' channel client in BUILD, built
# by hand where BUILD was configured without tests (as bench_stage does).
bench_sbx_channel() {
    local build=$1 src=$2 out=$1/tests/integration/sbx-channel
    if [ ! -x "$out" ]; then
        out=$build/sbx-channel
        # shellcheck disable=SC2046  # pkg-config's flags are separate words
        cc -std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -o "$out" "$src/tests/integration/sbx-channel.c" \
            $(pkg-config --cflags --libs libsystemd) || return 1
    fi
    echo "$out"
}
