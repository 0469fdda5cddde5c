#!/usr/bin/env bash
# Density (issue 14): what an idle gVisor worker costs, and what sandboxd
# costs, at N workers on one host. In a throwaway test-bed container it
# starts idle standard (gVisor) workers one after another and, at each count
# of POINTS up to N, waits until all run inside gVisor, then records memory
# per worker split by part (the worker unit's cgroup; PSS and RSS of the
# launcher, runsc run, runsc events, the sentry, its systrap stubs and the
# gofer; the proxy unit when the worker has egress), sandboxd's own RSS, PSS
# and fds, and the time to ListWorkers and to create one more worker and stop
# it at that count. Then the same with egress: workers with --allow whose
# first act is one CONNECT through their proxy (so the socket-activated proxy
# runs; before a first connection a worker's egress costs no process), up to
# EGRESS_N. Prints a table and writes density.json in BENCH_OUT (default bench/results).
# A benchmark: it measures and asserts nothing about times.
#   sudo bash bench/density.sh [N] [--egress EGRESS_N] [--points "1 10 50 100"] [--samples S] [--out FILE]
#                              [--platform systrap|ptrace] [--timer-slack SPAN] [--cpu-window SECONDS]
# Defaults: N=300 (0: no plain series), EGRESS_N=N (0: none), points 1 10 50 100 200 300 (those <= N, and N),
# 3 create/stop samples per point, the configured runsc platform (systrap) and timer slack (20ms).
# At each point it also records CPU per idle worker over 10 s (--cpu-window; schedstat of each part's threads).
# An idle sentry on systrap costs CPU (a 400 us poll in runsc's systrap: about
# 3% of a core each with the kernel's timer slack, a tenth of that with the
# default 20 ms), on ptrace next to none: --platform and --timer-slack set
# [Isolation] RunscPlatform and RunscTimerSlackSec in the test bed to compare.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=300
EGRESS_N=
POINTS="1 10 50 100 200 300"
SAMPLES=3
PLATFORM=
SLACK=
OUT=${BENCH_OUT:-$SRC/bench/results}/density.json
while [ $# -gt 0 ]; do
    case $1 in
        --egress) EGRESS_N=$2; shift 2 ;;
        --points) POINTS=$2; shift 2 ;;
        --samples) SAMPLES=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --platform) PLATFORM=$2; shift 2 ;;
        --timer-slack) SLACK=$2; shift 2 ;;
        # density-measure.py, run through nsenter, finds it in its environment.
        --cpu-window) export SANDBOXD_DENSITY_CPU_WINDOW_S=$2; shift 2 ;;
        [0-9]*) N=$1; shift ;;
        *) echo "density.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
EGRESS_N=${EGRESS_N:-$N}
mkdir -p "$(dirname "$OUT")"
. "$SRC/bench/lib.sh"
STAGE=$(bench_stage "$SRC")
W=/usr/lib/sandboxd-bench
install -D -m 0755 "$SRC/bench/density-measure.py" "$STAGE$W/density-measure.py"

# Each worker holds a loop device (its disk): one per worker, and some for
# the test bed's own.
export SANDBOXD_TESTBED_LOOPS=$(( (N > EGRESS_N ? N : EGRESS_N) + 16 ))
. "$SRC/tests/testbed/testbed.sh"
NAME=bench-density-$$
testbed_boot "$NAME" "$STAGE"
ct() { testbed_exec "$NAME" "$@"; }
# Room for N workers plus the one each timing creates; workers stay idle
# for the whole run (the default idle timeout is 10 minutes).
ct sh -ec "mkdir -p /etc/sandboxd
    printf '[Limits]\nMaxWorkers=%s\n[Egress]\nFloor=*.density.test\n' $(( (N > EGRESS_N ? N : EGRESS_N) + 8 )) \
        > /etc/sandboxd/sandboxd.conf
    printf '[Isolation]\n' >> /etc/sandboxd/sandboxd.conf
    if [ -n '$PLATFORM' ]; then printf 'RunscPlatform=%s\n' '$PLATFORM' >> /etc/sandboxd/sandboxd.conf; fi
    if [ -n '$SLACK' ]; then printf 'RunscTimerSlackSec=%s\n' '$SLACK' >> /etc/sandboxd/sandboxd.conf; fi
    systemctl start sandboxd"
