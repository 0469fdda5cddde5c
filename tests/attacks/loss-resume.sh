#!/usr/bin/env bash
# The attack suite's loss-* section for suspend and resume (issue 22, items 6
# and 8): faults that made a resume delete what the suspend kept, or lose a
# worker whose restored sandbox ran. Each TAP line names the fault, its class
# and what must hold; tests/attacks/README.md's "loss-resume.sh" section is
# what --list prints.
#
#   loss-resume.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   loss-resume.sh --list                  print the table (Markdown)
#
# The UID faults occupy a suspended worker's UID with a user added to
# /etc/passwd (useradd -o, as an admin or a package would; a plain useradd
# -u is refused while the keeper holds the UID). The restart fault widens a
# real window: sandboxd's RunscPath is the wrapper of
# tests/integration/suspend-resume-fail/runsc, whose restore waits some
# seconds first; sandboxd is stopped (SIGSTOP) while the restore is under
# way, so it cannot see the launcher remove the image and the unit become
# ready, and is then killed (SIGKILL; systemd starts it again) with the
# restored sandbox running and the record still saying suspended.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# This section's own table (lib-attacks.sh parsed the main one).
ATTACKS='
loss-resume-control|standard|(control) suspend a worker and resume it, nothing in the way|it runs again with the same UID, counts on, its home file intact
loss-resume-keeper|standard|suspend a worker, then restart sandboxd while it sleeps|a keeper sandbox-ID-keep.service (its User=, DynamicUser, no process, no network, no capabilities) holds its UID, and still does after the restart, re-adopted
loss-resume-uid-taken|standard|add a user with the suspended worker'"'"'s UID (useradd -o -u UID), then resume it|it resumes with the same UID, counting on, its home file intact and still owned by its UID
loss-resume-uid-taken-unkept|standard|stop the keeper, add a user with the worker'"'"'s UID (useradd -u UID), then resume it|UIDTaken; it stays suspended, image whole, home intact and not chowned; once the user is gone the next resume works
loss-resume-keeper-stop|standard|stop a suspended worker|it ends, its keeper unit is gone with its home and image
loss-resume-restart-mid|standard|SIGSTOP sandboxd mid-restore, let the launcher remove the image and the unit become ready, then SIGKILL sandboxd|the restarted sandboxd adopts the worker as running (resume-adopted), same unit, counting on, saved as running
loss-restart-mid-suspend-control|standard|(control) suspend a worker whose checkpoint is slow (runsc waits 10 s), sandboxd left alone|it is suspended, saved as suspended, image whole, home intact; it resumes with the same UID, counting on
loss-restart-mid-suspend|standard|suspend a worker whose checkpoint is slow, SIGKILL sandboxd while the checkpoint unit runs; systemd starts it again|the record named the checkpoint unit; the restarted sandboxd adopts the worker as suspending (suspend-adopted) and it ends up suspended, saved as suspended, image whole, home intact; it resumes with the same UID, counting on
loss-restart-mid-suspend-fail|standard|the same with every checkpoint attempt failing (runsc exits 128, the sandbox left running)|adopted as suspending (suspend-adopted), the failed checkpoint leaves it running: saved as running without a suspending= line, no keeper, home intact, counting on from where it was
'
atk_load_table

if [ "${1:-}" = --list ]; then
    atk_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's loss-resume.sh table is what --list prints" \
    diff <(atk_list) <(awk '/^## .*loss-resume\.sh/ { f = 1; next } /^## / { f = 0 } f && /^\|/' "$HERE/README.md")

CLASS=standard
IMAGES=/var/lib/sandboxd/suspend
STATES=/run/sandboxd/workers
CONF=/etc/sandboxd/sandboxd.conf
T=/etc/sbx-loss-resume          # the runsc wrapper, root's
SW=/run/sbx-resumefail          # its switches (the wrapper's own path)
NONCE=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
# Writes a file into its home, then counts.
WORKLOAD="open('kept', 'w').write('kept-$NONCE')
$SBX_COUNTER_PY"

