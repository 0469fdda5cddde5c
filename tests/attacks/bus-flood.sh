#!/usr/bin/env bash
# The bus-* attacks on the authorization path (issue 22, item 3): one plain
# user floods sandboxd with calls that each need polkit (listings, logs,
# calls on another user's worker), with polkit answering, with polkit stuck
# (as an interactive authorization nobody answers), and with ReadWorkerLog
# for random ids. Each attack proves the flood is cut off with
# org.sandboxd1.Error.TooManyRequests (by UID, over several connections),
# while root's CreateWorker and StopWorker are still answered, the daemon
# stays the same process and its memory bounded. Controls: once the flood
# is over, tester lists and reads its own worker's log, and none of root's
# calls was ever refused. bench/bus-flood.sh measures the latency.
#
#   bus-flood.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   bus-flood.sh --list                  print the table (tests/attacks/README.md)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# dbus-daemon lets one connection wait for at most 128 replies
# (max_replies_per_connection): 2000 calls outstanding take 20 connections
# of 100, all of one UID.
#
# This script's own table (lib-attacks.sh's helpers, integration.sh's rows
# replaced): ID|CLASSES|ACTION|EXPECTED. "bus" is the class: no worker
# class is involved.
ATTACKS='
bus-authz-flood|bus|tester keeps 2000 ListWorkers, ListWorkersEx, ListWorkspaces and GetManagedObjects calls outstanding on 20 connections for 20 s while polkit answers|the excess refused with TooManyRequests, nothing else refused, more than 8 served (places given back during the flood); root'"'"'s CreateWorker and StopWorker answered within 60 s meanwhile
bus-polkit-stall|bus|tester sends 2000 of those calls and ReadWorkerLog at once on 20 connections while polkitd is stopped (SIGSTOP)|at most Bus:AuthorizationsPerUser (8) admitted over all 20 connections, the rest TooManyRequests at once, the admitted ones answered when their check times out; root'"'"'s CreateWorker and StopWorker answered within 60 s meanwhile
bus-log-flood|bus|tester keeps 2000 ReadWorkerLog calls for random worker ids outstanding on 20 connections for 15 s|only NoSuchWorker or TooManyRequests, some TooManyRequests, more than 8 served; root reads its worker'"'"'s log and creates a worker within 60 s meanwhile
bus-flood-daemon|bus|the three floods above, against the daemon itself|MainPID unchanged, VmRSS and memory.current grow by less than 64 MiB
bus-interactive-hold|bus|with InteractiveAuthorizationTimeoutSec=10s and polkitd stopped, tester holds 8 interactive authorizations (CreateWorker; a call naming another user'"'"'s worker never prompts) and asks a 9th|the 9th refused with TooManyRequests; the 8 answered AccessDenied within 40 s although polkit never answered; a call after them is admitted (waits, not refused)
bus-flood-controls|bus|(control) after the floods, tester calls ListWorkers and reads its own worker'"'"'s log; root'"'"'s calls during the floods|all succeed: root was never refused, tester is served once its flood is over
'
atk_load_table
if [ "${1:-}" = --list ]; then
    atk_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's bus-flood table is what --list prints" \
    diff <(atk_list | sed 's/^| attack |/| bus-flood attack |/') \
         <(sed -n '/^| bus-flood attack |/,/^$/p' "$HERE/README.md" | sed '/^$/d')

W=/etc/sbx-busflood
CONF=/etc/sandboxd/sandboxd.conf
RULES=/etc/polkit-1/rules.d/50-sbx-busflood.rules
TOO_MANY=org.sandboxd1.Error.TooManyRequests
SLEEP=(Argv as 2 /bin/sleep 1000)
POLKIT_PID=

polkit_cont() { [ -n "$POLKIT_PID" ] && ct kill -CONT "$POLKIT_PID" 2>/dev/null; POLKIT_PID=; }
cleanup() {
    polkit_cont
    ct sh -c "rm -rf $W $RULES; [ -f $CONF.busflood ] && mv $CONF.busflood $CONF && systemctl restart sandboxd" \
        >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct mkdir -p "$W"
cat "$HERE/bus-flood.py" > "/proc/$CT_PID/root$W/bus-flood.py"
ct chmod 755 "$W" "$W/bus-flood.py"
# tester may create trusted workers: its own worker's log is a control.
ct sh -c "cat >$RULES" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-trusted-worker")
        return polkit.Result.YES;
});
JS

