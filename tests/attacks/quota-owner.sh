#!/usr/bin/env bash
# The attack suite's quota-* section (issue 22, item 4): one plain user
# (tester) tries to take the host's worker slots and storage, and to stall
# the daemon with a slow mkfs; another plain user (tester2) and root must
# still work beside it. Each TAP line names the attack and the refusal
# expected; its body proves nothing was made (no unit, no image on disk)
# and that the control path still succeeds.
#
#   quota-owner.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   quota-owner.sh --list                  print the table of attacks (Markdown)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# ID|CLASSES|ACTION|EXPECTED REFUSAL, as lib-attacks.sh's table.
QUOTA_ATTACKS='
quota-overcommit|-|tester asks for a workspace whose SizeMax is the free space plus 1 GiB|InsufficientSpace, no image on disk; with [Quota] Overcommit=yes the same call succeeds
quota-mkfs-stall|-|a workspace is made with an mkfs that takes 20 s while ListWorkers and ListWorkspaces are called|both answered within 10 s while the creation is pending, which then completes
quota-workers|trusted|tester creates workers past [Quota] WorkersPerOwner=2|QuotaExceeded, no unit made; tester2 and root still create workers
quota-exempt-managers|trusted|tester, granted org.sandboxd1.manage-workers, creates a third worker past [Quota] WorkersPerOwner=2 with ExemptManagers=yes, and with the default (no)|yes: created, while tester2 (not granted) is refused with QuotaExceeded; no: QuotaExceeded for tester too
quota-workspaces|-|tester creates workspaces past [Quota] WorkspacesPerOwner=2|QuotaExceeded, no image on disk; tester2 still creates a workspace
quota-workspace-bytes|-|tester asks for 40 MiB more of SizeMax than [Quota] WorkspaceBytesPerOwner=48M leaves|QuotaExceeded, no image on disk; the 32 MiB that fit are granted
quota-checkpoint-floor|standard|tester suspends a worker with [Quota] CheckpointBytesPerOwner=8M (below the 16 MiB a checkpoint needs)|QuotaExceeded, the worker runs on, no image
quota-checkpoint-budget|standard|tester suspends a worker holding 64 MiB with [Quota] CheckpointBytesPerOwner=32M|SuspendFailed, the worker runs on, no image or staging file system left; with 1G it suspends and resumes
quota-checkpoint-copy|standard|tester suspends that worker (its image B bytes) with CheckpointBytesPerOwner=1.5 B: the image fits once, but while it is made it takes its room twice (runsc writes it into the launcher'"'"'s file system, which is then copied out)|SuspendFailed, the worker runs on, no image; with 2.5 B it suspends and resumes
'
atk_load_table "$QUOTA_ATTACKS"
# Each quota attack runs in its one class.
qa_result() { local id=$1; shift; atk_result "$id" "${ATK_CLASSES[$id]}" "$@"; }
qa_list() { atk_list | sed '1s/^| attack |/| quota attack |/'; }

if [ "${1:-}" = --list ]; then
    qa_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's quota-owner table is what --list prints" \
    diff <(qa_list) <(sed -n '/^<!-- quota-owner table -->/,/^$/p' "$HERE/README.md" | grep '^|')

E=org.sandboxd1.Error
MIB=$((1 << 20))
CONF=/etc/sandboxd/sandboxd.conf
WS=/var/lib/sandboxd/workspaces
IMAGES=/var/lib/sandboxd/suspend
W=/etc/sbx-quota
RULES=/etc/polkit-1/rules.d/50-sbx-quota.rules
MGR_RULES=/etc/polkit-1/rules.d/50-sbx-quota-managers.rules
DROPIN=/etc/systemd/system/sandboxd.service.d/50-sbx-quota.conf
SLEEP=(Argv as 2 /bin/sleep 1000)
# Holds MiB of touched memory (argument 1) and sleeps.
HOLD='import sys, time
buf = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(buf), 4096): buf[i] = 1
time.sleep(100000)'

