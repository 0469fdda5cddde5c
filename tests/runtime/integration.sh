#!/bin/bash
# Live checks of gVisor workers, run inside a booted systemd container (see
# ../shared/design/testbed.md) that has the build installed at /.
#   usage: integration.sh CONTAINER_LEADER_PID
# Each worker is a transient unit started over the systemd bus the way the
# daemon starts it: DynamicUser, User=sandbox-ID, a 0700 StateDirectory,
# PrivateNetwork, PrivateIPC, limits, and sandbox-launch as the privileged (+) ExecStart
# and ExecStopPost. Prints TAP (tests/lib/tap.sh).
set -u
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"
LAUNCH=${SANDBOX_LAUNCH:-/usr/libexec/sandboxd/sandbox-launch}
RUNSC=${RUNSC:-/usr/bin/runsc}
PLATFORM=${RUNSC_PLATFORM:-systrap}
T=/var/tmp/sandboxd-runtime-tests     # scripts, visible through the read-only host root
R=/run/sandboxd-runtime-tests         # results, masked from the workers

# --- the workloads --------------------------------------------------------
install_scripts() {
    ct mkdir -p "$T" "$R"
    ct chmod 0755 "$T"
    ct chmod 0700 "$R"
    ct sh -c "echo s3cret-token > $R/secret && chmod 0600 $R/secret"
    ct tee "$T/checks.sh" >/dev/null <<'EOF'
#!/bin/sh
# Prints key=value facts about the world the worker sees.
echo "uid=$(id -u) gid=$(id -g)"
echo "pwd=$(pwd)"
echo "home=$HOME"
tr '\0' '\n' < /proc/self/environ | sed 's/^/env:/'
echo "version=$(cat /proc/version)"
dmesg 2>/dev/null | grep -q gVisor && echo "dmesg=gvisor"
echo data > "$HOME/written-by-worker" && echo "home_write=ok"
touch /var/tmp/rootprobe 2>&1 | grep -q 'Read-only file system' && echo "root=readonly"
awk '$2 == "/" {print "rootmount=" $4}' /proc/mounts | cut -d, -f1
echo x > /tmp/probe && echo "tmp_write=ok"
cp /bin/true /tmp/true && chmod 0755 /tmp/true && { /tmp/true 2>/dev/null && echo "tmp_exec=allowed" || echo "tmp_exec=denied"; }
grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status | tr -d '\t' | sed 's/^/caps:/'
grep -E '^NoNewPrivs:' /proc/self/status | tr -d '\t'
echo "ifaces=$(awk -F: 'NR>2 {gsub(/ /,"",$1); printf "%s ", $1}' /proc/net/dev)"
python3 -c '
import socket
for addr in ("10.0.0.1", "1.1.1.1"):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((addr, 80)); print("connect_" + addr + "=ok")
    except OSError as e:
        print("connect_" + addr + "=" + type(e).__name__)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("loopback=ok")
'
for d in /var/lib/sandboxd /var/lib/private /root /home /etc/sandboxd /run; do
    echo "listing:$d=$(ls -A "$d" 2>&1 | tr '\n' ' ')"
done
[ -n "${CREDENTIALS_DIRECTORY:-}" ] && echo "credential=$(cat "$CREDENTIALS_DIRECTORY/tok")"
touch "$CREDENTIALS_DIRECTORY/new" 2>/dev/null || echo "credentials=readonly"
exit 0
EOF
    ct tee "$T/bomb.sh" >/dev/null <<'EOF'
#!/bin/sh
# A fork bomb, then a count of the processes it managed to create, taken with
# shell builtins only (no fork is possible once the limit holds).
bomb() { bomb | bomb & }
# The bomb may take seconds to get under way on a loaded host: wait until it
# did (up to 30 s), then 2-3 s more for it to pass the limit were there none.
# The clock is /proc/uptime and the wait a busy loop: once the limit holds,
# dash exits on a failed fork (sleep, or a command substitution).
# At the limit the count swings (a process whose fork failed exits, another
# takes its place), so the promise is the most ever seen at once, sampled
# throughout, and that the bomb did get under way.
read -r start _ </proc/uptime
bomb 2>/dev/null &
while set -- /proc/[0-9]*; [ $# -lt 16 ]; do
    read -r now _ </proc/uptime
    [ $((${now%.*} - ${start%.*})) -ge 30 ] && break
done
echo "under_way=$#"
max=$#
read -r start _ </proc/uptime
while read -r now _ </proc/uptime; [ $((${now%.*} - ${start%.*})) -lt 3 ]; do
    set -- /proc/[0-9]*
    [ $# -gt $max ] && max=$#
done
echo "procs=$max"
kill -9 -1
EOF
    ct tee "$T/memory.sh" >/dev/null <<'EOF'
#!/bin/sh
# Grows to 160 MiB, well over the guard's limit (128M) and well under the
# unit's MemoryMax (256M, which the sandbox's overhead shares: ~190M in all),
# then stays there: the guard must kill it, however late it samples, and the
# kernel's OOM killer never gets to it first.
python3 -c '
import time
chunks = []
for i in range(16):
    chunks.append(b"x" * (10 << 20))
    print("allocated", (i + 1) * 10, flush=True)
    time.sleep(0.5)
time.sleep(30)
print("survived")
'
EOF
    ct tee "$T/disk.sh" >/dev/null <<'EOF'
#!/bin/sh
dd if=/dev/zero of="$HOME/fill" bs=1M count=16 2>&1
echo "size=$(stat -c %s "$HOME/fill")"
grep " $HOME " /proc/mounts | sed 's/^/mount:/'
EOF
    ct tee "$T/echo.sh" >/dev/null <<'EOF'
#!/bin/sh
echo ready
while read -r line; do echo "echo:$line"; done
echo bye
EOF
    ct chmod 0755 "$T/checks.sh" "$T/bomb.sh" "$T/memory.sh" "$T/disk.sh" "$T/echo.sh"
}

# --- starting a worker the way the daemon does -------------------------------
# unit_unloaded UNIT [SECONDS]: until systemd has unloaded UNIT. StartTransientUnit
# refuses a name that is still loaded ("already loaded"), and a unit stays
# loaded for a while after its last ExecStopPost= ran: deactivating, then
# inactive until garbage-collected, or failed until reset.
unit_unloaded() {
    local i props
    for i in $(seq $((${2:-60} * 10))); do
        props=$(ct systemctl show -p LoadState -p ActiveState "$1" 2>/dev/null)
        case "$props" in *LoadState=not-found*) return 0 ;; esac
        case "$props" in *ActiveState=failed*) ct systemctl reset-failed "$1" 2>/dev/null ;; esac
        sleep 0.1
    done
    return 1
}

