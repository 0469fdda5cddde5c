#!/usr/bin/env bash
# Resume right behind a suspend (ckretry): a gVisor worker with egress has a
# proxy pair (sandbox-<id>-egress.socket and .service) that its suspend stops
# and its resume makes again under the same names. A ResumeWorker sent the
# moment SuspendWorker answered, or while the checkpoint still runs (it is
# then answered at the suspend's end), must find the old pair gone: round
# after round the worker is suspended, resumed, running in its unit with its
# proxy socket up, its home and UID kept, and counts on.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
ROUNDS=6
# Prints 1, 2, 3, ... every 0.2 s.
COUNTER='import time
i = 0
while True:
    i += 1
    print(i, flush=True)
    time.sleep(0.2)'

state_of() { sbx_prop "$1" State | tr -d '"' | awk '{print $NF}'; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
unit_active() { [ "$(ct systemctl is-active "$1" 2>/dev/null)" = active ]; }
read_numbers() { ct timeout 30 "$CHANNEL" read "$1" "$2" 2>/dev/null | grep -E '^[0-9]+$' || true; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }
# A worker that came back from a round: running, in its unit, with its proxy
# socket, its home and its UID; prints what is wrong otherwise.
round_ok() {
    local id=$1 uid=$2 st
    st=$(state_of "$id")
    [ "$st" = running ] || { echo "state $st"; return 1; }
    unit_active "sandbox-$id.service" || { echo "unit not active"; return 1; }
    unit_active "sandbox-$id-egress.socket" || { echo "proxy socket not active"; return 1; }
    ct test -d "$SBX_STATE_ROOT/$id" || { echo "home gone"; return 1; }
    [ "$(sbx_prop "$id" UID | awk '{print $NF}')" = "$uid" ] || { echo "UID changed"; return 1; }
}

ct systemctl start sandboxd.service
WID=$(ct sandboxctl create --class standard --allow api.sbx-race.test -- /usr/bin/python3 -c "$COUNTER")
diag "worker $WID"
check "the worker prints its count" wait_until 60 has_output "$WID"
check "its proxy socket is up" unit_active "sandbox-$WID-egress.socket"
uid=$(sbx_prop "$WID" UID | awk '{print $NF}')

for round in $(seq 1 "$ROUNDS"); do
    # Right after the reply: the suspend's stop of the proxy pair may still run.
    if sbx_call SuspendWorker s "$WID"; then
        if sbx_call ResumeWorker s "$WID"; then
            why=$(round_ok "$WID" "$uid") && ok "round $round: resumed the moment SuspendWorker answered" ||
                not_ok "round $round: resumed the moment SuspendWorker answered" "$why"
        else
            not_ok "round $round: resumed the moment SuspendWorker answered" "ResumeWorker: $BUS_ERROR $BUS_ERRMSG"
        fi
    else
        not_ok "round $round: resumed the moment SuspendWorker answered" "SuspendWorker: $BUS_ERROR $BUS_ERRMSG"
    fi
    # While it is being saved: the resume waits and starts at the suspend's end.
    ct busctl --system --timeout=120 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$WID" \
        >"$TAP_TMP/suspend.out" 2>&1 &
    bg=$!
    wait_until 30 sh -c "! kill -0 $bg 2>/dev/null || [ \"\$(nsenter -t $CT_PID -a busctl --system get-property \
        $SBX_DEST $SBX_PATH/worker/$WID $SBX_WORKER_IFACE State)\" = 's \"suspending\"' ]"
    resumed=0
    sbx_call ResumeWorker s "$WID" && resumed=1
    wait "$bg"
    rc=$?
    if [ $rc -ne 0 ]; then
        not_ok "round $round: a resume sent while suspending starts at the suspend's end" \
            "SuspendWorker: $(cat "$TAP_TMP/suspend.out")"
    elif [ $resumed -ne 1 ]; then
        not_ok "round $round: a resume sent while suspending starts at the suspend's end" \
            "ResumeWorker: $BUS_ERROR $BUS_ERRMSG"
    else
        why=$(round_ok "$WID" "$uid") && ok "round $round: a resume sent while suspending starts at the suspend's end" ||
            not_ok "round $round: a resume sent while suspending starts at the suspend's end" "$why"
    fi
    state_is "$WID" running || break
done

last=$(read_numbers "$WID" 1000 | tail -n1)
diag "count after $ROUNDS rounds: $last"
if [ -n "$last" ] && [ "$last" -gt 1 ]; then
    ok "the worker counts on after every round ($last)"
else
    not_ok "the worker counts on after every round" "last=$last"
fi
failed_logged() {
    ct journalctl --sync
    ct journalctl -o cat SANDBOXD_WORKER_ID="$WID" SANDBOXD_EVENT=start-failed | grep -q .
}
check_fails "no resume failed to start (journal)" failed_logged
ct sandboxctl stop "$WID" >/dev/null 2>&1
check "stopped: its proxy pair is gone" wait_until 20 unit_gone "sandbox-$WID-egress.socket"
check "stopped: its home is gone" wait_until 20 home_absent "$WID"

tap_done
