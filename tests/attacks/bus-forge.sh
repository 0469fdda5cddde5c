#!/usr/bin/env bash
# Forged systemd signals (issue 22 item 1): sandboxd used to match systemd's
# signals by the well-known name org.freedesktop.systemd1, which sd-bus cannot
# check on dbus-daemon, so a signal any local user sent straight to sandboxd's
# unique name ended a worker and deleted its home. Each attack below sends one
# as the plain user tester (busctl --system emit --destination=UNIQUE-NAME),
# from inside a worker, or from the egress proxy's identity, aimed at a
# running, a starting, a suspending (gVisor) and a pooled worker, and proves
# that nothing changed. The controls beside them prove the real signals still
# count: a StopWorker ends a worker, a process that exits is reported ended,
# a real daemon-reload replaces the warm pool.
#
#   bus-forge.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   bus-forge.sh --list                  print the table of attacks (Markdown)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# TARGETS (the second column) are the kinds of worker the forgery aims at;
# they take the place of lib-attacks.sh's classes in the TAP names.
ATTACKS='
forge-props|running,starting,suspending,pooled|tester sends PropertiesChanged(ActiveState=inactive, ExecMainCode=1) on the unit'"'"'s path to sandboxd'"'"'s unique name|ignored: still listed as before, unit active, home present (pool: the same sandboxes)
forge-job-done|starting,suspending,pooled|tester sends JobRemoved(done) for the worker'"'"'s unit (suspending: its -suspend.service checkpoint)|ignored: the worker is not started or saved on its word, nothing changes
forge-job-failed|running,starting,suspending,pooled|tester sends JobRemoved(failed) for the worker'"'"'s unit (suspending: its checkpoint)|ignored: no start fails, no image is deleted, home present
forge-unit-removed|running,starting,suspending,pooled|tester sends UnitRemoved for the worker'"'"'s unit (suspending: and its checkpoint)|ignored: the suspend is not reported done early, nothing changes
forge-reloading|pooled|tester sends Reloading(false)|ignored: the warm pool keeps the same sandboxes
forge-in-worker|trusted,standard|a worker runs the same busctl emit at a running victim and connects to /run/dbus/system_bus_socket and /run/systemd/private|no bus at all (ENOENT/ECONNREFUSED/EACCES), the victim unchanged
forge-proxy|trusted|as the egress proxy (its UID, in its mount namespace) connect to /run/dbus/system_bus_socket|no bus (ENOENT/EACCES): the proxy unit hides /run/dbus, the victim unchanged
control-stop|running|(control) StopWorker, over the bus as root|the worker ends and its home is removed: real signals still count
control-exit|running|(control) the worker'"'"'s process exits 3 by itself|reported ended (exited 3), home removed
control-reload|pooled|(control) a real systemctl daemon-reload|the pool is replaced: PID 1'"'"'s own Reloading arrives on the private connection
'
# (the same arrays lib-attacks.sh fills from its own table, which its helpers read)
# shellcheck disable=SC2034
declare -A ATK_ACTION=() ATK_EXPECT=() ATK_CLASSES=() ATK_RAN=()
declare -a ATK_IDS=()
# shellcheck disable=SC2034
atk_load_table
bus_list() { atk_list | sed '1s/^| attack | classes |/| forged signal | targets |/'; }
if [ "${1:-}" = --list ]; then
    bus_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's bus-forge table is what --list prints" \
    diff <(bus_list) <(sed -n '/^| forged signal |/,/^$/p' "$HERE/README.md" | sed '/^$/d')

