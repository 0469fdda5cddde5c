#!/usr/bin/env bash
# Who may do what (issue 9), against the real polkitd of the test bed: tester
# (uid 1500) is refused until a rules file grants it an action, may always
# manage its own workers, never another's without manage-workers; root never
# needs polkit; polkit gone means refused; a caller that leaves while polkit
# decides leaves nothing; origins force classes.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

RULES=/etc/polkit-1/rules.d
HOLD=/run/sbx-polkit-hold
CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
SLEEP=(Argv as 2 /bin/sleep 1000)

# rule NAME ACTION...: a rules file granting tester those actions.
rule() {
    local name=$1 cond="" a
    shift
    for a in "$@"; do cond="$cond${cond:+ || }action.id == \"$a\""; done
    ct sh -c "cat >$RULES/$name.rules" <<JS
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && ($cond))
        return polkit.Result.YES;
});
JS
}

# tester_create CLASS: CreateWorker as tester; sets WID on success.
tester_create() {
    WID=
    sbx_call_as tester CreateWorker 'a{sv}' 2 "${SLEEP[@]}" Class s "$1" || return 1
    [[ $BUS_OUT =~ ^so\ \"([^\"]*)\" ]] && WID=${BASH_REMATCH[1]}
}
# tester_prop ID PROP: a Worker property read as tester.
tester_prop() { bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$1" org.freedesktop.DBus.Properties Get ss "$SBX_WORKER_IFACE" "$2"; }
tester_list() { sbx_call_as tester ListWorkers && printf '%s\n' "$BUS_OUT"; }
# denied_naming NAME ACTION CMD...: CMD (a bus_call) fails with AccessDenied naming ACTION.
denied_naming() {
    local name=$1 action=$2
    shift 2
    if "$@"; then
        not_ok "$name" "the call succeeded: $BUS_OUT"
    elif [ "$BUS_ERROR" = org.freedesktop.DBus.Error.AccessDenied ] && [[ $BUS_ERRMSG == *"$action"* ]]; then
        ok "$name"
    else
        not_ok "$name" "expected AccessDenied naming $action, got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
    fi
}
# hidden NAME ERROR CMD...: CMD (a bus_call) fails with ERROR, the answer to
# an ID never used: another user's worker is not there for tester.
hidden() {
    local name=$1 error=$2
    shift 2
    if "$@"; then
        not_ok "$name" "the call succeeded: $BUS_OUT"
    elif [ "$BUS_ERROR" = "$error" ]; then
        ok "$name"
    else
        not_ok "$name" "expected $error, got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
    fi
}
snapshot() { printf '%s\n--\n%s\n' "$(sbx_units)" "$(sbx_state_entries)"; }
lists() { tester_list | grep -q "$1"; }
# mark: a journal entry of its own; CURSOR is where it is. Read after it with
# --cursor (journalctl 252's --after-cursor skips the first matching entry).
MARKS=0
mark() {
    MARKS=$((MARKS + 1))
    ct sh -c "echo 'polkit-mark $MARKS' | systemd-cat -t sbx-polkit-mark"
    journal_has "polkit-mark $MARKS" -t sbx-polkit-mark
    CURSOR=$(ct journalctl -q -n1 --show-cursor -o cat -t sbx-polkit-mark | sed -n 's/^-- cursor: //p')
}
no_worker_units() { [ -z "$(sbx_units)" ]; }
departed() {
    journal --cursor "$CURSOR" -o verbose SANDBOXD_AUTHZ_RESULT=caller-gone | grep -c "SANDBOXD_AUTHZ_RESULT=caller-gone"
}
started_for_tester() {
    journal --cursor "$CURSOR" -o verbose SANDBOXD_OWNER_UID=1500 MESSAGE="Starting worker" | grep -c "MESSAGE=Starting worker"
}

ct rm -f "$RULES"/50-sbx-*.rules "$RULES"/10-sbx-*.rules "$HOLD"
ct systemctl start polkit.service sandboxd.service
check "polkitd runs in the test bed" ct systemctl is-active --quiet polkit.service

# ---- no rule: tester may create nothing --------------------------------------
mark
before=$(snapshot)
denied_naming "without a rule, tester's standard CreateWorker is refused naming create-worker" \
    org.sandboxd1.create-worker tester_create standard
denied_naming "without a rule, tester's trusted CreateWorker is refused naming create-trusted-worker" \
    org.sandboxd1.create-trusted-worker tester_create trusted
check_eq "the refused calls created nothing" "$before" "$(snapshot)"
# A caller that leaves once answered is not a departure while polkit decides
# (and must not be handled as one, over and over).
check_eq "answered callers that then exit are not counted as departed" 0 "$(departed)"
check "sandboxd still answers after they left" sbx_call ListWorkers
check "the refusal is logged with caller UID, action and result" journal_has 'SANDBOXD_AUTHZ_RESULT=denied' \
    -o verbose SANDBOXD_CALLER_UID=1500 SANDBOXD_ACTION=org.sandboxd1.create-worker

# ---- root never needs polkit; tester cannot touch root's worker --------------
if sbx_create 2 "${SLEEP[@]}" Class s trusted; then
    rootw=$WID
    check_eq "root's worker has Owner 0" "0" "$(sbx_prop "$rootw" Owner)"
else
    rootw=none
    not_ok "root creates a worker" "$BUS_ERROR $BUS_ERRMSG"
fi
# Not even that it exists: the same answer as for an ID never used.
if tester_prop "$rootw" State; then
    not_ok "tester cannot read root's worker (UnknownObject)" "read: $BUS_OUT"
elif [ "$BUS_ERROR" = org.freedesktop.DBus.Error.UnknownObject ]; then
    ok "tester cannot read root's worker (UnknownObject)"
else
    not_ok "tester cannot read root's worker (UnknownObject)" "got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
fi
hidden "tester cannot StopWorker root's worker (NoSuchWorker)" org.sandboxd1.Error.NoSuchWorker \
    sbx_call_as tester StopWorker s "$rootw"
hidden "tester cannot Worker.Stop root's worker (UnknownObject)" org.freedesktop.DBus.Error.UnknownObject \
    bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$rootw" "$SBX_WORKER_IFACE" Stop
check_output "tester cannot attach to root's worker (NoSuchWorker)" 'NoSuchWorker' \
    expect_fail as_tester "$CHANNEL" roundtrip "$rootw" x
hidden "tester's GetWorker of root's worker is NoSuchWorker" org.sandboxd1.Error.NoSuchWorker \
    sbx_call_as tester GetWorker s "$rootw"
check_fails "tester's ListWorkers does not show root's worker" lists "$rootw"
check_fails "tester's GetManagedObjects does not show root's worker" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- busctl --system call $SBX_DEST $SBX_PATH org.freedesktop.DBus.ObjectManager GetManagedObjects | grep -q $rootw"
check_eq "root's worker still runs" running "$(sbx_prop "$rootw" State)"

# ---- create-worker: standard and untrusted, not trusted ----------------------
rule 50-sbx-create org.sandboxd1.create-worker
if wait_until 30 tester_create standard; then
    ok "with create-worker, tester creates a standard worker"
    own=$WID
else
    own=none
    not_ok "with create-worker, tester creates a standard worker" "$BUS_ERROR $BUS_ERRMSG"
fi
check_eq "its Owner is tester's UID" 1500 "$(sbx_prop "$own" Owner)"
check "with create-worker, tester creates an untrusted worker" tester_create untrusted
own2=$WID
denied_naming "create-worker does not imply trusted" org.sandboxd1.create-trusted-worker tester_create trusted
check "the grant is logged as allowed" journal_has 'SANDBOXD_AUTHZ_RESULT=allowed' -o verbose \
    SANDBOXD_CALLER_UID=1500 SANDBOXD_ACTION=org.sandboxd1.create-worker

# ---- the owner manages its own without any rule ------------------------------
check "tester reads its own worker" tester_prop "$own" State
check_output "tester's ListWorkers shows its own worker with its owner" "\"$own\" \"standard\" \"running\" \"[^\"]*\" [0-9]+ 1500 " tester_list
check "tester attaches to its own worker" as_tester "$CHANNEL" read "$own" 300
check "tester stops its own worker (Worker.Stop)" \
    bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$own" "$SBX_WORKER_IFACE" Stop
check "tester stops its other worker (StopWorker)" sbx_call_as tester StopWorker s "$own2"
check_output "sandboxctl list as root shows the owner column (a user name)" "^$rootw +trusted +running +- +root " \
    ct sandboxctl list --no-legend
listed_ended_stopped() { ct sandboxctl list --all --no-legend | grep -Eq "^$1 +standard +ended +stopped +tester "; }
check "sandboxctl list --all as root shows tester's stopped worker as ended, stopped, owner tester" \
    wait_until 30 listed_ended_stopped "$own"

# ---- create-trusted-worker ---------------------------------------------------
rule 50-sbx-trusted org.sandboxd1.create-trusted-worker
if wait_until 30 tester_create trusted; then
    ok "with create-trusted-worker, tester creates a trusted worker"
    sbx_call StopWorker s "$WID"
else
    not_ok "with create-trusted-worker, tester creates a trusted worker" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- sandboxctl run as tester, end to end ------------------------------------
check_output "sandboxctl run as tester works end to end" '^hello from tester$' \
    as_tester timeout 120 sandboxctl run --class standard -- /bin/echo hello from tester
check_output "sandboxctl create/status/stop as tester" '^ *Owner: 1500$' sh -c "
    id=\$(nsenter -t $CT_PID -a runuser -u tester -- sandboxctl create --class untrusted -- /bin/sleep 1000) &&
    nsenter -t $CT_PID -a runuser -u tester -- sandboxctl status \$id | grep -E '^ *Owner:' &&
    nsenter -t $CT_PID -a runuser -u tester -- sandboxctl stop \$id"

# ---- a manage-workers holder can manage root's worker ------------------------
rule 50-sbx-manage org.sandboxd1.manage-workers
if wait_until 30 tester_prop "$rootw" State; then ok "with manage-workers, tester reads root's worker"; else
    not_ok "with manage-workers, tester reads root's worker" "$BUS_ERROR $BUS_ERRMSG"; fi
check "with manage-workers, tester's ListWorkers shows root's worker" lists "$rootw"
check "with manage-workers, tester attaches to root's worker" as_tester "$CHANNEL" read "$rootw" 300
check "with manage-workers, tester stops root's worker" sbx_call_as tester StopWorker s "$rootw"
if sbx_create 2 "${SLEEP[@]}" Class s trusted; then
    check "with manage-workers, tester stops root's worker through its object (Worker.Stop)" \
        bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$WID" "$SBX_WORKER_IFACE" Stop
else
    not_ok "root creates a second worker" "$BUS_ERROR $BUS_ERRMSG"
fi
ct rm -f "$RULES/50-sbx-manage.rules"

# ---- a caller that leaves while polkit decides leaves nothing ----------------
# The rule holds polkit's decision while $HOLD exists and marks the journal
# when it starts deciding, so the test knows polkit is busy with the call.
ct sh -c "cat >$RULES/10-sbx-hold.rules" <<JS
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-worker") {
        polkit.spawn(["/bin/sh", "-c", "logger -t sbx-polkit-hold deciding; while [ -e $HOLD ]; do sleep 0.1; done; logger -t sbx-polkit-hold released"]);
        return polkit.Result.YES;
    }
});
JS
bg_create() {
    ct runuser -u tester -- sh -c 'echo $$ >/tmp/sbx-caller.pid; exec busctl --system call org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager CreateWorker "a{sv}" 2 Argv as 2 /bin/sleep 1000 Class s standard' \
        >"$TAP_TMP/bg.out" 2>&1 &
    BG=$!
}
# Control run: with the caller staying, the held decision ends in a worker.
ct touch "$HOLD"
mark
bg_create
check "the held rule is loaded and polkit is deciding" journal_has 'deciding' --cursor "$CURSOR" -t sbx-polkit-hold
ct rm -f "$HOLD"
wait "$BG"
check_output "control: the caller that stays gets its worker after the held decision" '^so "' cat "$TAP_TMP/bg.out"
[[ $(cat "$TAP_TMP/bg.out") =~ ^so\ \"([^\"]*)\" ]] && sbx_call StopWorker s "${BASH_REMATCH[1]}"
wait_until 30 no_worker_units

before=$(snapshot)
ct touch "$HOLD"
mark
bg_create
journal_has 'deciding' --cursor "$CURSOR" -t sbx-polkit-hold
ct sh -c 'kill -KILL $(cat /tmp/sbx-caller.pid)'
wait "$BG" 2>/dev/null
check "sandboxd notices the caller left while polkit decided" journal_has 'SANDBOXD_AUTHZ_RESULT=caller-gone' \
    --cursor "$CURSOR" -o verbose SANDBOXD_CALLER_UID=1500
ct rm -f "$HOLD"
check "polkit finished deciding" journal_has 'released' --cursor "$CURSOR" -t sbx-polkit-hold
# A later call from tester is answered after polkit's earlier one: by then any
# worker made for the departed caller would exist.
check "tester's next create goes through" tester_create untrusted
sbx_call StopWorker s "$WID"
wait_until 30 no_worker_units
check_eq "the departed caller left no unit and no home" "$before" "$(snapshot)"
check_eq "only the next create started a worker for tester" 1 "$(started_for_tester)"
check_eq "the departure is handled once" 1 "$(departed)"
ct rm -f "$RULES/10-sbx-hold.rules"

# ---- --no-ask-password -------------------------------------------------------
ct rm -f "$RULES/50-sbx-trusted.rules"
ct sh -c "cat >$RULES/50-sbx-auth.rules" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-trusted-worker")
        return polkit.Result.AUTH_ADMIN;
});
JS
nap() { as_tester sandboxctl --no-ask-password create --class trusted -- /bin/true 2>&1 | grep -q InteractiveAuthorizationRequired; }
check "--no-ask-password: a rule asking for a password gives InteractiveAuthorizationRequired" wait_until 30 nap
check_output "... whose message names the action" 'create-trusted-worker' \
    expect_fail as_tester sandboxctl --no-ask-password create --class trusted -- /bin/true