# start_worker ID [launcher options...] -- ARGV...
start_worker() {
    local id=$1; shift
    local opts=() argv=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    argv=("$@")
    local run=("$LAUNCH" run --id "$id" --runtime runsc --runtime-path "$RUNSC" --platform "$PLATFORM"
               --home "${WORKER_HOME:-/var/lib/sandboxd/workers/$id}" "${opts[@]}" -- "${argv[@]}")
    local cleanup=("$LAUNCH" cleanup --id "$id" --runtime-path "$RUNSC")
    local record=(/bin/sh -c "echo \"\$SERVICE_RESULT \$EXIT_CODE \$EXIT_STATUS\" > $R/$id.status")
    local err
    ct rm -f "$R/$id.out" "$R/$id.err" "$R/$id.status"
    unit_unloaded "sandbox-$id.service" || echo "# sandbox-$id.service is still loaded"
    err=$(ct busctl -- call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager \
        StartTransientUnit 'ssa(sv)a(sa(sv))' "sandbox-$id.service" fail 15 \
        Description s "sandboxd runtime test worker $id" \
        DynamicUser b true \
        User s "sandbox-$id" \
        StateDirectory as 1 "sandboxd/workers/$id" \
        StateDirectoryMode u 448 \
        PrivateNetwork b true \
        PrivateIPC b "${WORKER_PRIVATE_IPC:-true}" \
        MemoryMax t 268435456 \
        TasksMax t 256 \
        RuntimeMaxUSec t 120000000 \
        LoadCredential 'a(ss)' 1 tok "$R/secret" \
        StandardOutputFileToAppend s "$R/$id.out" \
        StandardErrorFileToAppend s "$R/$id.err" \
        ExecStartEx 'a(sasas)' 1 "$LAUNCH" "${#run[@]}" "${run[@]}" 1 privileged \
        ExecStopPostEx 'a(sasas)' 2 \
            "$LAUNCH" "${#cleanup[@]}" "${cleanup[@]}" 1 privileged \
            /bin/sh "${#record[@]}" "${record[@]}" 2 privileged no-env-expand \
        0 2>&1 >/dev/null) || { echo "# starting sandbox-$id.service failed: $err"; return 1; }
}

# wait_worker ID [SECONDS]: until its last ExecStopPost has run (or it
# never started: then give up after a few seconds, not the whole timeout; a
# start job still queued on a busy manager is not "never started")
wait_worker() {
    local i props gone=0
    for i in $(seq $((${2:-60} * 10))); do
        ct test -s "$R/$1.status" && return 0
        if [ $((i % 10)) = 0 ]; then
            props=$(ct systemctl show -p ActiveState -p Job "sandbox-$1.service" 2>/dev/null)
            case "$props" in
            *ActiveState=active*|*ActiveState=activating*|*ActiveState=deactivating*|*ActiveState=reloading*|*Job=[0-9]*)
                gone=0 ;;
            *) gone=$((gone + 1)) ;;
            esac
            [ $gone -ge 3 ] && return 1
        fi
        sleep 0.1
    done
    return 1
}

