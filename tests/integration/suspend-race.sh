#!/usr/bin/env bash
# Resume right behind a suspend (ckretry): a gVisor worker with egress has a
# proxy pair (sandbox-<id>-egress.socket and .service), one on a workspace a
# mount unit (sandbox-<id>-workspace.service), that its suspend stops and its
# resume makes again under the same names. A ResumeWorker sent the moment
# SuspendWorker answered, or while the checkpoint still runs (it is then
# answered at the suspend's end), must find the old units gone: round after
# round the worker is suspended, resumed, running in its unit with its proxy
# socket up, its home and UID kept, and counts on. A suspend right behind a
# resume must not be refused while the resume's stop of the UID's keeper
# still runs.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

ROUNDS=${RACE_ROUNDS:-5}
COUNTER=$SBX_COUNTER_PY

unit_active() { [ "$(ct systemctl is-active "$1" 2>/dev/null)" = active ]; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }
# A worker that came back from a round: running, in its unit, with its proxy
# socket (with egress) and its home and UID; prints what is wrong otherwise.
round_ok() {
    local id=$1 uid=$2 egress=$3 st
    st=$(state_of "$id")
    [ "$st" = running ] || { echo "state $st"; return 1; }
    unit_active "sandbox-$id.service" || { echo "unit not active"; return 1; }
    [ "$egress" = no ] || unit_active "sandbox-$id-egress.socket" || { echo "proxy socket not active"; return 1; }
    ct test -d "$SBX_STATE_ROOT/$id" || { echo "home gone"; return 1; }
    [ "$(sbx_prop "$id" UID | awk '{print $NF}')" = "$uid" ] || { echo "UID changed"; return 1; }
}
check_round() { # NAME ID UID EGRESS
    local why
    if why=$(round_ok "$2" "$3" "$4"); then ok "$1"; else not_ok "$1" "$why"; fi
}
# rounds WHAT ID EGRESS: suspend and resume ID back to back, ROUNDS times
# each way, then check it counts on and no resume failed.
rounds() {
    local what=$1 id=$2 egress=$3 uid round bg rc resumed last name step method
    uid=$(sbx_prop "$id" UID | awk '{print $NF}')
    for round in $(seq 1 "$ROUNDS"); do
        # Each the moment the other answered: the suspend's stop of the old
        # units may still run at the resume, and the restore (its image still
        # in use) at the second suspend.
        name="$what round $round: suspend, resume, suspend, resume, each the moment the last answered"
        step=
        for method in SuspendWorker ResumeWorker SuspendWorker ResumeWorker; do
            sbx_call "$method" s "$id" || { step="$method: $BUS_ERROR $BUS_ERRMSG"; break; }
        done
        if [ -n "$step" ]; then
            not_ok "$name" "$step"
            suspend_journal "$id"
        else
            check_round "$name" "$id" "$uid" "$egress"
        fi
        # While it is being saved: the resume waits and starts at the suspend's end.
        ct busctl --system --timeout=120 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$id" \
            >"$TAP_TMP/suspend.out" 2>&1 &
        bg=$!
        wait_until 30 sh -c "! kill -0 $bg 2>/dev/null || [ \"\$(nsenter -t $CT_PID -a busctl --system get-property \
            $SBX_DEST $SBX_PATH/worker/$id $SBX_WORKER_IFACE State)\" = 's \"suspending\"' ]"
        resumed=0
        sbx_call ResumeWorker s "$id" && resumed=1
        wait "$bg"
        rc=$?
        if [ $rc -ne 0 ]; then
            not_ok "$what round $round: a resume sent while suspending starts at the suspend's end" \
                "SuspendWorker: $(cat "$TAP_TMP/suspend.out")"
            suspend_journal "$id"
        elif [ $resumed -ne 1 ]; then
            not_ok "$what round $round: a resume sent while suspending starts at the suspend's end" \
                "ResumeWorker: $BUS_ERROR $BUS_ERRMSG"
        else
            check_round "$what round $round: a resume sent while suspending starts at the suspend's end" \
                "$id" "$uid" "$egress"
        fi
        state_is "$id" running || break
    done
    last=$(read_numbers "$id" 1000 | tail -n1)
    diag "$what: count after the rounds: $last"
    if [ -n "$last" ] && [ "$last" -gt 1 ]; then
        ok "$what: counts on after every round ($last)"
    else
        not_ok "$what: counts on after every round" "last=$last, state $(state_of "$id")"
    fi
    check_fails "$what: no resume failed to start (journal)" failed_logged "$id"
}
# What runsc and the launcher said: a failed checkpoint is told only in the
# journals of the checkpoint's unit and of the worker's (its memory guard).
suspend_journal() {
    ct journalctl --sync
    ct journalctl -o short-monotonic -u "sandbox-$1-suspend.service" -u "sandbox-$1.service" -n 60 --no-pager 2>&1 |
        sed 's/^/#   /'
}
failed_logged() {
    ct journalctl --sync
    ct journalctl -o cat SANDBOXD_WORKER_ID="$1" SANDBOXD_EVENT=start-failed | grep -q .
}

