#!/usr/bin/env bash
# Workspaces (issue 13): files that outlive a worker. What one worker writes
# on a workspace the next one reads, a worker on another workspace does not;
# the size cap is the ext4 image's (ENOSPC, for the shared kernel and gVisor)
# and touches nothing outside; a workspace survives the worker's end, the
# idle reaper, a daemon restart (re-adoption) and a wipe-on-boot, which still
# wipes everything else; one worker at a time; delete wipes the image and is
# refused while in use; another user can neither use nor delete it; bad names
# and settings get a named error and create nothing. --class devcontainer
# needs a workspace.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

WS_ROOT=/var/lib/sandboxd/workspaces
RULES=/etc/polkit-1/rules.d
RUNDIR=/run/sandboxd
E=org.sandboxd1.Error
MIB=1048576

cleanup() {
    ct sh -c "rm -f $RULES/sbx-ws-it.rules" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# tester may create workers (so a refusal below is about the workspace), nothing else.
ct sh -c "cat >$RULES/sbx-ws-it.rules" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" &&
        (action.id == "org.sandboxd1.create-worker" || action.id == "org.sandboxd1.create-trusted-worker"))
        return polkit.Result.YES;
});
JS
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
sbx_monitor_start || not_ok "busctl monitor records the Manager's signals"

ws_entries() { ct sh -c "ls -A $WS_ROOT" | sort | tr '\n' ' '; }
run() { ct timeout 120 sandboxctl run "$@"; }
# A workspace is mounted whole (root "/") on a home; a worker's own disk is
# bound from its "/home" directory, and is not counted.
mounted_workspaces() { ct awk -v r="$SBX_STATE_ROOT/" 'index($5, r) == 1 && $4 == "/"' /proc/self/mountinfo | wc -l; }

# ---- bad names and settings: a named error, nothing created -----------------
check_output "the workspaces directory is root's alone" '^700 0$' ct stat -c '%a %u' "$WS_ROOT"
bad_create() {
    local what=$1 want=$2
    shift 2
    check_error "CreateWorkspace $what: $want" "$E.$want" root CreateWorkspace 'sa{sv}' "$@"
    check_eq "CreateWorkspace $what: nothing created" "" "$(ws_entries)"
}
long=$(printf 'a%.0s' $(seq 65))
bad_create "with an empty name" InvalidWorkspace "" 1 SizeMax t $((64 * MIB))
bad_create "with a leading dash" InvalidWorkspace "-x" 1 SizeMax t $((64 * MIB))
bad_create "with an upper-case name" InvalidWorkspace "Proj" 1 SizeMax t $((64 * MIB))
bad_create "with a slash" InvalidWorkspace "a/b" 1 SizeMax t $((64 * MIB))
bad_create "with a dot-dot name" InvalidWorkspace ".." 1 SizeMax t $((64 * MIB))
bad_create "with a 65-character name" InvalidWorkspace "$long" 1 SizeMax t $((64 * MIB))
bad_create "without SizeMax" InvalidWorkspace proj 0
bad_create "with SizeMax 1 MiB" InvalidWorkspace proj 1 SizeMax t $MIB
bad_create "with SizeMax 2 TiB" InvalidWorkspace proj 1 SizeMax t $((2 * 1024 * 1024 * MIB))
bad_create "with SizeMax as a string" WrongType proj 1 SizeMax s 64M
bad_create "with an unknown setting" InvalidWorkspace proj 2 SizeMax t $((64 * MIB)) Color s blue
bad_create "with Class hostile" InvalidWorkspace proj 2 SizeMax t $((64 * MIB)) Class s hostile
bad_create "with an unknown class" UnknownClass proj 2 SizeMax t $((64 * MIB)) Class s bogus
check_output "sandboxctl workspace create without --size: exit 64" '^64$' \
    ct sh -c 'sandboxctl workspace create proj >/dev/null 2>&1; echo $?'

