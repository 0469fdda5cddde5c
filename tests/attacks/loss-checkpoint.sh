#!/usr/bin/env bash
# The loss-* attacks on the checkpoint path (issue 22, item 7): runsc
# 0.0~20240729 cannot save a TCP endpoint in SYN-SENT or SYN-RECV ("encoding
# error: runtime error: invalid memory address or nil pointer dereference")
# and some of those failures end the sandbox: the worker was lost. A gVisor
# worker keeps handshakes in flight, outbound to its egress proxy across the
# veth and inbound on its own loopback (loss-checkpoint-work.py), and is
# suspended and resumed CYCLES times (default 20); no cycle may fail and the
# worker's in-memory counter must count on after each resume. The launcher
# lets the handshakes end before each checkpoint (daemon/runtime/
# launch-suspend.c). bench/checkpoint-handshakes.sh runs this with
# CYCLES=200 and RESULT_FILE set (one line per cycle: N RESULT SECONDS
# RETRIES; RESULT_FILE.quiesce: the launcher's waits) and, on the old build,
# CONTINUE_AFTER_LOSS=1 (a new worker after each loss, to count them).
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/lib-attacks.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${CYCLES:-20}
W=/etc/sbx-ckpt-it
CONF=/etc/sandboxd/sandboxd.conf
HOST=api.ckpt-it.test

ATTACKS='
loss-checkpoint-control|standard|(control) a gVisor worker with egress opens connections to its proxy and to itself, over and over|both succeed, thousands of times: the handshakes the attack needs are in flight
loss-checkpoint-handshakes|standard|suspend and resume that worker '"$CYCLES"' times while it keeps opening connections|no worker lost, no suspend fails, the counter counts on after every resume and its connections work again
loss-checkpoint-memory|standard|the save'"'"'s memory: runsc builds the sandbox'"'"'s whole state in the sentry'"'"'s heap, charged to the worker'"'"'s unit, and that state grows with every cycle (the 200-cycle run was OOM-killed at its 87th)|while each checkpoint runs the unit may use [Suspend] CheckpointExtraMemory (1G) beyond its MemoryMax; the resumed unit has its MemoryMax again
'
atk_load_table

