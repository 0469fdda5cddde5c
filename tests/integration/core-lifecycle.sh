#!/usr/bin/env bash
# sandboxd core (issue 2): the daemon starts on the bus, shows the documented
# API, and runs a worker through its whole life: created as a transient unit
# in sandbox.slice, observed, talked to over its channel, stopped or exited,
# and cleaned up (home deleted, unit gone, WorkerRemoved with the reason).
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel

# ---- the daemon on the bus ----------------------------------------------
check "bus activation starts sandboxd (reading Manager.Version)" sbx_mgr_prop Version
if ! ct systemctl is-active -q sandboxd.service; then
    ct systemctl start sandboxd.service
fi
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
check_output "sandboxd.service is Type=notify or Type=dbus" '^(notify|dbus)$' unit_prop sandboxd.service Type
check_output "Manager.Version is the project version" '^[0-9]+\.[0-9]+' sbx_mgr_prop Version
# The daemon keeps only what it needs (units/sandboxd.service says which and why).
dstatus=$(ct cat "/proc/$(unit_prop sandboxd.service MainPID)/status")
check_output "sandboxd runs with no_new_privs" '^NoNewPrivs:[[:space:]]+1$' printf '%s\n' "$dstatus"
# sandboxd holds 3 fds per worker (909 at 300 workers, bench/density.sh) and
# its fd store keeps up to FileDescriptorStoreMax of them across a restart:
# systemd's default soft limit (1024) ran out at about 330 workers.
# shellcheck disable=SC2016  # awk's own $4
nofile=$(ct awk '/^Max open files/ {print $4}' "/proc/$(unit_prop sandboxd.service MainPID)/limits")
fdstore_max=$(unit_prop sandboxd.service FileDescriptorStoreMax)
check "sandboxd may open what its fd store holds and more (soft limit ${nofile:-?}, store $fdstore_max)" \
    test "${nofile:-0}" -ge $((fdstore_max + 256))
cap_sys_admin=$((1 << 21))
capbnd=$(awk '/^CapBnd:/ {print $2}' <<<"$dstatus")
if [ -n "$capbnd" ] && [ $((0x$capbnd & cap_sys_admin)) -eq 0 ]; then
    ok "sandboxd's capability bounding set lacks CAP_SYS_ADMIN (CapBnd $capbnd)"
else
    not_ok "sandboxd's capability bounding set lacks CAP_SYS_ADMIN" "CapBnd: ${capbnd:-?}"
fi
check_output "busctl tree shows /org/sandboxd1" '^/org/sandboxd1$' ct busctl --system --list tree org.sandboxd1

intro=$(ct busctl --system introspect org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager 2>&1)
while read -r member kind sig ret; do
    check_introspected "Manager" "$intro" "$member" "$kind" "$sig" "$ret"
done <<'EOF'
CreateWorker method a{sv} so
GetWorker method s o
ListWorkers method - a(ssssuuo)
ListWorkersEx method a{sv} aa{sv}
StopWorker method s -
OpenChannel method s h
Preflight method - a(sssbs)a(sbs)
Version property s
DefaultIdleTimeoutUSec property t
NWorkers property u
WorkerNew signal so -
WorkerRemoved signal sos -
EOF
check_output "an ObjectManager sits at /org/sandboxd1" '^org\.freedesktop\.DBus\.ObjectManager +interface' \
    ct busctl --system introspect org.sandboxd1 /org/sandboxd1
check_output "Manager.NWorkers is 0 before any worker" '^0$' sbx_mgr_prop NWorkers
default_idle=$(sbx_mgr_prop DefaultIdleTimeoutUSec)
check_output "Manager.DefaultIdleTimeoutUSec is positive" '^[1-9][0-9]*$' echo "$default_idle"

sbx_monitor_start || not_ok "busctl monitor records the Manager's signals"

# ---- a long-running worker, observed and stopped -------------------------
before=$(now_usec)
if sbx_create 2 Argv as 2 /bin/sleep 1000 Class s trusted; then
    ok "CreateWorker of a trusted /bin/sleep succeeds"
else
    not_ok "CreateWorker of a trusted /bin/sleep succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi
id=$WID
check_output "the worker id is 12 lowercase hex characters" '^[0-9a-f]{12}$' echo "$id"
check_eq "the worker path is /org/sandboxd1/worker/<id>" "/org/sandboxd1/worker/$id" "$WPATH"
check "WorkerNew(id, path) was emitted" wait_until 5 sbx_signal_seen WorkerNew "$id"
check_output "busctl tree shows the worker object" "^/org/sandboxd1/worker/$id\$" ct busctl --system --list tree org.sandboxd1