EXEC=/usr/libexec/sandboxd/sandbox-exec
CONF=/etc/sandboxd/sandboxd.conf
W=/run/sbx-forge                # the wrapper's switches, the starting section's files
T=/etc/sbx-forge                # the runsc wrapper, root's
ct mkdir -p "$W" "$T"
cleanup() {
    ct sh -c "[ -f $W/sandbox-exec.orig ] && cp -a $W/sandbox-exec.orig $EXEC.new && mv -f $EXEC.new $EXEC; [ -f $CONF.orig ] && mv $CONF.orig $CONF
        rm -rf $W $T; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT
# runsc as sandboxd's RunscPath holds each checkpoint until the test lets it
# go (tests/attacks/bus-forge/runsc): the forgeries reach a suspending worker
# however fast the machine saves it.
cat "$HERE/bus-forge/runsc" > "/proc/$CT_PID/root$T/runsc"
ct chmod 0755 "$T/runsc"
ct cp "$CONF" "$CONF.orig"
ct sh -c "printf '[Isolation]\nRunscPath=$T/runsc\n' > $CONF"
ct systemctl restart sandboxd.service

sbx_unique() {
    ct busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetNameOwner s "$SBX_DEST" |
        sed -n 's/^s "\(.*\)"$/\1/p'
}
# systemd's object path of unit sandbox-ID[SUFFIX].service (ids are hex).
unit_path() {
    local sfx=${2:-}
    printf '/org/freedesktop/systemd1/unit/sandbox_2d%s%s_2eservice' "$1" "${sfx//-/_2d}"
}
# forge KIND UNIT-ID [SUFFIX]: what tester sends to sandboxd's unique name.
FORGE_ERR=$TAP_TMP/forge.err
forge() {
    local kind=$1 id=${2:-} sfx=${3:-} u
    u=$(sbx_unique)
    [ -n "$u" ] || { echo "no unique name" >"$FORGE_ERR"; return 1; }
    local -a emit=(as_tester busctl --system emit --destination="$u")
    case $kind in
    props) "${emit[@]}" "$(unit_path "$id" "$sfx")" org.freedesktop.DBus.Properties PropertiesChanged 'sa{sv}as' \
            org.freedesktop.systemd1.Unit 2 ExecMainCode i 1 ActiveState s inactive 0 ;;
    job-done | job-failed)
        "${emit[@]}" /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager JobRemoved uoss \
            4242 /org/freedesktop/systemd1/job/4242 "sandbox-$id$sfx.service" "${kind#job-}" ;;
    unit-removed) "${emit[@]}" /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager UnitRemoved so \
            "sandbox-$id$sfx.service" "$(unit_path "$id" "$sfx")" ;;
    reloading) "${emit[@]}" /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager Reloading b false ;;
    esac 2>"$FORGE_ERR"
}
# The forgery itself must have been sent (tester may send any signal): else
# the attack proves nothing.
sent() { [ ! -s "$FORGE_ERR" ]; }

unit_active() { [ "$(ct systemctl is-active "sandbox-$1.service" 2>/dev/null)" = active ]; }
marker() { sbx_home_cat "$1" marker; }
# A running worker: still listed running, its unit active, its home and marker there.
running_intact() {
    local st
    st=$(state_of "$1")
    WHY="state ${st:-none}, unit $(ct systemctl is-active "sandbox-$1.service" 2>&1), marker '$(marker "$1")'"
    [ "$st" = running ] && unit_active "$1" && [ "$(marker "$1")" = here ]
}
new_running() { # CLASS: a fresh running worker with a marker in its home, in $WID
    WID=$(ct timeout 120 sandboxctl create --class "$1" -- /bin/sh -c 'echo here > "$HOME/marker"; exec sleep 100000' 2>&1)
    wait_until 60 sh -c "[ \"\$(nsenter -t $CT_PID -a sh -c 'cat $SBX_DISK_MOUNT_ROOT/$WID/home/marker || cat $SBX_STATE_ROOT/$WID/marker' 2>/dev/null)\" = here ]"
}
settle() { sleep 3; }

# ---- running ------------------------------------------------------------------
for kind in props job-failed unit-removed; do
    id=forge-$kind
    new_running trusted
    v=$WID
    forge "$kind" "$v"
    settle
    if sent && running_intact "$v"; then atk_ok "$id" running; else
        atk_not_ok "$id" running "$v: $WHY" "forge: $(cat "$FORGE_ERR")"; fi
    ct sandboxctl stop "$v" >/dev/null 2>&1
done

# ---- starting -----------------------------------------------------------------
# A trusted worker is running once sandbox-exec wrote its readiness token; with
# sandbox-exec replaced by a sleep it stays starting, CreateWorker unanswered
# (tests/integration/restart.sh does the same).
# By rename: a write to the file fails (ETXTBSY) while a worker's
# sandbox-exec still runs from it, and the real one would start workers.
ct sh -c "cp -a $EXEC $W/sandbox-exec.orig && printf '#!/bin/sh\nexec /bin/sleep 100000\n' >$EXEC.new &&
    chmod 0755 $EXEC.new && mv -f $EXEC.new $EXEC"