out_of() { ct cat "$R/$1.out" 2>/dev/null; }
has_line() { out_of "$1" | grep -qxF -- "$2"; }
status_of() { ct cat "$R/$1.status" 2>/dev/null; }
home_owner() { ct stat -c %u "/var/lib/private/sandboxd/workers/$1"; }
no_leftovers() {
    ! ct test -e "/run/sandboxd/bundles/$1" &&
    ! ct sh -c "ls /run/sandboxd/runsc 2>/dev/null | grep -q 'sandbox-$1'" &&
    ! ct pgrep -f "runsc.*sandbox-$1\$" >/dev/null
}
# The launcher's journal entries are matched on the SANDBOXD_WORKER_ID it sets
# itself, not on _SYSTEMD_UNIT: journald derives that from /proc/PID/cgroup
# when it gets to the message, and a launcher that logs and exits at once may
# be gone by then (on a cgroup-v1 host its task is then in the root cgroup).
# journald reads its sockets asynchronously: --sync, and poll. The cursor
# keeps out an earlier run in this container.
journal_cursor() { ct journalctl -q -n 0 --show-cursor 2>/dev/null | sed -n 's/^-- cursor: //p'; }
J0=$(journal_cursor)
# journal_after CURSOR [MATCHES...]: the messages since CURSOR. --cursor, not
# --after-cursor: journalctl 252 steps over one entry after the cursor's, which
# with a match is the first match (the cursor's own entry, the last before
# what is tested, is never a launcher's for the id at hand).
journal_after() {
    local from=$1; shift
    ct journalctl --sync 2>/dev/null
    ct journalctl -q --no-pager -o cat ${from:+--cursor "$from"} "$@"
}
journal_of() { journal_after "$J0" "SANDBOXD_WORKER_ID=$1"; }
# worker_journal_has ID TEXT [SECONDS]: until the launcher's journal for ID has TEXT
worker_journal_has() {
    local i
    for i in $(seq $((${3:-30} * 5))); do
        journal_of "$1" | grep -qF -- "$2" && return 0
        sleep 0.2
    done
    return 1
}

install_scripts

# 1. the probe
probe=$(ct "$LAUNCH" probe --runtime runsc --runtime-path "$RUNSC" --platform "$PLATFORM"); rc=$?
if [ $rc = 0 ] && [[ "$probe" == "ok runsc version "*" platform=$PLATFORM kernel=4.4.0 uid=65534" ]]; then
    ok "probe: runsc answers from inside a sandbox ($probe)"
else
    not_ok "probe: runsc answers from inside a sandbox" "rc=$rc: $probe"
fi
probe=$(ct "$LAUNCH" probe --runtime runsc --runtime-path /bin/false); rc=$?
check "probe: a broken runsc is unavailable" eval '[ "$rc" = 1 ] && [ "${probe#unavailable }" != "$probe" ]'

# 2. a worker and the walls around it
id=rtcheck1
start_worker "$id" --pids 64 --memory 256M --cpu-percent 50 --setenv FOO=bar -- /bin/sh "$T/checks.sh"
CHECK_DIAG="$(ct cat "$R/$id.err" 2>/dev/null)" check "worker $id ran and stopped" eval 'wait_worker $id'
check "exit status 0 is the unit's" eval '[ "$(status_of $id)" = "success exited 0" ]'
uid=$(home_owner "$id")
home=/var/lib/private/sandboxd/workers/$id
check "runs as the unit's dynamic UID ($uid), not root" \
    eval '[ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] && has_line $id "uid=$uid gid=$uid"'
check "cwd and HOME are its home" eval 'has_line $id "pwd=$home" && has_line $id "home=$home"'
check "the home is the host's, written as the worker's UID" \
    eval '[ "$(ct stat -c %u:%a $home/written-by-worker)" = "$uid:644" ]'
check "the kernel it sees is gVisor's (/proc/version, dmesg)" \
    eval 'out_of $id | grep -q "^version=Linux version 4.4.0 " && has_line $id dmesg=gvisor'
check "the root file system is read-only" eval 'has_line $id root=readonly && has_line $id rootmount=ro'
check "/tmp is writable and noexec" eval 'has_line $id tmp_write=ok && has_line $id tmp_exec=denied'
check "no capabilities (CapPrm/CapEff/CapBnd 0, no ambient)" \
    eval '[ "$(out_of $id | grep -c "^caps:Cap\(Prm\|Eff\|Bnd\):0000000000000000$")" = 3 ] &&
     ! out_of $id | grep "^caps:CapAmb:" | grep -qv ":0000000000000000$"'
check "no network but loopback" \
    eval 'has_line $id "ifaces=lo " && out_of $id | grep -Eq "^connect_10.0.0.1=(OSError|TimeoutError)$" &&
     out_of $id | grep -Eq "^connect_1.1.1.1=(OSError|TimeoutError)$" && has_line $id loopback=ok'
check "sandboxd state, other homes, /root, /home and /run are masked" \
    eval 'has_line $id "listing:/var/lib/sandboxd=" && has_line $id "listing:/root=" && has_line $id "listing:/home=" &&
     has_line $id "listing:/etc/sandboxd=" && has_line $id "listing:/run=credentials " &&
     has_line $id "listing:/var/lib/private=sandboxd "'
