# shellcheck shell=bash
# Boots throwaway containers that run a real systemd (recipe and pitfalls:
# ../shared/design/testbed.md), for tests on hosts whose PID 1 is not systemd.
# Source this file; do not execute it.
#
#   testbed_boot NAME STAGE_DIR   boot NAME from the cached rootfs with STAGE_DIR
#                                 loaded; returns once systemd is up and the
#                                 stage is loaded. STAGE_DIR is copied over /,
#                                 except its debs/ directory: the packages in
#                                 debs/*.deb are installed with apt instead
#   testbed_pid NAME              print the container's PID 1 (as seen on the host)
#   testbed_exec NAME CMD...      run CMD inside NAME (all namespaces)
#   testbed_journal NAME FILE     save the container's journal to FILE
#   testbed_stop NAME             kill NAME and wait until it is gone
#   testbed_stop_all              stop every container this shell booted
#   testbed_on_exit CMD           extra cleanup to run before the containers stop
#
# The library owns the EXIT, INT, TERM and HUP traps of the sourcing shell, so
# no container outlives it; add cleanups with testbed_on_exit instead of trap.
# A watchdog per container also kills it if the shell dies by SIGKILL.
# Call testbed_boot directly, not inside $(...): the container is a child of the
# calling shell and must be waited for there.
#
# Environment:
#   TESTBED_ROOTFS        rootfs to boot (default: what tests/testbed/mkrootfs.sh prints)
#   TESTBED_RUNDIR        per-container state and console logs (default /run/sandboxd-testbed)
#   TESTBED_BOOT_TIMEOUT  seconds for systemd to come up (default 90)
#   TESTBED_KEEP_LOGS     keep every console log (by default only those of failed boots)
#   TESTBED_INSTALL       0: leave the stage's debs/*.deb uninstalled (they stay
#                         readable in the container under /run/stage/debs)

TESTBED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED_RUNDIR=${TESTBED_RUNDIR:-/run/sandboxd-testbed}
TESTBED_BOOT_TIMEOUT=${TESTBED_BOOT_TIMEOUT:-90}
declare -a _testbed_names=()
declare -a _testbed_exit_hooks=()
_testbed_traps_set=

_testbed_log() { echo "testbed: $*" >&2; }

_testbed_state() { echo "$TESTBED_RUNDIR/$1"; }

testbed_pid() {
    local f
    f="$(_testbed_state "$1")/leader.pid"
    [ -s "$f" ] || { _testbed_log "$1: not running (no $f)"; return 1; }
    cat "$f"
}

testbed_exec() {
    local name=$1 pid
    shift
    pid=$(testbed_pid "$name") || return 1
    nsenter -t "$pid" -a "$@"
}

testbed_journal() {
    testbed_exec "$1" journalctl -b --no-pager -o short-precise >"$2" 2>&1
}

testbed_on_exit() {
    _testbed_exit_hooks+=("$*")
    _testbed_install_traps
}

_testbed_on_exit() {
    local hook
    for hook in "${_testbed_exit_hooks[@]}"; do
        eval "$hook" || true
    done
    _testbed_exit_hooks=()
    testbed_stop_all
}

_testbed_install_traps() {
    [ -n "$_testbed_traps_set" ] && return 0
    trap '_testbed_on_exit' EXIT
    trap '_testbed_on_exit; trap - INT; kill -INT $$' INT
    trap '_testbed_on_exit; trap - TERM; kill -TERM $$' TERM
    trap '_testbed_on_exit; trap - HUP; kill -HUP $$' HUP
    _testbed_traps_set=1
}

testbed_rootfs() {
    if [ -n "${TESTBED_ROOTFS:-}" ]; then
        echo "$TESTBED_ROOTFS"
        return 0
    fi
    "$TESTBED_DIR/mkrootfs.sh"
}

# Fails (with the console log) unless PID 1 of the container shows up.
_testbed_wait_leader() {
    local name=$1 nspawn_pid=$2 state=$3 i leader
    for i in $(seq 300); do
        leader=$(pgrep -P "$nspawn_pid" 2>/dev/null | head -n1)
        if [ -n "$leader" ] && [ "$(cat "/proc/$leader/comm" 2>/dev/null)" = systemd ]; then
            echo "$leader"
            return 0
        fi
        if ! kill -0 "$nspawn_pid" 2>/dev/null; then
            _testbed_log "$name: systemd-nspawn exited before the container's systemd started"
            return 1
        fi
        sleep 0.1
    done
    _testbed_log "$name: no systemd inside the container after 30 s"
    return 1
}