# ---- create, list, properties ---------------------------------------------------
check "sandboxctl workspace create proj --size 64M" ct sandboxctl workspace create proj --size 64M
check "CreateWorkspace other (64 MiB)" sbx_call CreateWorkspace 'sa{sv}' other 1 SizeMax t $((64 * MIB))
check_error "CreateWorkspace proj again: WorkspaceExists" "$E.WorkspaceExists" root CreateWorkspace 'sa{sv}' proj 1 SizeMax t $((64 * MIB))
check_eq "the images and their metadata, nothing else" "other.img other.meta proj.img proj.meta " "$(ws_entries)"
check_output "the image is sparse, 64 MiB, root's and 0600" "^600 0 $((64 * MIB))\$" ct stat -c '%a %u %s' "$WS_ROOT/proj.img"
check_output "sandboxctl workspace list shows proj" '^proj +0 +trusted +67108864 +[0-9]+ +no$' \
    ct sandboxctl workspace list --no-legend
check_eq "Workspace.Name" proj "$(ws_prop proj Name)"
check_eq "Workspace.Owner is the creator" 0 "$(ws_prop proj Owner)"
check_eq "Workspace.SizeMax" $((64 * MIB)) "$(ws_prop proj SizeMax)"
check_eq "Workspace.InUse is false" false "$(ws_prop proj InUse)"
check_output "Workspace.CreatedUSec is set" '^[1-9][0-9]{15}$' ws_prop proj CreatedUSec

# ---- one worker writes, the next reads; another workspace sees nothing -----------
check_output "a worker on proj writes a file" '^written$' \
    run --class trusted --workspace proj -- /bin/sh -c 'echo hello-from-a >note && id -u >uid-a && echo written'
check_output "the next worker on proj reads it" '^hello-from-a$' \
    run --class trusted --workspace proj -- /bin/cat note
# The files are the worker's whatever its dynamic UID: systemd takes the UID
# that owns the home when it is free, and otherwise chowns the tree to the new one.
check_output "the next worker owns the files" '^owned$' \
    run --class trusted --workspace proj -- /bin/sh -c 'test "$(stat -c %u note)" = "$(id -u)" && echo owned'
if sbx_create 3 Argv as 1 /bin/cat Class s trusted Workspace s other; then
    busy=$WID
    busy_uid=$(sbx_prop "$busy" UID)
    # proj's files now belong to a UID a running worker has: the next worker
    # on proj cannot get it, and systemd's fix-up must hand them over.
    ct sh -ec "mkdir -p /run/sbx-ws-it && mount -o loop $WS_ROOT/proj.img /run/sbx-ws-it &&
               chown -R $busy_uid:$busy_uid /run/sbx-ws-it && umount /run/sbx-ws-it"
    check_output "a worker whose predecessor's UID is taken gets another and owns every file" '^owned other-uid$' \
        run --class trusted --workspace proj -- /bin/sh -c \
        "test \"\$(find . ! -user \$(id -u) | wc -l)\" = 0 && echo -n 'owned '; test \$(id -u) != $busy_uid && echo other-uid"
    sbx_call StopWorker s "$busy"
    expect_removed "the worker on other" "$busy" stopped 30
else
    not_ok "CreateWorker on other (a worker holding a UID)" "$BUS_ERROR $BUS_ERRMSG"
fi
check_output "a worker on another workspace does not see it" '^absent$' \
    run --class trusted --workspace other -- /bin/sh -c 'test ! -e note && test ! -e uid-a && echo absent'
check_output "a worker without a workspace does not see it" '^absent$' \
    run --class trusted -- /bin/sh -c 'test ! -e note && echo absent'
check_eq "no workspace stays mounted once its workers ended" 0 "$(mounted_workspaces)"
check_output "Workspace.LastUsedUSec moved on" '^[1-9][0-9]{15}$' ws_prop proj LastUsedUSec

# ---- the size cap ----------------------------------------------------------------
host_free() { ct df --output=avail -B1 /var/lib | tail -n1 | tr -d ' '; }
free0=$(host_free)
out=$(run --class trusted --workspace proj -- /bin/sh -c 'dd if=/dev/zero of=big bs=1M count=100 2>&1; echo rc=$?' 2>&1)
check_output "writing 100 MiB into 64 MiB fails with ENOSPC (trusted)" 'No space left on device' echo "$out"
check_output "  and dd reports the failure" 'rc=[1-9]' echo "$out"
check_output "the image did not grow past its size" "^$((64 * MIB))\$" ct stat -c %s "$WS_ROOT/proj.img"
free1=$(host_free)
# The host gave the image at most its 64 MiB (less the part already allocated).
if [ -n "$free0" ] && [ -n "$free1" ] && [ $((free0 - free1)) -le $((66 * MIB)) ]; then
    ok "the host lost at most the image's size to the full workspace ($(( (free0 - free1) / MIB )) MiB)"