envs=$(out_of "$id" | sed -n 's/^env:\([^=]*\)=.*/\1/p' | sort | tr '\n' ' ')
check "the environment is only HOME, PATH, CREDENTIALS_DIRECTORY and the spec's ($envs)" \
    eval '[ "$envs" = "CREDENTIALS_DIRECTORY FOO HOME PATH PWD " ] || [ "$envs" = "CREDENTIALS_DIRECTORY FOO HOME PATH " ]'
check "the credential arrives, read-only, and not through the environment" \
    eval 'has_line $id credential=s3cret-token && has_line $id credentials=readonly && ! out_of $id | grep -q "^env:.*s3cret"'
check "its bundle and runsc state are gone after it stopped" eval 'no_leftovers $id'

# 5c. a unit whose IPC namespace systemd did not make private (PID 1's): the
# launcher refuses before runsc runs, with status 125, says which namespace to
# the client and the journal, and leaves nothing behind
id=rtsharedipc
WORKER_PRIVATE_IPC=false start_worker "$id" --pids 16 --memory 64M --cpu-percent 50 -- /bin/echo escaped
wait_worker "$id" 30
CHECK_DIAG="status='$(status_of $id)'" check "a launcher in PID 1's IPC namespace refuses with status 125" eval '[ "$(status_of $id)" = "exit-code exited 125" ]'
CHECK_DIAG="$(ct cat "$R/$id.err" 2>/dev/null)" check "... tells the client which namespace is PID 1's" \
    eval 'ct grep -q "Refusing to run worker $id: the IPC namespace is PID 1.s" "$R/$id.err"'
CHECK_DIAG="$(journal_of $id | tail -n 3)" check "... and the journal, under SANDBOXD_WORKER_ID=$id" \
    eval 'worker_journal_has $id "the IPC namespace is PID 1"'
CHECK_DIAG="$(ct cat "$R/$id.out" 2>/dev/null)" check "... and the workload never ran" eval '! ct grep -q escaped "$R/$id.out"'
check "... and leaves nothing behind" eval 'no_leftovers $id'

# 3. the exit status of the workload is the unit's
id=rtexit7
start_worker "$id" --pids 16 --memory 64M --cpu-percent 50 -- /bin/sh -c 'exit 7'
wait_worker "$id"
check "exit status 7 of the workload is the unit's" eval '[ "$(status_of $id)" = "exit-code exited 7" ]'

# 4. a fork bomb stops at the in-sandbox pids limit (TasksMax cannot see gVisor's tasks)
id=rtbomb
start_worker "$id" --pids 32 --memory 256M --cpu-percent 50 -- /bin/sh "$T/bomb.sh"
wait_worker "$id" 60
procs=$(out_of "$id" | sed -n 's/^procs=//p')
under_way=$(out_of "$id" | sed -n 's/^under_way=//p')
if [ -n "$procs" ] && [ "$procs" -le 32 ] && [ "${under_way:-0}" -ge 16 ]; then
    ok "a fork bomb is held at the pids limit (32): at most $procs processes at once"
else
    not_ok "a fork bomb is held at the pids limit (32)" "procs='$procs' under_way='$under_way' $(status_of $id)"
fi
check "the bomb's worker is cleaned up" eval 'no_leftovers $id'

# 5. the memory limit holds inside the sandbox
id=rtmem
# The guard samples once a second (runsc events --interval=1) and may run late
# on a loaded host; the workload stays over the limit until it is killed. Not
# before it got near the limit: a guard that kills at once is broken too.
start_worker "$id" --pids 32 --memory 128M --cpu-percent 100 -- /bin/sh "$T/memory.sh"
wait_worker "$id" 90
last=$(out_of "$id" | sed -n 's/^allocated //p' | tail -n 1)
if [ "$(status_of $id)" = "exit-code exited 137" ] && ! has_line "$id" survived && [ "${last:-0}" -ge 64 ] &&
   ct grep -q "exceeded its memory limit" "$R/$id.err"; then
    ok "a worker over its memory limit (128M) is killed (got to ${last:-0} MiB, exit 137)"
else
    not_ok "a worker over its memory limit (128M) is killed" "status='$(status_of $id)' last=$last"
fi
check "the killed worker is cleaned up" eval 'no_leftovers $id'
# The worker's stderr is its client's; the operator reads the journal. The
# journal gets the launcher's messages too, tagged with the worker.
CHECK_DIAG="$(journal_of $id | tail -n 3)" check "the memory kill is in the journal under SANDBOXD_WORKER_ID=$id" \
    eval 'worker_journal_has $id "exceeded its memory limit"'

