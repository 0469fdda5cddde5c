#!/usr/bin/env bash
# Egress proxy benchmark, in one run inside a booted testbed container:
# sandbox-egress (socket-activated, DynamicUser, seccomp on, as in
# production) against the same transfer done directly and through tinyproxy
# configured as a plain CONNECT proxy. The upstream sits in a network
# namespace of its own behind a veth (tests/testbed/upstream-netns.sh), at an
# ordinary unicast address: the proxy refuses the host's own addresses and
# the documentation ranges, so an upstream on the container's loopback is
# unreachable through it by design. Direct and proxied runs cross the same
# veth. Every connection carries a real TLS
# ClientHello so sandbox-egress runs its full check path. The client and the
# upstream are egress-load.c (compiled here with cc): on a 2-vCPU test bed the
# Python ones took most of the
# CPU the proxies need, and set the pace of every column. The ClientHello it
# replays comes from tests/egress/egress-client.py.
#
#   bench.sh LEADER_PID STAGE_DIR [JSON_OUT] [--quick|--cost]
#
# Prints a table and writes JSON (default /tmp/egress-bench.json): the median
# over EGRESS_BENCH_ROUNDS rounds (default 5, 1 with --quick) of each number,
# ratios and differences to direct taken within each round, and every
# round's raw numbers under "rounds".
# EGRESS_BENCH_BASE=FILE: a second sandbox-egress binary (say, built from
# the commit before a change) as a fourth column, sandbox-egress-base, on
# 127.0.0.1:3130 with the same unit properties.
# --cost: instead of the rounds, what does not depend on the scheduler as
# much: CPU time per tunnel of each proxy and of journald (utime + stime of
# the process, every thread included, over 3000 sequential tunnels and
# over a 3 s rate test with 4 client threads), and system calls per tunnel
# (strace -c -f over 1000 sequential tunnels, a pass of its own), each the
# median of EGRESS_BENCH_ROUNDS (default 3) rounds, the columns alternating.
# EGRESS_BENCH_TRACE=DIR (with a sandbox-egress built -Degress_trace=true):
# the proxy's per-tunnel phase timestamps and the latency client's samples
# with their start times are copied to DIR (bench/egress/trace-report.py
# matches them up).
# Not a test: it asserts nothing, it measures. Goals (issue 14): throughput
# ratio >= 0.95 of direct, added connect latency p50 < 200 us and p99 < 1 ms,
# tunnels/s >= 2x tinyproxy.
set -eu

if [ "${1:-}" != "--inside" ]; then
    PID=${1:?usage: $0 LEADER_PID STAGE_DIR [JSON_OUT] [--quick]}
    STAGE=${2:?usage: $0 LEADER_PID STAGE_DIR [JSON_OUT] [--quick]}
    OUT=${3:-/tmp/egress-bench.json}
    QUICK=${4:-}
    case "$OUT" in --quick|--cost) QUICK=$OUT; OUT=/tmp/egress-bench.json ;; esac
    HERE=$(dirname "$(readlink -f "$0")")
    BIN=$(find "$STAGE" -path '*/sandboxd/sandbox-egress' -type f | head -n1)
    [ -n "$BIN" ] || { echo "no sandbox-egress under $STAGE" >&2; exit 1; }
    ct() { nsenter -t "$PID" -a "$@"; }
    LOAD=$(mktemp -d)/egress-load
    cc -std=gnu11 -O2 -pthread -o "$LOAD" "$HERE/egress-load.c"
    ct mkdir -p /run/egress-bench /usr/libexec/sandboxd
    ct sh -c 'cat > /usr/libexec/sandboxd/sandbox-egress.new && chmod 755 /usr/libexec/sandboxd/sandbox-egress.new &&
              mv /usr/libexec/sandboxd/sandbox-egress.new /usr/libexec/sandboxd/sandbox-egress' < "$BIN"
    ct rm -f /usr/libexec/sandboxd/sandbox-egress-base
    if [ -n "${EGRESS_BENCH_BASE:-}" ]; then
        ct sh -c 'cat > /usr/libexec/sandboxd/sandbox-egress-base && chmod 755 /usr/libexec/sandboxd/sandbox-egress-base' \
            < "$EGRESS_BENCH_BASE"
    fi
    # egress-client.py imports tls_hello, its neighbour.
    for f in "$HERE/../../tests/egress/egress-client.py" "$HERE/../../tests/egress/tls_hello.py" \
             "$HERE/../../tests/testbed/upstream-netns.sh" \
             "$HERE/bench.sh" "$LOAD"; do
        ct sh -c "cat > /run/egress-bench/${f##*/} && chmod 755 /run/egress-bench/${f##*/}" < "$f"
    done
    rm -rf "$(dirname "$LOAD")"
    ct /run/egress-bench/bench.sh --inside "$QUICK" > "$OUT.tmp"
    if [ "$QUICK" = --cost ]; then
        python3 - "$OUT.tmp" "$OUT" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["cpu_us_per_tunnel_seq", "journald_cpu_us_per_tunnel_seq", "cpu_us_per_tunnel_rate",
        "journald_cpu_us_per_tunnel_rate", "client_cpu_us_per_tunnel_rate", "upstream_cpu_us_per_tunnel_rate",
        "tunnels_per_s", "syscalls_per_tunnel"]