cleanup() {
    ct sh -c "for u in sbxsquat1 sbxsquat2; do userdel \$u; done
              [ -f $CONF.loss-resume ] && mv $CONF.loss-resume $CONF
              rm -rf $T $SW; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

uid_of() { sbx_prop "$1" UID | awk '{print $NF}'; }
unit_active() { [ "$(ct systemctl is-active "$1" 2>/dev/null)" = active ]; }
keeper() { echo "sandbox-$1-keep.service"; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }
last_number() { read_numbers "$1" 1000 | tail -n1; }
counts_on_from() {
    local first
    first=$(read_numbers "$1" 1500 | head -n1)
    diag "$1: last before the suspend $2, first after the resume $first"
    # It counts on while the checkpoint is set up (the keeper first): seconds
    # on a loaded host, five numbers a second; a new start would print 1.
    [ -n "$first" ] && [ -n "$2" ] && [ "$first" -gt "$2" ] && [ "$first" -le $(($2 + 100)) ]
}
image_whole() { ct test -s "$IMAGES/$1/sandboxd-uid" && ct test -s "$IMAGES/$1/checkpoint.img"; }
image_gone() { ! ct test -e "$IMAGES/$1/sandboxd-uid"; }
# The home's file, as written before the suspend, owned by UID $2.
home_kept() {
    [ "$(sbx_home_cat "$1" kept)" = "kept-$NONCE" ] &&
        [ "$(ct stat -c %u "$(sbx_home "$1")/kept")" = "$2" ] &&
        [ "$(ct stat -c %u "$SBX_STATE_ROOT/$1")" = "$2" ]
}
# The same while it is suspended: a worker with a disk of its own has its
# home's files on that disk's image, unmounted while it sleeps (worker-disk.h);
# then the home and the image are there. home_kept after the resume reads the file.
DISKS=/var/lib/private/sandboxd/disks
CHECKPOINT_ATTEMPTS=3           # the launcher's (SBX_CHECKPOINT_ATTEMPTS)
home_kept_asleep() {
    if ct test -e "$DISKS/$1/image"; then
        ct test -d "$SBX_STATE_ROOT/$1" && ct test -s "$DISKS/$1/image"
    else
        home_kept "$@"
    fi
}
# The state file says suspended ($2 yes) or not ($2 no: no such line).
saved_as() {
    ct test -s "$STATES/$1" || return 1
    if [ "$2" = yes ]; then ct grep -qx suspended=yes "$STATES/$1"; else ! ct grep -qx suspended=yes "$STATES/$1"; fi
}
new_worker() {
    local id
    id=$(ct sandboxctl create --class "$CLASS" -- /usr/bin/python3 -c "$WORKLOAD") || return 1
    wait_until 60 has_output "$id" || return 1
    echo "$id"
}
# The keeper holds the user the way uid-keep.h says, and nothing more.
keeper_walls() {
    local p
    p=$(ct systemctl show -p User -p DynamicUser -p MainPID -p PrivateNetwork -p CapabilityBoundingSet \
        -p NoNewPrivileges -p ActiveState -p SubState "$(keeper "$1")") || return 1
    printf '%s\n' "$p"
    grep -qx "User=sandbox-$1" <<<"$p" && grep -qx 'DynamicUser=yes' <<<"$p" && grep -qx 'MainPID=0' <<<"$p" &&
        grep -qx 'PrivateNetwork=yes' <<<"$p" && grep -qx 'CapabilityBoundingSet=' <<<"$p" &&
        grep -qx 'NoNewPrivileges=yes' <<<"$p" && grep -qx 'ActiveState=active' <<<"$p"
}
# The UID systemd's NSS module gives the worker's user (its dynamic user).
user_uid() { ct getent passwd "sandbox-$1" | cut -d: -f3; }

ct mkdir -p "$T" "$SW"
cat "$HERE/../integration/suspend-resume-fail/runsc" > "/proc/$CT_PID/root$T/runsc"
ct chmod 0755 "$T/runsc"
ct cp "$CONF" "$CONF.loss-resume"
ct sh -c "printf '[Isolation]\nRunscPath=$T/runsc\n' >> $CONF"
ct systemctl restart sandboxd.service

# ---- control: a plain suspend and resume --------------------------------------------
W1=$(new_worker) || W1=
diag "worker 1: $W1"
uid1=$(uid_of "$W1")
last=$(last_number "$W1")
if [ -n "$W1" ] && sbx_call SuspendWorker s "$W1" && state_is "$W1" suspended && sbx_call ResumeWorker s "$W1" &&
    state_is "$W1" running && [ "$(uid_of "$W1")" = "$uid1" ] && counts_on_from "$W1" "$last" &&
    home_kept "$W1" "$uid1"; then
    atk_ok loss-resume-control $CLASS
else
    atk_not_ok loss-resume-control $CLASS "worker $W1 (UID $uid1): state $(state_of "$W1"), UID $(uid_of "$W1")" \
        "${BUS_ERROR:-} ${BUS_ERRMSG:-}"
fi
check "loss-resume-control: the resumed worker has no keeper" wait_until 30 unit_gone "$(keeper "$W1")"

# ---- the keeper holds the UID while it sleeps, across a restart of sandboxd ----------
last=$(last_number "$W1")
sbx_call SuspendWorker s "$W1"
walls=$(keeper_walls "$W1" 2>&1)
kept=no
keeper_walls "$W1" >/dev/null 2>&1 && [ "$(user_uid "$W1")" = "$uid1" ] && kept=yes
ct systemctl restart sandboxd.service
if [ "$kept" = yes ] && state_is "$W1" suspended && keeper_walls "$W1" >/dev/null 2>&1 &&
    [ "$(user_uid "$W1")" = "$uid1" ]; then
    atk_ok loss-resume-keeper $CLASS
else
    atk_not_ok loss-resume-keeper $CLASS "kept before the restart: $kept; state $(state_of "$W1")," \
        "user's UID $(user_uid "$W1") (want $uid1)" "$walls"
fi

# ---- its UID taken while it sleeps: the keeper hands it back all the same ------------
ct useradd -o -u "$uid1" -M -s /usr/sbin/nologin sbxsquat1
diag "sbxsquat1: $(ct getent passwd sbxsquat1)"
if ct getent passwd sbxsquat1 >/dev/null && sbx_call ResumeWorker s "$W1" && state_is "$W1" running &&
    [ "$(uid_of "$W1")" = "$uid1" ] && counts_on_from "$W1" "$last" && home_kept "$W1" "$uid1" &&
    wait_until 30 unit_gone "$(keeper "$W1")"; then
    atk_ok loss-resume-uid-taken $CLASS
else
    atk_not_ok loss-resume-uid-taken $CLASS "state $(state_of "$W1"), UID $(uid_of "$W1") (want $uid1)" \
        "${BUS_ERROR:-} ${BUS_ERRMSG:-}" "home: $(ct ls -ln "$SBX_STATE_ROOT/$W1" 2>&1 | head -n 3)"
fi
ct userdel sbxsquat1 >/dev/null 2>&1

# ---- no keeper (one suspended by an older build): refused, nothing lost ------------
W2=$(new_worker) || W2=
diag "worker 2: $W2"
uid2=$(uid_of "$W2")
last=$(last_number "$W2")
sbx_call SuspendWorker s "$W2"
ct systemctl stop "$(keeper "$W2")" >/dev/null 2>&1
wait_until 30 unit_gone "$(keeper "$W2")"
ct useradd -u "$uid2" -M -s /usr/sbin/nologin sbxsquat2
diag "sbxsquat2: $(ct getent passwd sbxsquat2)"
refused=no
if ct getent passwd sbxsquat2 >/dev/null && ! sbx_call ResumeWorker s "$W2" &&
    [ "$BUS_ERROR" = org.sandboxd1.Error.UIDTaken ]; then
    refused=yes
fi
err="${BUS_ERROR:-} ${BUS_ERRMSG:-}"
if [ "$refused" = yes ] && state_is "$W2" suspended && image_whole "$W2" && home_kept_asleep "$W2" "$uid2" &&
    saved_as "$W2" yes && ct userdel sbxsquat2 && sbx_call ResumeWorker s "$W2" && state_is "$W2" running &&
    [ "$(uid_of "$W2")" = "$uid2" ] && counts_on_from "$W2" "$last" && home_kept "$W2" "$uid2"; then
    atk_ok loss-resume-uid-taken-unkept $CLASS
else
    atk_not_ok loss-resume-uid-taken-unkept $CLASS "refused with UIDTaken: $refused ($err)" \
        "state $(state_of "$W2"), UID $(uid_of "$W2") (want $uid2)" \
        "home: $(ct ls -ln "$SBX_STATE_ROOT/$W2" 2>&1 | head -n 3)"
fi
ct userdel sbxsquat2 >/dev/null 2>&1

# ---- a suspended worker stopped: its keeper goes with it ------------------------------
sbx_call SuspendWorker s "$W2"
had_keeper=no
unit_active "$(keeper "$W2")" && had_keeper=yes
if [ "$had_keeper" = yes ] && sbx_call StopWorker s "$W2" && wait_until 30 state_is "$W2" ended &&
    wait_until 30 unit_gone "$(keeper "$W2")" && wait_until 30 home_absent "$W2" && image_gone "$W2"; then
    atk_ok loss-resume-keeper-stop $CLASS
else
    atk_not_ok loss-resume-keeper-stop $CLASS "had a keeper: $had_keeper, state $(state_of "$W2")," \
        "keeper $(ct systemctl is-active "$(keeper "$W2")")"
fi

# ---- sandboxd restarts after the restored sandbox ran, before it saved that ----------
# A worker of its own, so that this fault shows whatever became of the others.
ct sandboxctl stop "$W1" >/dev/null 2>&1
W1=$(new_worker) || W1=
diag "worker 3: $W1"
uid1=$(uid_of "$W1")
last=$(last_number "$W1")
sbx_call SuspendWorker s "$W1"
ct sh -c "echo 8 > $SW/slow-restore"
ct busctl --system --timeout=120 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ResumeWorker s "$W1" >/dev/null 2>&1 &
bg=$!
stopped=no
if wait_until 30 state_is "$W1" resuming &&
    wait_until 30 sh -c "[ \"\$(nsenter -t $CT_PID -a systemctl is-active sandbox-$W1.service)\" = activating ]" &&
    image_whole "$W1"; then
    pid=$(ct systemctl show -P MainPID sandboxd.service)
    ct kill -STOP "$pid" && stopped=yes
fi
ran=no
wait_until 120 sh -c "! nsenter -t $CT_PID -a test -e $IMAGES/$W1/sandboxd-uid" &&
    wait_until 60 unit_active "sandbox-$W1.service" && ran=yes
diag "sandboxd stopped mid-restore: $stopped; the image went and the unit is ready meanwhile: $ran"
[ "$stopped" = yes ] && ct kill -KILL "$pid"
ct rm -f "$SW/slow-restore"
wait "$bg" 2>/dev/null
back() { [ "$(ct systemctl show -P MainPID sandboxd.service)" != "${pid:-0}" ] && unit_active sandboxd.service &&
    state_of "$W1" >/dev/null; }
if [ "$stopped" = yes ] && [ "$ran" = yes ] && wait_until 60 back && state_is "$W1" running &&
    unit_active "sandbox-$W1.service" && [ "$(uid_of "$W1")" = "$uid1" ] && counts_on_from "$W1" "$last" &&
    saved_as "$W1" no && journal_has . -o cat SANDBOXD_WORKER_ID="$W1" SANDBOXD_EVENT=resume-adopted; then
    atk_ok loss-resume-restart-mid $CLASS
else
    atk_not_ok loss-resume-restart-mid $CLASS "stopped: $stopped, ran: $ran, state $(state_of "$W1" 2>&1)," \
        "unit $(ct systemctl is-active "sandbox-$W1.service")" \
        "$(journal -o cat SANDBOXD_WORKER_ID="$W1" -n 5 | tail -n 5)"
fi

# The adopted worker is sandboxd's as any other: it suspends and resumes.
last=$(last_number "$W1")
check "loss-resume-restart-mid: the adopted worker suspends" sbx_call SuspendWorker s "$W1"
check "loss-resume-restart-mid: and resumes" sbx_call ResumeWorker s "$W1"
check "loss-resume-restart-mid: it counts on from where it was" counts_on_from "$W1" "$last"
check "StopWorker stops it" sbx_call StopWorker s "$W1"
check "its keeper is gone" wait_until 30 unit_gone "$(keeper "$W1")"

# ---- sandboxd restarts while a checkpoint runs -----------------------------------------
# The checkpoint unit runs on its own; the record must say what it is, or the
# restarted sandboxd takes the sandbox's end (the checkpoint's doing) for the
# worker's and wipes its home, and sweeps the launcher's staging file system
# (SBX_SUSPEND_ROOT/.ID.staging) from under it.
ct sandboxctl stop "$W1" >/dev/null 2>&1
ct sh -c "echo 10 > $SW/slow-checkpoint"

# The control: the same slow checkpoint, nothing in the way.
W3=$(new_worker) || W3=
diag "worker 4: $W3"
uid3=$(uid_of "$W3")
last=$(last_number "$W3")
if [ -n "$W3" ] && sbx_call SuspendWorker s "$W3" && state_is "$W3" suspended && saved_as "$W3" yes &&
    image_whole "$W3" && home_kept_asleep "$W3" "$uid3" && sbx_call ResumeWorker s "$W3" && state_is "$W3" running &&
    [ "$(uid_of "$W3")" = "$uid3" ] && counts_on_from "$W3" "$last" && home_kept "$W3" "$uid3"; then
    atk_ok loss-restart-mid-suspend-control $CLASS
else
    atk_not_ok loss-restart-mid-suspend-control $CLASS "worker $W3: state $(state_of "$W3")," \
        "UID $(uid_of "$W3") (want $uid3)" "${BUS_ERROR:-} ${BUS_ERRMSG:-}"
fi
ct sandboxctl stop "$W3" >/dev/null 2>&1

W4=$(new_worker) || W4=
diag "worker 5: $W4"
uid4=$(uid_of "$W4")
last=$(last_number "$W4")
ct rm -f "$SW/checkpoints"
ct busctl --system --timeout=120 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$W4" >/dev/null 2>&1 &
bg=$!
killed=no recorded=no
if [ -n "$W4" ] && wait_until 30 state_is "$W4" suspending && wait_until 30 ct test -s "$SW/checkpoints"; then
    ct grep -qx "suspending=sandbox-$W4-suspend.service" "$STATES/$W4" && recorded=yes
    pid=$(ct systemctl show -P MainPID sandboxd.service)
    ct kill -KILL "$pid" && killed=yes
fi
diag "sandboxd killed mid-checkpoint: $killed; the record named the checkpoint unit: $recorded"
wait "$bg" 2>/dev/null
back4() { [ "$(ct systemctl show -P MainPID sandboxd.service)" != "${pid:-0}" ] && unit_active sandboxd.service &&
    state_of "$W4" >/dev/null; }
if [ "$killed" = yes ] && [ "$recorded" = yes ] && wait_until 60 back4 &&
    wait_until 120 state_is "$W4" suspended && saved_as "$W4" yes && image_whole "$W4" &&
    home_kept_asleep "$W4" "$uid4" &&
    journal_has . -o cat SANDBOXD_WORKER_ID="$W4" SANDBOXD_EVENT=suspend-adopted; then
    atk_ok loss-restart-mid-suspend $CLASS
else
    atk_not_ok loss-restart-mid-suspend $CLASS "killed: $killed, recorded: $recorded," \
        "state $(state_of "$W4" 2>&1), image whole: $(image_whole "$W4" && echo yes || echo no)," \
        "home: $(ct ls -lnd "$SBX_STATE_ROOT/$W4" "$DISKS/$W4/image" 2>&1 | head -n 3)" \
        "$(journal -o cat SANDBOXD_WORKER_ID="$W4" -n 8 | tail -n 8)"
fi
ct rm -f "$SW/slow-checkpoint"
check "loss-restart-mid-suspend: it resumes" sbx_call ResumeWorker s "$W4"
check "loss-restart-mid-suspend: with the same UID" test "$(uid_of "$W4")" = "$uid4"
check "loss-restart-mid-suspend: it counts on from where it was" counts_on_from "$W4" "$last"
check "loss-restart-mid-suspend: its home file is intact" home_kept "$W4" "$uid4"
check "StopWorker stops it" sbx_call StopWorker s "$W4"

# The same restart, and the checkpoint fails (all its attempts): the sandbox
# runs on, and so must the worker, as without the restart.
W5=$(new_worker) || W5=
diag "worker 6: $W5"
uid5=$(uid_of "$W5")
last=$(last_number "$W5")
ct sh -c "rm -f $SW/checkpoints; echo 10 > $SW/slow-checkpoint; echo $CHECKPOINT_ATTEMPTS > $SW/fail-checkpoint"
ct busctl --system --timeout=120 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$W5" >/dev/null 2>&1 &
bg=$!
killed=no
if [ -n "$W5" ] && wait_until 30 state_is "$W5" suspending && wait_until 30 ct test -s "$SW/checkpoints"; then
    pid=$(ct systemctl show -P MainPID sandboxd.service)
    ct kill -KILL "$pid" && killed=yes
fi
ct rm -f "$SW/slow-checkpoint"
wait "$bg" 2>/dev/null
ck_over() { ! ct systemctl -q is-active "sandbox-$W5-suspend.service" &&
    [ "$(ct systemctl show -P ActiveState "sandbox-$W5-suspend.service")" != activating ]; }
back5() { [ "$(ct systemctl show -P MainPID sandboxd.service)" != "${pid:-0}" ] && unit_active sandboxd.service &&
    state_of "$W5" >/dev/null; }
if [ "$killed" = yes ] && wait_until 60 back5 && wait_until 180 ck_over && wait_until 30 state_is "$W5" running &&
    unit_active "sandbox-$W5.service" && saved_as "$W5" no && ! ct grep -q '^suspending=' "$STATES/$W5" &&
    wait_until 30 unit_gone "$(keeper "$W5")" && home_kept "$W5" "$uid5" && counts_on_from "$W5" "$last" &&
    journal_has . -o cat SANDBOXD_WORKER_ID="$W5" SANDBOXD_EVENT=suspend-adopted; then
    atk_ok loss-restart-mid-suspend-fail $CLASS
else
    atk_not_ok loss-restart-mid-suspend-fail $CLASS "killed: $killed, state $(state_of "$W5" 2>&1)," \
        "unit $(ct systemctl is-active "sandbox-$W5.service"), keeper $(ct systemctl is-active "$(keeper "$W5")")," \
        "checkpoint attempts $(ct cat "$SW/checkpoints" 2>/dev/null | wc -l)" \
        "$(journal -o cat SANDBOXD_WORKER_ID="$W5" -n 8 | tail -n 8)"
fi
ct rm -f "$SW/fail-checkpoint"
check "StopWorker stops it" sbx_call StopWorker s "$W5"

atk_coverage
tap_done
