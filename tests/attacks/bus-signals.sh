#!/usr/bin/env bash
# The attack suite's bus-signals section (issue 22 item 2): a plain user
# watching the bus learns nothing of another user's workers and workspaces,
# neither from signals nor from reading their objects, while the same user
# still hears of its own workers and root hears of everyone's. Each attack
# is a TAP check named `ID [CLASS]: action -> expected refusal`; the controls
# beside them prove the listeners listened and the signals were sent.
#
#   bus-signals.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   bus-signals.sh --list                  print its table (tests/attacks/README.md)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# This section's own table, read as lib-attacks.sh reads the main one.
ATTACKS='
bus-monitor-tester|trusted,standard|tester runs dbus-monitor --system "sender=org.sandboxd1" "path_namespace=/org/sandboxd1" while root'"'"'s worker is created, runs (standard: suspended and resumed) and ends|no message names the worker'"'"'s ID, UID or home
bus-eavesdrop-tester|trusted,standard|a raw client of tester adds the match rules sender=org.sandboxd1, path_namespace=/org/sandboxd1 and eavesdrop=true meanwhile|no signal names the worker
bus-subscribe-tester|trusted,standard|tester calls Manager.Subscribe and listens meanwhile|no signal names root'"'"'s worker (its own worker'"'"'s arrive)
bus-get-property-tester|trusted,standard|tester runs busctl get-property Owner, UID, Home on root'"'"'s running worker|UnknownObject, as for an ID never used
bus-introspect-tester|trusted,standard|tester runs busctl introspect on root'"'"'s worker and on /org/sandboxd1/worker|UnknownObject; the parent lists no such child
bus-managed-objects-tester|trusted,standard|tester calls GetManagedObjects and busctl tree org.sandboxd1|root'"'"'s worker in neither
bus-workspace-tester|-|tester listens (dbus-monitor, eavesdropper, subscription) while root creates and deletes a workspace|no signal names the workspace
bus-probe-id-tester|-|tester reads root'"'"'s worker'"'"'s ID from systemctl list-units (unit names are public) and calls GetWorker, StopWorker, SuspendWorker, ResumeWorker, OpenChannel, ReadWorkerLog, Worker.Stop, Suspend, Resume, OpenChannel, Properties.GetAll and Introspect with it and with an unused ID, busctl --allow-interactive-authorization=no and =yes, without manage-workers and with a rule that asks it for a password|the same answer for both IDs (NoSuchWorker, UnknownObject on the object), no prompt; tester'"'"'s own worker answers, and with manage-workers granted tester stops root'"'"'s worker
bus-workspace-name-tester|-|root holds a workspace; tester names it in CreateWorker (Workspace=) and DeleteWorkspace, beside a name nobody holds, and then creates a workspace of that name|the same answers for both names (NoSuchWorkspace), and tester'"'"'s CreateWorkspace succeeds: names are per owner, a taken one is neither refused nor revealed; tester'"'"'s second CreateWorkspace of it is WorkspaceExists (its own), its worker runs on its own, root'"'"'s stays root'"'"'s
bus-subscribe-flood|-|tester holds 140 connections that each call Subscribe|TooManySubscribers past 128; root still subscribes; once they close tester subscribes again
'
atk_load_table
readme_table() { sed -n '/^## bus-signals.sh/,/^## /p' "$HERE/README.md" | sed -n '/^| attack |/,/^$/p' | sed '/^$/d'; }
if [ "${1:-}" = --list ]; then
    atk_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's bus-signals table is what --list prints" diff <(atk_list) <(readme_table)

WATCH=/usr/lib/sandboxd-tests/sbx-watch
D=/run/sbx-bus-signals
CLASSES="trusted standard"
SLEEP=(Argv as 2 /bin/sleep 1000)