cols = [c for c in ("sandbox-egress", "sandbox-egress-base", "tinyproxy") if c in r]
print(f"{'':34}" + "".join(f"{c:>20}" for c in cols))
for k in keys:
    print(f"{k:34}" + "".join(f"{r[c][k]:>20.1f}" for c in cols))
print(f"# {r['params']}")
json.dump(r, open(sys.argv[2], "w"), indent=2)
print(f"# JSON written to {sys.argv[2]}")
EOF
        rm -f "$OUT.tmp"
        exit 0
    fi
    if [ -n "${EGRESS_BENCH_TRACE:-}" ]; then
        mkdir -p "$EGRESS_BENCH_TRACE"
        ct tar -C /run/egress-bench/trace -c . | tar -x -C "$EGRESS_BENCH_TRACE"
    fi
    python3 - "$OUT.tmp" "$OUT" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = [
    ("throughput MB/s", "throughput_bps", 1e-6),
    ("throughput ratio vs direct", "throughput_ratio", 1),
    ("connect latency p50 us", "latency_p50_us", 1),
    ("connect latency p99 us", "latency_p99_us", 1),
    ("added latency p50 us", "added_latency_p50_us", 1),
    ("added latency p99 us", "added_latency_p99_us", 1),
    ("tunnels/s", "tunnels_per_s", 1),
    ("tunnels/s ratio vs tinyproxy", "tunnels_ratio_vs_tinyproxy", 1),
    ("proxy CPU ms per GiB", "cpu_ms_per_gib", 1),
    ("proxy CPU ms per 1000 tunnels", "cpu_ms_per_1000_tunnels", 1),
]
cols = [c for c in ("direct", "sandbox-egress", "tinyproxy", "sandbox-egress-base") if c in r]
print(f"{'':28}" + "".join(f"{c:>16}" for c in cols))
for label, key, scale in rows:
    cells = []
    for c in cols:
        v = r[c].get(key)
        cells.append(f"{'-':>16}" if v is None else f"{v * scale:>16.2f}" if isinstance(v, float) else f"{int(v * scale):>16}")
    print(f"{label:28}" + "".join(cells))
for goal, met in r["goals"].items():
    print(f"# goal {goal}: {'met' if met else 'MISSED'}")
print(f"# {r['params']}")
json.dump(r, open(sys.argv[2], "w"), indent=2)
print(f"# JSON written to {sys.argv[2]}")
EOF
    rm -f "$OUT.tmp"
    exit 0
fi

