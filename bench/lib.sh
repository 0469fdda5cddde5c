# shellcheck shell=bash
# Helpers shared by the bench scripts that boot a test bed. Source it.
#   bench_stage SRC       build SRC/build-bench (no tests) and stage an install
#                         in SRC/build-bench/stage; prints the stage directory
#   bench_machine         one line about the machine a run was made on (CPU
#                         model, cores, memory, kernel, load), as JSON

bench_stage() {
    local src=$1 build=$1/build-bench
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