# flood_start OUT ARGS...: bus-flood.py as tester in the background; its JSON goes to OUT.
FLOOD_PID=
flood_start() {
    local out=$1
    shift
    as_tester timeout 300 "$W/bus-flood.py" "$@" >"$out" 2>"$out.err" &
    FLOOD_PID=$!
}
flood_wait() { wait "$FLOOD_PID"; }
# json_get FILE EXPR: a value of the flood's JSON (python expression over j).
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
# The results other than those named ("ok" and the error names ALLOWED, a |-list).
others() { json_get "$1" "sorted(k for k in j['results'] if k not in '$2'.split('|'))"; }

ROOT_REFUSED=()
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# root_create_stop WHAT: root's CreateWorker then StopWorker, each answered
# within 60 s and successful; sets ROOT_MS to the CreateWorker latency.
ROOT_MS=
root_create_stop() {
    local t0 rc
    t0=$(now_ms)
    sbx_create 2 "${SLEEP[@]}" Class s trusted
    rc=$?
    ROOT_MS=$(($(now_ms) - t0))
    if [ $rc -ne 0 ]; then
        ROOT_REFUSED+=("$1 CreateWorker: ${BUS_ERROR:-} $BUS_ERRMSG")
        return 1
    fi
    [ "$ROOT_MS" -le 60000 ] || return 1
    t0=$(now_ms)
    if ! sbx_call StopWorker s "$WID"; then
        ROOT_REFUSED+=("$1 StopWorker: ${BUS_ERROR:-} $BUS_ERRMSG")
        return 1
    fi
    [ $(($(now_ms) - t0)) -le 60000 ]
}

daemon_pid() { unit_prop sandboxd.service MainPID; }
daemon_rss_kib() { ct awk '/^VmRSS:/ { print $2 }' "/proc/$(daemon_pid)/status"; }
daemon_mem() { unit_prop sandboxd.service MemoryCurrent; }