else
    not_ok "the host lost at most the image's size to the full workspace" "free before $free0, after $free1"
fi
check_output "another workspace still takes writes while proj is full" '^ok$' \
    run --class trusted --workspace other -- /bin/sh -c 'dd if=/dev/zero of=f bs=1M count=8 2>/dev/null && rm f && echo ok'
check_output "the full workspace's files are intact" '^hello-from-a$' \
    run --class trusted --workspace proj -- /bin/sh -c 'rm -f big; cat note'

# ---- one worker at a time; delete in use; another user ----------------------------
if sbx_create 3 Argv as 1 /bin/cat Class s trusted Workspace s proj; then
    ok "CreateWorker on proj (a long-running holder)"
    holder=$WID
    check_eq "Workspace.InUse is true while a worker has it" true "$(ws_prop proj InUse)"
    check_eq "Workspace.Worker names the holder" "$holder" "$(ws_prop proj Worker)"
    check_output "the workspace is mounted on the holder's home" "$SBX_STATE_ROOT/$holder" \
        ct findmnt -n -o TARGET "$SBX_STATE_ROOT/$holder"
    before=$(sbx_state_entries)
    check_error "a second worker on proj: WorkspaceBusy" "$E.WorkspaceBusy" root \
        CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Workspace s proj
    check_eq "the refused worker left no home" "$before" "$(sbx_state_entries)"
    check_output "sandboxctl run on a busy workspace: exit 70" '^70$' \
        ct sh -c 'sandboxctl run --class trusted --workspace proj -- /bin/true >/dev/null 2>&1; echo $?'
    check_error "DeleteWorkspace of a workspace in use: WorkspaceBusy" "$E.WorkspaceBusy" root DeleteWorkspace s proj
    check_output "  and its image is still there" "^$((64 * MIB))\$" ct stat -c %s "$WS_ROOT/proj.img"
    # Names are per owner: root's "other" is not in tester's names at all.
    check_error "tester cannot delete root's workspace: NoSuchWorkspace" "$E.NoSuchWorkspace" \
        tester DeleteWorkspace s other
    check_error "tester cannot run a worker on root's workspace: NoSuchWorkspace" "$E.NoSuchWorkspace" \
        tester CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Workspace s other
    check_fails "  the refusal does not say whose it is" grep -q 'UID' <<<"$BUS_ERRMSG"
    check_output "tester can still create a worker of its own (the rule holds)" '^ok$' \
        ct runuser -u tester -- timeout 60 sandboxctl --no-ask-password run --class trusted -- /bin/echo ok
    check "tester creates a workspace of its own" sbx_call_as tester CreateWorkspace 'sa{sv}' mine 1 SizeMax t $((16 * MIB))
    check_eq "tester's workspace belongs to tester" 1500 "$(ws_prop mine_U1500 Owner)"
    check_eq "  its key, how root names it" mine.1500 "$(ws_prop mine_U1500 Key)"
    check_output "tester lists only its own" '^mine$' \
        ct sh -c "runuser -u tester -- sandboxctl --no-ask-password workspace list --no-legend | awk '{print \$1}'"
    check_fails "tester cannot read root's workspace object" \
        bus_call tester "$SBX_DEST" "$SBX_PATH/workspace/other" org.freedesktop.DBus.Properties Get ss org.sandboxd1.Workspace Name
    check_output "tester's worker writes on tester's workspace" '^ok$' \
        ct runuser -u tester -- timeout 60 sandboxctl --no-ask-password run --class trusted --workspace mine -- /bin/sh -c 'echo x >f && echo ok'
    check "tester deletes its own workspace" sbx_call_as tester DeleteWorkspace s mine

    # ---- a restart of sandboxd re-adopts the holder and keeps the binding ---------
    ct sh -c "echo kept >$SBX_STATE_ROOT/$holder/restart-marker"
    pid=$(unit_prop sandboxd.service MainPID)
    check "restart sandboxd with a worker on proj" ct systemctl restart sandboxd.service
    check "the daemon is back" wait_until 30 sh -c "[ \"\$(nsenter -t $CT_PID -a systemctl show -P MainPID sandboxd.service)\" != $pid ] && nsenter -t $CT_PID -a busctl --system status org.sandboxd1 >/dev/null 2>&1"
    check_output "the holder's unit runs on" '^active$' unit_prop "sandbox-$holder.service" ActiveState
    check_eq "after the restart proj is still in use by the holder" "true $holder" "$(ws_prop proj InUse) $(ws_prop proj Worker)"
    check_error "after the restart a second worker on proj is still refused" "$E.WorkspaceBusy" root \
        CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Workspace s proj
    check "stop the holder" sbx_call StopWorker s "$holder"
    expect_removed "the holder" "$holder" stopped 30
    check "after the holder ended proj is free" wait_until 10 sh -c "[ \"\$(nsenter -t $CT_PID -a busctl --system get-property $SBX_DEST $SBX_PATH/workspace/proj org.sandboxd1.Workspace InUse)\" = 'b false' ]"
    check_eq "its mount is gone" 0 "$(mounted_workspaces)"
    check_output "what was written before the restart is still on proj" '^kept hello-from-a$' \
        run --class trusted --workspace proj -- /bin/sh -c 'echo $(cat restart-marker note)'
