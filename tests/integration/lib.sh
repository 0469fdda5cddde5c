# shellcheck shell=bash disable=SC2034  # globals read by the sourcing scripts
# The integration scripts' library: tests/lib/tap.sh's TAP checks (check NAME
# CMD..., check_fails, check_output, check_eq, check_match, ok, not_ok, diag,
# wait_until, tap_done: see there) and the helpers for a booted testbed
# container (tests/testbed/testbed.sh). A script sources this file and calls
# tap_init "$@"; its $1 is the container's leader PID.
#
#   ct CMD...                     run CMD inside the container (all namespaces)
#   as_tester CMD...              the same, as the plain user tester (uid 1500)
#                                 (a check's CMD runs on the host side: prefix
#                                 it with ct to run it in the container)
#
# sandboxd-specific helpers (D-Bus through busctl inside the container):
#   bus_call USER DEST PATH IFACE METHOD [SIG ARGS...]
#                   sets BUS_OUT (busctl's reply line), BUS_ERROR (the D-Bus error
#                   name, empty on success) and BUS_ERRMSG; returns busctl's status
#   sbx_call METHOD [SIG ARGS...]         bus_call as root on the Manager
#   sbx_call_as USER METHOD [SIG ARGS...] the same as USER
#   sbx_create N KEY SIG VALUE...         CreateWorker with an a{sv} of N entries; sets WID, WPATH
#   sbx_prop ID PROP                      print a Worker property's value
#   check_error NAME ERROR USER METHOD [SIG ARGS...]
#                   ok when the call fails with exactly the D-Bus error ERROR (or one of
#                   "A|B") and a non-empty message
#   sbx_call_out METHOD [SIG ARGS...]     sbx_call printing the reply or the error (for check_output)
#   sbx_mgr_prop PROP                     print a Manager property's value
#   pooled / pooled_is N                  the warm pool's PooledSandboxes / whether it is N
#   pool_units / pool_units_at_most N     how many pool sandbox units are loaded and active / at most N
#   sbx_monitor_start / sbx_monitor_stop  record the Manager's signals and the workers'
#                                         PropertiesChanged (busctl monitor in the container)
#   sbx_signal MEMBER ID                  print "LASTARG TIMESTAMP_USEC" of each recorded MEMBER signal for ID
#   sbx_signal_seen MEMBER ID             succeed if one was recorded
#   sbx_wait_removed ID SECONDS           wait for WorkerRemoved(ID); print "REASON TIMESTAMP_USEC"
#   sbx_props_changed PATH PROP           print each recorded new value of PROP of object PATH
#   expect_removed WHAT ID REASON_RE SECS checks WorkerRemoved's reason, the home and the unit gone
#   sbx_units / sbx_state_entries         sandbox-* units systemd knows; entries of the sessions roots
#   ws_prop NAME PROP                     a property of workspace NAME, unquoted
#   upstream_auth LOG PATH                the Authorization values a test upstream (broker-upstream.py)
#                                         logged in LOG for requests to PATH, one a line ("-": none)
#   sbx_settled                           waits (60 s at most) until no probe unit of a (re)start of
#                                         sandboxd is loaded and both lists above stay the same for a
#                                         second (the warm pool has refilled): take snapshots after it
#   unit_prop UNIT PROP / unit_gone UNIT  systemctl show -P; the unit neither running nor failed
#   upstream_netns_install DIR            copy tests/testbed/upstream-netns.sh into the container's DIR
#                                         (then, inside: DIR/upstream-netns.sh up ADDR... / down)
#   unit_cpu_share UNIT SECS              the share of one CPU UNIT's cgroup used over SECS seconds,
#                                         counted once it has begun to use CPU
#   unit_exposure UNIT                    systemd-analyze security's overall exposure of a loaded unit (e.g. 1.2)
#   check_exposure NAME UNIT MAX          ok when that exposure is at most MAX; prints it either way
#   check_no_host_sockets CLASS           a worker of CLASS reaches no host socket (journal forgery
#                                         included), no abstract socket of the host, sees no socket
#                                         file and nothing in /run, and has a /dev/shm of its own
#   home_absent ID                        neither the home symlink nor its private target exists
#   check_introspected WHAT INTRO MEMBER KIND SIG [RET]  a member line of busctl introspect
#   expect_fail CMD... / last_line CMD... helpers for check_output on refused accesses
#   ay_args STRING                        busctl's "N b1 b2 ..." for an ay argument