# ---------------------------------------------------------------- inside
B=/run/egress-bench
BYTES=$((512 * 1024 * 1024)); REPEAT=5; PINGS=2000; SECONDS_RATE=5; PROCS=4; ROUNDS=${EGRESS_BENCH_ROUNDS:-5}
if [ "${2:-}" = --cost ]; then BYTES=$((1024 * 1024)); ROUNDS=${EGRESS_BENCH_ROUNDS:-3}; fi
if [ "${2:-}" = --quick ]; then BYTES=$((64 * 1024 * 1024)); REPEAT=3; PINGS=300; SECONDS_RATE=2; ROUNDS=${EGRESS_BENCH_ROUNDS:-1}; fi
TARGET_BULK=bench.egress.test:8443
TARGET_PING=bench.egress.test:8444
UP=11.0.0.10

cleanup() {
    for u in egress-bench-up.service egress-bench-proxy.socket egress-bench-proxy.service egress-bench-base.socket \
             egress-bench-base.service egress-bench-tinyproxy.service; do
        systemctl stop "$u" 2>/dev/null || true
    done
    systemctl reset-failed 'egress-bench-*' 2>/dev/null || true
    [ -f /etc/hosts ] && sed -i '/# egress-bench$/d' /etc/hosts
    $B/upstream-netns.sh down
    rm -f /dev/shm/egress-bench-payload
}
cleanup
trap cleanup EXIT

ip link set lo up
$B/upstream-netns.sh up $UP
echo "$UP bench.egress.test # egress-bench" >> /etc/hosts
cat > $B/policy.json <<'EOF'
{ "worker_id": "bench", "allow": ["bench.egress.test:8443", "bench.egress.test:8444"], "max_tunnels": 4096 }
EOF
cat > $B/tinyproxy.conf <<'EOF'
User nobody
Group nogroup
Port 3129
Listen 127.0.0.1
Timeout 600
MaxClients 1024
Allow 127.0.0.1
ConnectPort 8443
ConnectPort 8444
LogLevel Critical
EOF
python3 $B/egress-client.py --target bench.egress.test:443 --hello-out $B/hello.bin
systemd-run -q --unit=egress-bench-up -p NetworkNamespacePath=/run/netns/upstream \
    $B/egress-load server $UP 8443 8444 "$BYTES" $B/hello.bin
# As sandboxd's unit has it (daemon/systemd/egress-units.c): every entry kept, not
# dropped by journald's rate limit once the rate test passes 10000 entries,
# and systemd's system call filter in front of the proxy's own.
TRACE_PROPS=()
if [ -n "${EGRESS_BENCH_TRACE:-}" ]; then
    rm -rf $B/trace
    mkdir -m 1777 $B/trace
    TRACE_PROPS=(-E SANDBOX_EGRESS_TRACE=$B/trace/proxy.trace -p ReadWritePaths=$B/trace)
fi
start_proxy() {   # UNIT PORT BINARY [PROPERTY...]
    local unit=$1 port=$2 bin=$3
    shift 3
    systemd-run -q --unit="$unit" --socket-property=ListenStream=127.0.0.1:"$port" "$@" \
        -p DynamicUser=yes -p LoadCredential=egress-policy:$B/policy.json -p LogRateLimitIntervalSec=0 \
        -p SystemCallArchitectures=native -p "SystemCallFilter=@system-service seccomp" \
        -p "SystemCallFilter=~@privileged @resources" -p SystemCallErrorNumber=EPERM \
        "$bin"
}
start_proxy egress-bench-proxy 3128 /usr/libexec/sandboxd/sandbox-egress "${TRACE_PROPS[@]}"
COLS="direct:direct sandbox-egress:127.0.0.1:3128 tinyproxy:127.0.0.1:3129"
if [ -x /usr/libexec/sandboxd/sandbox-egress-base ]; then
    start_proxy egress-bench-base 3130 /usr/libexec/sandboxd/sandbox-egress-base
    COLS="$COLS sandbox-egress-base:127.0.0.1:3130"