# 5b. a setup failure is refused with status 125, said to the client and to
# the journal, and leaves nothing behind: here the home is not the worker's
id=rtbadhome
ct install -d -m 0755 "$R/not-a-home"
WORKER_HOME=$R/not-a-home start_worker "$id" --pids 16 --memory 64M --cpu-percent 50 -- /bin/true
wait_worker "$id" 30
CHECK_DIAG="status='$(status_of $id)'" check "a launcher that cannot set up fails with status 125" eval '[ "$(status_of $id)" = "exit-code exited 125" ]'
CHECK_DIAG="$(ct cat "$R/$id.err" 2>/dev/null)" check "... and tells the client why" eval 'ct grep -q "is not a 0700 directory owned by sandbox-$id" "$R/$id.err"'
CHECK_DIAG="$(journal_of $id | tail -n 3)" check "... and the journal, under SANDBOXD_WORKER_ID=$id" \
    eval 'worker_journal_has $id "is not a 0700 directory owned by sandbox-$id"'
check "the refused worker leaves nothing behind" eval 'no_leftovers $id'

# 6. the disk cap of the home is enforced
id=rtdisk
start_worker "$id" --pids 32 --memory 128M --cpu-percent 50 --disk 8M -- /bin/sh "$T/disk.sh"
wait_worker "$id"
size=$(out_of "$id" | sed -n 's/^size=//p')
if out_of "$id" | grep -q "No space left on device" && [ -n "$size" ] && [ "$size" -le $((8 << 20)) ] &&
   out_of "$id" | grep -q "^mount:.* tmpfs .*size=8388608"; then
    ok "the home's disk cap (8M) holds: a 16M write stopped at $size bytes"
else
    not_ok "the home's disk cap (8M) holds" "$(out_of $id | tr '\n' '|')"
fi

# 7. stopping a running worker leaves nothing behind
id=rtstop
start_worker "$id" --pids 16 --memory 64M --cpu-percent 50 -- /bin/sleep 600
# until runsc's sandbox, gofer and guard all run, so their sets are looked at
for i in $(seq 300); do
    ct "$RUNSC" --root=/run/sandboxd/runsc state "sandbox-$id" 2>/dev/null | grep -q '"status": "running"' && break
    sleep 0.2
done
sleep 1
check "a running worker has its bundle, mode 0700" eval '[ "$(ct stat -c %a /run/sandboxd/bundles/$id)" = 700 ]'
# CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP SYS_CHROOT SYS_PTRACE SYS_ADMIN SETFCAP
RUNSC_CAPS=00000000802c01ff
bounding_sets() {   # the CapBnd of every process of the unit, one per line
    local cg
    cg=$(ct systemctl show -P ControlGroup "sandbox-$1.service")
    for p in $(ct cat "/sys/fs/cgroup/systemd$cg/cgroup.procs" 2>/dev/null || ct cat "/sys/fs/cgroup$cg/cgroup.procs"); do
        ct awk '/^CapBnd:/ {print $2}' "/proc/$p/status" 2>/dev/null
    done
}
main=$(ct systemctl show -P MainPID "sandbox-$id.service")
check "the launcher keeps only runsc's capabilities in its bounding set ($RUNSC_CAPS)" \
    eval '[ "$(ct awk "/^CapBnd:/ {print \$2}" /proc/$main/status)" = "$RUNSC_CAPS" ]'
caps_within() {     # every set given is a subset of RUNSC_CAPS, and there is one
    [ $# -gt 0 ] || return 1
    for c in "$@"; do [ $(( 0x$c & ~0x$RUNSC_CAPS )) = 0 ] || return 1; done
}
check "no process of the unit has a capability outside that set" eval 'caps_within $(bounding_sets $id)'
# The memory guard reads the sentry's own accounting files in-process: no
# "runsc events" per worker (a Go process, a quarter of an idle worker's memory).
unit_cmdlines() {
    local cg
    cg=$(ct systemctl show -P ControlGroup "sandbox-$1.service")
    for p in $(ct cat "/sys/fs/cgroup/systemd$cg/cgroup.procs" 2>/dev/null || ct cat "/sys/fs/cgroup$cg/cgroup.procs"); do
        ct sh -c "tr '\\0' ' ' < /proc/$p/cmdline; echo" 2>/dev/null
    done
}
CHECK_DIAG="$(ct ls -l /proc/$main/fd)" check "the memory guard follows the sentry's own files: the launcher holds its memory file" \
    eval 'ct ls -l /proc/$main/fd | grep -q "memfd:runsc-memory"'
CHECK_DIAG="$(unit_cmdlines $id)" check "... and the unit runs its sentry but no runsc events" \
    eval 'unit_cmdlines $id | grep -q "^runsc-sandbox " && ! unit_cmdlines $id | grep -q " events "'
ct systemctl stop "sandbox-$id.service"
wait_worker "$id" 30
check "systemctl stop: bundle, runsc state and processes are gone" eval 'no_leftovers $id'

# 7b. a worker stopped while runsc is still creating its sandbox: the killed
# sandbox leaves its control socket and lock but no state, which "runsc
# delete" does not know; the cleanup still leaves nothing behind
early_ok=0 early_left=""
for delay in 0.1 0.2 0.3 0.4 0.6; do
    id=rtearly
    if ! start_worker "$id" --pids 16 --memory 64M --cpu-percent 50 -- /bin/sleep 60; then
        early_left+="after ${delay}s: not started; "
        continue
    fi
    sleep "$delay"
    ct systemctl stop "sandbox-$id.service"
    wait_worker "$id" 30
    for i in $(seq 30); do no_leftovers "$id" && break; sleep 0.2; done
    if no_leftovers "$id"; then
        early_ok=$((early_ok + 1))
    else
        early_left+="after ${delay}s: $(ct ls /run/sandboxd/bundles /run/sandboxd/runsc 2>&1 | grep rtearly |
            tr '\n' ' ')$(journal_of $id | tail -n 2 | tr '\n' ' '); "
    fi