cleanup() {
    ct sh -c "[ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $W; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct mkdir -p "$W"
cat "$SRC/tests/attacks/loss-checkpoint-work.py" > "/proc/$CT_PID/root$W/work.py"
ct sh -ec "chmod -R a+rX $W; cp $CONF $CONF.orig
           printf '[Egress]\nFloor=*.ckpt-it.test\n' > $CONF; systemctl restart sandboxd"
check "setup: sandboxd is back with the test's floor" wait_until 30 ct busctl --system status org.sandboxd1

log_of() { sbx_home_cat "$1" log; }
# The last line's fields: COUNTER OUT_OK OUT_FAILED LO_OK LO_FAILED.
last_fields() { log_of "$1" | tail -n1 | sed -n 's#^\([0-9]*\) out=\([0-9]*\)/\([0-9]*\) lo=\([0-9]*\)/\([0-9]*\)$#\1 \2 \3 \4 \5#p'; }
busy() {
    local f
    read -r -a f <<<"$(last_fields "$WID")"
    [ "${#f[@]}" = 5 ] && [ "${f[1]}" -ge 200 ] && [ "${f[3]}" -ge 200 ]
}
# Counting on from where it was (counter just past LAST, no restart) and
# new connections to the proxy succeed (more than OUT_OK).
resumed_ok() {
    local f
    read -r -a f <<<"$(last_fields "$WID")"
    [ "${#f[@]}" = 5 ] && [ "${f[0]}" -gt "$1" ] && [ "${f[1]}" -gt "$2" ]
}
# A restart from scratch would count from 1 again: every line of the log is
# within three of the one before it (a line the restored process writes
# again is no restart) ("" when so, else the first jump).
log_jumps() {
    log_of "$WID" | awk 'NR > 1 && ($1 < prev - 3 || $1 > prev + 3) { print prev " -> " $1; exit } { prev = $1 }'
}
# The worker unit's memory cgroup (v1, as in the test bed, or v2), read
# from the host through the container's root: DIR, LIMIT and PEAK files.
cg_files() {
    local v1=/proc/$CT_PID/root/sys/fs/cgroup/memory/sandbox.slice/sandbox-$1.service
    local v2=/proc/$CT_PID/root/sys/fs/cgroup/sandbox.slice/sandbox-$1.service
    if [ -e "$v1/memory.limit_in_bytes" ] || [ -d "/proc/$CT_PID/root/sys/fs/cgroup/memory" ]; then
        echo "$v1 $v1/memory.limit_in_bytes $v1/memory.max_usage_in_bytes"
    else
        echo "$v2 $v2/memory.max $v2/memory.peak"
    fi
}
# While a suspend runs: the unit's highest limit and peak until its cgroup
# goes (the save's memory is the sentry's, charged to the unit), into FILE
# as "LIMIT PEAK".
sample_checkpoint_memory() {
    local f
    read -r -a f <<<"$(cg_files "$1")"
    local lim=0 peak=0 l p
    while :; do
        l=$(cat "${f[1]}" 2>/dev/null) || l=
        p=$(cat "${f[2]}" 2>/dev/null) || p=
        [[ $l =~ ^[0-9]+$ ]] && [ "$l" -gt "$lim" ] && lim=$l
        [[ $p =~ ^[0-9]+$ ]] && [ "$p" -gt "$peak" ] && peak=$p
        echo "$lim $peak" > "$2.new" && mv "$2.new" "$2"
        [ -d "${f[0]}" ] || break
        sleep 0.1
    done
}
# After a cycle: the running unit's limit and peak since its restore, and
# the last checkpoint image's size.
memory_of() {
    local f
    read -r -a f <<<"$(cg_files "$1")"
    echo "$(cat "${f[1]}" 2>/dev/null || echo 0) $(cat "${f[2]}" 2>/dev/null || echo 0)" \
        "$(ct journalctl -q -o cat --output-fields=SANDBOXD_IMAGE_BYTES SANDBOXD_WORKER_ID="$1" \
            SANDBOXD_EVENT=suspended -n 1 2>/dev/null | tail -n1)"
}
retries() {
    ct journalctl -q -o cat SANDBOXD_WORKER_ID="$WID" SANDBOXD_EVENT=suspend-retry 2>/dev/null | wc -l
}

if sbx_create 3 Argv as 2 /usr/bin/python3 "$W/work.py" Class s standard EgressAllow as 1 "$HOST"; then
    ok "CreateWorker: standard, with egress"
else
    not_ok "CreateWorker: standard, with egress" "$BUS_ERROR $BUS_ERRMSG"
fi
diag "worker $WID, $CYCLES cycles"
if wait_until 90 busy; then
    atk_ok loss-checkpoint-control standard
else
    atk_not_ok loss-checkpoint-control standard "last line: $(log_of "$WID" | tail -n1)"
fi
diag "before: $(log_of "$WID" | tail -n1)"

failed=0 lost=0 done_cycles=0 why= most_limit=0
[ -n "${RESULT_FILE:-}" ] && : > "$RESULT_FILE" && : > "$RESULT_FILE.memory"
for ((c = 1; c <= CYCLES; c++)); do
    t0=$(date +%s.%N)
    r0=$(retries)
    result=ok
    # Read while it runs: its home lies on its disk, not mounted while it
    # sleeps. What it writes until the checkpoint comes on top.
    read -r -a f <<<"$(last_fields "$WID")"
    last=${f[0]:-0} out_ok=${f[1]:-0}
    ckpt_mem=$(mktemp)
    sample_checkpoint_memory "$WID" "$ckpt_mem" &
    sampler=$!
    sbx_call SuspendWorker s "$WID"
    suspended=$?
    # Done once the call is answered (the cgroup is gone, or runs on).
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    read -r ck_limit ck_peak < "$ckpt_mem" || true
    rm -f "$ckpt_mem" "$ckpt_mem.new"
    # The most the unit was allowed while the checkpoint ran.
    [ "${ck_limit:-0}" -gt "$most_limit" ] && most_limit=$ck_limit
    if [ "$suspended" != 0 ]; then
        ct journalctl --sync
        st=$(state_of "$WID")
        if [ "$st" = running ]; then
            result=failed; failed=$((failed + 1))
        else
            result=lost; lost=$((lost + 1))
        fi
        why="cycle $c: SuspendWorker: $BUS_ERROR $BUS_ERRMSG; state now ${st:-gone}; $(ct journalctl -q -o cat \
            -u "sandbox-$WID-suspend.service" | grep -m1 -o 'encoding error[^"]*' || true)"
        diag "$why"
    else
        if ! sbx_call ResumeWorker s "$WID"; then
            result=lost; lost=$((lost + 1))
            why="cycle $c: ResumeWorker: $BUS_ERROR $BUS_ERRMSG"
            diag "$why"
        elif ! wait_until 60 resumed_ok "$last" "$out_ok"; then
            result=failed; failed=$((failed + 1))
            why="cycle $c: after the resume it did not count on past $last with new connections: $(log_of "$WID" | tail -n1)"
            diag "$why"
        elif jump=$(log_jumps) && [ -n "$jump" ]; then
            result=failed; failed=$((failed + 1))
            why="cycle $c: it did not count on from where it was ($jump in its log)"
            diag "$why"
        fi
    fi
    t1=$(date +%s.%N)
    r1=$(retries)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    [ -n "${RESULT_FILE:-}" ] && echo "$c $result $secs $((r1 - r0))" >> "$RESULT_FILE"
    # CYCLE CHECKPOINT_LIMIT CHECKPOINT_PEAK RUNNING_LIMIT RUNNING_PEAK IMAGE_BYTES
    # (for the benchmark only: CI's run need not wait for the journal).
    if [ -n "${RESULT_FILE:-}${MEMORY_DIAG:-}" ]; then
        mem="$c ${ck_limit:-0} ${ck_peak:-0} $(memory_of "$WID")"
        [ -n "${RESULT_FILE:-}" ] && echo "$mem" >> "$RESULT_FILE.memory"
        [ -n "${MEMORY_DIAG:-}" ] && diag "memory: $mem"
    fi
    # Every 10th cycle and every trouble, for the log.
    if [ "$result" != ok ] || [ $((c % 10)) = 0 ]; then
        diag "cycle $c: $result in ${secs}s, $((r1 - r0)) retries; $(log_of "$WID" | tail -n1)"
    fi
    done_cycles=$c
    [ "$result" = lost ] || continue
    # The benchmark on the old build counts losses: a new worker goes on.
    [ "${CONTINUE_AFTER_LOSS:-0}" = 1 ] || break
    if ! sbx_create 3 Argv as 2 /usr/bin/python3 "$W/work.py" Class s standard EgressAllow as 1 "$HOST" ||
        ! wait_until 90 busy; then
        diag "no new worker after the loss: $BUS_ERROR $BUS_ERRMSG"
        break
    fi
    diag "cycle $c: the worker was lost; going on with a new one, $WID"