check "setup: sandbox-exec is a sleep that never says ready" ct grep -q 'exec /bin/sleep' "$EXEC"
new_unit() { # the first worker unit not in $BEFORE, in $S
    S=$(comm -13 <(printf '%s\n' "$BEFORE") <(sbx_units | sort) | grep -E '^sandbox-[0-9a-f]{12}\.service$' | head -n1)
    S=${S#sandbox-} S=${S%.service}
    [ -n "$S" ]
}
starting_new() {
    BEFORE=$(sbx_units | sort)
    ct sh -c "busctl --system --timeout=600 call $SBX_DEST $SBX_PATH $SBX_MGR CreateWorker \
        'a{sv}' 2 Argv as 2 /bin/sleep 100000 Class s trusted >$W/create.out 2>&1 & echo \$! >$W/create.pid"
    wait_until 120 new_unit && wait_until 60 unit_active "$S"
}
starting_intact() {
    WHY="unit $(ct systemctl is-active "sandbox-$1.service" 2>&1), CreateWorker said '$(ct cat $W/create.out)'"
    unit_active "$1" && ct sh -c "kill -0 \$(cat $W/create.pid) && ! test -s $W/create.out && test -d $SBX_STATE_ROOT/$1"
}
for kind in props job-done job-failed unit-removed; do
    id=forge-$kind
    starting_new
    if [ -z "$S" ]; then
        atk_not_ok "$id" starting "no starting worker appeared; CreateWorker said '$(ct cat $W/create.out)'"
        ct sh -c "kill \$(cat $W/create.pid) 2>/dev/null; rm -f $W/create.out $W/create.pid"
        continue
    fi
    forge "$kind" "$S"
    settle
    if sent && starting_intact "$S"; then atk_ok "$id" starting; else
        atk_not_ok "$id" starting "$S: $WHY" "forge: $(cat "$FORGE_ERR")"; fi
    # The control for a starting worker: its unit really ends, and so does it.
    ct systemctl stop "sandbox-$S.service"
    if [ "$kind" = props ]; then
        check "control: a starting worker whose unit really stops ends, its home removed, CreateWorker answered" \
            wait_until 30 sh -c "nsenter -t $CT_PID -a sh -c '! kill -0 \$(cat $W/create.pid) 2>/dev/null && \
                test -s $W/create.out && ! test -e $SBX_STATE_ROOT/$S'"
    fi
    ct sh -c "kill \$(cat $W/create.pid) 2>/dev/null; rm -f $W/create.out $W/create.pid"
done
ct sh -c "cp -a $W/sandbox-exec.orig $EXEC.new && mv -f $EXEC.new $EXEC"

# ---- suspending (gVisor, class standard) ----------------------------------------
# Each attack is one suspend: the forgery is sent while the worker is
# suspending; the suspend must end as suspended, and a resume bring the
# worker back running with its home.
sus=
suspending_attack() { # ID KIND...
    local id=$1 kind bg fired=0
    shift
    if [ -z "$sus" ] || ! running_intact "$sus"; then
        [ -n "$sus" ] && ct sandboxctl stop "$sus" >/dev/null 2>&1
        sus=$(ct timeout 120 sandboxctl create --class standard -- /bin/sh -c 'echo here > "$HOME/marker"
            exec sleep 100000' 2>/dev/null | tail -n1)
        wait_until 60 sh -c "[ \"\$(nsenter -t $CT_PID -a sh -c 'cat $SBX_DISK_MOUNT_ROOT/$sus/home/marker || cat $SBX_STATE_ROOT/$sus/marker' 2>/dev/null)\" = here ]"
    fi
    ct rm -f "$W/held" "$W/release"
    ct busctl --system --timeout=300 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" SuspendWorker s "$sus" \
        >"$TAP_TMP/suspend.out" 2>&1 &
    bg=$!
    # runsc holds the checkpoint until $W/release exists: the worker is
    # suspending from the moment the wrapper says it holds one.
    if wait_until 120 ct test -e "$W/held" && [ "$(state_of "$sus")" = suspending ]; then
        fired=1
        for kind in "$@"; do
            case $kind in
            props | unit-removed) forge "$kind" "$sus" ;;
            *) forge "$kind" "$sus" -suspend; forge "$kind" "$sus" ;;
            esac
            [ "$kind" = unit-removed ] && forge unit-removed "$sus" -suspend
        done
        settle
    fi
    local during
    during=$(state_of "$sus")
    ct touch "$W/release"
    wait "$bg"
    local st
    st=$(state_of "$sus")
    if [ "$fired" = 1 ] && sent && [ "$during" = suspending ] && [ "$st" = suspended ] &&
       sbx_call ResumeWorker s "$sus" && wait_until 60 state_is "$sus" running && running_intact "$sus"; then
        atk_ok "$id" suspending
    else
        atk_not_ok "$id" suspending "$sus: sent while suspending: $fired; after the forgeries: ${during:-none};" \
            "after the suspend: ${st:-none}" "suspend said: $(cat "$TAP_TMP/suspend.out")" "now: ${WHY:-}" \
            "forge: $(cat "$FORGE_ERR")"
    fi
}
suspending_attack forge-props props
suspending_attack forge-job-done job-done
suspending_attack forge-job-failed job-failed
suspending_attack forge-unit-removed unit-removed
[ -n "$sus" ] && ct sandboxctl stop "$sus" >/dev/null 2>&1

