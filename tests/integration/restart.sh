#!/usr/bin/env bash
# A restart of sandboxd is not a boot (issue 11, re-adoption): running
# workers survive "systemctl restart sandboxd" and a kill -9 of the daemon,
# are re-adopted with the same bus objects and properties (no second
# WorkerNew), keep their homes, their channel (output written while the
# daemon was down is delivered), their idle clock and their egress proxy;
# what the new daemon cannot account for is stopped and wiped, and a new boot
# ID wipes everything as before.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
RUNDIR=/run/sandboxd
W=/etc/sbx-restart-it
CONF=/etc/sandboxd/sandboxd.conf
UP=11.0.0.11

cleanup() {
    ct sh -c "systemctl stop 'sbx-restart-it-*' 2>/dev/null; sed -i '/# sbx-restart-it$/d' /etc/hosts
              $W/upstream-netns.sh down
              [ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $W; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# ---- an upstream for the egress worker (as in egress.sh) --------------------
ct mkdir -p "$W"
cat "$SRC/tests/egress/egress-upstream.py" > "/proc/$CT_PID/root$W/upstream.py"
upstream_netns_install "$W"
ct sh -ec "
    $W/upstream-netns.sh up $UP
    echo '$UP api.sbx-restart.test # sbx-restart-it' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout $W/key.pem -out $W/cert.pem \
        -subj /CN=api.sbx-restart.test -addext 'subjectAltName=DNS:api.sbx-restart.test' 2>/dev/null
    chmod 644 $W/cert.pem
    systemd-run -q --unit=sbx-restart-it-up ip netns exec upstream python3 $W/upstream.py $UP 443 $W/cert.pem $W/key.pem
    cp $CONF $CONF.orig
    printf '[Egress]\nFloor=*.sbx-restart.test\n' > $CONF
    systemctl restart sandboxd"
check "the upstream answers" wait_until 10 ct bash -c "exec 3<>/dev/tcp/$UP/443"
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
check_output "sandboxd.service keeps a file descriptor store" '^[1-9][0-9]*$' unit_prop sandboxd.service FileDescriptorStoreMax
sbx_monitor_start || not_ok "busctl monitor records the Manager's signals"

PROPS=(Id Class RequestedClass Origin Owner Runtime Unit UID Home CreatedUSec IdleTimeoutUSec State)
# "PROP=value ..." of a worker's fixed properties, for before/after comparison.
props_of() {
    local id=$1 p line=
    for p in "${PROPS[@]}"; do
        line+="$p=$(sbx_prop "$id" "$p") "
    done
    printf '%s\n' "$line"
}
main_pid() { unit_prop "sandbox-$1.service" MainPID; }
new_count() { sbx_signal WorkerNew "$1" | wc -l; }
listed() { sbx_call ListWorkers && grep -q "\"$1\"" <<<"$BUS_OUT"; }
_restarted() {
    local pid
    pid=$(unit_prop sandboxd.service MainPID)
    [ "$(ct systemctl is-active sandboxd.service)" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$1" ]
}

# survives TAG ID...: after a restart, each worker runs on as before.
declare -A BEFORE_PROPS BEFORE_PID
record() {
    local id
    for id in "$@"; do
        BEFORE_PROPS[$id]=$(props_of "$id")
        BEFORE_PID[$id]=$(main_pid "$id")
        ct sh -c "echo kept >$(sbx_home "$id")/restart-marker"
    done
}
survives() {
    local tag=$1 id
    shift
    for id in "$@"; do
        check_output "$tag: $id's unit is still active" '^active$' unit_prop "sandbox-$id.service" ActiveState
        check_eq "$tag: $id's unit has the same MainPID" "${BEFORE_PID[$id]}" "$(main_pid "$id")"
        check_output "$tag: $id's home is intact" '^kept$' sbx_home_cat "$id" restart-marker
        check_eq "$tag: $id's Worker object has the same properties" "${BEFORE_PROPS[$id]}" "$(props_of "$id")"
        check "$tag: ListWorkers lists $id" listed "$id"
        check_eq "$tag: no second WorkerNew for $id" 1 "$(new_count "$id")"
        check_fails "$tag: no WorkerRemoved for $id" sbx_signal_seen WorkerRemoved "$id"
    done
}

# ---- the workers ---------------------------------------------------------------
ids=()
# shellcheck disable=SC2046  # ay_args prints separate busctl words
if sbx_create 4 Argv as 1 /bin/cat Class s trusted Environment as 1 SBX_IT_ENV=env-secret-4711 \
    Credentials 'a(say)' 1 tok $(ay_args cred-secret-4711); then
    T=$WID; ids+=("$T"); ok "a trusted cat worker (with a secret) runs"
else
    not_ok "a trusted cat worker runs" "$BUS_ERROR $BUS_ERRMSG"
fi
if sbx_create 2 Argv as 1 /bin/cat Class s standard; then
    S=$WID; ids+=("$S"); ok "a standard (gVisor) cat worker runs"
else
    not_ok "a standard (gVisor) cat worker runs" "$BUS_ERROR $BUS_ERRMSG"
fi
# A counter every 0.5 s: what it prints while no daemon runs waits in its pipe.
# shellcheck disable=SC2016  # the worker's shell expands it
if sbx_create 2 Argv as 3 /bin/sh -c 'i=0; while :; do i=$((i+1)); echo "n $i"; sleep 0.5; done' Class s trusted; then
    K=$WID; ids+=("$K"); ok "a counting worker runs"
else
    not_ok "a counting worker runs" "$BUS_ERROR $BUS_ERRMSG"
fi
# Its proxy is started by its first connection, after the restart: the new
# daemon must serve the proxy its policy.
if sbx_create 3 Argv as 3 /bin/sh -c "read n; curl -sS -m 20 --cacert $W/cert.pem https://api.sbx-restart.test/\$n; echo" \
    Class s trusted EgressAllow as 1 api.sbx-restart.test; then
    E=$WID; ids+=("$E"); ok "a worker with egress runs"
else
    not_ok "a worker with egress runs" "$BUS_ERROR $BUS_ERRMSG"
fi
# Idle for 20 s; the restart comes 5 s into that. The rest leaves a loaded
# machine's restart time to end and the test's subscriber to subscribe
# again before the deadline: a WorkerRemoved sent before then reaches no one
# (ci23: a 6 s restart, 10 s of idle, the signal missed).
if sbx_create 3 Argv as 1 /bin/cat Class s trusted IdleTimeoutUSec t 20000000; then
    I=$WID; ok "an idle worker (IdleTimeoutUSec=20s) runs"
else
    not_ok "an idle worker (IdleTimeoutUSec=20s) runs" "$BUS_ERROR $BUS_ERRMSG"
fi
check_output "each worker has a state file, root's alone" '^600 root$' \
    ct sh -c "stat -c '%a %U' $RUNDIR/workers/* | sort -u"
check_output "the state directory is root's alone" '^700 root$' ct stat -c '%a %U' "$RUNDIR/workers"
check_output "no secret or environment value sits in the state directory" '^$' \
    ct sh -c "grep -rl -e env-secret-4711 -e cred-secret-4711 $RUNDIR/workers || true"
record "${ids[@]}"

# A client attached to the counter before the restart.
ct "$CHANNEL" read "$K" 120000 >"$TAP_TMP/before" 2>&1 &
reader=$!
_attached() { ! sbx_call OpenChannel s "$1" && [ "$BUS_ERROR" = org.sandboxd1.Error.ChannelBusy ]; }
check "a client is attached to the counter" wait_until 10 _attached "$K"

idle_last=$(sbx_prop "$I" LastActivityUSec)
check "the idle worker is 5 s into its 20 s" wait_until 10 sh -c "[ \$((\$(date +%s%N) / 1000)) -ge $((idle_last + 5000000)) ]"

# ---- systemctl restart -----------------------------------------------------------
old_pid=$(unit_prop sandboxd.service MainPID)
check "systemctl restart sandboxd" ct systemctl restart sandboxd.service
check "sandboxd runs as a new process" _restarted "$old_pid"
check "the attached client saw its channel close" wait_until 15 sh -c "! kill -0 $reader 2>/dev/null"
wait "$reader" 2>/dev/null
last_before=$(grep -o '^n [0-9]*' "$TAP_TMP/before" | tail -n1 | cut -d' ' -f2)
check_output "the client had received the counter until then" '^[0-9]+$' echo "$last_before"
survives restart "${ids[@]}"

check_output "restart: the trusted worker's channel works again" '^after restart$' ct "$CHANNEL" roundtrip "$T" 'after restart'
check_output "restart: the gVisor worker's channel works again" '^after restart$' ct "$CHANNEL" roundtrip "$S" 'after restart'
ct "$CHANNEL" read "$K" 1500 >"$TAP_TMP/after" 2>&1
first_after=$(grep -o '^n [0-9]*' "$TAP_TMP/after" | head -n1 | cut -d' ' -f2)
diag "counter: last line before the restart $last_before, first line after $first_after"
if [[ $last_before =~ ^[0-9]+$ ]] && [[ $first_after =~ ^[0-9]+$ ]] &&
    [ "$first_after" -gt "$last_before" ] && [ "$first_after" -le $((last_before + 2)) ]; then
    ok "restart: the reattached client gets what the worker printed while the daemon was down"
else
    not_ok "restart: the reattached client gets what the worker printed while the daemon was down" \
        "last before: ${last_before:-none}, first after: ${first_after:-none}" "$(head -n 3 "$TAP_TMP/after")"
fi
out=$(printf '5\n' | ct timeout 60 sandboxctl attach "$E" 2>&1)
diag "$out"
check_output "restart: the worker's proxy, started after the restart, gets its policy and lets it out" '^xxxxx$' echo "$out"

expect_removed "restart: the idle worker" "$I" idle 30
if [[ $REMOVED_USEC =~ ^[0-9]+$ ]] && [ "$REMOVED_USEC" -ge $((idle_last + 20000000 - 1100000)) ] &&
    [ "$REMOVED_USEC" -le $((idle_last + 22500000)) ]; then
    ok "restart: the idle clock continued: reaped at about 20 s, not 25"
else
    not_ok "restart: the idle clock continued: reaped at about 20 s, not 25" \
        "reaped $(( (${REMOVED_USEC:-0} - idle_last) / 1000 )) ms after its last activity"
fi

check "restart: StopWorker works on a re-adopted worker" sbx_call StopWorker s "$T"
expect_removed "restart: the stopped worker" "$T" stopped 15
check_fails "restart: its state file is gone" ct test -e "$RUNDIR/workers/$T"

# ---- kill -9 -----------------------------------------------------------------------
record "$S" "$K"
old_pid=$(unit_prop sandboxd.service MainPID)
check "kill -9 of sandboxd" ct kill -9 "$old_pid"
if wait_until 60 _restarted "$old_pid"; then
    ok "kill -9: systemd restarted sandboxd (Restart=on-failure)"
else
    not_ok "kill -9: systemd restarted sandboxd (Restart=on-failure)" "MainPID now $(unit_prop sandboxd.service MainPID)"
fi
survives "kill -9" "$S" "$K"
check_output "kill -9: the gVisor worker's channel works again" '^after kill$' ct "$CHANNEL" roundtrip "$S" 'after kill'
check_output "kill -9: the counter goes on" '^n [0-9]+$' last_line ct "$CHANNEL" read "$K" 1500

# ---- a state file deleted while the daemon was down --------------------------------
if sbx_create 2 Argv as 2 /bin/sleep 1000 Class s trusted; then
    D=$WID; ok "a worker to lose runs"
else
    not_ok "a worker to lose runs" "$BUS_ERROR $BUS_ERRMSG"
fi
record "$S"
# The daemon is frozen while the file goes, then killed: systemd restarts it.
old_pid=$(unit_prop sandboxd.service MainPID)
check "lost state: the state file is deleted while sandboxd is stopped" \
    ct sh -c "kill -STOP $old_pid; rm $RUNDIR/workers/$D; rc=\$?; kill -KILL $old_pid; exit \$rc"
check "lost state: systemd restarted sandboxd" wait_until 60 _restarted "$old_pid"
check "lost state: the worker's unit is stopped" wait_until 15 unit_gone "sandbox-$D.service"
check "lost state: its home is wiped" home_absent "$D"
check_output "lost state: WorkerRemoved for it says lost" '^lost ' sbx_wait_removed "$D" 15
check_error "lost state: the daemon does not know it" org.sandboxd1.Error.NoSuchWorker root GetWorker s "$D"
check "lost state: it is logged with the worker's ID and the reason" \
    journal_has 'state-missing' -o verbose -u sandboxd.service SANDBOXD_WORKER_ID="$D"
survives "lost state, the others" "$S"

# ---- a new boot ID: everything is wiped, as at boot -----------------------------
ct sh -c "echo 00000000000000000000000000000000 >$RUNDIR/boot-id"
check "boot: restart with another recorded boot ID" ct systemctl restart sandboxd.service
for id in "$S" "$K" "$E"; do
    check "boot: $id's unit is stopped" wait_until 15 unit_gone "sandbox-$id.service"
    check "boot: $id's home is wiped" home_absent "$id"
done
check_output "boot: no sandbox-* unit is left" '^$' sbx_units
check_output "boot: the sessions roots are empty" '^$' sbx_state_entries
check_output "boot: no state file is left" '^$' ct ls -A "$RUNDIR/workers"
check_output "boot: NWorkers is 0" '^0$' sbx_mgr_prop NWorkers
check_output "boot: the current boot ID is recorded" "^$(ct cat /proc/sys/kernel/random/boot_id | tr -d -)\$" ct cat "$RUNDIR/boot-id"

# ---- a restart between the start job and the readiness token -------------------
# A trusted worker is running only once sandbox-exec, its unit's command, wrote
# its readiness token; its start job is done before that. A worker whose unit
# never writes the token (sandbox-exec replaced for the test by a sleep) stays
# starting, its CreateWorker unanswered. A restart then must not leave it
# stuck: it was never persisted, so the new daemon stops its unit and removes
# its home as state it cannot account for; the call ended with the old daemon.
EXEC=/usr/libexec/sandboxd/sandbox-exec
# By rename: a write to the file fails (ETXTBSY) while a worker's
# sandbox-exec still runs from it, and the real one would start workers.
ct sh -c "cp -a $EXEC $W/sandbox-exec.orig && printf '#!/bin/sh\nexec /bin/sleep 1000\n' >$EXEC.new &&
    chmod 0755 $EXEC.new && mv -f $EXEC.new $EXEC"
ct sh -c "busctl --system --timeout=300 call org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager CreateWorker \
    'a{sv}' 2 Argv as 2 /bin/sleep 1000 Class s trusted >$W/create.out 2>&1 & echo \$! >$W/create.pid"
starting_unit() { sbx_units | grep -E '^sandbox-[0-9a-f]{12}\.service$' | head -n1; }
starting_active() { U=$(starting_unit) && [ -n "$U" ] && [ "$(unit_prop "$U" ActiveState)" = active ]; }
if wait_until 30 starting_active; then
    T=${U#sandbox-} T=${T%.service}
    ok "token never written: the unit's start job is done (active)"
    check_output "... but CreateWorker is not answered" '^$' ct cat "$W/create.out"
    check_fails "... and the worker is not on the bus" sbx_prop "$T" State
    check "... nor persisted" ct test ! -e "$RUNDIR/workers/$T"
    ct sh -c "cp -a $W/sandbox-exec.orig $EXEC.new && mv -f $EXEC.new $EXEC"
    check "restart while starting: systemctl restart sandboxd" ct systemctl restart sandboxd.service
    check "restart while starting: the unit is stopped" wait_until 15 unit_gone "$U"
    check "restart while starting: its home is removed" wait_until 15 home_absent "$T"
    check "restart while starting: the CreateWorker call ended with an error" \
        wait_until 15 ct sh -c "! kill -0 \$(cat $W/create.pid) 2>/dev/null && test -s $W/create.out"
    check "restart while starting: logged as state it could not account for" \
        journal_has 'state-missing' -o verbose -u sandboxd.service SANDBOXD_WORKER_ID="$T"
    check_output "restart while starting: NWorkers is 0" '^0$' sbx_mgr_prop NWorkers
    check_output "restart while starting: a trusted worker starts again" '^again$' \
        ct timeout 60 sandboxctl run --class trusted -- /bin/echo again
else
    ct sh -c "cp -a $W/sandbox-exec.orig $EXEC.new && mv -f $EXEC.new $EXEC"
    not_ok "token never written: the unit's start job is done (active)" "units: $(sbx_units | tr '\n' ' ')"
fi

# ---- systemctl stop is a stop for good ----------------------------------------------
if sbx_create 2 Argv as 1 /bin/cat Class s trusted; then
    P=$WID
    check "stop: systemctl stop sandboxd" ct systemctl stop sandboxd.service
    check "stop: the worker's unit is stopped with it" wait_until 15 unit_gone "sandbox-$P.service"
    check "stop: its home is wiped" home_absent "$P"
    check_output "stop: no state file is left" '^$' ct ls -A "$RUNDIR/workers"
    ct systemctl start sandboxd.service
else
    not_ok "a worker for systemctl stop runs" "$BUS_ERROR $BUS_ERRMSG"
fi

tap_done