set -u

# shellcheck source=tests/lib/tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

SBX_DEST=org.sandboxd1
SBX_PATH=/org/sandboxd1
SBX_MGR=org.sandboxd1.Manager
SBX_WORKER_IFACE=org.sandboxd1.Worker
SBX_STATE_ROOT=/var/lib/private/sandboxd/workers
SBX_STATE_LINK_ROOT=/var/lib/sandboxd/workers
SBX_DISK_MOUNT_ROOT=/var/lib/sandboxd/disks
SBX_MONITOR_LOG=/run/sbx-test-monitor.log
# Where the host sees worker ID's home (daemon/shared/worker-disk-layout.h):
# its disk's home while its disk is mounted (a gVisor worker's home is bound
# from there only inside its launcher's namespace), else its state directory
# (a worker on a workspace, or one suspended: an empty directory).
sbx_home() {
    if ct test -d "$SBX_DISK_MOUNT_ROOT/$1/home"; then echo "$SBX_DISK_MOUNT_ROOT/$1/home"; else echo "$SBX_STATE_ROOT/$1"; fi
}
# sbx_home_cat ID FILE: FILE in ID's home, as the host sees it.
sbx_home_cat() { ct cat "$(sbx_home "$1")/$2" 2>/dev/null; }
# sbx_home_grep ID FILE PATTERN: whether FILE in ID's home holds PATTERN.
sbx_home_grep() { ct grep -q -- "$3" "$(sbx_home "$1")/$2" 2>/dev/null; }
# The dynamic UID range systemd allocates from (DynamicUser=).
DYNAMIC_UID_MIN=61184
DYNAMIC_UID_MAX=65519

CT_PID=
TAP_TMP=

tap_init() {
    CT_PID=${1:?usage: $0 CONTAINER_LEADER_PID}
    [ -d "/proc/$CT_PID" ] || { echo "Bail out! no process $CT_PID"; exit 1; }
    TAP_TMP=$(mktemp -d /tmp/sbx-it.XXXXXX)
    trap '_tap_cleanup' EXIT
}

_tap_cleanup() {
    sbx_monitor_stop 2>/dev/null || true
    [ -n "$TAP_TMP" ] && rm -rf "$TAP_TMP"
}

ct() { nsenter -t "$CT_PID" -a "$@"; }
as_tester() { ct runuser -u tester -- "$@"; }

# journal JOURNALCTL_ARGS...: the container's journal once journald has
# written what it received (a sender may have exited before it got to it).
journal() { ct journalctl --sync && ct journalctl --no-pager "$@" 2>&1; }
# After a script's first failed check (tap.sh's TAP_ON_FAIL): the test bed's
# journal since the check before it, the kernel's lines left out.
sbx_journal_since() {
    echo "the journal since the check before:"
    journal -q -o short-monotonic --since "@$(($1 - 2))" | grep -v ' kernel: ' | tail -n 24
}
TAP_ON_FAIL=sbx_journal_since
# journal_has REGEX JOURNALCTL_ARGS...: waits (30 s) until that journal matches REGEX.
journal_has() { wait_until 30 _journal_match "$@"; }
_journal_match() {
    local re=$1
    shift
    # -q: no "-- No entries --" line, which a loose RE would take for a match.
    journal -q "$@" | grep -Eq -- "$re"
}

# ---- D-Bus through busctl -------------------------------------------------