# ---- pooled -------------------------------------------------------------------
pool_ids() { _sbx_pool_ids | sort; }
pool_all_active() {
    local i
    for i in $(pool_ids); do unit_active "$i" || return 1; done
}
pool_steady() { # the pool is full and stays so for a while
    local a b
    a=$(pool_ids)
    [ -n "$a" ] && pool_all_active && [ "$(pooled)" = "$(printf '%s\n' "$a" | grep -c .)" ] || return 1
    sleep 2
    b=$(pool_ids)
    [ "$a" = "$b" ]
}
if wait_until 300 pool_steady; then ok "setup: the warm pool is full: $(pooled) sandboxes wait"; else
    not_ok "setup: the warm pool is full" "PooledSandboxes=$(pooled), units: $(pool_ids | tr '\n' ' ')"; fi
pool_attack() { # ID KIND
    local id=$1 kind=$2 before after victim
    wait_until 120 pool_steady
    before=$(pool_ids)
    victim=$(printf '%s\n' "$before" | head -n1)
    forge "$kind" "$victim"
    settle
    after=$(pool_ids)
    if sent && [ -n "$before" ] && [ "$before" = "$after" ] && pool_all_active &&
       ct test -d "$SBX_STATE_ROOT/$victim"; then
        atk_ok "$id" pooled
    else
        atk_not_ok "$id" pooled "before: $(echo $before)" "after: $(echo $after)" "forge: $(cat "$FORGE_ERR")"
    fi
}
pool_attack forge-props props
pool_attack forge-job-done job-done
pool_attack forge-job-failed job-failed
pool_attack forge-unit-removed unit-removed
pool_attack forge-reloading reloading

wait_until 300 pool_steady
before=$(pool_ids)
pool_replaced() { [ -n "$(pool_ids)" ] && [ -z "$(comm -12 <(printf '%s\n' "$before") <(pool_ids))" ]; }
ct systemctl daemon-reload
if wait_until 180 pool_replaced; then
    atk_ok control-reload pooled
else
    atk_not_ok control-reload pooled "before: $(echo $before)" "after: $(pool_ids | tr '\n' ' ')"
fi