# A 16 MiB disk each: admission reserves a disk's whole size against the
# host's free space (no overcommit), and the test bed's 64 GiB disk root
# holds 54 default (1 GiB) ones; an idle worker's memory does not depend on
# its disk's size (a sparse image, a few blocks written).
DISK_MIB=16
IDLE=(--class standard --idle 24h --disk ${DISK_MIB}M --)
PLAIN=("${IDLE[@]}" /bin/sleep infinity)
# One CONNECT through the worker's proxy (refused: nothing resolves there),
# the connection kept open, then idle. The proxy is where HTTPS_PROXY says
# (a gVisor worker's is across its veth, not on its loopback).
EGRESS=(--class standard --idle 24h --disk ${DISK_MIB}M --allow a.density.test -- /bin/bash -c
    'p=${HTTPS_PROXY#http://}; p=${p%/}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}"; printf "CONNECT a.density.test:443 HTTP/1.1\r\nHost: a.density.test:443\r\n\r\n" >&3; exec sleep infinity')

tmp=$(mktemp -d)
testbed_on_exit "rm -rf '$tmp'"
ct "$W/density-measure.py" snapshot empty > "$tmp/empty.json"
bench_machine > "$tmp/machine.json"
# Not "| head -n1": runsc may still write when head has gone (SIGPIPE, and pipefail).
ct runsc --version > "$tmp/runsc-version.all"
sed -n 1p "$tmp/runsc-version.all" > "$tmp/runsc-version"
echo "${PLATFORM:-systrap}" > "$tmp/platform"
echo "${SLACK:-20ms}" > "$tmp/timer-slack"
echo $((DISK_MIB << 20)) > "$tmp/disk-bytes"

series() {   # NAME MAX ARGV...
    local name=$1 max=$2 count=0 t0 point
    shift 2
    local points
    # shellcheck disable=SC2086  # POINTS is a list of words
    points=$(printf '%s\n' $POINTS "$max" | awk -v m="$max" '$1 <= m' | sort -n | uniq)
    : > "$tmp/$name.jsonl"
    for point in $points; do
        t0=$(date +%s%N)
        while [ $count -lt "$point" ]; do
            if ! ct sandboxctl create "$@" > "$tmp/create.out" 2>&1; then
                # Where the host gives out is a result too: measure there.
                echo "density: $name: creating worker $((count + 1)) failed: $(cat "$tmp/create.out")" >&2
                echo "{\"series\": \"$name\", \"workers\": $count, \"error\": $(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip()))' "$tmp/create.out")}" \
                    >> "$tmp/failures.jsonl"
                point=$count
                break
            fi
            count=$((count + 1))
        done
        echo "density: $name: $count workers ($(( ($(date +%s%N) - t0) / 1000000 )) ms to start the last $((point - ${prev:-0})))" >&2
        ct "$W/density-measure.py" ready "$count" 900 || echo "density: $name: measuring with fewer running" >&2
        ct "$W/density-measure.py" snapshot "$name" > "$tmp/snap.json"
        ct "$W/density-measure.py" ops "$SAMPLES" "$@" > "$tmp/ops.json"
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["ops"]=json.load(open(sys.argv[2])); print(json.dumps(s))' \
            "$tmp/snap.json" "$tmp/ops.json" >> "$tmp/$name.jsonl"
        prev=$point
        [ -s "$tmp/failures.jsonl" ] && grep -q "\"$name\"" "$tmp/failures.jsonl" && break
    done
    prev=0
    # Every worker stopped at once; wait until all are gone.
    # shellcheck disable=SC2016  # expanded by the container's shell
    ct sh -c 'sandboxctl list --no-legend | awk "{print \$1}" | xargs -r -n 50 -P 1 sh -c "for i; do sandboxctl stop \$i; done" _' >/dev/null
    # The warm pool's waiting sandboxes (and their proxy sockets) are
    # sandbox-* units too: gone means no worker listed and no other unit.
    for _ in $(seq 2400); do
        [ -z "$(ct sandboxctl list --no-legend)" ] && [ -z "$(worker_units)" ] && return 0
        sleep 0.25
    done
    echo "density: $name: workers still there 10 minutes after they were stopped:" >&2
    ct sandboxctl list --no-legend >&2
    ct systemctl list-units --no-legend --plain 'sandbox-*' >&2
    # Recorded, and the next series still runs: what is left is a result too.
    echo "{\"series\": \"$name\", \"workers\": $count, \"stage\": \"stop\", \"error\": \"workers still there 10 minutes after they were stopped\"}" \
        >> "$tmp/failures.jsonl"
}
worker_units() {
    ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*' |
        awk '/sandboxd pool sandbox/ { w[substr($1, 9, 12)] = 1 } { u[NR] = $1 }
             END { for (i in u) if (!(substr(u[i], 9, 12) in w)) print u[i] }'
}
prev=0
if [ "$N" -gt 0 ]; then series plain "$N" "${PLAIN[@]}"; fi
if [ "$EGRESS_N" -gt 0 ]; then series egress "$EGRESS_N" "${EGRESS[@]}"; fi

python3 "$SRC/bench/density-report.py" "$tmp" "$OUT"