# busctl prints only the error message on failure, not its name; with debug
# logging it shows every received message, errors with "error-name=".
bus_call() {
    local user=$1
    shift
    local -a as=()
    [ "$user" = root ] || as=(runuser -u "$user" --)
    local rc
    BUS_OUT=$(ct "${as[@]}" env SYSTEMD_LOG_LEVEL=debug busctl --system --timeout=60 -- call "$@" 2>"$TAP_TMP/bus.err")
    rc=$?
    BUS_ERROR=
    BUS_ERRMSG=
    if [ $rc -ne 0 ]; then
        local line
        line=$(grep 'type=error' "$TAP_TMP/bus.err" | tail -n1)
        BUS_ERROR=$(printf '%s\n' "$line" | sed -n 's/.* error-name=\([^ ]*\).*/\1/p')
        BUS_ERRMSG=$(printf '%s\n' "$line" | sed -n 's/.* error-message=//p')
        [ -n "$BUS_ERROR" ] || BUS_ERRMSG=$(grep -v '^Bus \|message type=' "$TAP_TMP/bus.err" | tail -n 3)
    fi
    return $rc
}

sbx_call() { bus_call root "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" "$@"; }
sbx_call_as() {
    local user=$1
    shift
    bus_call "$user" "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" "$@"
}

