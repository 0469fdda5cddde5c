#!/usr/bin/env bash
# Isolation classes (issue 3), through the daemon: the gate honours a class
# or refuses it, never downgrades; gVisor workers really run under gVisor with
# the hardened run-spec; a runtime that disappears or breaks takes its
# classes with it; the operator override covers "standard" and nothing else.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

RUNSC=/usr/bin/runsc
CONF=/etc/sandboxd/sandboxd.conf

restart_daemon() { ct systemctl restart sandboxd.service; }
run() { ct timeout 120 sandboxctl run "$@"; }

# Creating a refused worker must leave no unit and no home behind.
refused_leaves_nothing() {
    local name=$1 fragment=$2 before_units before_state
    shift 2
    # From a steady state: a worker that just ended may still be stopping
    # its disk unit (sandbox-ID-disk.service unmounts after the worker's unit).
    sbx_settled
    before_units=$(sbx_units)
    before_state=$(sbx_state_entries)
    sbx_call CreateWorker 'a{sv}' "$@" >/dev/null 2>&1
    if [ "$BUS_ERROR" = org.sandboxd1.Error.IsolationUnavailable ] && printf '%s' "$BUS_ERRMSG" | grep -q -- "$fragment"; then
        ok "$name: IsolationUnavailable ($fragment)"
    else
        not_ok "$name: IsolationUnavailable ($fragment)" "error=$BUS_ERROR" "message=$BUS_ERRMSG"
    fi
    check "$name: no unit created" lines_all_in "$before_units" "$(sbx_units)"
    check "$name: no home created" lines_all_in "$before_state" "$(sbx_state_entries)"
}

ct systemctl start sandboxd.service

# ---- preflight -------------------------------------------------------------
pf=$(ct sandboxctl preflight --no-legend 2>&1)
diag "$pf"
check_output "preflight: trusted is served by systemd" '^trusted +systemd .* yes' echo "$pf"
check_output "preflight: standard is served by runsc" '^standard +runsc +/usr/bin/runsc +yes' echo "$pf"
check_output "preflight: devcontainer is served by runsc" '^devcontainer +runsc +/usr/bin/runsc +yes' echo "$pf"
check_output "preflight: untrusted is served by runsc" '^untrusted +runsc +/usr/bin/runsc +yes' echo "$pf"
check_output "preflight: hostile is unavailable without Kata" '^hostile +kata .* no ' echo "$pf"
check_output "preflight: wasm is unavailable without a wasm runtime" '^wasm +wasm .* no ' echo "$pf"
check_output "preflight --json lists six classes (devcontainer too)" '^6$' \
    sh -c "nsenter -t $CT_PID -a sandboxctl preflight --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"classes\"]))'"

# ---- gVisor workers ----------------------------------------------------------
host_kernel=$(ct uname -r)
for class in standard untrusted; do
    out=$(run --class "$class" -- /bin/sh -c 'uname -r; cat /proc/self/status | grep -E "^(Uid|CapEff|CapBnd|NoNewPrivs):"; id -u' 2>&1)
    diag "$out"
    kernel=$(printf '%s\n' "$out" | head -n1)
    if [ -n "$kernel" ] && [ "$kernel" != "$host_kernel" ]; then
        ok "$class: the worker sees gVisor's kernel ($kernel), not the host's ($host_kernel)"
    else
        not_ok "$class: the worker sees gVisor's kernel" "worker: $kernel host: $host_kernel"
    fi
    check_output "$class: no effective capabilities" 'CapEff:[[:space:]]+0+$' echo "$out"
    uid=$(printf '%s\n' "$out" | tail -n1)
    if [ "$uid" -ge "$DYNAMIC_UID_MIN" ] 2>/dev/null && [ "$uid" -le "$DYNAMIC_UID_MAX" ]; then
        ok "$class: runs as a dynamic UID ($uid)"
    else
        not_ok "$class: runs as a dynamic UID" "uid=$uid"
    fi
done

out=$(printf 'line one\nline two\n' | ct timeout 60 sandboxctl run --class standard -- /bin/cat 2>&1)
check_eq "standard: the channel carries input to a gVisor worker and its output back, EOF included" \
    "line one