cleanup() {
    ct sh -c "for p in $D/*.pid; do [ -s \"\$p\" ] && kill \"\$(cat \"\$p\")\"; done; rm -f /etc/polkit-1/rules.d/50-sbx-bus-signals.rules /etc/polkit-1/rules.d/50-sbx-bus-probe.rules" \
        >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# listen NAME USER CMD...: CMD runs in the background as USER, its output in $D/NAME.log.
listen() {
    local name=$1 user=$2
    shift 2
    ct sh -c "runuser -u $user -- \"\$@\" >$D/$name.log 2>&1 & echo \$! >$D/$name.pid" sh "$@"
}
log_of() { ct cat "$D/$1.log" 2>/dev/null; }
stop_listening() { ct sh -c "[ -s $D/$1.pid ] && kill \$(cat $D/$1.pid); rm -f $D/$1.pid" >/dev/null 2>&1; }
ready() { ct grep -qx ready "$D/$1.log"; }
# names LOG WORDS...: the log names any of WORDS.
names() {
    local log=$1 w
    shift
    for w in "$@"; do
        [ -n "$w" ] && log_of "$log" | grep -qF -- "$w" && return 0
    done
    return 1
}
root_call() { ct busctl --system --timeout=300 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" "$@"; }
# The error name busctl reports for a read as tester (bus_call's BUS_ERROR).
tester_read_error() {
    bus_call tester "$SBX_DEST" "$1" org.freedesktop.DBus.Properties Get ss "$SBX_WORKER_IFACE" "$2" && echo "read"
    echo "${BUS_ERROR:-none}"
}

# ---------------------------------------------------------------- the world
ct mkdir -p "$D"
ct chmod 755 "$D"
ct sh -c 'cat >/etc/polkit-1/rules.d/50-sbx-bus-signals.rules' <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" &&
        (action.id == "org.sandboxd1.create-worker" || action.id == "org.sandboxd1.create-trusted-worker"))
        return polkit.Result.YES;
});
JS
ct systemctl start polkit.service sandboxd.service
check "sbx-watch is installed in the test bed" ct test -x "$WATCH"
check "dbus-monitor is installed in the test bed" ct sh -c 'command -v dbus-monitor'

# What sandboxd says, as the issue's reproduction watched it. systemd's own
# broadcasts about the units (sandbox-ID.service) are not sandboxd's to
# withhold: every user may list the units anyway (README, Security).
listen monitor tester dbus-monitor --system "sender='org.sandboxd1'" "path_namespace='/org/sandboxd1'"
listen eavesdrop tester "$WATCH" --no-subscribe --eavesdrop
listen tester tester "$WATCH"
listen root root "$WATCH"
all_ready() { ready eavesdrop && ready tester && ready root; }
check "tester's eavesdropper, tester's subscriber and root's subscriber are listening" wait_until 15 all_ready
check "tester's dbus-monitor is listening" wait_until 15 ct grep -q NameAcquired "$D/monitor.log"
check_fails "tester's subscription is accepted" ct grep subscribe-error "$D/tester.log"
check_fails "root's subscription is accepted" ct grep subscribe-error "$D/root.log"

# ---------------------------------------------------------------- root's workers live and end
declare -A VID=() VUID=() VHOME=()
for class in $CLASSES; do
    if sbx_create 2 "${SLEEP[@]}" Class s "$class"; then
        VID[$class]=$WID
        VUID[$class]=$(sbx_prop "$WID" UID | awk '{print $NF}')
        VHOME[$class]=$(sbx_prop "$WID" Home | tr -d '"')
        ok "root's $class victim runs ($WID, UID ${VUID[$class]})"
    else
        not_ok "root's $class victim runs" "$BUS_ERROR $BUS_ERRMSG"
    fi
done