done
CHECK_DIAG="clean: $early_ok of 5; ${early_left:-}" check "stopped 0.1-0.6 s after start, 5 of 5 workers leave no bundle, runsc state or process" eval '[ $early_ok = 5 ]'

# 7c. the cleanup waits for the unit's other processes: systemd starts
# ExecStopPost= once the main process is gone, and inside a container on a
# legacy cgroup hierarchy (this test bed) it does not wait for the rest, so
# a dying runsc could still hold the state the cleanup deletes. Here the
# straggler ignores SIGTERM: the cleanup kills it before it goes on.
id=rtstray
stray=(/bin/sh -c "(trap '' TERM; exec /bin/sleep 1000) & exec /bin/sleep 1000")
cleanup=("$LAUNCH" cleanup --id "$id" --runtime-path "$RUNSC")
# (shell builtins only: a command substitution or grep would count itself)
record=(/bin/sh -c "n=0; while read -r p; do [ \"\$p\" = \$\$ ] || n=\$((n + 1)); done \
    </sys/fs/cgroup/systemd/system.slice/sandbox-$id.service/cgroup.procs; echo others=\$n > $R/$id.status")
ct rm -f "$R/$id.status"
unit_unloaded "sandbox-$id.service"
ct busctl -- call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager \
    StartTransientUnit 'ssa(sv)a(sa(sv))' "sandbox-$id.service" fail 3 \
    ExecStart 'a(sasb)' 1 /bin/sh "${#stray[@]}" "${stray[@]}" false \
    ExecStopPostEx 'a(sasas)' 2 "$LAUNCH" "${#cleanup[@]}" "${cleanup[@]}" 0 \
        /bin/sh "${#record[@]}" "${record[@]}" 1 no-env-expand \
    TimeoutStopUSec t 60000000 \
    0 >/dev/null
# Both sleeps exec'd, so the straggler's trap is set: only the exact command
# line, not the sh -c that names it, nor its fork before the exec.
sleeps=0
for i in $(seq 300); do sleeps=$(ct pgrep -cxf '/bin/sleep 1000'); [ "$sleeps" = 2 ] && break; sleep 0.1; done
stop_start=$(date +%s)
ct systemctl stop "sandbox-$id.service"
stop_secs=$(($(date +%s) - stop_start))
CHECK_DIAG="sleeps before the stop: $sleeps, status='$(status_of $id)'" check "a process of the unit that ignored SIGTERM was gone before the cleanup's next step" \
    eval '[ "$sleeps" = 2 ] && [ "$(status_of $id)" = "others=0" ]'
CHECK_DIAG="$(journal_of $id | tail -n 3 | tr '\n' '|')" check "... killed by the cleanup, which says so, within seconds (${stop_secs} s), not at systemd's stop timeout" \
    eval 'worker_journal_has $id "Killed 1 process(es) of sandbox-$id.service" && [ $stop_secs -lt 30 ]'
check "... and no sleep of it is left" eval '[ "$(ct pgrep -fc "sleep 1000")" = 0 ]'

# 7d. run from a unit of its own whose stderr is the journal (sandboxd's
# late-cleanup unit), the cleanup waits for nothing, and what it says is in the
# journal once, under the worker's id: here runsc ("/bin/false") cannot delete
# a planted state
id=rtlate
state="/run/sandboxd/runsc/sandbox-${id}_sandbox:sandbox-$id.state"
ct install -d -m 0700 /run/sandboxd/runsc "/run/sandboxd/bundles/$id"
ct sh -c "echo '{}' > '$state'"
unit_unloaded "sandbox-$id-cleanup.service"
late_from=$(journal_cursor)
ct systemd-run -q --wait --unit="sandbox-$id-cleanup.service" "$LAUNCH" cleanup --id "$id" --runtime-path /bin/false
rc=$?
# "once": the one entry under the worker's id, and no other copy (such as
# stderr's, without the id) anywhere in the journal
late_said="sandbox-$id survived its deletion: (runsc said nothing)"
worker_journal_has "$id" "$late_said" 30
late_log=$(journal_after "$late_from" "SANDBOXD_WORKER_ID=$id")
late_all=$(journal_after "$late_from" | grep -cF -- "$late_said")
CHECK_DIAG="rc=$rc copies in all: $late_all; under the id: $late_log" check "a deletion that fails is reported, with the runtime's answer, in the journal once, under the worker's id" \
    eval '[ $rc != 0 ] && [ "$(printf "%s\n" "$late_log" | grep -cF -- "$late_said")" = 1 ] && [ "$late_all" = 1 ]'