# ---------------------------------------------------------------- the world
sbx_create 2 "${SLEEP[@]}" Class s trusted || echo "Bail out! root cannot create a worker: $BUS_ERROR $BUS_ERRMSG"
ROOTW=$WID
TESTERW=
if sbx_call_as tester CreateWorker 'a{sv}' 2 "${SLEEP[@]}" Class s trusted && [[ $BUS_OUT =~ ^so\ \"([^\"]*)\" ]]; then
    TESTERW=${BASH_REMATCH[1]}
fi
# polkitd is bus-activated: a call that needs it starts it.
sbx_call_as tester ListWorkers >/dev/null
# The same as below without a flood: bench/bus-flood.sh's baseline ("bench:" lines).
root_create_stop idle
diag "bench: idle create_ms=$ROOT_MS"
PID0=$(daemon_pid)
RSS0=$(daemon_rss_kib)
MEM0=$(daemon_mem)
diag "sandboxd MainPID $PID0, VmRSS ${RSS0} kB, memory.current $MEM0; root's worker $ROOTW, tester's ${TESTERW:-none}"

# ------------------------------------------------------ bus-authz-flood
F=$TAP_TMP/authz.json
flood_start "$F" --conns 20 --window 100 --duration 20 --timeout 90 \
    ListWorkers ListWorkersEx ListWorkspaces GetManagedObjects
sleep 3
root_ok=1
root_create_stop authz-flood || root_ok=0
diag "bench: authz-flood create_ms=$ROOT_MS"
flood_wait
diag "flood: $(head -c 600 "$F.err" 2>/dev/null)" "bench: flood $(basename "$F" .json) $(cat "$F")"
# More than one cap's worth served: places are given back while the flood
# goes on, the cap throttles tester rather than locking it out.
if [ "$(json_get "$F" "j['results'].get('$TOO_MANY', 0) > 0 and j['answered'] == j['sent'] and j['results'].get('ok', 0) > 8")" = True ] &&
   [ "$(others "$F" "ok|$TOO_MANY")" = "[]" ] && [ $root_ok = 1 ]; then
    atk_ok bus-authz-flood bus
else
    atk_not_ok bus-authz-flood bus "flood: $(cat "$F")" "root answered: $root_ok (${ROOT_MS} ms) ${ROOT_REFUSED[*]}"
fi

# ------------------------------------------------------ bus-log-flood
F=$TAP_TMP/log.json
flood_start "$F" --conns 20 --window 100 --duration 15 --timeout 90 ReadWorkerLog
sleep 3
root_ok=1
t0=$(now_ms)
if ! sbx_call ReadWorkerLog ssbu "$ROOTW" "" false 100; then
    root_ok=0
    ROOT_REFUSED+=("log-flood ReadWorkerLog: ${BUS_ERROR:-} $BUS_ERRMSG")
fi
log_ms=$(($(now_ms) - t0))
root_create_stop log-flood || root_ok=0
diag "bench: log-flood create_ms=$ROOT_MS log_ms=$log_ms"
flood_wait
diag "flood: $(head -c 600 "$F.err" 2>/dev/null)" "bench: flood $(basename "$F" .json) $(cat "$F")"
if [ "$(json_get "$F" "j['results'].get('$TOO_MANY', 0) > 0 and j['answered'] == j['sent'] and j['results'].get('org.sandboxd1.Error.NoSuchWorker', 0) > 8")" = True ] &&
   [ "$(others "$F" "org.sandboxd1.Error.NoSuchWorker|$TOO_MANY")" = "[]" ] &&
   [ $root_ok = 1 ] && [ "$log_ms" -le 60000 ]; then
    atk_ok bus-log-flood bus
else
    atk_not_ok bus-log-flood bus "flood: $(cat "$F")" "root answered: $root_ok (log ${log_ms} ms) ${ROOT_REFUSED[*]}"
fi

# ------------------------------------------------------ bus-polkit-stall
POLKIT_PID=$(unit_prop polkit.service MainPID)
F=$TAP_TMP/stall.json
if [ -n "$POLKIT_PID" ] && [ "$POLKIT_PID" != 0 ] && ct kill -STOP "$POLKIT_PID"; then
    flood_start "$F" --calls 2000 --conns 20 --timeout 90 \
        ListWorkers ListWorkersEx ListWorkspaces GetManagedObjects ReadWorkerLog
    sleep 3
    root_ok=1
    root_create_stop polkit-stall || root_ok=0
    diag "bench: polkit-stall create_ms=$ROOT_MS"
    flood_wait
    polkit_cont
    diag "flood: $(head -c 600 "$F.err" 2>/dev/null)" "bench: flood $(basename "$F" .json) $(cat "$F")"
    # Admitted: every answer that is not TooManyRequests (a listing whose
    # check timed out still lists tester's own).
    if [ "$(json_get "$F" "j['answered'] == j['sent'] and j['sent'] - j['results'].get('$TOO_MANY', 0) <= 8")" = True ] &&
       [ $root_ok = 1 ]; then
        atk_ok bus-polkit-stall bus
    else
        atk_not_ok bus-polkit-stall bus "flood: $(cat "$F")" "root answered: $root_ok (${ROOT_MS} ms) ${ROOT_REFUSED[*]}"
    fi
else
    atk_not_ok bus-polkit-stall bus "cannot stop polkitd (MainPID '$POLKIT_PID')"
fi

# ------------------------------------------------------ bus-flood-daemon
PID1=$(daemon_pid)
RSS1=$(daemon_rss_kib)
MEM1=$(daemon_mem)
diag "after the floods: MainPID $PID1, VmRSS ${RSS1} kB, memory.current $MEM1"
if [ "$PID1" = "$PID0" ] && [ -n "$RSS1" ] && [ $((RSS1 - RSS0)) -lt 65536 ] &&
   [ -n "$MEM1" ] && [ $((MEM1 - MEM0)) -lt $((64 << 20)) ]; then
    atk_ok bus-flood-daemon bus
else
    atk_not_ok bus-flood-daemon bus "MainPID $PID0 -> $PID1, VmRSS $RSS0 -> $RSS1 kB, memory.current $MEM0 -> $MEM1"
fi

# ------------------------------------------------------ bus-flood-controls
ctl_ok=1
sbx_call_as tester ListWorkers || { ctl_ok=0; diag "tester ListWorkers: $BUS_ERROR $BUS_ERRMSG"; }
if [ -n "$TESTERW" ]; then
    sbx_call_as tester ReadWorkerLog ssbu "$TESTERW" "" false 100 ||
        { ctl_ok=0; diag "tester ReadWorkerLog of its own: $BUS_ERROR $BUS_ERRMSG"; }
else
    ctl_ok=0
    diag "tester could not create its own worker"
fi
if [ $ctl_ok = 1 ] && [ ${#ROOT_REFUSED[@]} -eq 0 ]; then
    atk_ok bus-flood-controls bus
else
    atk_not_ok bus-flood-controls bus "root refused: ${ROOT_REFUSED[*]:-never}"
fi

# ------------------------------------------------------ bus-interactive-hold
# Last: it restarts sandboxd with a short interactive timeout.
ct sh -c "cp $CONF $CONF.busflood 2>/dev/null || : > $CONF.busflood
          printf '\n[Bus]\nInteractiveAuthorizationTimeoutSec=10s\n' >> $CONF
          systemctl restart sandboxd.service" >/dev/null 2>&1
wait_until 30 sbx_call ListWorkers
hold_ok=0
why="sandboxd did not come back with [Bus] InteractiveAuthorizationTimeoutSec=10s"
POLKIT_PID=$(unit_prop polkit.service MainPID)
if sbx_call ListWorkers && [ -n "$POLKIT_PID" ] && [ "$POLKIT_PID" != 0 ] && ct kill -STOP "$POLKIT_PID"; then
    F=$TAP_TMP/hold.json
    t0=$(now_ms)
    flood_start "$F" --calls 8 --conns 2 --timeout 60 --interactive CreateWorker
    sleep 2
    # The 9th: refused at once, tester's 8 slots are taken.
    as_tester timeout 30 "$W/bus-flood.py" --calls 1 --conns 1 --timeout 5 --interactive \
        CreateWorker >"$F.9th" 2>&1
    flood_wait
    held_ms=$(($(now_ms) - t0))
    # After: admitted (polkit still stopped, so it waits: "timeout" in 3 s).
    as_tester timeout 30 "$W/bus-flood.py" --calls 1 --conns 1 --timeout 3 --interactive \
        CreateWorker >"$F.after" 2>&1
    polkit_cont
    diag "8 held: $(cat "$F") in ${held_ms} ms; the 9th: $(cat "$F.9th"); one after: $(cat "$F.after")"
    why="see above"
    if [ "$(json_get "$F.9th" "j['results'] == {'$TOO_MANY': 1}")" = True ] &&
       [ "$(json_get "$F" "j['results'] == {'org.freedesktop.DBus.Error.AccessDenied': 8}")" = True ] &&
       [ "$held_ms" -le 40000 ] &&
       [ "$(json_get "$F.after" "j['results'] == {'timeout': 1}")" = True ]; then
        hold_ok=1
    fi
fi
if [ $hold_ok = 1 ]; then atk_ok bus-interactive-hold bus; else atk_not_ok bus-interactive-hold bus "$why"; fi

atk_coverage
tap_done