# Reads while the victims run.
UNUSED=$SBX_PATH/worker/000000000000
for class in $CLASSES; do
    id=${VID[$class]:-}
    [ -n "$id" ] || { atk_not_ok bus-get-property-tester "$class" "no victim"; atk_not_ok bus-introspect-tester "$class" "no victim"; atk_not_ok bus-managed-objects-tester "$class" "no victim"; continue; }
    path=$SBX_PATH/worker/$id
    never=$(tester_read_error "$UNUSED" Owner)
    got=() same=yes
    for prop in Owner UID Home; do
        got+=("$prop: $(tester_read_error "$path" "$prop" | tr '\n' ' ')")
        [ "$(tester_read_error "$path" "$prop")" = "$never" ] || same=no
    done
    if [ "$never" = org.freedesktop.DBus.Error.UnknownObject ] && [ "$same" = yes ]; then
        atk_ok bus-get-property-tester "$class"
    else
        atk_not_ok bus-get-property-tester "$class" "an unused ID: $never" "root's worker: ${got[*]}"
    fi
    intro=$(as_tester busctl --system introspect "$SBX_DEST" "$path" 2>&1)
    intro_never=$(as_tester busctl --system introspect "$SBX_DEST" "$UNUSED" 2>&1)
    parent=$(as_tester busctl --system introspect --xml-interface "$SBX_DEST" "$SBX_PATH/worker" 2>&1)
    if [[ $intro == *"Unknown object"* ]] && [ "${intro//$id/000000000000}" = "$intro_never" ] &&
       [[ $parent != *"$id"* ]]; then
        atk_ok bus-introspect-tester "$class"
    else
        atk_not_ok bus-introspect-tester "$class" "introspect: $(head -c 300 <<<"$intro")" \
            "an unused ID: $intro_never" "parent: $(head -c 300 <<<"$parent")"
    fi
    objs=$(as_tester busctl --system call "$SBX_DEST" "$SBX_PATH" org.freedesktop.DBus.ObjectManager GetManagedObjects 2>&1)
    tree=$(as_tester busctl --system --list tree "$SBX_DEST" 2>&1)
    if [[ $objs != *"$id"* ]] && [[ $tree != *"$id"* ]] && [[ $objs == a\{oa\{sa\{sv\}\}\}* ]]; then
        atk_ok bus-managed-objects-tester "$class"
    else
        atk_not_ok bus-managed-objects-tester "$class" "objects: $(head -c 300 <<<"$objs")" "tree: $tree"
    fi
    # The controls: root reads, introspects and lists it.
    check_output "control [$class]: root reads the victim's Owner" '^u 0$' \
        ct busctl --system get-property "$SBX_DEST" "$path" "$SBX_WORKER_IFACE" Owner
    check_output "control [$class]: root's GetManagedObjects lists the victim" "$id" \
        ct busctl --system call "$SBX_DEST" "$SBX_PATH" org.freedesktop.DBus.ObjectManager GetManagedObjects
done