# The reply of CreateWorker prints as: so "ID" "/org/sandboxd1/worker/ID"
sbx_create() {
    WID=
    WPATH=
    sbx_call CreateWorker 'a{sv}' "$@" || return 1
    if [[ $BUS_OUT =~ ^so\ \"([^\"]*)\"\ \"([^\"]*)\" ]]; then
        WID=${BASH_REMATCH[1]}
        WPATH=${BASH_REMATCH[2]}
        return 0
    fi
    BUS_ERRMSG="unexpected reply: $BUS_OUT"
    return 1
}

# get-property prints "TYPE VALUE", strings quoted.
sbx_prop() {
    local out
    out=$(ct busctl --system get-property "$SBX_DEST" "$SBX_PATH/worker/$1" "$SBX_WORKER_IFACE" "$2") || return 1
    out=${out#* }
    out=${out#\"}
    out=${out%\"}
    printf '%s\n' "$out"
}

# A worker's State, as its object says it (running, suspended, ...).
state_of() { sbx_prop "$1" State | tr -d '"' | awk '{print $NF}'; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }

sbx_mgr_prop() {
    local out
    out=$(ct busctl --system get-property "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" "$1") || return 1
    out=${out#* }
    out=${out#\"}
    out=${out%\"}
    printf '%s\n' "$out"
}

check_error() {
    local name=$1 want=$2 user=$3
    shift 3
    if bus_call "$user" "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" "$@"; then
        not_ok "$name" "expected $want, the call succeeded: $BUS_OUT"
        return 0
    fi
    if [[ $BUS_ERROR =~ ^(${want//./\\.})$ ]] && [ -n "$BUS_ERRMSG" ]; then
        ok "$name"
    else
        not_ok "$name" "expected error $want with a message" "got: ${BUS_ERROR:-no error name} ${BUS_ERRMSG}"
    fi
}

# sandboxd sends its signals to subscribers only: a root subscriber
# (sbx-watch, which subscribes again when sandboxd restarts) makes them
# flow, and busctl monitor records them as they pass.
sbx_monitor_start() {
    ct sh -c "rm -f $SBX_MONITOR_LOG; busctl --system monitor --json=short \
        --match=\"type='signal',interface='$SBX_MGR'\" \
        --match=\"type='signal',interface='org.freedesktop.DBus.Properties',path_namespace='$SBX_PATH'\" >$SBX_MONITOR_LOG 2>&1 & echo \$! >/run/sbx-test-monitor.pid" || return 1
    wait_until 10 ct grep -q 'Monitoring' "$SBX_MONITOR_LOG" || return 1
    ct sh -c "/usr/lib/sandboxd-tests/sbx-watch >/run/sbx-test-watch.log 2>&1 & echo \$! >/run/sbx-test-watch.pid" || return 1
    wait_until 10 ct grep -qx 'ready' /run/sbx-test-watch.log
}

sbx_monitor_stop() {
    [ -n "$CT_PID" ] && [ -d "/proc/$CT_PID" ] || return 0
    ct sh -c '[ -s /run/sbx-test-monitor.pid ] && kill "$(cat /run/sbx-test-monitor.pid)" && rm -f /run/sbx-test-monitor.pid' 2>/dev/null
    ct sh -c '[ -s /run/sbx-test-watch.pid ] && kill "$(cat /run/sbx-test-watch.pid)" && rm -f /run/sbx-test-watch.pid' 2>/dev/null
    return 0
}

# Prints "LASTARG TIMESTAMP" for each recorded signal MEMBER whose first argument is ID.
sbx_signal() {
    ct cat "$SBX_MONITOR_LOG" 2>/dev/null | python3 -c '
import json, sys
member, wid = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("member") != member:
        continue
    data = m.get("payload", {}).get("data", [])
    if data and data[0] == wid:
        print(data[-1], m.get("timestamp-realtime", 0))
' "$1" "$2"
}

sbx_wait_removed() {
    local id=$1 secs=$2 out
    wait_until "$secs" _sbx_removed_seen "$id" || return 1
    sbx_signal WorkerRemoved "$id" | head -n1
}
_sbx_removed_seen() { [ -n "$(sbx_signal WorkerRemoved "$1")" ]; }

# Units named sandbox-* that systemd knows about, loaded or not, but for the
# warm pool's waiting sandboxes and their proxy units (README "Warm pool"),
# which come and go by themselves; a claimed one is a worker's, described so.
# A worker's disk unit unmounts after the worker's own unit is gone (it stops
# once unneeded): one whose worker is gone is still going, not left over.
# Listings wait for those (30 s at most), so a snapshot taken right after a
# worker ended does not count its disk; one that never goes still shows.
_sbx_orphan_disks() {
    ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*' |
        awk '{ u[$1] = 1 } END { for (n in u) if (n ~ /-disk\.service$/ && !((substr(n, 1, 20) ".service") in u)) print n }'
}
sbx_disks_settled() {
    local i
    for i in $(seq 60); do [ -z "$(_sbx_orphan_disks)" ] && return 0; sleep 0.5; done
    return 1
}
# The units of workers, not the warm pool's, nor a worker's disk unit: it
# lives and goes with its worker (just after it, when a pool sandbox that
# failed is replaced at once, as where the walls are refused); what a disk
# leaves behind, its home, is in sbx_state_entries, and tests/reliability's
# leaks.sh counts disk units that stay.
sbx_units() {
    sbx_disks_settled
    ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*' |
        awk '/sandboxd pool sandbox/ { w[substr($1, 9, 12)] = 1 } !/-disk\.service / { u[NR] = $1 }
             END { for (i in u) if (!(substr(u[i], 9, 12) in w)) print u[i] }' | sort
}

ws_prop() {
    local out
    out=$(ct busctl --system get-property "$SBX_DEST" "$SBX_PATH/workspace/$1" org.sandboxd1.Workspace "$2") || return 1
    out=${out#* }
    out=${out#\"}
    printf '%s\n' "${out%\"}"
}

upstream_auth() {
    ct python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] == sys.argv[2]:
        print(" | ".join(v for k, v in r["headers"] if k.lower() == "authorization") or "-")
' "$1" "$2"
}

_sbx_steady() {
    local a b
    ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-probe-*' | grep -q . && return 1
    a=$(sbx_units; sbx_state_entries)
    sleep 1
    b=$(sbx_units; sbx_state_entries)
    [ "$a" = "$b" ]
}
sbx_settled() { wait_until 60 _sbx_steady; }

# Entries under the sessions roots (both the private dir and the symlink dir),
# but for the homes of the warm pool's waiting sandboxes.
# systemd makes a pool sandbox's home as it starts the unit, so a home can
# appear after the units were listed: they are listed again after the homes.
_sbx_pool_ids() {
    ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*.service' |
        awk '/sandboxd pool sandbox/ { print substr($1, 9, 12) }'
}
# Whether the lines of NOW all were in BEFORE (sorted lists): nothing came,
# though an entry may have gone meanwhile (a stopped pool sandbox's home or
# unit: runsc's loss or a re-probe stops the pool's sandboxes, and their
# homes go a moment after their units).
lines_all_in() { [ -z "$(comm -13 <(printf '%s\n' "$1") <(printf '%s\n' "$2"))" ]; }

pooled() { sbx_mgr_prop PooledSandboxes; }
pooled_is() { [ "$(pooled)" = "$1" ]; }
pool_units() { ct systemctl list-units --plain --no-legend --no-pager 'sandbox-*.service' | grep -c 'sandboxd pool sandbox'; }
pool_units_at_most() { [ "$(pool_units)" -le "$1" ]; }

sbx_state_entries() {
    local before entries waiting i
    for i in 1 2 3 4 5; do
        # A disk unit still stopping removes its worker's home as it goes.
        sbx_disks_settled
        before=$(_sbx_pool_ids)
        entries=$(ct sh -c "ls -A $SBX_STATE_ROOT $SBX_STATE_LINK_ROOT 2>/dev/null" | grep -v -e '^$' -e ':$')
        waiting=$(printf '%s\n%s\n' "$before" "$(_sbx_pool_ids)" | grep -v '^$')
        # A pool sandbox (or a worker) whose unit went while this looked
        # leaves its disk unit still removing its home: not a leftover, so
        # look again once it is gone.
        [ -z "$(_sbx_orphan_disks)" ] && break
    done
    printf '%s\n' "$entries" | grep -v '^$' | grep -v -x -F -e "${waiting:-/}" | sort
}

unit_prop() {
    ct systemctl show -P "$2" "$1"
}

upstream_netns_install() {
    cat "$(dirname "${BASH_SOURCE[0]}")/../testbed/upstream-netns.sh" > "/proc/$CT_PID/root$1/upstream-netns.sh" &&
        ct chmod 755 "$1/upstream-netns.sh"
}

# The cgroup's counter and the clock are read back to back in one process, so
# the time the CPU use is divided by is the time it was counted over, however
# slowly the reader or the worker starts.
_UNIT_CPU_SHARE_PY='
import sys, time
unit, secs = sys.argv[1], float(sys.argv[2])
def usage():    # seconds of CPU the cgroup used so far
    for path in ("/sys/fs/cgroup/unified/sandbox.slice/%s/cpu.stat",    # hybrid
                 "/sys/fs/cgroup/sandbox.slice/%s/cpu.stat"):           # unified
        try:
            with open(path % unit) as f:
                for line in f:
                    k, v = line.split()
                    if k == "usage_usec":
                        return int(v) / 1e6
        except OSError:
            pass
    for path in ("/sys/fs/cgroup/cpu,cpuacct/sandbox.slice/%s/cpuacct.usage",
                 "/sys/fs/cgroup/cpuacct/sandbox.slice/%s/cpuacct.usage"):
        try:
            with open(path % unit) as f:
                return int(f.read()) / 1e9
        except OSError:
            pass
    sys.exit("no CPU usage counter for " + unit)
u = usage()
while usage() - u < 0.05:
    time.sleep(0.05)
t0, u0 = time.monotonic(), usage()
time.sleep(secs)
t1, u1 = time.monotonic(), usage()
print(round((u1 - u0) / (t1 - t0), 3))'
unit_cpu_share() { ct timeout 60 python3 -c "$_UNIT_CPU_SHARE_PY" "$1" "$2"; }

unit_exposure() {
    ct systemd-analyze security --no-pager "$1" 2>/dev/null |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p'
}

check_exposure() {
    local name=$1 unit=$2 max=$3 score
    score=$(unit_exposure "$unit")
    diag "systemd-analyze security $unit: ${score:-no score}"
    if [ -n "$score" ] && awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
        ok "$name (exposure $score <= $max)"
    else
        not_ok "$name (exposure ${score:-unknown}, want <= $max)"
    fi
}

# The host's sockets a worker must not reach (present in the test bed or not).
HOST_SOCKET_PATHS=(/run/systemd/journal/socket /run/systemd/journal/stdout /dev/log
    /run/dbus/system_bus_socket /run/systemd/private /run/systemd/notify
    /run/systemd/userdb/io.systemd.DynamicUser /run/systemd/resolve/io.systemd.Resolve
    /run/sandboxd/credentials.sock)

check_no_host_sockets() {
    local class=$1 nonce abstract listener listener_job sibling out path line entry
    nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
    abstract=sbx-abstract-$nonce
    # The host's side: an abstract socket in the container's network
    # namespace, a file in its /dev/shm, and a sibling worker of the same
    # class with a file in its own /dev/shm.
    listener=/run/sbx-abstract-$nonce.pid
    ct sh -c 'echo $$ >"$1"; exec python3 -c "import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(\"\\0\" + sys.argv[1]); s.listen(8); time.sleep(300)" "$2"' sh "$listener" "$abstract" &
    listener_job=$!
    ct sh -c "echo host >/dev/shm/sbx-host-$nonce"
    check "$class: the host's abstract socket @$abstract answers on the host" \
        wait_until 10 ct python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect("\0" + sys.argv[1])' "$abstract"
    sibling=
    if sbx_create 2 Argv as 3 /bin/sh -c "echo sibling >/dev/shm/sbx-sibling-$nonce && ls -a /dev/shm >\"\$HOME/.shm\" && mv \"\$HOME/.shm\" \"\$HOME/shm\"; exec sleep 1000" \
        Class s "$class" >/dev/null; then
        sibling=$WID
    fi
    check "$class: a sibling worker wrote a file into its /dev/shm" \
        wait_until 60 sbx_home_grep "$sibling" shm "sbx-sibling-$nonce"
    check_fails "$class: the sibling's /dev/shm file is not in the host's /dev/shm" ct test -e "/dev/shm/sbx-sibling-$nonce"

    out=$(ct timeout 180 sandboxctl run --class "$class" -- /usr/bin/python3 \
        -c "$(cat "$(dirname "${BASH_SOURCE[0]}")/host-sockets.py")" "$sibling" "$nonce" "$abstract" "${HOST_SOCKET_PATHS[@]}" 2>&1)
    diag "$out"
    check_output "$class: the probe ran in the worker" '^shm: ' printf '%s\n' "$out"
    for path in "${HOST_SOCKET_PATHS[@]}"; do
        line=$(printf '%s\n' "$out" | grep -F -- "$path " | head -n1)
        check_output "$class: connect($path) from the worker fails (ENOENT, EACCES or EPERM)" \
            " (ENOENT|EACCES|EPERM)\$" echo "$line"
    done
    check_output "$class: the host's abstract socket is unreachable (private network namespace: ECONNREFUSED)" \
        '^abstract ECONNREFUSED$' printf '%s\n' "$out"
    check_output "$class: the worker finds no socket file anywhere" '^sockets: ?$' printf '%s\n' "$out"
    check_output "$class: /run holds nothing of the host's (at most the unit's credentials and systemd's incoming dir)" \
        '^run: ?(credentials ?)?(systemd)?$' printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | grep '^shm: ')
    check_output "$class: the worker's file is in its /dev/shm (so the next checks read it)" "sbx-worker-$nonce" echo "$line"
    check_fails "$class: the host's /dev/shm file is not in the worker's" grep -q "sbx-host-$nonce" <<<"$line"
    check_fails "$class: the sibling's /dev/shm file is not in the worker's" grep -q "sbx-sibling-$nonce" <<<"$line"
    ct journalctl --sync
    entry=$(ct journalctl -b --no-pager -o export 2>/dev/null | grep -aF "sbx-forged-$nonce")
    check_eq "$class: no journal entry forging the sibling's SANDBOXD_WORKER_ID and EGRESS_DECISION=allow" "" "$entry"

    [ -n "$sibling" ] && sbx_call StopWorker s "$sibling" >/dev/null
    ct sh -c 'kill "$(cat "$1")" && rm -f "$1"' sh "$listener"
    wait "$listener_job" 2>/dev/null
    ct rm -f "/dev/shm/sbx-host-$nonce"
}

# A workload that prints 1, 2, 3, ... every 0.2 s: a suspended one must count
# on from where it was once resumed.
SBX_COUNTER_PY='import time
i = 0
while True:
    i += 1
    print(i, flush=True)
    time.sleep(0.2)'
# The numbers worker $1 printed within $2 ms of reading its channel, one a line.
read_numbers() {
    ct timeout 30 /usr/lib/sandboxd-tests/sbx-channel read "$1" "$2" 2>/dev/null | grep -E '^[0-9]+$' || true
}

# A unit is gone when systemd holds nothing of it: not running and not kept
# around as "failed" either (that would be state outliving the worker).
unit_gone() {
    [ "$(ct systemctl show -P ActiveState "$1" 2>/dev/null)" = inactive ]
}

# "N" byte arguments of a busctl 'ay' for a string.
ay_args() {
    local s=$1 i
    printf '%s' "${#s}"
    for ((i = 0; i < ${#s}; i++)); do
        printf ' %d' "'${s:i:1}"
    done
}

# Neither the home (a symlink under the sessions root) nor its target exists.
home_absent() {
    ct sh -c "! test -e $SBX_STATE_LINK_ROOT/$1 && ! test -L $SBX_STATE_LINK_ROOT/$1 && ! test -e $SBX_STATE_ROOT/$1"
}

# Records PropertiesChanged of worker objects too (sbx_props_changed).
sbx_props_changed() {
    ct cat "$SBX_MONITOR_LOG" 2>/dev/null | python3 -c '
import json, sys
path, prop = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("member") != "PropertiesChanged" or m.get("path") != path:
        continue
    data = m.get("payload", {}).get("data", [])
    if len(data) >= 3 and (prop in data[1] or prop in data[2]):
        v = data[1].get(prop, {}).get("data", "(invalidated)")
        print(v)
' "$1" "$2"
}

# Checks that WorkerRemoved(ID) arrives within SECONDS with a reason matching
# REASON_RE, that the home is gone by then and the unit soon after.
# Sets REMOVED_REASON and REMOVED_USEC.
expect_removed() {
    local what=$1 id=$2 reason_re=$3 secs=$4 r
    REMOVED_REASON='' REMOVED_USEC=''
    if r=$(sbx_wait_removed "$id" "$secs"); then
        REMOVED_REASON=${r%% *}
        REMOVED_USEC=${r##* }
        if [[ $REMOVED_REASON =~ ^($reason_re)$ ]]; then
            ok "$what: WorkerRemoved with reason $REMOVED_REASON"
        else
            not_ok "$what: WorkerRemoved with reason $reason_re" "got reason: $REMOVED_REASON"
        fi
    else
        not_ok "$what: WorkerRemoved within ${secs}s" "signals seen:" "$(ct cat "$SBX_MONITOR_LOG" 2>/dev/null | tail -n 5)"
    fi
    check "$what: home deleted" wait_until 30 home_absent "$id"
    check "$what: unit sandbox-$id.service gone" wait_until 5 unit_gone "sandbox-$id.service"
}

now_usec() { echo $(($(date +%s%N) / 1000)); }

# sbx_call, printing the reply (or the error) for check_output.
sbx_call_out() {
    if sbx_call "$@"; then
        printf '%s\n' "$BUS_OUT"
    else
        echo "error: ${BUS_ERROR:-?} $BUS_ERRMSG"
        return 1
    fi
}

sbx_signal_seen() { [ -n "$(sbx_signal "$1" "$2")" ]; }

# One member line of "busctl introspect": NAME KIND SIGNATURE RESULT/VALUE FLAGS.
# A property's fourth column is its value, so only methods and signals check it.
check_introspected() {
    local what=$1 intro=$2 member=$3 kind=$4 sig=$5 ret=${6:-} re
    re="^\\.$member +$kind +$(_re_quote "$sig")"
    [ "$kind" = property ] || re="$re +$(_re_quote "${ret:--}")"
    check_output "$what introspection: $member $kind $sig${ret:+ -> $ret}" "$re( |\$)" printf '%s\n' "$intro"
}
_re_quote() { printf '%s' "$1" | sed 's/[][{}()\\.*+?^$|]/\\&/g'; }

# Runs CMD and prints its output; succeeds only if CMD failed (for matching
# the error text of a refused access with check_output).
expect_fail() {
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ $rc -ne 0 ]
}

last_line() { "$@" | tail -n1; }