# ---- from inside a worker of each class ---------------------------------------------
for class in trusted standard; do
    new_running "$class"
    v=$WID
    u=$(sbx_unique)
    out=$(ct timeout 120 sandboxctl run --class "$class" -- /bin/sh -c "
        busctl --system emit --destination=$u $(unit_path "$v") org.freedesktop.DBus.Properties PropertiesChanged \
            'sa{sv}as' org.freedesktop.systemd1.Unit 2 ExecMainCode i 1 ActiveState s inactive 0 2>&1; echo emit-rc=\$?
        python3 -c '
import errno, socket
for p in (\"/run/dbus/system_bus_socket\", \"/run/systemd/private\"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p); print(\"connect\", p, \"OK\")
    except OSError as e:
        print(\"connect\", p, errno.errorcode.get(e.errno, e.errno))
'" 2>&1)
    settle
    diag "$class worker said: $out"
    if printf '%s\n' "$out" | grep -q '^emit-rc=[1-9]' &&
       [ "$(printf '%s\n' "$out" | grep -cE '^connect /run/(dbus/system_bus_socket|systemd/private) (ENOENT|ECONNREFUSED|EACCES)$')" = 2 ] &&
       running_intact "$v"; then
        atk_ok forge-in-worker "$class"
    else
        atk_not_ok forge-in-worker "$class" "the worker said: $out" "victim $v: $WHY"
    fi
    ct sandboxctl stop "$v" >/dev/null 2>&1
done

# ---- from the egress proxy's identity ------------------------------------------------
# A worker with egress opens its proxy socket, which starts the proxy; then
# the proxy's own UID, in its own mount namespace, tries the bus.
new_running trusted
v=$WID
p=$(ct timeout 120 sandboxctl create --class trusted --allow proxy.forge.test 2>"$TAP_TMP/proxy.err" -- /bin/sh -c \
    'python3 -c "import socket; s = socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(b\"CONNECT proxy.forge.test:443 HTTP/1.1\r\nHost: proxy.forge.test:443\r\n\r\n\"); s.recv(100)"; exec sleep 100000' | tail -n1)
wait_until 60 sh -c "[ \"\$(nsenter -t $CT_PID -a systemctl is-active sandbox-$p-egress.service)\" = active ]"
# "active" comes at the fork: the proxy runs as itself, in its own mount
# namespace, only once systemd executed it (its UID is then no longer root's).
proxy_execed() {
    ppid=$(unit_prop "sandbox-$p-egress.service" MainPID)
    puid=$(ct awk '/^Uid:/ {print $2}' "/proc/$ppid/status" 2>/dev/null)
    [ -n "$puid" ] && [ "$puid" != 0 ] && journal_has 'sandbox-egress ready' -o cat -u "sandbox-$p-egress.service"
}
wait_until 60 proxy_execed
out=$(ct nsenter -t "$ppid" -m -S "${puid:-0}" -G "${puid:-0}" sh -c "
    python3 -c '
import errno, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(\"/run/dbus/system_bus_socket\"); print(\"connect OK\")
except OSError as e:
    print(\"connect\", errno.errorcode.get(e.errno, e.errno))
'" 2>&1)
settle
diag "proxy's /run mounts: $(ct grep -E ' /run/(dbus|systemd/private) ' "/proc/$ppid/mountinfo" 2>&1 | tr '\n' ';')"
diag "proxy's ids: $(ct grep -E '^(Uid|Gid|NSpid):' "/proc/$ppid/status" 2>&1 | tr '\n\t' '; ')"
diag "proxy of $p (pid ${ppid:-?} uid ${puid:-?}; create said: $(cat "$TAP_TMP/proxy.err")): $out; InaccessiblePaths=$(unit_prop "sandbox-$p-egress.service" InaccessiblePaths)"
if [ -n "$puid" ] && [ "$puid" != 0 ] && printf '%s\n' "$out" | grep -qE '^connect (ENOENT|EACCES|ECONNREFUSED)$' &&
   running_intact "$v"; then
    atk_ok forge-proxy trusted
else
    atk_not_ok forge-proxy trusted "proxy said: $out" "victim $v: $WHY"
fi
ct sandboxctl stop "$p" >/dev/null 2>&1
ct sandboxctl stop "$v" >/dev/null 2>&1

# ---- controls: real ends still count ----------------------------------------------------
new_running trusted
v=$WID
if running_intact "$v" && ct sandboxctl stop "$v" >/dev/null 2>&1 && wait_until 60 unit_gone "sandbox-$v.service" &&
   wait_until 30 home_absent "$v" && wait_until 30 sh -c "st=\$(nsenter -t $CT_PID -a busctl --system get-property \
        $SBX_DEST $SBX_PATH/worker/$v $SBX_WORKER_IFACE State 2>/dev/null); [ -z \"\$st\" ] || [ \"\$st\" = 's \"ended\"' ]"; then
    atk_ok control-stop running
else
    atk_not_ok control-stop running "$v: state $(state_of "$v"), unit $(unit_prop "sandbox-$v.service" ActiveState)"
fi

WID=$(ct timeout 120 sandboxctl create --class trusted -- /bin/sh -c 'echo here > "$HOME/marker"; sleep 3; exit 3' 2>&1)
v=$WID
if wait_until 60 sh -c "nsenter -t $CT_PID -a busctl --system get-property $SBX_DEST $SBX_PATH/worker/$v \
        $SBX_WORKER_IFACE Result 2>/dev/null | grep -q 'exited 3'" && wait_until 30 home_absent "$v"; then
    atk_ok control-exit running
else
    atk_not_ok control-exit running "$v: state $(state_of "$v"), result $(sbx_prop "$v" Result 2>&1)"
fi

check_output "sandboxd is the same active service after every forgery" '^active$' ct systemctl is-active sandboxd.service
atk_coverage
tap_done