wintro=$(ct busctl --system introspect org.sandboxd1 "/org/sandboxd1/worker/$id" org.sandboxd1.Worker 2>&1)
while read -r member kind sig ret; do
    check_introspected "Worker" "$wintro" "$member" "$kind" "$sig" "$ret"
done <<'EOF'
Id property s
Class property s
Runtime property s
Unit property s
State property s
UID property u
Home property s
CreatedUSec property t
LastActivityUSec property t
IdleTimeoutUSec property t
ExitStatus property i
Result property s
EndedUSec property t
Stop method - -
OpenChannel method - h
EOF

check_eq "Worker.Id" "$id" "$(sbx_prop "$id" Id)"
check_eq "Worker.Class" trusted "$(sbx_prop "$id" Class)"
check_eq "Worker.Runtime of a trusted worker" systemd "$(sbx_prop "$id" Runtime)"
check_eq "Worker.Unit is sandbox-<id>.service" "sandbox-$id.service" "$(sbx_prop "$id" Unit)"
check_eq "Worker.State is running once CreateWorker replied" running "$(sbx_prop "$id" State)"
check_eq "Worker.ExitStatus is -1 while it runs" -1 "$(sbx_prop "$id" ExitStatus)"
check_eq "Worker.IdleTimeoutUSec defaults to Manager.DefaultIdleTimeoutUSec" "$default_idle" "$(sbx_prop "$id" IdleTimeoutUSec)"
home=$(sbx_prop "$id" Home)
check_eq "Worker.Home is /var/lib/sandboxd/workers/<id>" "/var/lib/sandboxd/workers/$id" "$home"
created=$(sbx_prop "$id" CreatedUSec)
after=$(now_usec)
if [[ $created =~ ^[0-9]+$ ]] && [ "$created" -ge $((before - 1000000)) ] && [ "$created" -le $((after + 1000000)) ]; then
    ok "Worker.CreatedUSec is the creation time (CLOCK_REALTIME)"
else
    not_ok "Worker.CreatedUSec is the creation time (CLOCK_REALTIME)" "got $created, expected $before..$after"
fi
uid=$(sbx_prop "$id" UID)
if [[ $uid =~ ^[0-9]+$ ]] && [ "$uid" -ge $DYNAMIC_UID_MIN ] && [ "$uid" -le $DYNAMIC_UID_MAX ]; then
    ok "Worker.UID is a dynamic UID ($uid)"
else
    not_ok "Worker.UID is a dynamic UID" "got: $uid"
fi

unit=sandbox-$id.service
check_output "the unit is active" '^active$' unit_prop "$unit" ActiveState
check_output "the unit is in sandbox.slice" '^sandbox\.slice$' unit_prop "$unit" Slice
check_output "the unit is transient" '^yes$' unit_prop "$unit" Transient
mainpid=$(unit_prop "$unit" MainPID)
check_output "the unit's main process runs as Worker.UID" "^ *$uid\$" ct ps -o uid= -p "$mainpid"
check_output "the unit's main process is the Argv" '^/bin/sleep 1000$' ct ps -o args= -p "$mainpid"
check_output "GetWorker(id) returns the worker path" "^o \"/org/sandboxd1/worker/$id\"\$" sbx_call_out GetWorker s "$id"
check_output "ListWorkers lists (id, class, state, unit, uid, owner, path)" \
    "\"$id\" \"trusted\" \"running\" \"$unit\" $uid 0 \"/org/sandboxd1/worker/$id\"" sbx_call_out ListWorkers
check_output "GetManagedObjects lists the worker with its properties" \
    "\"/org/sandboxd1/worker/$id\".*\"org\.sandboxd1\.Worker\".*\"Id\".*\"$id\"" \
    ct busctl --system --json=short call org.sandboxd1 /org/sandboxd1 org.freedesktop.DBus.ObjectManager GetManagedObjects
check_output "Manager.NWorkers counts the worker" '^1$' sbx_mgr_prop NWorkers