ct rm -f "$RULES/50-sbx-auth.rules"

# ---- origins force classes ---------------------------------------------------
host_kernel=$(ct uname -r)
if sbx_create 3 "${SLEEP[@]}" Class s trusted Origin s llm-generated; then
    ok "Origin=llm-generated with Class=trusted is accepted"
    check_eq "its Class is raised to untrusted" untrusted "$(sbx_prop "$WID" Class)"
    check_eq "its RequestedClass is trusted" trusted "$(sbx_prop "$WID" RequestedClass)"
    check_eq "its Origin is llm-generated" llm-generated "$(sbx_prop "$WID" Origin)"
    check_eq "it runs on runsc" runsc "$(sbx_prop "$WID" Runtime)"
    check "the raise is logged" journal_has 'SANDBOXD_REQUESTED_CLASS=trusted' -o verbose SANDBOXD_WORKER_ID="$WID" \
        SANDBOXD_CLASS=untrusted SANDBOXD_ORIGIN=llm-generated
    sbx_call StopWorker s "$WID"
else
    not_ok "Origin=llm-generated with Class=trusted is accepted" "$BUS_ERROR $BUS_ERRMSG"
fi
kernel=$(ct timeout 120 sandboxctl run --class trusted --origin llm-generated -- /bin/uname -r </dev/null 2>&1) ||
    kernel="failed: $kernel"