ct systemctl start sandboxd.service

# ---- the UID's keeper still stopping ----------------------------------------------------
# A resume stops the keeper of the worker's UID (uid-keep.h); a suspend right
# after needs it again. A stop that takes 2 s (a drop-in's ExecStop=) holds
# the window open that is a few milliseconds wide otherwise: the checkpoint
# that requires the keeper must replace its stop, not fail as a
# "destructive" transaction (SuspendFailed, seen once in a CI run).
KID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER")
diag "keeper worker $KID"
check "keeper: the worker prints its count" wait_until 60 has_output "$KID"
KUID=$(sbx_prop "$KID" UID | awk '{print $NF}')
KDROP=/run/systemd/system/sandbox-$KID-keep.service.d
ct sh -c "mkdir -p $KDROP && printf '[Service]\nExecStop=/bin/sleep 2\n' >$KDROP/slow-stop.conf"
ct systemctl daemon-reload
check "keeper: suspended (its keeper started)" sbx_call SuspendWorker s "$KID"
check "keeper: resumed (its keeper's stop takes 2 s)" sbx_call ResumeWorker s "$KID"
keeper_stopping() { [ "$(ct systemctl is-active "sandbox-$KID-keep.service" 2>/dev/null)" = deactivating ]; }
check "keeper: deactivating when the next suspend comes" wait_until 1 keeper_stopping
if sbx_call SuspendWorker s "$KID"; then
    ok "keeper: a suspend while its keeper stops is not refused"
else
    not_ok "keeper: a suspend while its keeper stops is not refused" "$BUS_ERROR $BUS_ERRMSG"
    suspend_journal "$KID"
fi
check "keeper: ... and is a suspend: suspended" state_is "$KID" suspended
check "keeper: ... with its keeper up" unit_active "sandbox-$KID-keep.service"
check "keeper: resumed again" sbx_call ResumeWorker s "$KID"
check_round "keeper: running in its unit with its home and UID" "$KID" "$KUID" no
ct sandboxctl stop "$KID" >/dev/null 2>&1
check "keeper: stopped, its keeper is gone" wait_until 20 unit_gone "sandbox-$KID-keep.service"
ct rm -rf "$KDROP"
ct systemctl daemon-reload

# ---- with egress: the proxy pair -----------------------------------------------------
WID=$(ct sandboxctl create --class standard --allow api.sbx-race.test -- /usr/bin/python3 -c "$COUNTER")
diag "egress worker $WID"
check "egress: the worker prints its count" wait_until 60 has_output "$WID"
check "egress: its proxy socket is up" unit_active "sandbox-$WID-egress.socket"
rounds egress "$WID" yes
ct sandboxctl stop "$WID" >/dev/null 2>&1
check "egress: stopped, its proxy pair is gone" wait_until 20 unit_gone "sandbox-$WID-egress.socket"
check "egress: stopped, its home is gone" wait_until 20 home_absent "$WID"

# ---- on a workspace: its mount unit ----------------------------------------------------
check "workspace: created" sbx_call CreateWorkspace 'sa{sv}' race1 1 SizeMax t $((64 << 20))
SID=$(ct sandboxctl create --class devcontainer --workspace race1 -- /usr/bin/python3 -c "$COUNTER")
diag "workspace worker $SID"
check "workspace: the worker prints its count" wait_until 60 has_output "$SID"
check "workspace: its mount unit is up" unit_active "sandbox-$SID-workspace.service"
rounds workspace "$SID" no
ct sandboxctl stop "$SID" >/dev/null 2>&1
check "workspace: stopped, its mount unit is gone" wait_until 20 unit_gone "sandbox-$SID-workspace.service"
check "workspace: deleted" wait_until 20 sbx_call DeleteWorkspace s race1

tap_done