else
    not_ok "CreateWorker on proj (a long-running holder)" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- the idle reaper ends the worker, not the workspace -----------------------------
if sbx_create 4 Argv as 3 /bin/sh -c 'echo idle-was-here >idle; exec cat' Class s trusted IdleTimeoutUSec t 2000000 Workspace s proj; then
    expect_removed "an idle worker on proj" "$WID" idle 30
    check_output "the reaped worker's file is on proj" '^idle-was-here$' run --class trusted --workspace proj -- /bin/cat idle
else
    not_ok "CreateWorker on proj with IdleTimeoutUSec=2s" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- a wipe-on-boot removes everything but workspaces --------------------------------
held=; plain=
sbx_create 3 Argv as 1 /bin/cat Class s trusted Workspace s proj && held=$WID
sbx_create 2 Argv as 3 /bin/sh -c 'echo x >home-file; exec cat' Class s trusted && plain=$WID
check "boot: a worker on proj and a plain one run" test -n "$held" -a -n "$plain"
check "boot: the plain worker's home has its file" wait_until 10 ct test -e "$(sbx_home "$plain")/home-file"
ct sh -c "mkdir -p $SBX_STATE_ROOT/stray-dir && echo x >$SBX_STATE_ROOT/stray-dir/f"
ct sh -c "echo 00000000000000000000000000000000 >$RUNDIR/boot-id"
check "boot: restart with another recorded boot ID" ct systemctl restart sandboxd.service
for id in $held $plain; do
    check "boot: $id's unit is stopped" wait_until 15 unit_gone "sandbox-$id.service"
    check "boot: $id's home is wiped" home_absent "$id"
done
check_output "boot: the sessions roots are empty (the stray directory too)" '^$' sbx_state_entries
check_eq "boot: no workspace is mounted" 0 "$(mounted_workspaces)"
check_eq "boot: the workspaces are all still there" "other.img other.meta proj.img proj.meta " "$(ws_entries)"
check_output "boot: ListWorkspaces still has proj, free" '^proj +0 +trusted +67108864 +[0-9]+ +no$' \
    ct sandboxctl workspace list --no-legend
check_output "boot: proj's files survived" '^hello-from-a$' run --class trusted --workspace proj -- /bin/cat note

# ---- devcontainer: gVisor and a workspace ----------------------------------------------
check_output "--class devcontainer without a workspace: exit 65, InvalidWorkspace" \
    '^65 .*InvalidWorkspace' ct sh -c 'out=$(sandboxctl run --class devcontainer -- /bin/true 2>&1); echo $? $out'
check_output "a devcontainer worker (gVisor) reads proj" '^hello-from-a$' \
    run --class devcontainer --workspace proj -- /bin/cat note
out=$(run --class devcontainer --workspace proj -- /bin/sh -c 'dd if=/dev/zero of=big bs=1M count=100 2>&1; echo rc=$?; rm -f big' 2>&1)
check_output "writing 100 MiB into 64 MiB fails with ENOSPC under gVisor too" 'No space left on device' echo "$out"
check "CreateWorkspace strict with Class standard" sbx_call CreateWorkspace 'sa{sv}' strict 2 SizeMax t $((16 * MIB)) Class s standard
check_error "a trusted worker on a standard workspace: InvalidWorkspace (never a downgrade)" "$E.InvalidWorkspace" root \
    CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Workspace s strict