if [[ $kernel =~ ^[0-9]+\.[0-9]+ ]] && [ "$kernel" != "$host_kernel" ]; then
    ok "an llm-generated 'trusted' worker sees gVisor's kernel ($kernel), not the host's"
else
    not_ok "an llm-generated 'trusted' worker sees gVisor's kernel" "worker: $kernel host: $host_kernel"
fi
check_eq "Origin=marketplace raises standard" untrusted "$(sbx_create 3 "${SLEEP[@]}" Class s standard Origin s marketplace && sbx_prop "$WID" Class; sbx_call StopWorker s "$WID")"
check_error "an unknown origin is refused" org.sandboxd1.Error.UnknownOrigin root CreateWorker 'a{sv}' 2 "${SLEEP[@]}" Origin s ci-bot

# ---- the operator's [Classes] ------------------------------------------------
CONF=/etc/sandboxd/sandboxd.conf
ct sh -c "cp $CONF /run/sbx-polkit-conf.orig && printf '\n[Classes]\nOrigins=scraped:hostile ci-bot:standard\nTrustedOnlyFirstParty=yes\n' >>$CONF"
ct systemctl restart sandboxd.service
before=$(snapshot)
check_error "an operator origin whose floor has no runtime here is refused, not run lower" \
    org.sandboxd1.Error.IsolationUnavailable root CreateWorker 'a{sv}' 3 "${SLEEP[@]}" Class s trusted Origin s scraped
