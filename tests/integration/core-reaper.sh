#!/usr/bin/env bash
# sandboxd core (issue 2): nothing outlives a worker. The idle reaper stops a
# worker whose channel was silent for its IdleTimeoutUSec, never before the
# deadline, and traffic postpones it; wipe-on-boot stops leftover sandbox-*
# units and empties the sessions root when sandboxd starts after a boot (a
# new boot ID); after a crash or a restart it stops and wipes only what it
# cannot account for, and its own workers run on (issue 11; restart.sh).
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
sbx_monitor_start || not_ok "busctl monitor records the Manager's signals"

# Checks that REMOVED_USEC lies in [from, to] (microseconds, CLOCK_REALTIME).
removed_between() {
    local name=$1 from=$2 to=$3
    if [[ $REMOVED_USEC =~ ^[0-9]+$ ]] && [ "$REMOVED_USEC" -ge "$from" ] && [ "$REMOVED_USEC" -le "$to" ]; then
        ok "$name"
    else
        not_ok "$name" "removed at ${REMOVED_USEC:-never}, window $from..$to" \
            "that is $(( (${REMOVED_USEC:-0} - from) / 1000 )) ms after the window opened"
    fi
}

# ---- idle reaper -----------------------------------------------------------
if sbx_create 3 Argv as 1 /bin/cat Class s trusted IdleTimeoutUSec t 2000000; then
    ok "CreateWorker with IdleTimeoutUSec=2s succeeds"
    id=$WID
    check_eq "Worker.IdleTimeoutUSec is the spec's" 2000000 "$(sbx_prop "$id" IdleTimeoutUSec)"
    created=$(sbx_prop "$id" CreatedUSec)
    last=$(sbx_prop "$id" LastActivityUSec)
    # The idle clock starts at the last activity, which is the start at the latest.
    start=$created
    [[ $last =~ ^[0-9]+$ ]] && [ "$last" -gt "$start" ] && start=$last
    expect_removed "idle worker" "$id" idle 15
    # The lower bound is the promise: never before the deadline. The upper
    # bound is slack, not a speed goal: after the timer fires, StopUnit, the
    # unit's stop, the finalization and the signal all wait for a CPU on a
    # loaded host.
    removed_between "the idle worker is reaped at its deadline (2 s), not before, within 10 s" \
        $((start + 2000000 - 100000)) $((start + 12000000))
    # Reaped is not failed: the state is ended, the result says why.
    check_eq "the reaped worker's State is ended" ended "$(sbx_prop "$id" State)"
    check_eq "the reaped worker's Result is idle" idle "$(sbx_prop "$id" Result)"
    check_fails "no PropertiesChanged ever said the reaped worker failed" \
        grep -qx failed <<<"$(sbx_props_changed "/org/sandboxd1/worker/$id" State)"
else
    not_ok "CreateWorker with IdleTimeoutUSec=2s succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# A start longer than the idle timeout (a drop-in makes every sandbox unit
# wait 4 s first; a loaded host's trusted start took 2 s in ci25): the idle
# clock starts when the worker runs. Before, it ran from the creation, and
# such a worker was reaped the moment it ran, before its workload did a thing
# (workspace.sh's idle worker in ci25: its file never written). The drop-in
# goes without a daemon-reload: new units read it no more, and the running
# worker's unit stays as systemd 252 made it (it cannot read back ExecStartEx=).
SLOW=/run/systemd/system/sandbox-.service.d/50-sbx-slow-start.conf
ct sh -c "mkdir -p ${SLOW%/*} && printf '[Service]\nExecStartPre=/bin/sleep 4\n' > $SLOW && systemctl daemon-reload"
if sbx_create 3 Argv as 1 /bin/cat Class s trusted IdleTimeoutUSec t 2000000; then
    id=$WID
    ct rm -f "$SLOW"
    check_eq "slow start (4 s, idle 2 s): the worker runs once CreateWorker answered" running "$(sbx_prop "$id" State)"
    sleep 1
    check_eq "slow start: ... and a second later (its idle clock began when it ran)" running "$(sbx_prop "$id" State)"
    expect_removed "slow start: idle worker" "$id" idle 15
else
    ct rm -f "$SLOW"
    not_ok "slow start: CreateWorker with IdleTimeoutUSec=2s succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# Traffic postpones the reaper: 8 bytes a second apart outlast a 5 s timeout.
# The idle clock runs from the worker's start, so the timeout also bounds
# how long the client may take to attach: 5 s leaves room for a slow start of
# sbx-channel on a loaded host, and a second between bytes is far below it.
if sbx_create 3 Argv as 1 /bin/cat Class s trusted IdleTimeoutUSec t 5000000; then
    id=$WID
    check_output "channel traffic every second for 7 s" '^paced 8 bytes$' ct "$CHANNEL" pace "$id" 1000 8
    # The daemon's own record of the last byte: a clock read here, after the
    # client exited, would be later than that and could put the window after
    # a punctual reaping.
    last=$(sbx_prop "$id" LastActivityUSec)
    check_fails "no WorkerRemoved while the channel was busy (7 s > 5 s timeout)" sbx_signal_seen WorkerRemoved "$id"
    check_eq "the busy worker still runs" running "$(sbx_prop "$id" State)"
    expect_removed "worker idle after its traffic" "$id" idle 20
    if [[ $last =~ ^[0-9]+$ ]]; then
        removed_between "it is reaped 5 s after the last byte, not before, within 10 s" \
            $((last + 5000000 - 100000)) $((last + 15000000))
    else
        not_ok "it is reaped 5 s after the last byte, not before, within 10 s" "LastActivityUSec: '$last'"
    fi