fi
systemd-run -q --unit=egress-bench-tinyproxy /usr/bin/tinyproxy -d -c $B/tinyproxy.conf
for i in $(seq 100); do
    [ -f /dev/shm/egress-bench-payload ] && [ "$(stat -c %s /dev/shm/egress-bench-payload)" = "$BYTES" ] &&
        python3 -c 'import socket; [socket.create_connection(a).close() for a in (("'$UP'", 8444), ("127.0.0.1", 3129))]' 2>/dev/null &&
        break
    sleep 0.2
done

# Each round measures one metric for the three columns back to back, the
# column that goes first rotating from round to round, so that the load of
# a shared machine falls on all three alike; ratios and differences are
# taken within a round, and the table shows the median over the rounds.
rotated() {   # ROUND: the columns, starting at ROUND mod their number
    local -a c=($COLS)
    for k in "${!c[@]}"; do echo "${c[$(((k + $1) % ${#c[@]}))]}"; done
}

main_pid() {   # COLUMN: the PID of its proxy (sandbox-egress: started by the first connection)
    case $1 in
        sandbox-egress) systemctl show -P MainPID egress-bench-proxy.service ;;
        sandbox-egress-base) systemctl show -P MainPID egress-bench-base.service ;;
        tinyproxy) systemctl show -P MainPID egress-bench-tinyproxy.service ;;
    esac
}
# utime + stime in clock ticks: every thread, the exited ones too (0 for direct).
ticks() { [ "${1:-0}" -gt 0 ] 2>/dev/null && awk '{ print $14 + $15 }' "/proc/$1/stat" || echo 0; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
if [ "${2:-}" = --cost ]; then
    JOURNALD=$(systemctl show -P MainPID systemd-journald.service)
    UPSTREAM=$(systemctl show -P MainPID egress-bench-up.service)
    SEQ=3000; STRACED=1000; RATE_S=3
    for round in $(seq "$ROUNDS"); do
        for col in $(rotated "$round"); do
            name=${col%%:*} via=${col#*:}
            [ "$name" = direct ] && continue
            $B/egress-load latency "$via" $TARGET_PING 50 $B/hello.bin > /dev/null
            pid=$(main_pid "$name")
            p0=$(ticks "$pid") j0=$(ticks "$JOURNALD")
            $B/egress-load latency "$via" $TARGET_PING $SEQ $B/hello.bin > /dev/null
            p1=$(ticks "$pid") j1=$(ticks "$JOURNALD")
            echo "$round $name cpu_us_per_tunnel_seq $(((p1 - p0) * TICK_US / SEQ))"
            echo "$round $name journald_cpu_us_per_tunnel_seq $(((j1 - j0) * TICK_US / SEQ))"
            p0=$(ticks "$pid") j0=$(ticks "$JOURNALD") u0=$(ticks "$UPSTREAM")
            rate=$(EGRESS_LOAD_CPU=$B/client-cpu $B/egress-load rate "$via" $TARGET_PING $RATE_S $PROCS $B/hello.bin)
            p1=$(ticks "$pid") j1=$(ticks "$JOURNALD") u1=$(ticks "$UPSTREAM")
            n=$((rate * RATE_S))
            echo "$round $name tunnels_per_s $rate"
            echo "$round $name cpu_us_per_tunnel_rate $(((p1 - p0) * TICK_US / n))"
            echo "$round $name journald_cpu_us_per_tunnel_rate $(((j1 - j0) * TICK_US / n))"
            # The bench's own share of the two CPUs, the same whichever proxy
            # is in between: what is left of them bounds any proxy's rate.
            echo "$round $name client_cpu_us_per_tunnel_rate $(($(cat $B/client-cpu) / n))"
            echo "$round $name upstream_cpu_us_per_tunnel_rate $(((u1 - u0) * TICK_US / n))"
            strace -c -f -o $B/strace-$name -p "$pid" 2> /dev/null &
            st=$!
            # Until strace holds the process, its calls would go uncounted.
            for i in $(seq 100); do
                [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$pid/status")" != 0 ] && break
                sleep 0.05
            done
            $B/egress-load latency "$via" $TARGET_PING $STRACED $B/hello.bin > /dev/null
            kill -INT $st
            wait $st || true
            # egress-load's 20 warm-up tunnels are inside the window too.
            awk -v r="$round" -v c="$name" -v n=$((STRACED + 20)) '
                $NF == "total" { printf "%s %s syscalls_per_tunnel %.1f\n", r, c, $4 / n }
                $1 ~ /^[0-9.]+$/ && $NF != "total" { printf "%s %s syscall:%s %.2f\n", r, c, $NF, $4 / n }' \
                $B/strace-$name
        done
    done > $B/cost.txt
    python3 - $B/cost.txt "seq=$SEQ straced=$STRACED rate_seconds=$RATE_S threads=$PROCS rounds=$ROUNDS cpus=$(nproc) tick_us=$TICK_US" <<'PY'
import json, statistics, sys
vals = {}
for line in open(sys.argv[1]):
    rnd, col, key, value = line.split()
    vals.setdefault(col, {}).setdefault(key, []).append(float(value))
out = {}
for col, keys in vals.items():
    out[col] = {k: statistics.median(v) for k, v in keys.items() if not k.startswith("syscall:")}
    out[col]["syscalls"] = {k[8:]: statistics.median(v) for k, v in sorted(keys.items()) if k.startswith("syscall:")}
    out[col]["rounds"] = {k: v for k, v in keys.items() if not k.startswith("syscall:")}
out["params"] = sys.argv[2]
json.dump(out, sys.stdout)
PY
    exit 0
fi
# EGRESS_BENCH_PIN=1: the proxy (every thread, tinyproxy's too) on CPU 1,
# the client and the upstream on CPU 0, so that on two cores they do not
# take turns on one; direct then has one CPU for its two ends as well.
PIN_CLIENT=()
if [ -n "${EGRESS_BENCH_PIN:-}" ]; then
    PIN_CLIENT=(taskset -c 0)
    taskset -a -c -p 0 "$(systemctl show -P MainPID egress-bench-up.service)" >/dev/null
fi
pin_proxy() {   # COLUMN
    local pid
    [ -n "${EGRESS_BENCH_PIN:-}" ] || return 0
    pid=$(main_pid "$1")
    [ "${pid:-0}" -gt 0 ] && taskset -a -c -p 1 "$pid" >/dev/null
    return 0
}
# Every proxy running before the first measure (sandbox-egress is
# socket-activated): its PID is known, to pin it and to count its CPU.
for col in $COLS; do
    [ "${col%%:*}" = direct ] || $B/egress-load latency "${col#*:}" $TARGET_PING 5 $B/hello.bin > /dev/null
done
# The proxy's CPU over each measure (the proxies' own utime + stime, which
# do not depend on who else runs): per GiB moved and per 1,000 tunnels.
for round in $(seq "$ROUNDS"); do
    for col in $(rotated "$round"); do
        name=${col%%:*}
        pin_proxy "$name"
        c0=$(ticks "$(main_pid "$name")")
        tp=$("${PIN_CLIENT[@]}" $B/egress-load throughput "${col#*:}" $TARGET_BULK "$BYTES" "$REPEAT" $B/hello.bin)
        c1=$(ticks "$(main_pid "$name")")
        echo "$round $name throughput_bps $tp"
        # throughput moves BYTES REPEAT times
        [ "$name" = direct ] || echo "$round $name cpu_ms_per_gib $(((c1 - c0) * TICK_US / 1000 * 1073741824 / (BYTES * REPEAT)))"
    done
    for col in $(rotated "$round"); do
        pin_proxy "${col%%:*}"
        lat=$(env EGRESS_LOAD_SAMPLES=$B/samples-${col%%:*}-$round \
              ${EGRESS_BENCH_TRACE:+EGRESS_LOAD_TRACE=$B/trace/client-${col%%:*}-$round} \
              "${PIN_CLIENT[@]}" $B/egress-load latency "${col#*:}" $TARGET_PING "$PINGS" $B/hello.bin)
        echo "$round ${col%%:*} latency_p50_us ${lat% *}"
        echo "$round ${col%%:*} latency_p99_us ${lat#* }"
    done
    for col in $(rotated "$round"); do
        name=${col%%:*}
        pin_proxy "$name"
        c0=$(ticks "$(main_pid "$name")")
        rate=$("${PIN_CLIENT[@]}" $B/egress-load rate "${col#*:}" $TARGET_PING "$SECONDS_RATE" "$PROCS" $B/hello.bin)
        c1=$(ticks "$(main_pid "$name")")
        echo "$round $name tunnels_per_s $rate"
        n=$((rate * SECONDS_RATE))
        [ "$name" = direct ] || [ "$n" = 0 ] || echo "$round $name cpu_ms_per_1000_tunnels $(((c1 - c0) * TICK_US * 1000 / 1000 / n))"
    done
done > $B/samples.txt
python3 - $B/samples.txt "bytes=$BYTES repeat=$REPEAT pings=$PINGS rate_seconds=$SECONDS_RATE client=egress-load threads=$PROCS rounds=$ROUNDS cpus=$(nproc) pinned=${EGRESS_BENCH_PIN:-0}" $B <<'PY'
import json, statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    rnd, col, key, value = line.split()
    rounds.setdefault(int(rnd), {}).setdefault(col, {})[key] = int(value)
def per_round(f):
    return [f(r) for _, r in sorted(rounds.items())]
def median(values):
    m = statistics.median(values)
    return m if isinstance(m, int) or m != int(m) else int(m)
out = {}
for col in [c for c in ("direct", "sandbox-egress", "tinyproxy", "sandbox-egress-base") if c in rounds[1]]:
    keys = ("throughput_bps", "latency_p50_us", "latency_p99_us", "tunnels_per_s", "cpu_ms_per_gib",
            "cpu_ms_per_1000_tunnels")
    x = {k: median(per_round(lambda r: r[col][k])) for k in keys if k in rounds[1][col]}
    if col != "direct":
        x["throughput_ratio"] = round(median(per_round(
            lambda r: r[col]["throughput_bps"] / r["direct"]["throughput_bps"])), 3)
        for k in ("latency_p50_us", "latency_p99_us"):
            x["added_" + k] = median(per_round(lambda r: r[col][k] - r["direct"][k]))
    # Every sample of every round, for the distributions bench/run.sh draws.
    x["latency_samples_us"] = sorted(int(v) for rnd in sorted(rounds)
                                     for v in open(f"{sys.argv[3]}/samples-{col}-{rnd}"))
    out[col] = x
for col in [c for c in ("sandbox-egress", "sandbox-egress-base") if c in out]:
    out[col]["tunnels_ratio_vs_tinyproxy"] = round(median(per_round(
        lambda r: r[col]["tunnels_per_s"] / r["tinyproxy"]["tunnels_per_s"])), 3)
e = out["sandbox-egress"]
out["goals"] = {
    "throughput_ratio >= 0.95": e["throughput_ratio"] >= 0.95,
    "added_latency_p50_us < 200": e["added_latency_p50_us"] < 200,
    "added_latency_p99_us < 1000": e["added_latency_p99_us"] < 1000,
    "tunnels_per_s >= 2x tinyproxy": e["tunnels_ratio_vs_tinyproxy"] >= 2,
}
out["rounds"] = [r for _, r in sorted(rounds.items())]
out["params"] = sys.argv[2]
json.dump(out, sys.stdout)
PY