check "StopWorker(id) succeeds" sbx_call_out StopWorker s "$id"
expect_removed "StopWorker" "$id" stopped 15
check_output "a stopped worker's object stays in its final state: ended" '^ended$' sbx_prop "$id" State
check_eq "Worker.Result of a stopped worker" stopped "$(sbx_prop "$id" Result)"
ended=$(sbx_prop "$id" EndedUSec)
if [[ $ended =~ ^[0-9]+$ ]] && [ "$ended" -ge "$created" ]; then
    ok "Worker.EndedUSec is set at the end ($ended)"
else
    not_ok "Worker.EndedUSec is set at the end" "got: $ended, created $created"
fi
check_output "ListWorkersEx lists the stopped worker as ended, stopped, with its owner" \
    "\"Id\" s \"$id\".*\"State\" s \"ended\".*\"Result\" s \"stopped\".*\"Owner\" u 0" \
    sbx_call_out ListWorkersEx 'a{sv}' 1 States as 1 ended
check_output "ListWorkersEx without options lists only workers alive" '^aa\{sv\} 0$' sbx_call_out ListWorkersEx 'a{sv}' 0
check_error "ListWorkersEx refuses an unknown state by name" org.freedesktop.DBus.Error.InvalidArgs \
    root ListWorkersEx 'a{sv}' 1 States as 1 failed
check "PropertiesChanged was emitted for the worker's State" test -n "$(sbx_props_changed "/org/sandboxd1/worker/$id" State)"
check_output "Manager.NWorkers is 0 again" '^0$' sbx_mgr_prop NWorkers

# ---- the worker's own exit ------------------------------------------------
if sbx_create 2 Argv as 1 /bin/true Class s trusted; then
    ok "CreateWorker of a trusted /bin/true succeeds"
    expect_removed "a worker that exits 0" "$WID" exited 15
    check_eq "ExitStatus of a worker that exits 0" 0 "$(sbx_prop "$WID" ExitStatus)"
    check_eq "State of a worker that exits 0" ended "$(sbx_prop "$WID" State)"
    check_eq "Result of a worker that exits 0" "exited 0" "$(sbx_prop "$WID" Result)"
else
    not_ok "CreateWorker of a trusted /bin/true succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# A command that ends at once can end its unit while the start job runs, when
# PID 1 is busy enough to see the process's exit before its exec: the exec
# socket, bound to the unit, then stops with it and cancels the start job. The
# token in the pipe says the workload ran: every one of these starts. Eight at
# a time keep PID 1 busy.
quick_failed=0 quick_why=
for round in 1 2 3; do
    quick_pids=()
    for i in 1 2 3 4 5 6 7 8; do
        ct busctl --system --timeout=60 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" CreateWorker 'a{sv}' \
            2 Argv as 1 /bin/true Class s trusted >/dev/null 2>"$TAP_TMP/quick.$round.$i" &
        quick_pids+=($!)
    done
    for i in "${!quick_pids[@]}"; do
        wait "${quick_pids[$i]}" && continue
        quick_failed=$((quick_failed + 1))
        quick_why=$(cat "$TAP_TMP/quick.$round.$((i + 1))")
    done
done
if [ "$quick_failed" = 0 ]; then
    ok "24 trusted /bin/true workers, eight at a time, all start"
else
    not_ok "24 trusted /bin/true workers, eight at a time, all start" "$quick_failed failed, the last with: $quick_why"
fi
_no_workers() { [ "$(sbx_mgr_prop NWorkers)" = 0 ]; }
check "... and all of them are gone again" wait_until 60 _no_workers

if sbx_create 2 Argv as 3 /bin/sh -c 'exit 3' Class s trusted; then
    ok "CreateWorker of a trusted 'sh -c exit 3' succeeds"
    expect_removed "a worker that exits 3" "$WID" 'exited|failed' 15
    check_eq "ExitStatus of a worker that exits 3" 3 "$(sbx_prop "$WID" ExitStatus)"
    check_eq "State of a worker that exits 3 is ended, not failed" ended "$(sbx_prop "$WID" State)"
    check_eq "Result of a worker that exits 3" "exited 3" "$(sbx_prop "$WID" Result)"
    check "PropertiesChanged was emitted for ExitStatus" test -n "$(sbx_props_changed "/org/sandboxd1/worker/$WID" ExitStatus)"
else
    not_ok "CreateWorker of a trusted 'sh -c exit 3' succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