line two" "$out"

# ---- the channel, interactively, for every class this host serves ------------
# Input that arrives only after the worker is waiting for it. gVisor copies
# each stdio fd's flags and makes the host side non-blocking; when the worker's
# stdin and stdout were one socket, one of them reached the workload
# non-blocking and its first read() of an empty stdin failed with EAGAIN, which
# a shell takes for the end of input. The flags check catches that every time;
# the conversation checks the behaviour a client sees.
ct tee /run/sbx-converse.py >/dev/null <<'PY'
import subprocess, sys, time
cls, rounds = sys.argv[1], int(sys.argv[2])
script = 'echo ready; while read -r l; do echo "echo:$l"; done; echo bye'
good = 0
for i in range(rounds):
    p = subprocess.Popen(["sandboxctl", "run", "--class", cls, "--", "/bin/sh", "-c", script],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    got = [p.stdout.readline()]
    time.sleep(0.3 + 0.2 * (i % 3))     # the worker is blocked in read() by now
    p.stdin.write(b"hello %d\n" % i); p.stdin.flush()
    got.append(p.stdout.readline())
    p.stdin.close()
    got += p.stdout.readlines()
    p.wait(timeout=60)
    want = [b"ready\n", b"echo:hello %d\n" % i, b"bye\n"]
    if got == want and p.returncode == 0:
        good += 1
    else:
        print("round %d: got %r, exit %s" % (i, got, p.returncode), file=sys.stderr)
print("%d/%d" % (good, rounds))
PY
for class in trusted standard untrusted; do
    flags=$(run --class "$class" -- /usr/bin/python3 -c '
import fcntl, os
print(" ".join("%d:%o" % (fd, fcntl.fcntl(fd, fcntl.F_GETFL) & (os.O_ACCMODE | os.O_NONBLOCK)) for fd in (0, 1, 2)))' </dev/null 2>&1)
    check_eq "$class: the workload's stdin, stdout and stderr are blocking (read, write, write)" "0:0 1:1 2:1" "$flags"
    check_eq "$class: what the worker writes to stderr reaches the client" "to stderr" \
        "$(run --class "$class" -- /bin/sh -c 'echo to stderr >&2' </dev/null 2>&1)"
    conv=$(ct timeout 300 python3 /run/sbx-converse.py "$class" 5 2>&1)
    check_eq "$class: input sent after the worker waits for it is read, 5 of 5 times" "5/5" "$(printf '%s\n' "$conv" | tail -n1)"
    [ "$(printf '%s\n' "$conv" | tail -n1)" = 5/5 ] || diag "$conv"
done

sbx_create 3 Argv as 2 /bin/sleep 30 Class s untrusted TasksMax t 64
check_output "untrusted worker reports Runtime runsc" '^"?runsc"?$' sbx_prop "$WID" Runtime
check_output "untrusted worker reports Class untrusted" '^"?untrusted"?$' sbx_prop "$WID" Class
check_output "without egress the sandbox has gVisor's own loopback only (runsc --network=none)" '--network=none' \
    unit_prop "sandbox-$WID.service" ExecStart
# systemd-analyze scores the unit's properties; the privileged launcher is
# exempt from most of them (README, Security), gVisor is its workload's wall.
check_exposure "the gVisor worker unit's exposure is held" "sandbox-$WID.service" 0.8
# The launcher writes the bundle once the unit runs, after CreateWorker replied.
bundle_ready() { ct python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "/run/sandboxd/bundles/$1/config.json"; }
check "the worker's OCI bundle exists while it runs (config.json, whole JSON)" wait_until 30 bundle_ready "$WID"
bundle=$(ct cat "/run/sandboxd/bundles/$WID/config.json" 2>/dev/null)
check_output "bundle: root is read-only" '"readonly": *true' echo "$bundle"
check_output "bundle: noNewPrivileges" '"noNewPrivileges": *true' echo "$bundle"
check_fails "bundle: no network namespace (runsc gives the sandbox the launcher's own)" \
    sh -c "printf '%s' '$bundle' | python3 -c 'import json,sys; ns=[n[\"type\"] for n in json.load(sys.stdin)[\"linux\"][\"namespaces\"]]; sys.exit(0 if \"network\" in ns else 1)'"
# An idle systrap sentry wakes every 400 us; the default 20 ms of timer slack
# (Isolation:RunscTimerSlackSec) lets the kernel batch that. The launcher sets
# it on every thread of runsc and its descendants once the sandbox booted
# (daemon/runtime/launch-slack.h: runsc boots with the kernel's); the
# launcher's memory guard keeps the kernel's 50 us.
sentry_slack() { ct sh -c "cat /proc/\$(pgrep -f '^runsc-sandbox .* sandbox-$1\$' | head -n1)/timerslack_ns"; }
sentry_slack_is() { [ "$(sentry_slack "$1")" = "$2" ]; }
if wait_until 30 sentry_slack_is "$WID" 20000000; then
    ok "gVisor: the sentry runs with the configured timer slack (20 ms)"
else
    not_ok "gVisor: the sentry runs with the configured timer slack (20 ms)" \
        "its timerslack_ns: $(sentry_slack "$WID" 2>&1)"
fi
check_eq "gVisor: the launcher keeps the kernel's timer slack" 50000 \
    "$(ct sh -c "cat /proc/\$(pgrep -f '^/usr/libexec/sandboxd/sandbox-launch run --id=$WID ' | head -n1)/timerslack_ns")"
# Every thread of every process under the launcher that is not the launcher
# or its exec server (runsc run, its gofer, the sentry, the systrap stubs):
# "SLACK THREADS PROCESSES" for each distinct slack among them.
launcher_pid() { ct pgrep -f "^/usr/libexec/sandboxd/sandbox-launch run --id=$1 " | head -n1; }
# shellcheck disable=SC2016  # Python, not shell
TREE_SLACK='import collections, glob, os, sys
root = int(sys.argv[1]); todo = [root]; seen = collections.Counter(); procs = collections.Counter()
while todo:
    pid = todo.pop()
    for t in glob.glob("/proc/%d/task/*" % pid):
        for c in open(t + "/children").read().split():
            todo.append(int(c))
    if open("/proc/%d/cmdline" % pid).read().startswith("/usr/libexec/sandboxd/sandbox-launch"):
        continue
    for t in glob.glob("/proc/%d/task/*" % pid):
        slack = open("/proc/%s/timerslack_ns" % os.path.basename(t)).read().strip()
        seen[slack] += 1; procs[(slack, pid)] = 1
for slack, n in seen.items():
    print(slack, n, sum(1 for k in procs if k[0] == slack))'
tree_slack() { ct python3 -c "$TREE_SLACK" "$(launcher_pid "$1")"; }
slack_tree_all() { tree_slack "$1" | grep -qx "20000000 [0-9]* [3-9]" && [ "$(tree_slack "$1" | wc -l)" = 1 ]; }
if wait_until 10 slack_tree_all "$WID"; then
    ok "gVisor: every thread of runsc, its gofer, the sentry and its stubs has the slack (3+ processes)"
else
    not_ok "gVisor: every thread of runsc, its gofer, the sentry and its stubs has the slack" \
        "slack, threads, processes: $(tree_slack "$WID" 2>&1 | tr '\n' ';')"
fi
# Setting another process's slack takes CAP_SYS_NICE, which the launcher keeps
# for itself alone: out of its bounding set, so runsc never gets it (bit 23).
cap_has() { ct sh -c "awk '/^$2:/ { print \$2 }' /proc/$1/status" | python3 -c 'import sys; sys.exit(0 if int(sys.stdin.read(), 16) >> 23 & 1 else 1)'; }
lpid=$(launcher_pid "$WID")
spid=$(ct pgrep -f "^runsc-sandbox .* sandbox-$WID\$" | head -n1)
check "gVisor: the launcher holds CAP_SYS_NICE (the control)" cap_has "$lpid" CapEff
check_fails "gVisor: CAP_SYS_NICE is out of the launcher's bounding set" cap_has "$lpid" CapBnd
check_fails "gVisor: the sentry has no CAP_SYS_NICE, effective" cap_has "$spid" CapEff
check_fails "gVisor: the sentry has no CAP_SYS_NICE in its bounding set" cap_has "$spid" CapBnd
sbx_call StopWorker s "$WID" >/dev/null
wait_until 20 unit_gone "sandbox-$WID.service"
check "the bundle is removed with the worker" wait_until 10 ct test ! -e "/run/sandboxd/bundles/$WID"
check "the home is removed with the worker" wait_until 10 home_absent "$WID"

# ---- a daemon-reload while a gVisor worker runs --------------------------------
# systemd 252 writes a transient unit's ExecStartEx=/ExecStopPostEx= to its
# file but cannot read them back, so a reload (any package install does one)
# drops the worker's own cleanup; sandboxd notices the bundle it left and runs
# the cleanup from a unit of its own.
sbx_create 3 Argv as 2 /bin/sleep 60 Class s standard TasksMax t 64
wait_until 30 bundle_ready "$WID"
ct systemctl daemon-reload
check_output "after a daemon-reload systemd no longer knows the worker's ExecStopPost (systemd 252)" \
    '^bad-setting$' unit_prop "sandbox-$WID.service" LoadState
sbx_call StopWorker s "$WID" >/dev/null
wait_until 20 unit_gone "sandbox-$WID.service"
check "the worker's bundle is still removed" wait_until 15 ct test ! -e "/run/sandboxd/bundles/$WID"
check_fails "and runsc keeps no state of it" sh -c "nsenter -t $CT_PID -a ls /run/sandboxd/runsc 2>/dev/null | grep -F -- '$WID'"
# journald may not have written the entry yet when the bundle is gone.
journal_has 'bundle outlived it' -o cat -n 300 SANDBOXD_WORKER_ID="$WID"
check_output "sandboxd says it cleaned up after the worker" 'bundle outlived it' \
    journal -o cat -n 300 SANDBOXD_WORKER_ID="$WID"
check "the cleanup unit is gone too" wait_until 10 unit_gone "sandbox-$WID-cleanup.service"

# ---- the hardened run-spec, for every class this host serves ------------------
for class in trusted standard untrusted; do
    spec_out=$(run --class "$class" --setenv ONLY_THIS=1 -- /bin/sh -c '
        touch /usr/sbx-probe 2>/dev/null && echo ROOT-WRITABLE
        touch "$HOME/f" && echo HOME-WRITABLE
        cp /bin/true /tmp/t 2>/dev/null && /tmp/t 2>/dev/null && echo TMP-EXEC
        grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs):" /proc/self/status
        ls /sys/class/net 2>/dev/null | tr "\n" " "; echo
        env | cut -d= -f1 | sort | tr "\n" " "; echo' 2>&1)
    diag "$spec_out"
    check_fails "$class: root file system is read-only" sh -c "printf '%s' '$spec_out' | grep -q ROOT-WRITABLE"
    check_output "$class: the home is writable" 'HOME-WRITABLE' echo "$spec_out"
    check_fails "$class: nothing runs from /tmp (noexec)" sh -c "printf '%s' '$spec_out' | grep -q TMP-EXEC"
    check_output "$class: capability bounding set is empty" 'CapBnd:[[:space:]]+0+$' echo "$spec_out"
    if [ "$class" = trusted ]; then
        check_output "$class: no_new_privs is set" 'NoNewPrivs:[[:space:]]+1' echo "$spec_out"
        check_output "$class: only loopback in the network namespace" '^lo $' echo "$spec_out"
    fi
    check_output "$class: the spec's environment arrives" 'ONLY_THIS' echo "$spec_out"
    check_fails "$class: no secret-looking or host variables leak into the environment" \
        sh -c "printf '%s' '$spec_out' | grep -E -w 'SSH_AUTH_SOCK|DBUS_SESSION_BUS_ADDRESS|MAIL|TERM'"
    check_fails "$class: a direct connection out fails" ct timeout 60 sandboxctl run --class "$class" -- \
        /bin/sh -c 'exec 3<>/dev/tcp/203.0.113.1/443' 2>/dev/null
done

# ---- no host socket from a gVisor workload (issue 8 item 4) --------------------
# The bundle masks /run, gVisor refuses host UNIX sockets (no --host-uds) and
# the workload is in the sandbox's own (or the unit's empty) network namespace.
check_no_host_sockets standard

# ---- caps on the shared kernel: the unit's cgroup enforces them ----------------
out=$(run --class trusted --memory 64M -- /usr/bin/python3 -c '
b = bytearray(200 << 20)
b[::4096] = b"x" * len(b[::4096])
print("allocated")' 2>&1)
rc=$?
if [ "$rc" = 137 ]; then
    ok "trusted: MemoryMax is enforced (200 MiB with MemoryMax=64M is killed)"
else
    not_ok "trusted: MemoryMax is enforced (200 MiB with MemoryMax=64M is killed)" "exit status $rc" "$out"
fi
# Forks up to 100 children; prints why a fork was refused, if one was, then
# how many children it got. Each child lives until the parent ends (its read
# of the pipe returns when the parent, the only writer, exits), so none frees
# its pid early however slowly the forks come.
FORK_BOMB='
import os
r, w = os.pipe()
n = 0
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused:", e.errno, flush=True)
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    n += 1
print(n, flush=True)'
out=$(run --class trusted --tasks 16 -- /usr/bin/python3 -c "$FORK_BOMB" 2>&1)
forks=$(printf '%s\n' "$out" | tail -n1)
if [ "$forks" -ge 1 ] 2>/dev/null && [ "$forks" -lt 16 ]; then
    ok "trusted: TasksMax is enforced ($forks children with TasksMax=16)"
else
    not_ok "trusted: TasksMax is enforced" "children started: $out"
fi

# CPUQuota, measured from outside as the CPU time the unit's cgroup used
# (lib.sh's unit_cpu_share), so it covers the whole unit: for gVisor, sandbox
# and runsc.
cpu_share() {   # CLASS: share of one CPU a busy worker used with CPUQuotaPercent=10
    local id share
    id=$(ct sandboxctl create --class "$1" --cpu 10 -- /bin/sh -c 'while :; do :; done') || return 1
    share=$(unit_cpu_share "sandbox-$id.service" 3)
    ct sandboxctl stop "$id" >/dev/null
    echo "$share"
}
for class in trusted standard; do
    share=$(cpu_share "$class")
    if python3 -c "import sys; sys.exit(0 if 0.02 < float('$share') <= 0.15 else 1)" 2>/dev/null; then
        ok "$class: CPUQuota is enforced (a busy worker used $share of a CPU with CPUQuotaPercent=10)"
    else
        not_ok "$class: CPUQuota is enforced" "share of a CPU: $share"
    fi
done

# ---- caps that must hold inside gVisor, where host tasks are not seen ----------
out=$(run --class standard --tasks 32 -- /usr/bin/python3 -c "$FORK_BOMB" 2>&1)
diag "$out"
forks=$(printf '%s\n' "$out" | tail -n1)
check_output "a fork bomb inside gVisor is refused with EAGAIN, not left to the host" '^refused: 11$' \
    sh -c "printf '%s\n' '$out' | head -n1"
if [ "$forks" -ge 20 ] 2>/dev/null && [ "$forks" -lt 32 ]; then
    ok "the pids limit holds inside gVisor ($forks children with TasksMax=32)"
else
    not_ok "the pids limit holds inside gVisor" "children started: $forks"
fi
check_fails "the memory limit holds inside gVisor (allocating 200 MiB with MemoryMax=64M)" \
    run --class standard --memory 64M -- /usr/bin/python3 -c 'b = bytearray(200 << 20); b[::4096] = b"x" * len(b[::4096]); print("allocated")'
check_output "DiskMax is enforced on a gVisor worker's home" 'No space left' \
    run --class standard --disk 4M -- /bin/sh -c 'dd if=/dev/zero of="$HOME/big" bs=1M count=16 2>&1; true'
check_output "DiskMax leaves room up to the cap" '^ok$' \
    run --class standard --disk 8M -- /bin/sh -c 'dd if=/dev/zero of="$HOME/small" bs=1M count=2 2>/dev/null && echo ok'
check_output "DiskMax is enforced on a shared-kernel worker's home (its disk image)" 'No space left' \
    run --class trusted --disk 4M -- /bin/sh -c 'dd if=/dev/zero of="$HOME/big" bs=1M count=16 2>&1; true'

# A shared-kernel worker's home is its disk, bound in its unit's own namespace:
# no mount of it in the host's table under /var/lib/private, where systemd
# unmounts each one, reading the table again, in every DynamicUser unit it
# sets up (each running trusted worker made every later start slower).
tw=$(ct sandboxctl create --class trusted --disk 8M -- /bin/sleep 600)
read -r fs owner_mode uid < <(ct sandboxctl exec "$tw" -- /bin/sh -c 'stat -L -f -c %T $HOME; stat -L -c %u:%a $HOME; id -u' | tr '\n' ' ')
check_eq "a trusted worker's home is its disk's file system, its own (UID ${uid:-?}), 0700" \
    "ext2/ext3 ${uid:-none}:700" "${fs:-} ${owner_mode:-}"
check "... what it writes there is on the disk" \
    ct sandboxctl exec "$tw" -- /bin/sh -c 'echo on-disk >"$HOME/marker"'
check_output "... (the host sees it in the disk's own mount)" '^on-disk$' ct cat "$SBX_DISK_MOUNT_ROOT/$tw/home/marker"
check_output "... and so do the file methods" '^on-disk$' ct sandboxctl cp "$tw:marker" -
host_mounts_of() { ct findmnt -n -l -o TARGET | grep -F "$1"; }
check_output "the disk is mounted on the host, outside /var/lib/private (the control)" "^$SBX_DISK_MOUNT_ROOT/$tw\$" \
    host_mounts_of "$tw"
check_eq "... and that is the one mount of it in the host's table" 1 "$(host_mounts_of "$tw" | wc -l)"
ct sandboxctl stop "$tw" >/dev/null

# ---- classes this host cannot serve ------------------------------------------
refused_leaves_nothing "hostile without Kata" "hostile needs runtime kata" 2 Argv as 1 /bin/true Class s hostile
refused_leaves_nothing "wasm without a wasm runtime" "wasm needs runtime wasm" 2 Argv as 1 /bin/true Class s wasm

# ---- a runtime that disappears --------------------------------------------------
ct mv "$RUNSC" "$RUNSC.away"
refused_leaves_nothing "standard with runsc gone" "disappeared" 2 Argv as 1 /bin/true Class s standard
refused_leaves_nothing "untrusted with runsc gone" "runsc" 2 Argv as 1 /bin/true Class s untrusted
check_output "preflight shows standard unavailable with runsc gone" '^standard .* no ' ct sandboxctl preflight --no-legend
ct mv "$RUNSC.away" "$RUNSC"
check_output "preflight re-probes and serves standard again" '^standard +runsc .* yes' ct sandboxctl preflight --no-legend

# ---- a runtime that is present but broken ---------------------------------------
ct mv "$RUNSC" "$RUNSC.real"
ct sh -c "printf '#!/bin/sh\necho broken >&2\nexit 1\n' > $RUNSC && chmod 755 $RUNSC"
check_output "preflight notices a broken runsc" '^untrusted .* no ' ct sandboxctl preflight --no-legend
refused_leaves_nothing "untrusted with a broken runsc" "runsc" 2 Argv as 1 /bin/true Class s untrusted

# ---- the operator override: standard may share the kernel, nothing else --------
ct cp "$CONF" "$CONF.orig"
ct sh -c "printf '[Isolation]\nAllowSharedKernelForStandard=yes\n' > $CONF"
restart_daemon
out=$(run --class standard -- /bin/sh -c 'uname -r' 2>&1)
check_eq "override: standard runs on the shared kernel when runsc is broken" "$host_kernel" "$out"
refused_leaves_nothing "override: untrusted still refuses" "untrusted needs runtime runsc" \
    2 Argv as 1 /bin/true Class s untrusted
refused_leaves_nothing "override: hostile still refuses" "hostile needs runtime kata" \
    2 Argv as 1 /bin/true Class s hostile

ct mv "$RUNSC.real" "$RUNSC"
ct mv "$CONF.orig" "$CONF"
restart_daemon
tap_done