check_eq "... and creates nothing" "$before" "$(snapshot)"
if sbx_create 3 "${SLEEP[@]}" Class s trusted Origin s ci-bot; then
    check_eq "Origins=ci-bot:standard raises trusted to standard" standard "$(sbx_prop "$WID" Class)"
    sbx_call StopWorker s "$WID"
else
    not_ok "Origins=ci-bot:standard raises trusted to standard" "$BUS_ERROR $BUS_ERRMSG"
fi
if sbx_create 3 "${SLEEP[@]}" Class s trusted Origin s user; then
    check_eq "TrustedOnlyFirstParty: a user-origin trusted request gets standard" standard "$(sbx_prop "$WID" Class)"
    sbx_call StopWorker s "$WID"
else
    not_ok "TrustedOnlyFirstParty: a user-origin trusted request gets standard" "$BUS_ERROR $BUS_ERRMSG"
fi
if sbx_create 2 "${SLEEP[@]}" Class s trusted; then
    check_eq "TrustedOnlyFirstParty: first-party still gets trusted" trusted "$(sbx_prop "$WID" Class)"
    sbx_call StopWorker s "$WID"
else
    not_ok "TrustedOnlyFirstParty: first-party still gets trusted" "$BUS_ERROR $BUS_ERRMSG"