else
    not_ok "CreateWorker with IdleTimeoutUSec=5s succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- wipe-on-boot ------------------------------------------------------------
# plant_leftovers TAG: a live worker of this daemon, plus a sandbox-* unit and
# a home that no running daemon knows about (what a crash or reboot leaves).
plant_leftovers() {
    local tag=$1
    LEFT_ID=
    # shellcheck disable=SC2046  # ay_args prints separate busctl words
    if sbx_create 3 Argv as 2 /bin/sleep 1000 Class s trusted \
        Credentials 'a(say)' 1 tok $(ay_args "wipe-secret-$tag"); then
        LEFT_ID=$WID
        ok "$tag: a worker is running before the daemon goes away"
    else
        not_ok "$tag: a worker is running before the daemon goes away" "$BUS_ERROR $BUS_ERRMSG"
    fi
    STRAY_UNIT=sandbox-$tag$(printf '%012x' $RANDOM | tail -c 8).service
    ct systemd-run -q --unit="$STRAY_UNIT" --slice=sandbox.slice -p DynamicUser=yes /bin/sleep 1000
    ct sh -c "mkdir -p $SBX_STATE_ROOT/stray-$tag/sub && echo leftover >$SBX_STATE_ROOT/stray-$tag/sub/file &&
              ln -sfn ../private/sandboxd/workers/stray-$tag $SBX_STATE_LINK_ROOT/stray-$tag"
    check_output "$tag: leftovers are in place" 'active' unit_prop "$STRAY_UNIT" ActiveState
}

check_wiped() {
    local tag=$1
    [ -n "$LEFT_ID" ] && check "$tag: the worker's unit is stopped" wait_until 15 unit_gone "sandbox-$LEFT_ID.service"
    check "$tag: the stray sandbox-* unit is stopped" wait_until 15 unit_gone "$STRAY_UNIT"
    check_output "$tag: no sandbox-* unit is left" '^$' sbx_units
    # The new daemon's warm pool starts sandboxes of its own at once: theirs
    # are the only homes allowed (any of the old daemon's would be listed).
    check_output "$tag: $SBX_STATE_ROOT and $SBX_STATE_LINK_ROOT are empty but for the new pool's" '^$' \
        sbx_state_entries
    [ -n "$LEFT_ID" ] && check "$tag: the worker's credentials are gone" ct test ! -e "/run/credentials/sandbox-$LEFT_ID.service"
    [ -n "$LEFT_ID" ] && check_error "$tag: the new daemon does not know the old worker" \
        org.sandboxd1.Error.NoSuchWorker root GetWorker s "$LEFT_ID"
    check_output "$tag: NWorkers is 0" '^0$' sbx_mgr_prop NWorkers
}

# After a crash or restart: the stray unit and home are gone, the daemon's own
# worker was re-adopted.
check_cleaned() {
    local tag=$1
    check "$tag: the stray sandbox-* unit is stopped" wait_until 15 unit_gone "$STRAY_UNIT"
    check "$tag: the stray home is wiped" ct test ! -e "$SBX_STATE_ROOT/stray-$tag"
    check "$tag: ... and its link" ct test ! -L "$SBX_STATE_LINK_ROOT/stray-$tag"
    [ -n "$LEFT_ID" ] && check_output "$tag: the daemon's own worker runs on" '^active$' \
        unit_prop "sandbox-$LEFT_ID.service" ActiveState
    [ -n "$LEFT_ID" ] && check "$tag: the new daemon knows it" sbx_call GetWorker s "$LEFT_ID"
}

_restarted() {
    local pid
    pid=$(unit_prop sandboxd.service MainPID)
    [ "$(ct systemctl is-active sandboxd.service)" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$1" ]
}

# A crash: SIGKILL leaves the worker units running, and systemd restarts sandboxd.
plant_leftovers crash
old_pid=$(unit_prop sandboxd.service MainPID)
check "crash: SIGKILL to sandboxd's main process" ct systemctl kill --kill-who=main --signal=SIGKILL sandboxd.service
# Generous: on a loaded host the new daemon's start waits for a CPU.
if wait_until 60 _restarted "$old_pid"; then
    ok "crash: systemd restarted sandboxd (Restart=on-failure)"
else
    not_ok "crash: systemd restarted sandboxd (Restart=on-failure)" "MainPID before: $old_pid, now: $(unit_prop sandboxd.service MainPID)"
    ct systemctl start sandboxd.service
fi
check_fails "crash: the old sandboxd process is gone" ct kill -0 "$old_pid"
check_output "crash: sandboxd is active again" '^active$' ct systemctl is-active sandboxd.service
check_cleaned crash

# A plain restart.
plant_leftovers restart
ct systemctl restart sandboxd.service
check_output "restart: sandboxd is active again" '^active$' ct systemctl is-active sandboxd.service
check_cleaned restart

# A boot: another boot ID than the one recorded wipes everything, the
# workers of the earlier daemons included.
plant_leftovers boot
ct sh -c 'echo 00000000000000000000000000000000 >/run/sandboxd/boot-id'
ct systemctl restart sandboxd.service
check_output "boot: sandboxd is active again" '^active$' ct systemctl is-active sandboxd.service
check_wiped boot

tap_done