# ---------------------------------------------------------------- probing for an ID
# probe FLAG PATH IFACE METHOD [ID]: tester's answer, with ID written as ID,
# the error's name and message (busctl's debug output) or the reply.
probe() {
    local flag=$1 path=$2 iface=$3 method=$4 id=${5:-}
    local word=${5:-${path##*/}}
    local -a arg=()
    [ -n "$id" ] && arg=(s "$id")
    ct runuser -u tester -- env SYSTEMD_LOG_LEVEL=debug busctl --system --timeout=60 \
        --allow-interactive-authorization="$flag" -- call "$SBX_DEST" "$path" "$iface" "$method" "${arg[@]}" 2>&1 |
        grep -v 'error-name=n/a' | sed -n 's/.*\(error-name=.*\)/\1/p; /^[a-z(]* /p' | sed "s/$word/ID/g"
}
# probe_with FLAG PATH IFACE METHOD WORD [SIG ARGS...]: as probe, with WORD
# (the ID) written as ID and the call's own arguments.
probe_with() {
    local flag=$1 path=$2 iface=$3 method=$4 word=$5
    shift 5
    ct runuser -u tester -- env SYSTEMD_LOG_LEVEL=debug busctl --system --timeout=60 \
        --allow-interactive-authorization="$flag" -- call "$SBX_DEST" "$path" "$iface" "$method" "$@" 2>&1 |
        grep -v 'error-name=n/a' | sed -n 's/.*\(error-name=.*\)/\1/p; /^[a-z(]* /p' | sed "s/$word/ID/g"
}
# probe_all ID: every way tester can name worker ID, both flags: each
# Manager method that takes an ID, each method of the Worker object, its
# properties and its introspection.
probe_all() {
    local id=$1 flag m
    for flag in no yes; do
        for m in GetWorker StopWorker SuspendWorker ResumeWorker OpenChannel; do
            echo "$flag $m: $(probe "$flag" "$SBX_PATH" "$SBX_MGR" "$m" "$id" | tr '\n' ' ')"
        done
        echo "$flag ReadWorkerLog: $(probe_with "$flag" "$SBX_PATH" "$SBX_MGR" ReadWorkerLog "$id" \
            ssbu "$id" "" false 10 | tr '\n' ' ')"
        for m in Stop Suspend Resume OpenChannel; do
            echo "$flag Worker.$m: $(probe "$flag" "$SBX_PATH/worker/$id" "$SBX_WORKER_IFACE" "$m" | tr '\n' ' ')"
        done
        echo "$flag GetAll: $(probe_with "$flag" "$SBX_PATH/worker/$id" org.freedesktop.DBus.Properties GetAll "$id" \
            s "$SBX_WORKER_IFACE" | tr '\n' ' ')"
        echo "$flag Introspect: $(probe_with "$flag" "$SBX_PATH/worker/$id" org.freedesktop.DBus.Introspectable \
            Introspect "$id" | tr '\n' ' ')"
    done
}
probe_rule() {
    ct sh -c 'cat >/etc/polkit-1/rules.d/50-sbx-bus-probe.rules' <<JS
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.manage-workers")
        return polkit.Result.$1;
});
JS
}
PROBE_UNUSED=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
probe_failed=()
if sbx_create 2 "${SLEEP[@]}" Class s trusted; then
    pv=$WID
    # Unit names are public (systemd lets every user list units): tester
    # reads root's worker's ID there, which is all a forged call needs.
    if ! ct runuser -u tester -- systemctl list-units --all --no-legend 'sandbox-*' | grep -q "sandbox-$pv\.service"; then
        probe_failed+=("tester did not find root's worker in systemctl list-units (the attack's premise)")
    fi
    # Without the right, then with a rule that wants a password for it (an
    # interactive check would prompt; busctl has no agent, polkit answers).
    for phase in refused AUTH_ADMIN; do
        if [ "$phase" = AUTH_ADMIN ]; then
            probe_rule AUTH_ADMIN
            sleep 3   # polkit rereads its rules on inotify
        fi
        a=$(probe_all "$pv")
        b=$(probe_all "$PROBE_UNUSED")
        if [ "$a" != "$b" ] || ! grep -q 'error-name=org.sandboxd1.Error.NoSuchWorker' <<<"$b"; then
            probe_failed+=("$phase: root's worker:" "$a" "$phase: an unused ID:" "$b")
        fi
    done
    # Controls: nothing happened to the victim; tester's own worker answers.
    check_output "control: root's probed worker still runs" 'running' sbx_prop "$pv" State
    ownp=$(as_tester sandboxctl create --class trusted -- /bin/sleep 1000 2>&1)
    check_output "control: tester's GetWorker of its own worker answers its path" '^o "/org/sandboxd1/worker/ID"$' \
        probe no "$SBX_PATH" "$SBX_MGR" GetWorker "$ownp"
    check "control: tester's Worker.Stop of its own worker succeeds" \
        bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$ownp" "$SBX_WORKER_IFACE" Stop
    # With manage-workers granted, tester stops root's worker, no password.
    probe_rule YES
    tester_gets() { [[ $(probe no "$SBX_PATH" "$SBX_MGR" GetWorker "$pv") == *"worker/ID"* ]]; }
    check "control: with manage-workers, tester's GetWorker finds root's worker" wait_until 30 tester_gets
    check "control: with manage-workers, tester stops root's worker" \
        bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" StopWorker s "$pv"
    ct rm -f /etc/polkit-1/rules.d/50-sbx-bus-probe.rules