if sbx_create 2 Argv as 3 /bin/sh -c 'kill -TERM $$' Class s trusted; then
    expect_removed "a worker killed by SIGTERM" "$WID" 'exited|failed' 15
    check_eq "ExitStatus of a worker killed by SIGTERM is 128+15" 143 "$(sbx_prop "$WID" ExitStatus)"
    check_eq "Result of a worker killed by SIGTERM" "killed by signal 15" "$(sbx_prop "$WID" Result)"
else
    not_ok "CreateWorker of a trusted self-killing shell succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# RuntimeMaxUSec ends a worker that runs too long.
if sbx_create 3 Argv as 2 /bin/sleep 1000 Class s trusted RuntimeMaxUSec t 2000000; then
    expect_removed "a worker past RuntimeMaxUSec=2s" "$WID" timeout 10
    check_eq "Result of a worker past its runtime" timeout "$(sbx_prop "$WID" Result)"
else
    not_ok "CreateWorker with RuntimeMaxUSec=2s succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# A start that fails (Type=exec cannot execute the Argv) is an error, not a worker.
# (It also re-runs the walls probe, a oneshot sandbox-probe-walls-* unit of
# sandboxd's own that comes and goes: not the worker's.)
worker_units() { sbx_units | grep -v '^sandbox-probe-' || true; }
units_before=$(worker_units)
state_before=$(sbx_state_entries)
workers_before=$(sbx_mgr_prop NWorkers)
check_error "CreateWorker of a missing executable fails with StartFailed" org.sandboxd1.Error.StartFailed \
    root CreateWorker 'a{sv}' 2 Argv as 1 /nonexistent/program Class s trusted
check_output "... saying why: sandbox-exec's check, the unit's one command, found no such file" \
    "the command does not exist \(sandbox-exec exit status 127\)" echo "$BUS_ERRMSG"
check_eq "the failed start leaves no unit behind" "$units_before" "$(worker_units)"
check_eq "the failed start leaves no home behind" "$state_before" "$(sbx_state_entries)"
check_eq "the failed start leaves NWorkers unchanged" "$workers_before" "$(sbx_mgr_prop NWorkers)"
ct sh -c 'printf "#!/bin/sh\n" >/etc/sbx-lifecycle-noexec && chmod 0644 /etc/sbx-lifecycle-noexec'
check_error "CreateWorker of a file that is not executable fails with StartFailed" org.sandboxd1.Error.StartFailed \
    root CreateWorker 'a{sv}' 2 Argv as 1 /etc/sbx-lifecycle-noexec Class s trusted
check_output "... saying why" "the command cannot be executed \(sandbox-exec exit status 126\)" echo "$BUS_ERRMSG"
check_eq "... and leaves no unit behind" "$units_before" "$(worker_units)"
check_eq "... nor a home" "$state_before" "$(sbx_state_entries)"
check_eq "... and NWorkers unchanged" "$workers_before" "$(sbx_mgr_prop NWorkers)"

# ---- Worker.Stop() ---------------------------------------------------------
if sbx_create 2 Argv as 2 /bin/sleep 1000 Class s trusted; then
    check "Worker.Stop() succeeds" bus_call root "$SBX_DEST" "$WPATH" "$SBX_WORKER_IFACE" Stop
    expect_removed "Worker.Stop()" "$WID" stopped 15
else
    not_ok "CreateWorker for Worker.Stop() succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- the channel -----------------------------------------------------------
if sbx_create 2 Argv as 1 /bin/cat Class s trusted; then
    ok "CreateWorker of a trusted /bin/cat succeeds"
    cid=$WID
    created=$(sbx_prop "$cid" LastActivityUSec)
    sleep 1.1
    check_output "OpenChannel: bytes written come back from /bin/cat" '^hello, sandboxd$' \
        ct "$CHANNEL" roundtrip "$cid" 'hello, sandboxd'
    check_output "Worker.OpenChannel: the same through the worker object" '^second channel$' \
        ct "$CHANNEL" worker-roundtrip "$cid" 'second channel'
    last=$(sbx_prop "$cid" LastActivityUSec)
    if [[ $last =~ ^[0-9]+$ ]] && [[ $created =~ ^[0-9]+$ ]] && [ "$last" -gt "$created" ]; then
        ok "LastActivityUSec advances with channel traffic"
    else
        not_ok "LastActivityUSec advances with channel traffic" "before: $created after: $last"
    fi
    check_output "a second concurrent OpenChannel gets ChannelBusy" '^org\.sandboxd1\.Error\.ChannelBusy$' \
        ct "$CHANNEL" busy "$cid"
    check_output "the channel still works after a client went away" '^again$' \
        ct "$CHANNEL" roundtrip "$cid" again
    check_output "a plain user cannot OpenChannel to root's worker (NoSuchWorker)" 'NoSuchWorker' \
        expect_fail as_tester "$CHANNEL" roundtrip "$cid" x
    sbx_call_out StopWorker s "$cid" >/dev/null
    expect_removed "the /bin/cat worker" "$cid" stopped 15
    check_error "OpenChannel on an ended worker is refused" org.sandboxd1.Error.NotRunning root OpenChannel s "$cid"