_testbed_boot_failed() {
    local name=$1 state=$2
    if [ -s "$state/leader.pid" ]; then
        testbed_exec "$name" systemctl --no-pager --failed >>"$state/console.log" 2>&1 || true
        testbed_journal "$name" "$state/journal.log" || true
    fi
    _testbed_log "$name: boot failed; console log: $state/console.log"
    tail -n 40 "$state/console.log" | sed 's/^/testbed:   /' >&2
    touch "$state/keep"
    testbed_stop "$name"
    return 1
}

# Loads the stage: its packages the way an operator installs them (apt, with
# the maintainer scripts), everything else (test clients, or a whole DESTDIR
# install where there is no package, as for the sanitizer build) copied over /
# and loaded the way a package install would: units, bus policy and
# activation files, tmpfiles and sysusers snippets. sandboxd is left stopped
# (policy-rc.d forbids the postinst's start), as a DESTDIR install leaves it,
# so each script starts it once its configuration is in place.
_testbed_load_stage() {
    local name=$1
    testbed_exec "$name" env TESTBED_INSTALL="${TESTBED_INSTALL:-1}" sh -ec '
        for f in /run/stage/* /run/stage/.[!.]*; do
            if [ -e "$f" ] && [ "$f" != /run/stage/debs ]; then cp -a "$f" /; fi
        done
        ip link set lo up
        # A stage that configures the manager itself needs it to re-execute.
        if [ -d /run/stage/etc/systemd/system.conf.d ]; then
            systemctl daemon-reexec
            systemctl is-system-running --wait >/dev/null || true
        fi
        systemctl daemon-reload
        if [ "$TESTBED_INSTALL" != 0 ] && ls /run/stage/debs/*.deb >/dev/null 2>&1; then
            printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d
            chmod 755 /usr/sbin/policy-rc.d
            rc=0
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /run/stage/debs/*.deb || rc=$?
            rm -f /usr/sbin/policy-rc.d
            [ $rc = 0 ]
        fi
        systemctl reload dbus
        if command -v systemd-sysusers >/dev/null; then systemd-sysusers; fi
        if command -v systemd-tmpfiles >/dev/null; then systemd-tmpfiles --create; fi
    '
}

# Resource caps need writable cgroup controllers. nspawn mounts the host's
# cgroup v1 controllers read-only in the container, so systemd there cannot
# apply MemoryMax=/TasksMax=/CPUQuota= and caps would go untested. Where the
# host has writable v1 hierarchies, each container gets a subtree of its own
# (it runs there, so that subtree is its cgroup namespace root), the mounts are
# made writable inside and systemd re-executes to pick them up. On a host with
# the unified hierarchy nspawn delegates a writable cgroup by itself.
TESTBED_CGROUP_CONTROLLERS="memory pids cpu cpuacct blkio devices freezer"

_testbed_cgroup_v1() {
    [ -w /sys/fs/cgroup/memory/cgroup.procs ] && [ -w /sys/fs/cgroup/pids/cgroup.procs ] &&
        [ "${TESTBED_NO_CGROUPS:-}" != 1 ]
}

# Moves the calling process into NAME's subtree of every v1 controller.
_testbed_cgroup_enter() {
    local name=$1 c d
    for c in $TESTBED_CGROUP_CONTROLLERS; do
        d=/sys/fs/cgroup/$c/sbx-testbed/$name
        [ -d "/sys/fs/cgroup/$c" ] || continue
        mkdir -p "$d" && echo "$BASHPID" >"$d/cgroup.procs" || return 1
    done
    if [ -d /sys/fs/cgroup/cpuset ]; then
        d=/sys/fs/cgroup/cpuset/sbx-testbed
        mkdir -p "$d/$name"
        cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/cpuset.cpus"
        cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/cpuset.mems"
        cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/$name/cpuset.cpus"
        cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/$name/cpuset.mems"
        echo "$BASHPID" >"$d/$name/cgroup.procs"
    fi
}

# Inside the booted container: writable controllers, then systemd re-reads them.
_testbed_cgroup_enable() {
    local name=$1 c
    for c in $TESTBED_CGROUP_CONTROLLERS; do
        testbed_exec "$name" mount -o remount,rw,bind "/sys/fs/cgroup/$c" || return 1
    done
    testbed_exec "$name" systemctl daemon-reexec || return 1
    testbed_exec "$name" systemctl is-system-running --wait >/dev/null 2>&1
    testbed_exec "$name" test -w /sys/fs/cgroup/memory/system.slice/cgroup.procs
}

_testbed_cgroup_remove() {
    local name=$1 c
    for c in $TESTBED_CGROUP_CONTROLLERS cpuset; do
        [ -d "/sys/fs/cgroup/$c/sbx-testbed/$name" ] || continue
        find "/sys/fs/cgroup/$c/sbx-testbed/$name" -depth -type d -exec rmdir {} + 2>/dev/null
    done
}

testbed_boot() {
    local name=${1:?usage: testbed_boot NAME STAGE_DIR} stage=${2:?usage: testbed_boot NAME STAGE_DIR}
    local rootfs state nspawn_pid leader status

    [ -d "$stage" ] || { _testbed_log "$name: stage directory $stage does not exist"; return 1; }
    stage=$(cd "$stage" && pwd)
    state=$(_testbed_state "$name")
    if [ -s "$state/nspawn.pid" ] && kill -0 "$(cat "$state/nspawn.pid")" 2>/dev/null; then
        _testbed_log "$name: a container of that name is already running (nspawn pid $(cat "$state/nspawn.pid"))"
        return 1
    fi
    rootfs=$(testbed_rootfs) || { _testbed_log "$name: no rootfs (tests/testbed/mkrootfs.sh failed)"; return 1; }
    [ -f "$rootfs/.complete" ] || { _testbed_log "$name: $rootfs is not a complete rootfs"; return 1; }

    rm -rf "$state"
    mkdir -p "$state"
    _testbed_install_traps
    _testbed_names+=("$name")

    local cgroups=0
    _testbed_cgroup_v1 && cgroups=1
    # Workspaces are ext4 images on loop devices. nspawn's /dev has none, so
    # the host's loop control and existing loop nodes are bound in (the host's
    # device cgroup allows them); sandbox-workspace creates a node missing in
    # the container's /dev when the kernel hands out a new one.
    # Every worker's disk is such an image too (daemon/worker/worker-disk.h), and
    # the warm pool holds several at once: the host gets 64 loop devices
    # (LOOP_CTL_ADD; devtmpfs makes their nodes) before they are bound. The
    # images get a file system of their own: sandboxd admits a disk only if
    # every held one, filled, leaves [Disk] KeepFree, and the overlay's few
    # GB of memory would hold only a handful of 1 GiB disks (the pool's
    # alone); this tmpfs is as sparse as the images, only what is written
    # takes memory.
    # SANDBOXD_TESTBED_LOOPS asks for more (bench/top.sh: one disk per worker).
    python3 - "${SANDBOXD_TESTBED_LOOPS:-64}" <<'PYEOF' 2>/dev/null || :
import fcntl, os, sys
fd = os.open('/dev/loop-control', os.O_RDWR)
for n in range(int(sys.argv[1])):
    if not os.path.exists('/dev/loop%d' % n):
        try:
            fcntl.ioctl(fd, 0x4C80, n)  # LOOP_CTL_ADD
        except OSError:
            pass
PYEOF
    # Only the ones asked for: every bind is a mount in the container's /dev,
    # which each unit with PrivateDevices= walks as it starts (about 2.4 ms
    # a mount here: the host's 317 loop devices, left by an earlier
    # bench/density.sh or bench/top.sh, made every gate and proxy start 0.8 s
    # slower). A loop device the kernel hands out beyond them gets its node
    # from sandbox-workspace or the launcher (image-fs.c), as above.
    local -a devbinds=(--bind=/dev/loop-control)
    local n
    for ((n = 0; n < ${SANDBOXD_TESTBED_LOOPS:-64}; n++)); do
        [ -e "/dev/loop$n" ] && devbinds+=("--bind=/dev/loop$n")
    done
    (
        if [ "$cgroups" = 1 ] && ! _testbed_cgroup_enter "$name"; then
            echo "testbed: could not enter a cgroup subtree of its own" >&2
        fi
        exec systemd-nspawn -D "$rootfs" -M "$name" -b --register=no --keep-unit --private-network \
            --volatile=overlay --bind-ro="$stage":/run/stage --console=pipe "${devbinds[@]}" \
            --tmpfs=/var/lib/private/sandboxd/disks:mode=0755,size=64G
    ) </dev/null >"$state/console.log" 2>&1 &
    nspawn_pid=$!
    echo "$nspawn_pid" >"$state/nspawn.pid"

    leader=$(_testbed_wait_leader "$name" "$nspawn_pid" "$state") || { _testbed_boot_failed "$name" "$state"; return 1; }
    echo "$leader" >"$state/leader.pid"
    _testbed_watchdog "$leader" "$state"

    # Until systemd inside has bound its private socket, systemctl cannot connect.
    local deadline=$((SECONDS + TESTBED_BOOT_TIMEOUT))
    until testbed_exec "$name" test -S /run/systemd/private 2>/dev/null; do
        if [ $SECONDS -ge $deadline ] || ! kill -0 "$nspawn_pid" 2>/dev/null; then
            _testbed_log "$name: systemd never opened /run/systemd/private"
            _testbed_boot_failed "$name" "$state"
            return 1
        fi
        sleep 0.1
    done
    status=$(timeout "$((deadline - SECONDS + 1))" nsenter -t "$leader" -a systemctl is-system-running --wait 2>&1)
    case "$status" in
        running|degraded) ;;
        *)
            _testbed_log "$name: systemd did not finish booting within ${TESTBED_BOOT_TIMEOUT}s (state: ${status:-timeout})"
            _testbed_boot_failed "$name" "$state"
            return 1 ;;
    esac
    if [ "$cgroups" = 1 ] && ! _testbed_cgroup_enable "$name" >>"$state/console.log" 2>&1; then
        _testbed_log "$name: cgroup controllers stay read-only: resource caps will not be enforced"
    fi
    if ! _testbed_load_stage "$name" >>"$state/console.log" 2>&1; then
        _testbed_log "$name: loading the stage into the container failed"
        _testbed_boot_failed "$name" "$state"
        return 1
    fi
    return 0
}

# Kills the container if the shell that booted it disappears without running
# its traps (SIGKILL). It runs in its own session so a process-group kill of
# the test run does not take it along, and ends as soon as the container does.
_testbed_watchdog() {
    local leader=$1 state=$2 parent=$$
    setsid bash -c '
        while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
        kill -KILL "$2" 2>/dev/null
    ' testbed-watchdog "$parent" "$leader" </dev/null >/dev/null 2>&1 &
    echo $! >"$state/watchdog.pid"
}

testbed_stop() {
    local name=${1:?usage: testbed_stop NAME} state nspawn_pid leader i
    state=$(_testbed_state "$name")
    nspawn_pid=$(cat "$state/nspawn.pid" 2>/dev/null)
    leader=$(cat "$state/leader.pid" 2>/dev/null)
    # SIGKILL to the container's PID 1 ends its whole PID namespace at once;
    # killing only systemd-nspawn would orphan the container (seen here).
    [ -n "$leader" ] && kill -KILL "$leader" 2>/dev/null
    if [ -n "$nspawn_pid" ]; then
        for i in $(seq 100); do
            kill -0 "$nspawn_pid" 2>/dev/null || break
            [ "$i" = 50 ] && kill -KILL "$nspawn_pid" 2>/dev/null
            sleep 0.1
        done
        if kill -0 "$nspawn_pid" 2>/dev/null; then
            _testbed_log "$name: systemd-nspawn (pid $nspawn_pid) does not die"
            return 1
        fi
        wait "$nspawn_pid" 2>/dev/null
    fi
    [ -s "$state/watchdog.pid" ] && kill "$(cat "$state/watchdog.pid")" 2>/dev/null
    _testbed_cgroup_remove "$name"
    # The console log of a failed boot stays for diagnosis (TESTBED_KEEP_LOGS=1: every log).
    if [ -e "$state/keep" ] || [ -n "${TESTBED_KEEP_LOGS:-}" ]; then
        rm -f "$state/nspawn.pid" "$state/leader.pid" "$state/watchdog.pid"
    else
        rm -rf "$state"
    fi
    local n kept=()
    for n in "${_testbed_names[@]}"; do
        [ "$n" = "$name" ] || kept+=("$n")
    done
    _testbed_names=("${kept[@]}")
    return 0
}

testbed_stop_all() {
    local n
    for n in "${_testbed_names[@]}"; do
        testbed_stop "$n" || true
    done
}