fi
ct sh -c "cp /run/sbx-polkit-conf.orig $CONF"
ct systemctl restart sandboxd.service

# ---- polkit not running: fail closed for everyone but root -------------------
rule 50-sbx-create org.sandboxd1.create-worker
wait_until 30 tester_create standard && own=$WID
ct systemctl mask --now polkit.service >/dev/null 2>&1
check_fails "polkit is stopped" ct systemctl is-active --quiet polkit.service
denied_naming "polkit gone: tester's CreateWorker is refused" org.sandboxd1.create-worker tester_create standard
if sbx_create 2 "${SLEEP[@]}" Class s trusted; then
    ok "polkit gone: root still creates workers"
    rootw=$WID
    hidden "polkit gone: tester cannot stop root's worker (NoSuchWorker)" org.sandboxd1.Error.NoSuchWorker \
        sbx_call_as tester StopWorker s "$rootw"
    check_fails "polkit gone: tester's ListWorkers shows only its own" lists "$rootw"
    check "polkit gone: root still stops workers" sbx_call StopWorker s "$rootw"
else
    not_ok "polkit gone: root still creates workers" "$BUS_ERROR $BUS_ERRMSG"
fi
check "polkit gone: the owner still stops its own worker (no polkit needed)" sbx_call_as tester StopWorker s "$own"
check "polkit's absence is logged" journal_has 'polkit did not answer'
ct systemctl unmask polkit.service >/dev/null 2>&1
ct rm -f "$RULES"/50-sbx-*.rules

tap_done