check "... and its bundle is removed all the same" eval '! ct test -e "/run/sandboxd/bundles/$id"'
ct rm -f "$state"

# 8. the channel: stdin and stdout are separate pipes, as the daemon's, and
# pass through runsc untouched, EOF included, even when the input comes only
# after the workload already waits for it. (busctl cannot pass fds, so the
# unit opens two FIFOs: each its own open file description, like a pipe.)
id=rtchan
ct tee "$T/converse.py" >/dev/null <<'EOF'
# converse.py ROUNDS DIR UNIT LAUNCH RUN-ARGS...: starts UNIT the way the
# daemon does, its stdin and stdout FIFOs in DIR, then talks to it; prints
# "good/rounds"
import os, select, subprocess, sys, time
rounds, fifo_dir, unit, launch, run = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
name = unit.rsplit(".", 1)[0]                 # sandbox-ID
def unit_gone(timeout):
    # The next round starts a unit of the same name, which systemd refuses
    # ("already loaded") until this one is unloaded: is-active turns false
    # already while it is deactivating, and a failed one stays until reset.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        props = subprocess.run(["systemctl", "show", "-p", "LoadState", "-p", "ActiveState", unit],
                               capture_output=True, text=True).stdout.split()
        if "LoadState=not-found" in props:
            return True
        if "ActiveState=failed" in props:
            subprocess.run(["systemctl", "reset-failed", unit], stderr=subprocess.DEVNULL)
        time.sleep(0.1)
    return False
def readline(fd, deadline):
    line = b""
    while not line.endswith(b"\n") and time.monotonic() < deadline:
        if select.select([fd], [], [], max(0, deadline - time.monotonic()))[0]:
            c = os.read(fd, 1)
            if not c:
                break
            line += c
    return line
good = 0
for i in range(rounds):
    fifo_in, fifo_out = fifo_dir + "/stdin", fifo_dir + "/stdout"
    for f in (fifo_in, fifo_out):
        if os.path.exists(f):
            os.unlink(f)
        os.mkfifo(f, 0o600)
    if not unit_gone(60):
        print("round %d: %s is still loaded" % (i, unit), file=sys.stderr)
    subprocess.run(["busctl", "--", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                    "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))", unit, "fail", "10",
                    "DynamicUser", "b", "true", "User", "s", name,
                    "StateDirectory", "as", "1", "sandboxd/workers/" + name.split("-", 1)[1],
                    "StateDirectoryMode", "u", "448", "PrivateNetwork", "b", "true", "PrivateIPC", "b", "true",
                    "StandardInputFile", "s", fifo_in, "StandardOutputFile", "s", fifo_out,
                    "StandardError", "s", "journal",
                    "ExecStartEx", "a(sasas)", "1", launch, str(len(run) + 1), launch, *run, "1", "privileged",
                    "0"], check=True, stdout=subprocess.DEVNULL)
    # in the order the unit opens them, so neither side waits for the other
    in_w = os.open(fifo_in, os.O_WRONLY)
    out_r = os.open(fifo_out, os.O_RDONLY)
    deadline = time.monotonic() + 60
    got = [readline(out_r, deadline)]
    time.sleep(0.3 + 0.2 * (i % 3))           # the workload is blocked in read() by now
    os.write(in_w, b"hello %d\n" % i)
    got.append(readline(out_r, deadline))
    os.close(in_w)                             # EOF for the workload
    got.append(readline(out_r, deadline))
    want = [b"ready\n", b"echo:hello %d\n" % i, b"bye\n"]
    if got == want:
        good += 1
    else:
        print("round %d: got %r" % (i, got), file=sys.stderr)
    os.close(out_r)
print("%d/%d" % (good, rounds))
EOF
chan=$(ct timeout 300 python3 "$T/converse.py" 5 "$R" "sandbox-$id.service" "$LAUNCH" run --id "$id" --runtime runsc \
    --runtime-path "$RUNSC" --platform "$PLATFORM" --home "/var/lib/sandboxd/workers/$id" --pids 16 --memory 64M \
    --cpu-percent 50 -- /bin/sh "$T/echo.sh" 2>&1)
CHECK_DIAG="got: $(printf '%s' "$chan" | tr '\n' '|')" check "the workload's stdin/stdout are the unit's FIFOs, both ways, EOF included, input after it waits: 5 of 5" \
    eval '[ "$(printf "%s\n" "$chan" | tail -n1)" = 5/5 ]'