if sbx_create 2 Argv as 1 /bin/cat Workspace s strict; then
    check_eq "a worker on it without a class runs at least standard" standard "$(sbx_prop "$WID" Class)"
    check_eq "  under gVisor" runsc "$(sbx_prop "$WID" Runtime)"
    sbx_call StopWorker s "$WID"
    expect_removed "the worker on strict" "$WID" stopped 30
else
    not_ok "CreateWorker on strict without a class" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- delete wipes --------------------------------------------------------------------
check_error "DeleteWorkspace of a bad name: InvalidWorkspace" "$E.InvalidWorkspace" root DeleteWorkspace s "../proj"
check_error "DeleteWorkspace of an unknown one: NoSuchWorkspace" "$E.NoSuchWorkspace" root DeleteWorkspace s nosuch
check "sandboxctl workspace delete proj" ct sandboxctl workspace delete proj
check "DeleteWorkspace other" sbx_call DeleteWorkspace s other
check "DeleteWorkspace strict" sbx_call DeleteWorkspace s strict
check_eq "delete removed the images and the metadata" "" "$(ws_entries)"
check_output "ListWorkspaces is empty" '^$' ct sandboxctl workspace list --no-legend
check_error "a worker on a deleted workspace: NoSuchWorkspace" "$E.NoSuchWorkspace" root \
    CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Workspace s proj
# ---- a worker suspended on a workspace keeps it across a restart of sandboxd ----
check "sleep: a workspace for a worker that will be suspended" sbx_call CreateWorkspace 'sa{sv}' sleep 1 SizeMax t $((16 * MIB))
if SID=$(ct sandboxctl create --class devcontainer --workspace sleep -- /bin/sh -c 'echo before >note; exec cat'); then
    check "sleep: the worker wrote on it" wait_until 60 ct test -e "$SBX_STATE_ROOT/$SID/note"
    check "sleep: suspend it" ct timeout 120 sandboxctl suspend "$SID"
    pid=$(unit_prop sandboxd.service MainPID)
    check "sleep: restart sandboxd while it is suspended" ct systemctl restart sandboxd.service
    check "sleep: the daemon is back" wait_until 30 sh -c "[ \"\$(nsenter -t $CT_PID -a systemctl show -P MainPID sandboxd.service)\" != $pid ] && nsenter -t $CT_PID -a busctl --system status org.sandboxd1 >/dev/null 2>&1"
    check_output "sleep: the worker is still suspended" 'suspended' sbx_prop "$SID" State
    check_eq "sleep: the suspended worker still holds its workspace" "true $SID" "$(ws_prop sleep InUse) $(ws_prop sleep Worker)"
    check_error "sleep: a second worker on it is refused" "$E.WorkspaceBusy" root \
        CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s devcontainer Workspace s sleep
    check "sleep: resume it" ct timeout 120 sandboxctl resume "$SID"
    check_output "sleep: resumed, the same process answers" '^alive$' \
        ct timeout 30 /usr/lib/sandboxd-tests/sbx-channel roundtrip "$SID" alive
    check_output "sleep: its home is the workspace again (what it wrote is there)" '^before$' \
        ct cat "$SBX_STATE_ROOT/$SID/note"
    ct sandboxctl stop "$SID" >/dev/null 2>&1
    check "sleep: once stopped the workspace is free" wait_until 30 sh -c "[ \"\$(nsenter -t $CT_PID -a busctl --system get-property $SBX_DEST $SBX_PATH/workspace/sleep org.sandboxd1.Workspace InUse)\" = 'b false' ]"
else
    not_ok "sleep: a devcontainer worker on a workspace starts"
fi
sbx_call DeleteWorkspace s sleep >/dev/null

check "a new proj is empty: delete wiped the data" sbx_call CreateWorkspace 'sa{sv}' proj 1 SizeMax t $((16 * MIB))
check_output "  a worker on it finds no note" '^empty$' run --class trusted --workspace proj -- /bin/sh -c 'test ! -e note && echo empty'
sbx_call DeleteWorkspace s proj >/dev/null

tap_done