done
ct journalctl --sync
# The launcher's wait before each checkpoint, one line each: HANDSHAKES
# (left when it paused) SEEN (the most one read saw) READS WAIT_MSEC.
quiesce=$(ct journalctl -q -o export SANDBOXD_EVENT=checkpoint-quiesce 2>/dev/null | awk -F= '
    /^SANDBOXD_HANDSHAKES=/ { h = $2 } /^SANDBOXD_HANDSHAKES_SEEN=/ { s = $2 }
    /^SANDBOXD_READS=/ { r = $2 } /^SANDBOXD_WAIT_MSEC=/ { w = $2 }
    /^$/ { if (r != "") print h, s, r, w; h = s = r = w = "" }')
[ -n "${RESULT_FILE:-}" ] && printf '%s\n' "$quiesce" > "$RESULT_FILE.quiesce"
diag "checkpoints: $(printf '%s\n' "$quiesce" | awk 'NF { n++; if ($2 > 0) seen++; if ($1 != 0) left++ }
    END { printf "%d, %d saw handshakes in flight and waited, %d paused with some left or unknown", n, seen, left }')"
diag "encoding errors in the journal: $(ct journalctl -q -o cat | grep -c 'encoding error: runtime error: invalid memory address' || true)"
if [ "$lost" = 0 ] && [ "$failed" = 0 ] && [ "$done_cycles" = "$CYCLES" ]; then
    atk_ok loss-checkpoint-handshakes standard
else
    atk_not_ok loss-checkpoint-handshakes standard "$done_cycles cycles: $lost lost, $failed failed" "$why"
fi
check_eq "the worker is running at the end" running "$(state_of "$WID")"
# 256 MiB (the default MemoryMax) and 1 GiB (CheckpointExtraMemory).
read -r now_limit _ <<<"$(memory_of "$WID")"
if [ "$most_limit" = $(((256 + 1024) << 20)) ] && [ "$now_limit" = $((256 << 20)) ]; then
    atk_ok loss-checkpoint-memory standard
else
    atk_not_ok loss-checkpoint-memory standard "the unit's limit: at most $most_limit during the checkpoints, $now_limit now"
fi

atk_coverage
ct sandboxctl stop "$WID" >/dev/null 2>&1
tap_done