else
    not_ok "CreateWorker of a trusted /bin/cat succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

if sbx_create 2 Argv as 3 /bin/sh -c 'echo from-worker; sleep 1000' Class s trusted; then
    check_output "the worker's stdout reaches the channel" '^from-worker$' ct "$CHANNEL" read "$WID" 3000
    sbx_call_out StopWorker s "$WID" >/dev/null
else
    not_ok "CreateWorker of an echoing worker succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- the start: one command, and the workload's first bytes intact -----------
# A trusted worker's unit runs sandbox-exec alone (no ExecStartPre= but its
# disk's, which checks nothing of the worker): it checks
# the walls and the command, writes a readiness token to its stdout, which
# sandboxd awaits after the start job and strips, and execs the workload. The
# workload's first bytes, binary and beginning like the token, reach the
# client exactly; a workload that ends at once loses none of them either.
hex() { od -An -tx1 | tr -d ' \n'; }
first='sandbox-exec: rea\000\377\n'
# shellcheck disable=SC2059  # the format is the bytes
want=$(printf "$first" | hex)
if sbx_create 2 Argv as 3 /bin/sh -c "printf '$first'; exec /bin/sleep 1000" Class s trusted; then
    # Its one ExecStartPre= is its disk's, "+", which gives the disk's home
    # to the worker's UID (worker-disk.h); no check runs before sandbox-exec.
    check_output "a trusted worker's unit has no ExecStartPre but its disk's" \
        "^\{ path=/usr/libexec/sandboxd/sandbox-disk ; argv\[\]=/usr/libexec/sandboxd/sandbox-disk own [^;]*; [^}]*\}\$" \
        unit_prop "sandbox-$WID.service" ExecStartPre
    check_eq "... that one alone" 1 "$(unit_prop "sandbox-$WID.service" ExecStartPre | wc -l)"
    exec_start=$(unit_prop "sandbox-$WID.service" ExecStart)
    check_eq "... and exactly one ExecStart" 1 "$(grep -o 'path=' <<<"$exec_start" | wc -l)"
    check_output "... which is sandbox-exec with PID 1's namespaces" \
        "argv\[\]=/usr/libexec/sandboxd/sandbox-exec --id=$WID --net=[0-9]+:[0-9]+ --ipc=[0-9]+:[0-9]+ --mnt=[0-9]+:[0-9]+ -- /bin/sh" \
        echo "$exec_start"
    check_eq "the worker's first bytes reach the client exactly (no token)" "$want" \
        "$(ct "$CHANNEL" read "$WID" 3000 | hex)"
    sbx_call_out StopWorker s "$WID" >/dev/null
else
    not_ok "CreateWorker of a worker whose first bytes look like the token succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi
if sbx_create 2 Argv as 3 /bin/sh -c "printf '$first'" Class s trusted; then
    check_eq "a worker that ends at once: its bytes reach the client exactly" "$want" \
        "$(ct "$CHANNEL" read "$WID" 10000 | hex)"
    expect_removed "a worker that ends at once" "$WID" exited 15
    check_eq "... by itself, with status 0" "exited 0" "$(sbx_prop "$WID" Result)"
else
    not_ok "CreateWorker of a worker that prints and ends at once succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- sandboxctl, the CLI over the same API --------------------------------
if ct sh -c 'command -v sandboxctl' >/dev/null; then
    ct sandboxctl run --class trusted -- /bin/sh -c 'exit 7' </dev/null >/dev/null 2>&1
    check_eq "sandboxctl run exits with the worker's exit status" 7 "$?"
    check_output "sandboxctl run relays the worker's output" '^via-sandboxctl$' \
        ct sandboxctl run --class trusted -- /bin/echo via-sandboxctl
else
    not_ok "sandboxctl is installed"
fi

tap_done