cleanup() {
    ct sh -c "rm -f $RULES $MGR_RULES $DROPIN /run/sbx-quota-*; [ -f $CONF.sbx-quota ] && mv $CONF.sbx-quota $CONF
              rm -rf $W; systemctl daemon-reload" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# quota KEY=VALUE...: sandboxd.conf with the shipped file plus a [Quota]
# section of these keys, and sandboxd restarted on it (workers survive it).
quota() {
    local body
    body=$(printf '%s\n' "$@")
    ct sh -c "cp $CONF.sbx-quota $CONF && printf '\n[Quota]\n%s\n' '$body' >>$CONF" &&
        ct systemctl restart sandboxd.service && sbx_settled
}
# create_as USER CLASS: a sleeping worker of USER; WID is its id.
create_as() {
    WID=
    bus_call "$1" "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" CreateWorker 'a{sv}' 2 "${SLEEP[@]}" Class s "$2" || return 1
    [[ $BUS_OUT =~ ^so\ \"([^\"]*)\" ]] && WID=${BASH_REMATCH[1]}
}
ws_create_as() { bus_call "$1" "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" CreateWorkspace 'sa{sv}' "$2" 1 SizeMax t "$3"; }
# Names are per owner (tester's t1 is t1.UID to root): every owner's NAME.
ws_delete() {
    local k
    for k in "$1" "$1.$(ct id -u tester)" "$1.$(ct id -u tester2)"; do sbx_call DeleteWorkspace s "$k" >/dev/null; done
}
no_image() { ct sh -c "for f in $WS/$1.img $WS/$1.meta $WS/$1.[0-9]*; do [ -e \"\$f\" ] && exit 1; done; exit 0"; }
# expect_error WANT: the last bus_call failed with error WANT (an empty
# string when so), else a line saying what happened.
expect_error() {
    if [ -z "$BUS_ERROR" ] && [ -z "$BUS_ERRMSG" ]; then
        echo "expected $1, the call succeeded: $BUS_OUT"
    elif [ "$BUS_ERROR" != "$1" ]; then
        echo "expected $1, got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
    fi
}
n_units() { sbx_units | grep -c '\.service$'; }
stop_all() {
    local id
    for id in "$@"; do ct sandboxctl stop "$id" >/dev/null 2>&1; done
    for id in "$@"; do wait_until 60 unit_gone "sandbox-$id.service"; done
}

# ---------------------------------------------------------------- the world
ct sh -c "cp $CONF $CONF.sbx-quota; mkdir -p $W $(dirname $DROPIN)
          id tester2 >/dev/null 2>&1 || useradd -m -u 1501 tester2"
# Both plain users may create workers (and so workspaces), nothing else.
ct sh -c "cat >$RULES" <<'JS'
polkit.addRule(function(action, subject) {
    if ((subject.user == "tester" || subject.user == "tester2") &&
        (action.id == "org.sandboxd1.create-worker" || action.id == "org.sandboxd1.create-trusted-worker"))
        return polkit.Result.YES;
});
JS
# An mkfs that takes 20 s once /run/sbx-quota-slow exists: a big image on a
# slow disk, made deterministic.
ct sh -c "cat >$W/slow-mkfs && chmod 755 $W/slow-mkfs" <<'SH'
#!/bin/sh
if [ -e /run/sbx-quota-slow ]; then
    touch /run/sbx-quota-mkfs-started
    sleep 20
    touch /run/sbx-quota-mkfs-slept
fi
exec /sbin/mkfs.ext4 "$@"
SH
ct sh -c "printf '[Service]\nEnvironment=SANDBOXD_MKFS=$W/slow-mkfs\n' >$DROPIN && systemctl daemon-reload"
ct systemctl restart polkit.service sandboxd.service
sbx_settled
check "sandboxd runs with the test's mkfs" ct systemctl is-active --quiet sandboxd.service

# ---- quota-overcommit (the shipped configuration: no overcommit) ----------
avail=$(ct df -B1 --output=avail "$WS" | tail -n1 | tr -d ' ')
big=$(( (avail / MIB + 1024) * MIB ))
[ "$big" -gt $((1 << 40)) ] && big=$((1 << 40))
diag "free in $WS: $avail bytes; asking for $big"
p1= p2= p3=
if [ "$big" -le "$avail" ]; then
    p1="the file system has more than 1 TiB free: nothing to overcommit"
else
    ws_create_as tester huge "$big"
    p1=$(expect_error "$E.InsufficientSpace")
    no_image huge || p2="the refused workspace left files in $WS"
    ws_delete huge
    quota Overcommit=yes
    if ws_create_as tester huge "$big"; then ws_delete huge; else p3="with Overcommit=yes: ${BUS_ERROR:-} $BUS_ERRMSG"; fi
    ct sh -c "cp $CONF.sbx-quota $CONF"
    ct systemctl restart sandboxd.service
    sbx_settled
fi
qa_result quota-overcommit "$p1" "$p2" "$p3"

# ---- quota-mkfs-stall -------------------------------------------------------
ct touch /run/sbx-quota-slow
ct sh -c "busctl --system --timeout=120 call $SBX_DEST $SBX_PATH $SBX_MGR CreateWorkspace 'sa{sv}' slow 1 SizeMax t $((64 * MIB)) \
          >/run/sbx-quota-create.out 2>&1; echo \$? >/run/sbx-quota-create.rc" &
bg=$!
p1= p2= p3= p4=
if ! wait_until 30 ct test -e /run/sbx-quota-mkfs-started; then
    p1="the slow mkfs never started"
else
    t0=$(date +%s%N)
    ct timeout 10 busctl --system call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ListWorkers >/dev/null 2>&1 || p1="ListWorkers was not answered within 10 s during the mkfs"
    lw=$(ct timeout 10 busctl --system call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ListWorkspaces 2>&1) || p2="ListWorkspaces was not answered within 10 s during the mkfs"
    diag "answered during the mkfs in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    [[ $lw == *'"slow"'* ]] && p2="the workspace being made was listed before it existed: $lw"
    ct test -e /run/sbx-quota-mkfs-slept && p3="the mkfs had finished already: the calls may have waited for it"
fi
wait "$bg"
ct rm -f /run/sbx-quota-slow
[ "$(ct cat /run/sbx-quota-create.rc 2>/dev/null)" = 0 ] || p4="the creation failed: $(ct cat /run/sbx-quota-create.out 2>/dev/null)"
sbx_call ListWorkspaces >/dev/null && [[ $BUS_OUT == *'"slow"'* ]] || p4="$p4 (not listed once made: $BUS_OUT)"
ws_delete slow
qa_result quota-mkfs-stall "$p1" "$p2" "$p3" "$p4"

# ---- per-owner counts -------------------------------------------------------
quota WorkersPerOwner=2 WorkspacesPerOwner=2 WorkspaceBytesPerOwner=48M
check "sandboxd runs with [Quota] WorkersPerOwner=2 WorkspacesPerOwner=2 WorkspaceBytesPerOwner=48M" \
    ct systemctl is-active --quiet sandboxd.service

# quota-workers
p1= p2= p3= p4=
mine=()
for i in 1 2; do
    if create_as tester trusted; then mine+=("$WID"); else p1="tester's worker $i was refused: $BUS_ERROR $BUS_ERRMSG"; fi
done
before=$(n_units)
create_as tester trusted && mine+=("$WID")
p2=$(expect_error "$E.QuotaExceeded")
[ "$(n_units)" = "$before" ] || p3="the refused CreateWorker left a unit: $(sbx_units)"
others=()
if create_as tester2 trusted; then others+=("$WID"); else p4="tester2 (control) was refused: $BUS_ERROR $BUS_ERRMSG"; fi
if create_as root trusted; then others+=("$WID"); else p4="$p4; root (control) was refused: $BUS_ERROR $BUS_ERRMSG"; fi
qa_result quota-workers "$p1" "$p2" "$p3" "$p4"
stop_all "${mine[@]}" "${others[@]}"
check "once tester's workers are gone, tester creates one again" create_as tester trusted
stop_all "$WID"

# quota-exempt-managers: tester holds manage-workers, tester2 does not.
ct sh -c "cat >$MGR_RULES" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.manage-workers")
        return polkit.Result.YES;
});
JS
sleep 3   # polkit rereads its rules on inotify
p1= p2= p3= p4= p5=
mine=() others=()
quota WorkersPerOwner=2 ExemptManagers=yes
ct systemctl is-active --quiet sandboxd.service || p1="sandboxd does not run with [Quota] ExemptManagers=yes"
for i in 1 2 3; do
    if create_as tester trusted; then mine+=("$WID"); else p2="tester's worker $i (exempt) was refused: $BUS_ERROR $BUS_ERRMSG"; fi
done
for i in 1 2; do
    if create_as tester2 trusted; then others+=("$WID"); else p3="tester2's worker $i was refused: $BUS_ERROR $BUS_ERRMSG"; fi
done
create_as tester2 trusted && others+=("$WID")
p4=$(expect_error "$E.QuotaExceeded")
stop_all "${mine[@]}" "${others[@]}"
mine=()
quota WorkersPerOwner=2
for i in 1 2; do create_as tester trusted && mine+=("$WID"); done
create_as tester trusted && mine+=("$WID")
p5=$(expect_error "$E.QuotaExceeded")
[ -n "$p5" ] && p5="with ExemptManagers=no (the default): $p5"
qa_result quota-exempt-managers "$p1" "$p2" "$p3" "$p4" "$p5"
stop_all "${mine[@]}"
ct rm -f "$MGR_RULES"
quota WorkersPerOwner=2 WorkspacesPerOwner=2 WorkspaceBytesPerOwner=48M

# quota-workspaces
p1= p2= p3= p4=
ws_create_as tester t1 $((16 * MIB)) || p1="t1: $BUS_ERROR $BUS_ERRMSG"
ws_create_as tester t2 $((16 * MIB)) || p1="$p1 t2: $BUS_ERROR $BUS_ERRMSG"
ws_create_as tester t3 $((16 * MIB))
p2=$(expect_error "$E.QuotaExceeded")
no_image t3 || p3="the refused workspace left files in $WS"
ws_create_as tester2 other $((16 * MIB)) || p4="tester2 (control) was refused: $BUS_ERROR $BUS_ERRMSG"
qa_result quota-workspaces "$p1" "$p2" "$p3" "$p4"

# quota-workspace-bytes: t1 holds 16 MiB of tester's 48.
ws_delete t2
p1= p2= p3=
ws_create_as tester t2 $((40 * MIB))
p1=$(expect_error "$E.QuotaExceeded")
no_image t2 || p2="the refused workspace left files in $WS"
ws_create_as tester t2 $((32 * MIB)) || p3="32 MiB (control, exactly the rest) was refused: $BUS_ERROR $BUS_ERRMSG"
qa_result quota-workspace-bytes "$p1" "$p2" "$p3"
for n in t1 t2 other; do ws_delete "$n"; done

# ---- checkpoints ------------------------------------------------------------
# Running, its unit holding the 64 MiB (the sentry's memory is charged to it).
running_holding() {
    local mem
    mem=$(ct systemctl show -P MemoryCurrent "sandbox-$1.service")
    [ "$(state_of "$1")" = running ] && [ "$mem" -gt $((48 * MIB)) ] 2>/dev/null
}
no_ckpt_files() { [ -z "$(ct sh -c "ls -A $IMAGES 2>/dev/null | grep -F '$1'")" ]; }

quota CheckpointBytesPerOwner=8M
p1= p2= p3= p4=
HWID=$(ct runuser -u tester -- sandboxctl --no-ask-password create --class standard -- /usr/bin/python3 -c "$HOLD" 64 2>&1)
if ! [[ $HWID =~ ^[0-9a-f]{12}$ ]] || ! wait_until 90 running_holding "$HWID"; then
    p1="tester's standard worker did not start: $HWID"
else
    bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$HWID"
    p2=$(expect_error "$E.QuotaExceeded")
    [ "$(state_of "$HWID")" = running ] || p3="the worker is $(state_of "$HWID"), not running"
    no_ckpt_files "$HWID" || p4="files of it in $IMAGES: $(ct ls -A $IMAGES)"
fi
qa_result quota-checkpoint-floor "$p1" "$p2" "$p3" "$p4"

quota CheckpointBytesPerOwner=32M
p1= p2= p3= p4= p5=
if ! [[ $HWID =~ ^[0-9a-f]{12}$ ]] || [ "$(state_of "$HWID")" != running ]; then
    p1="no running worker to suspend (it was lost across the restart?)"
else
    bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$HWID"
    p2=$(expect_error "$E.SuspendFailed")
    wait_until 60 running_holding "$HWID" || p3="after the failed checkpoint the worker is $(state_of "$HWID"), not running"
    no_ckpt_files "$HWID" || p4="files of it in $IMAGES: $(ct ls -A $IMAGES)"
    quota CheckpointBytesPerOwner=1G
    if bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$HWID" &&
        ct test -s "$IMAGES/$HWID/checkpoint.img" &&
        bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ResumeWorker s "$HWID" &&
        [ "$(state_of "$HWID")" = running ]; then
        :
    else
        p5="with a 1G budget (control) suspend and resume failed: ${BUS_ERROR:-} $BUS_ERRMSG (state $(state_of "$HWID"))"
    fi
fi
qa_result quota-checkpoint-budget "$p1" "$p2" "$p3" "$p4" "$p5"

# quota-checkpoint-copy: B, the image the 1G control just made.
image_bytes() {
    ct journalctl -q -o cat --output-fields=SANDBOXD_IMAGE_BYTES SANDBOXD_WORKER_ID="$1" SANDBOXD_EVENT=suspended \
        -n 1 2>/dev/null | tail -n1
}
p1= p2= p3= p4= p5=
B=$(image_bytes "$HWID")
if ! [[ $B =~ ^[0-9]+$ ]] || [ "$(state_of "$HWID")" != running ]; then
    p1="no image size of the control's checkpoint ('$B') or the worker is $(state_of "$HWID")"
else
    diag "the worker's image: $((B / MIB)) MiB"
    quota CheckpointBytesPerOwner=$(( (B * 3 / 2 + MIB - 1) / MIB ))M
    bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$HWID"
    p2=$(expect_error "$E.SuspendFailed")
    wait_until 60 running_holding "$HWID" || p3="after the refused checkpoint the worker is $(state_of "$HWID"), not running"
    if [ -z "$p2" ]; then
        no_ckpt_files "$HWID" || p4="files of it in $IMAGES: $(ct ls -A $IMAGES)"
    else
        # The old build suspended it: resumed for the control.
        bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ResumeWorker s "$HWID"
    fi
    quota CheckpointBytesPerOwner=$(( (B * 5 / 2 + MIB - 1) / MIB ))M
    if bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$HWID" &&
        bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ResumeWorker s "$HWID" &&
        [ "$(state_of "$HWID")" = running ]; then
        :
    else
        p5="with 2.5 times its image (control) suspend and resume failed: ${BUS_ERROR:-} $BUS_ERRMSG (state $(state_of "$HWID"))"
    fi
fi
qa_result quota-checkpoint-copy "$p1" "$p2" "$p3" "$p4" "$p5"
[[ $HWID =~ ^[0-9a-f]{12}$ ]] && stop_all "$HWID"

# ---- every attack ran ---------------------------------------------------------
atk_coverage
tap_done