else
    probe_failed+=("root's probe victim did not start: $BUS_ERROR $BUS_ERRMSG")
fi
if [ ${#probe_failed[@]} -eq 0 ]; then
    atk_ok bus-probe-id-tester -
else
    atk_not_ok bus-probe-id-tester - "${probe_failed[@]}"
fi

# ---------------------------------------------------------------- a workspace name root holds
# ws_probe NAME: tester's answers naming workspace NAME, the name written as ID.
ws_probe() {
    echo "CreateWorker: $(probe_with no "$SBX_PATH" "$SBX_MGR" CreateWorker "$1" 'a{sv}' 3 Argv as 1 /bin/true \
        Class s trusted Workspace s "$1" | tr '\n' ' ')"
    echo "DeleteWorkspace: $(probe_with no "$SBX_PATH" "$SBX_MGR" DeleteWorkspace "$1" s "$1" | tr '\n' ' ')"
}
wsn_failed=()
TAKEN=sbxtaken$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
UNUSED=sbxunused$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
TUID=$(ct id -u tester)
if root_call CreateWorkspace 'sa{sv}' "$TAKEN" 1 SizeMax t $((16 * 1024 * 1024)); then
    a=$(ws_probe "$TAKEN")
    b=$(ws_probe "$UNUSED")
    if [ "$a" != "$b" ] || ! grep -q 'error-name=org.sandboxd1.Error.NoSuchWorkspace' <<<"$b"; then
        wsn_failed+=("root's name:" "$a" "a name nobody holds:" "$b")
    fi
    if ! bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" CreateWorkspace 'sa{sv}' "$TAKEN" 1 SizeMax t $((16 * 1024 * 1024)); then
        wsn_failed+=("tester's CreateWorkspace $TAKEN (root holds that name): $BUS_ERROR $BUS_ERRMSG")
    else
        # Controls: tester's own is in tester's way; its worker gets it; root's is untouched.
        bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" CreateWorkspace 'sa{sv}' "$TAKEN" 1 SizeMax t $((16 * 1024 * 1024))
        check_eq "control: tester's second CreateWorkspace $TAKEN is WorkspaceExists" \
            org.sandboxd1.Error.WorkspaceExists "$BUS_ERROR"
        check_output "control: tester's worker runs on tester's own $TAKEN" '^ok$' \
            ct runuser -u tester -- timeout 60 sandboxctl --no-ask-password run --class trusted --workspace "$TAKEN" \
            -- /bin/sh -c 'echo x >f && echo ok'
        check_eq "control: root's $TAKEN is still root's" 0 "$(ws_prop "$TAKEN" Owner)"
        check_eq "control: tester's is tester's, key $TAKEN.$TUID" "$TUID $TAKEN.$TUID" \
            "$(ws_prop "${TAKEN}_U$TUID" Owner) $(ws_prop "${TAKEN}_U$TUID" Key)"
        check "control: tester deletes its own $TAKEN" \
            bus_call tester "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" DeleteWorkspace s "$TAKEN"
    fi
    check "root deletes its $TAKEN" root_call DeleteWorkspace s "$TAKEN"
else
    wsn_failed+=("root could not create $TAKEN: $BUS_ERROR $BUS_ERRMSG")
fi
if [ ${#wsn_failed[@]} -eq 0 ]; then
    atk_ok bus-workspace-name-tester -
else
    atk_not_ok bus-workspace-name-tester - "${wsn_failed[@]}"
fi

# The standard victim sleeps and wakes: more PropertiesChanged to overhear.
if [ -n "${VID[standard]:-}" ]; then
    check "root suspends the standard victim" root_call SuspendWorker s "${VID[standard]}"
    check "root resumes the standard victim" root_call ResumeWorker s "${VID[standard]}"
fi
for class in $CLASSES; do
    [ -n "${VID[$class]:-}" ] && check "root stops the $class victim" root_call StopWorker s "${VID[$class]}"
done

# A workspace of root's, made and removed.
WS=sbxbus$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
check "root creates workspace $WS" root_call CreateWorkspace 'sa{sv}' "$WS" 1 SizeMax t $((64 * 1024 * 1024))
check "root deletes workspace $WS" root_call DeleteWorkspace s "$WS"

# ---------------------------------------------------------------- tester's own worker (the control)
own=$(as_tester sandboxctl create --class trusted -- /bin/sleep 1000 2>&1)
check_output "tester creates a worker of its own" '^[0-9a-f]{12}$' echo "$own"
check "tester stops its own worker" as_tester sandboxctl stop "$own"

# Every signal has been sent once root's subscriber has the last ones.
# heard LOG MEMBER WORD: LOG has a MEMBER signal naming WORD.
heard() { log_of "$1" | grep "^$2 " | grep -qF -- "$3"; }
for class in $CLASSES; do
    [ -n "${VID[$class]:-}" ] &&
        check "control [$class]: root's subscriber hears WorkerRemoved of the victim" \
            wait_until 90 heard root WorkerRemoved "${VID[$class]}"
done
check "control: root's subscriber hears InterfacesRemoved of workspace $WS" \
    wait_until 30 heard root InterfacesRemoved "$WS"
check "control: tester's subscriber hears WorkerRemoved of its own worker" \
    wait_until 60 heard tester WorkerRemoved "$own"
# A broadcast anyone may send, on sandboxd's path: proves the eavesdropper's
# rules were in place (it prints every signal that reaches it).
as_tester busctl --system emit /org/sandboxd1/probe org.example.Probe Ping >/dev/null 2>&1
check "control: tester's eavesdropper hears a broadcast under /org/sandboxd1" \
    wait_until 10 heard eavesdrop Ping /org/sandboxd1/probe
check "control: tester's dbus-monitor hears a broadcast under /org/sandboxd1" \
    wait_until 10 ct grep -q 'path=/org/sandboxd1/probe; interface=org.example.Probe; member=Ping' "$D/monitor.log"
sleep 2
for l in monitor eavesdrop tester root; do stop_listening "$l"; done

for class in $CLASSES; do
    id=${VID[$class]:-}
    if [ -z "$id" ]; then
        for a in bus-monitor-tester bus-eavesdrop-tester bus-subscribe-tester; do atk_not_ok "$a" "$class" "no victim"; done
        continue
    fi
    heard_life() { heard root WorkerNew "$1" && heard root InterfacesAdded "$1" && heard root PropertiesChanged "/org/sandboxd1/worker/$1"; }
    check "control [$class]: root's subscriber hears WorkerNew, InterfacesAdded and PropertiesChanged of the victim" \
        heard_life "$id"
    words=("$id" "${VHOME[$class]:-}" "${VUID[$class]:+uint32 ${VUID[$class]}}")
    if names monitor "${words[@]}"; then
        atk_not_ok bus-monitor-tester "$class" "$(log_of monitor | grep -F -B3 -A3 "$id" | head -n 20)"
    else
        atk_ok bus-monitor-tester "$class"
    fi
    if names eavesdrop "${words[@]}"; then
        atk_not_ok bus-eavesdrop-tester "$class" "$(log_of eavesdrop | grep -F "$id" | head -n 5)"
    else
        atk_ok bus-eavesdrop-tester "$class"
    fi
    if names tester "${words[@]}"; then
        atk_not_ok bus-subscribe-tester "$class" "$(log_of tester | grep -F "$id" | head -n 5)"
    else
        atk_ok bus-subscribe-tester "$class"
    fi
done
if names monitor "$WS" || names eavesdrop "$WS" || names tester "$WS"; then
    atk_not_ok bus-workspace-tester - "$(log_of monitor | grep -F "$WS" | head -n 3)" "$(log_of eavesdrop | grep -F "$WS" | head -n 3)" "$(log_of tester | grep -F "$WS" | head -n 3)"
else
    atk_ok bus-workspace-tester -
fi
own_life() { heard tester WorkerNew "$own" && heard tester PropertiesChanged "/org/sandboxd1/worker/$own"; }
check "control: tester's subscriber hears WorkerNew and PropertiesChanged of its own worker" own_life

# ---------------------------------------------------------------- sandboxctl as tester
check_output "sandboxctl run works as tester (output relayed)" '^hello$' \
    as_tester timeout 120 sandboxctl run --class trusted -- /bin/echo hello
rc=0
as_tester timeout 120 sandboxctl run --class trusted -- /bin/sh -c 'exit 3' >/dev/null 2>&1 || rc=$?
check_eq "sandboxctl run as tester exits with the worker's status" 3 "$rc"
aid=$(as_tester sandboxctl create --class trusted -- /bin/cat 2>/dev/null)
check_output "sandboxctl attach works as tester" 'ping' sh -c "echo ping | nsenter -t $CT_PID -a runuser -u tester -- timeout 60 sandboxctl attach '$aid'"
[ -n "$aid" ] && as_tester sandboxctl stop "$aid" >/dev/null 2>&1

# ---------------------------------------------------------------- too many subscriptions
# One after the other: 140 Subscribe calls at once would meet the cap on
# calls waiting for polkit ([Bus] AuthorizationsPerUser, TooManyRequests)
# before the cap on subscriptions that this attack is about.
ct sh -c "for i in \$(seq 140); do runuser -u tester -- $WATCH >$D/flood.\$i.log 2>&1 & echo \$! >$D/flood.\$i.pid
              for t in \$(seq 100); do grep -qx ready $D/flood.\$i.log && break; sleep 0.05; done; done"
flood_done() { [ "$(ct sh -c "grep -lx ready $D/flood.*.log" | wc -l)" -ge 140 ]; }
wait_until 60 flood_done
refused=$(ct sh -c "cat $D/flood.*.log" | grep -c '^subscribe-error org.sandboxd1.Error.TooManySubscribers')
accepted=$(( 140 - $(ct sh -c "cat $D/flood.*.log" | grep -c '^subscribe-error') ))
listen root2 root "$WATCH"
wait_until 15 ready root2
root2=$(log_of root2)
for i in $(seq 140); do stop_listening "flood.$i"; done
stop_listening root2
# Each leaving client is dropped on dbus-daemon's NameOwnerChanged.
again_ok() {
    ct sh -c "runuser -u tester -- timeout 5 $WATCH" >"$TAP_TMP/again.log" 2>&1
    grep -qx ready "$TAP_TMP/again.log" && ! grep -q subscribe-error "$TAP_TMP/again.log"
}
again=fail
wait_until 30 again_ok && again=ok
if [ "$refused" -ge 1 ] && [ "$accepted" -le 128 ] && [ "$accepted" -ge 100 ] &&
   [[ $root2 != *subscribe-error* ]] && [ "$again" = ok ]; then
    atk_ok bus-subscribe-flood -
else
    atk_not_ok bus-subscribe-flood - "refused: $refused, accepted: $accepted (at most 128)" \
        "root's subscription: $(head -c 200 <<<"$root2")" "tester subscribes again once they left: $again"
fi
check "sandboxd is still the same healthy process after the flood" ct busctl --system get-property "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" Version

atk_coverage
tap_done