ct systemctl stop "sandbox-$id.service" 2>/dev/null
ct "$LAUNCH" cleanup --id "$id" --runtime-path "$RUNSC" >/dev/null 2>&1
for i in $(seq 50); do no_leftovers "$id" && break; sleep 0.2; done
check "the channel worker is cleaned up" eval 'no_leftovers $id'

# 8b. stdin and stdout on one socket (what a socket-activated unit gets) are
# refused before runsc starts: gVisor would make one of them non-blocking for
# the workload, whose reads of stdin would then fail with EAGAIN
id=rtshared
ct tee /run/systemd/system/sandbox-rtshared.socket >/dev/null <<EOF
[Socket]
ListenStream=$R/rtshared.sock
Accept=yes
EOF
ct tee /run/systemd/system/sandbox-rtshared@.service >/dev/null <<EOF
[Service]
DynamicUser=yes
User=sandbox-$id
StateDirectory=sandboxd/workers/$id
StateDirectoryMode=0700
PrivateNetwork=yes
PrivateIPC=yes
StandardInput=socket
StandardOutput=socket
StandardError=journal
ExecStart=+$LAUNCH run --id $id --runtime runsc --runtime-path $RUNSC --platform $PLATFORM --home /var/lib/sandboxd/workers/$id --pids 16 --memory 64M --cpu-percent 50 -- /bin/sh $T/echo.sh
ExecStopPost=+$LAUNCH cleanup --id $id --runtime-path $RUNSC
EOF
ct systemctl daemon-reload
ct systemctl start sandbox-rtshared.socket
shared=$(ct timeout 40 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
print("got %d bytes" % len(s.recv(100)))' "$R/rtshared.sock" 2>&1)
CHECK_DIAG="got: $shared" check "a worker whose stdin and stdout are one socket runs nothing (EOF at once)" eval '[ "$shared" = "got 0 bytes" ]'
# the launcher's words under its worker id; the exit status is systemd's, under the unit
shared_log="" shared_said=""
for i in $(seq 150); do
    shared_log=$(journal_after "$J0" -u 'sandbox-rtshared@*' 2>/dev/null)
    shared_said=$(journal_of "$id")
    printf '%s' "$shared_log" | grep -q 'status=125' &&
        printf '%s' "$shared_said" | grep -q "stdin and stdout are one open file description" && break
    sleep 0.2
done
CHECK_DIAG="journal: $(printf '%s\n' "$shared_said" "$shared_log" | tail -n5 | tr '\n' '|')" check "the launcher says why (one open file description) and fails with its setup status 125" \
    eval 'printf "%s" "$shared_said" | grep -q "stdin and stdout are one open file description" &&
     printf "%s" "$shared_log" | grep -q "status=125"'
ct systemctl stop sandbox-rtshared.socket
for i in $(seq 50); do no_leftovers "$id" && break; sleep 0.2; done
check "the refused worker leaves nothing behind" eval 'no_leftovers $id'

# 9. a configured root image is the worker's root, read-only, masked the same
id=rtimage
IMG=/srv/sandboxd-runtime-test-image
# the image: the container's root with one file of its own on top
ct sh -c "mkdir -p $IMG $R/image-upper && mount -t tmpfs -o size=1m tmpfs $R/image-upper &&
             mkdir -p $R/image-upper/u/opt $R/image-upper/w && echo only-in-the-image > $R/image-upper/u/opt/image-marker &&
             mount -t overlay overlay -o lowerdir=/,upperdir=$R/image-upper/u,workdir=$R/image-upper/w $IMG"
start_worker "$id" --root-image "$IMG" --pids 16 --memory 64M --cpu-percent 50 -- \
    /bin/sh -c 'cat /opt/image-marker; touch /var/tmp/x 2>&1; ls -A /root; echo home=$(pwd)'
wait_worker "$id"
ct sh -c "umount $IMG; umount $R/image-upper; rmdir $IMG $R/image-upper"
CHECK_DIAG="$(out_of $id | tr '\n' '|') $(ct cat $R/$id.err)" check "a configured root image is used, read-only, with the home inside" \
    eval 'has_line $id only-in-the-image && out_of $id | grep -q "Read-only file system" &&
     has_line $id "home=/var/lib/private/sandboxd/workers/$id" && [ "$(status_of $id)" = "success exited 0" ]'

# leave the container as it was for whatever test runs next
for id in rtcheck1 rtexit7 rtbomb rtmem rtbadhome rtdisk rtstop rtearly rtstray rtchan rtshared rtimage; do
    ct systemctl reset-failed "sandbox-$id.service" 2>/dev/null
    ct rm -rf "/var/lib/private/sandboxd/workers/$id" "/var/lib/sandboxd/workers/$id"
done
ct systemctl reset-failed sandbox-rtlate-cleanup.service 'sandbox-rtshared@*' 2>/dev/null
ct rm -f /run/systemd/system/sandbox-rtshared.socket /run/systemd/system/sandbox-rtshared@.service
ct systemctl daemon-reload
ct rm -rf "$T" "$R"

tap_done
