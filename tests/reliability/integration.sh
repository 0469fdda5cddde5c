#!/usr/bin/env bash
# testbed: long
# shellcheck disable=SC2317  # helpers are called through wait_until and check
# The reliability suite (issue 11, "Churn and faults"), in one fresh test bed.
#
# Churn: CHURN_COUNT (default 300) seeded cycles of tests/reliability/churn.sh
# over every class the test bed serves (trusted, standard and untrusted under
# gVisor) and with egress through a local upstream, mixing runs, stops at
# random moments, idle reaps and killed clients. Afterwards nothing may be
# left (tests/reliability/leaks.sh: units, proxy units, homes, bundles, runsc
# state, state files, dynamic users, fd store entries), sandboxd's open fds
# must be back to their count before the first worker (+- FD_SLACK) and its
# VmRSS may have grown by at most RSS_GROWTH_MAX_KB over a baseline taken
# after the same churn once (a warm-up).
# The leak check is shown to catch a deliberately leaked unit and bundle.
#
# Faults, each while workers run with clients attached; each states what is
# promised to survive and checks it:
#   kill -9 of sandboxd, of a worker's egress proxy, of runsc's sentry and of
#   its gofer, systemctl restart dbus, a full file system under the homes,
#   the credential socket removed.
#   tests/reliability/integration.sh LEADER_PID STAGE_DIR   (run-all.sh runs it)
#   CHURN_COUNT, CHURN_SEED (default: random, printed) replay a run.
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
COUNT=${CHURN_COUNT:-300}
SEED=${CHURN_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
CLASSES=trusted,standard,untrusted
W=/etc/sbx-rel-it
A=/run/sbx-rel-attach
UP=11.0.0.13
HOST=api.sbx-rel.test
CONF=/etc/sandboxd/sandboxd.conf
FD_SLACK=2
RSS_GROWTH_MAX_KB=2048
HOMES=$SBX_STATE_ROOT
CHANNEL=/usr/lib/sandboxd-tests/sbx-channel

cleanup() {
    ct sh -c "for f in $A/*.pid $A/*.holder; do kill \$(cat \$f); done; systemctl stop 'sbx-rel-it-*' 'sandbox-*' 2>/dev/null
              $W/upstream-netns.sh down; umount $HOMES 2>/dev/null" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

diag "churn: $COUNT cycles, seed $SEED (CHURN_SEED=$SEED CHURN_COUNT=$COUNT replays it)"

# ---- the test bed: an upstream, the operator floor, the scripts -------------
ct mkdir -p "$W" "$A"
cat "$SRC/tests/egress/egress-upstream.py" >"/proc/$CT_PID/root$W/upstream.py"
for f in churn.sh leaks.sh; do
    cat "$SRC/tests/reliability/$f" >"/proc/$CT_PID/root$W/$f"
done
upstream_netns_install "$W"
ct sh -ec "
    chmod 755 $W/churn.sh $W/leaks.sh
    $W/upstream-netns.sh up $UP
    echo '$UP $HOST' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout $W/key.pem -out $W/cert.pem \
        -subj /CN=$HOST -addext 'subjectAltName=DNS:$HOST' 2>/dev/null
    chmod 644 $W/cert.pem
    systemd-run -q --unit=sbx-rel-it-up ip netns exec upstream python3 $W/upstream.py $UP 443 $W/cert.pem $W/key.pem
    printf '[Egress]\nFloor=*.sbx-rel.test\n' > $CONF
    systemctl restart sandboxd"
check "the upstream answers" wait_until 10 ct bash -c "exec 3<>/dev/tcp/$UP/443"
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
for class in ${CLASSES//,/ }; do
    check_output "preflight: $class is available here" "^$class +[a-z]+ +[^ ]+ +yes" ct sandboxctl preflight --no-legend
done

main_pid() { unit_prop sandboxd.service MainPID; }
fd_count() { ct sh -c "ls /proc/$(main_pid)/fd | wc -l"; }
rss_kb() { ct awk '/^VmRSS:/ {print $2}' "/proc/$(main_pid)/status"; }
leaks() { ct "$W/leaks.sh"; }
# Every count of leaks.sh is 0.
no_leaks() { ! leaks | grep -qv ' 0$'; }
# The warm pool refills by itself after claims. Full, as many sandboxes wait
# (each holding its stdio pipes in sandboxd) as at the baseline. Its defaults:
# StandardSize=2 and UntrustedSize=2, each with and without egress.
POOL_FULL=8
pool_full() { [ "$(sbx_mgr_prop PooledSandboxes)" = "$POOL_FULL" ]; }
fds_back() { pool_full && [ "$(fd_count)" -le $(($1 + FD_SLACK)) ]; }

# ---- churn -----------------------------------------------------------------------
wait_until 120 pool_full || diag "the pool did not fill: $(sbx_mgr_prop PooledSandboxes) of $POOL_FULL waiting"
fds_before=$(fd_count)
pid_before=$(main_pid)
# The warm-up is the very churn measured below (same seed, same count), so
# the RSS baseline holds what serving that mix once leaves behind for good
# (allocator arenas and their fragmentation, sd-bus caches, the bounded list
# of ended workers): growth over it is what a second, identical pass adds,
# which is a leak's signature. A 12-cycle warm-up was not enough: with seed
# 8832 the first 100 cycles added 2440 kB and the next four passes 650, 236,
# 128 and 104 kB, a plateau, not a leak.
ct "$W/churn.sh" "$COUNT" "$SEED" "$CLASSES" "$HOST" "$W/cert.pem" >"$TAP_TMP/warmup" 2>&1 ||
    diag "warm-up: $(grep FAIL "$TAP_TMP/warmup" | head -n 20)"
wait_until 90 no_leaks || diag "warm-up: left behind: $(leaks | grep -v ' 0$')"
rss_before=$(rss_kb)
diag "sandboxd PID $pid_before: $fds_before fds before any worker, VmRSS $rss_before kB after a $COUNT-cycle warm-up"

t0=$SECONDS
ct "$W/churn.sh" "$COUNT" "$SEED" "$CLASSES" "$HOST" "$W/cert.pem" >"$TAP_TMP/churn" 2>&1
rc=$?
diag "$(tail -n 30 "$TAP_TMP/churn")"
if [ $rc -eq 0 ]; then
    ok "churn: $COUNT cycles (seed $SEED) each did what it should ($((SECONDS - t0)) s)"
else
    not_ok "churn: $COUNT cycles (seed $SEED) each did what it should" "$(grep FAIL "$TAP_TMP/churn" | head -n 20)"
fi
summary=$(grep '^churn: [0-9]* cycles' "$TAP_TMP/churn")
for kind in run stop early-stop idle disconnect egress; do
    check_output "churn: the run included $kind cycles" " $kind=[1-9]" echo "$summary"
done
check_eq "churn: sandboxd is the same process (no crash)" "$pid_before" "$(main_pid)"
check_output "churn: NWorkers is 0" '^0$' sbx_mgr_prop NWorkers
# Ended workers stay on the bus, holding their channel, for 30 s.
if wait_until 90 no_leaks; then
    ok "churn: nothing left behind ($(leaks | awk '{print $1}' | paste -sd, -))"
else
    not_ok "churn: nothing left behind" "$(leaks)"
fi
if wait_until 90 fds_back "$fds_before"; then
    ok "churn: sandboxd's open fds are back to $fds_before (+$FD_SLACK) (now $(fd_count))"
else
    not_ok "churn: sandboxd's open fds are back to $fds_before (+$FD_SLACK)" "now $(fd_count):" \
        "$(ct ls -l "/proc/$(main_pid)/fd" 2>&1 | tail -n +2 | head -n 30)"
fi
rss_after=$(rss_kb)
if [ -n "$rss_after" ] && [ $((rss_after - rss_before)) -le $RSS_GROWTH_MAX_KB ]; then
    ok "churn: VmRSS grew by at most $RSS_GROWTH_MAX_KB kB ($rss_before -> $rss_after kB)"
else
    not_ok "churn: VmRSS grew by at most $RSS_GROWTH_MAX_KB kB" "$rss_before -> ${rss_after:-?} kB"
fi

# A client that goes away before it read the worker's output (here: the
# line the worker printed before anyone attached) only detaches.
if D=$(ct sandboxctl create --class trusted -- /bin/sh -c 'echo ready; exec cat'); then
    check "a client that reads nothing goes away" ct "$CHANNEL" drop "$D" 300
    check_output "the worker runs on after it" '^running$' sbx_prop "$D" State
    check_output "the next client gets through" '^after-drop$' ct "$CHANNEL" roundtrip "$D" after-drop
    ct sandboxctl stop "$D" >/dev/null
else
    not_ok "a worker for the unread-output client runs"
fi

# The leak check itself: a unit and a bundle left on purpose are seen.
ct systemd-run -q --unit=sandbox-rel-leaked.service sleep 1009
ct mkdir /run/sandboxd/bundles/rel-leaked
check_output "the leak check sees a deliberately leaked unit" '^units 1 sandbox-rel-leaked\.service' leaks
check_output "the leak check sees a deliberately leaked bundle" '^bundles 1 rel-leaked' leaks
ct systemctl stop sandbox-rel-leaked.service
ct rmdir /run/sandboxd/bundles/rel-leaked
check "the leak check is clean again" wait_until 10 no_leaks

# ---- faults -------------------------------------------------------------------
# Every worker's home from here on is on a small file system of its own, so
# that the full-disk fault fills that and not the test bed. sandboxd is
# restarted (no worker runs) so that its own mount namespace has it too.
# The faults compare what exists before and after them; a warm pool that
# refills (or fails to, on a full disk) would change that by itself, so it is
# off from here (its own faults are tests/integration/pool.sh's).
ct mount -t tmpfs -o size=64m,mode=0755 sbx-rel-homes "$SBX_STATE_ROOT"
ct sh -c "printf '[Egress]\nFloor=*.sbx-rel.test\n[Pool]\nStandardSize=0\nUntrustedSize=0\n' > $CONF"
ct systemctl restart sandboxd.service
check_output "faults: the homes are on their own file system" '^tmpfs$' ct stat -f -c %T "$SBX_STATE_ROOT"

# An attached client: sandboxctl attach, its stdin a fifo held open by a
# sleep (as a terminal would be), its output in a file. The shell opens the
# fifo read-write (which does not block) before either starts: a holder that
# opened it itself could come after attach_send's writer on a loaded host,
# and the client would read that line and then EOF, which it passes on to
# the worker (seen: a cat worker ending "by itself" in two CI runs).
attach_start() {
    ct sh -c "rm -f $A/$1.in $A/$1.out; mkfifo $A/$1.in; exec 3<>$A/$1.in
        sleep 1001 >&3 3>&- 2>/dev/null </dev/null & echo \$! >$A/$1.holder
        sandboxctl attach $1 <$A/$1.in 3>&- >$A/$1.out 2>&1 & echo \$! >$A/$1.pid"
}
# Bounded, should the holder be gone: the check after it then fails instead
# of the script hanging.
attach_send() { ct timeout 10 sh -c "printf '%s\n' '$2' >$A/$1.in"; }
attach_got() { ct grep -Eq -- "$2" "$A/$1.out"; }
# attach_alive ID [holder]: whether ID's client (or its stdin's holder) runs.
attach_alive() { ct sh -c "kill -0 \$(cat $A/$1.${2:-pid}) 2>/dev/null"; }
attach_stop() { ct sh -c "kill \$(cat $A/$1.pid) \$(cat $A/$1.holder) 2>/dev/null; true"; }
# attached ID TAG: a client is attached and a line goes through the worker.
attached() {
    attach_start "$1"
    attach_send "$1" "$2"
    wait_until 30 attach_got "$1" "^$2\$"
}
wmain() { unit_prop "sandbox-$1.service" MainPID; }
declare -A PID_OF=()
record() { local id; for id in "$@"; do PID_OF[$id]=$(wmain "$id"); done; }
# unharmed TAG ID...: the same process runs each worker, and a line sent by
# a (newly) attached client comes back.
unharmed() {
    local tag=$1 id n=0 state
    shift
    for id in "$@"; do
        n=$((n + 1))
        state=$(unit_prop "sandbox-$id.service" ActiveState)
        check_eq "$tag: $id still runs" active "$state"
        if [ "$state" != active ]; then
            # Whose end it was: a worker reading stdin ends at its client's EOF.
            diag "$tag: $id's client $(attach_alive "$id" && echo runs || echo is gone), its stdin's holder $(attach_alive "$id" holder && echo runs || echo is gone)"
        fi
        check_eq "$tag: $id is the same process" "${PID_OF[$id]}" "$(wmain "$id")"
        if ! attach_alive "$id"; then
            attach_start "$id"
        fi
        attach_send "$id" "$tag-$n"
        check "$tag: $id's channel works" wait_until 30 attach_got "$id" "^$tag-$n\$"
    done
}
restarted() { [ "$(ct systemctl is-active sandboxd.service)" = active ] && [ "$(main_pid)" != "$1" ] && sbx_mgr_prop NWorkers >/dev/null; }
create() { # create LABEL SANDBOXCTL-ARGS...: sets WID
    local label=$1
    shift
    WID=$(ct sandboxctl create "$@" 2>"$TAP_TMP/create.err")
    if [ -n "$WID" ]; then ok "faults: $label runs ($WID)"; else not_ok "faults: $label runs" "$(cat "$TAP_TMP/create.err")"; fi
}

create "a trusted cat worker" --class trusted -- /bin/cat; T=$WID
create "a standard (gVisor) cat worker" --class standard -- /bin/cat; S=$WID
create "an untrusted (gVisor) cat worker" --class untrusted -- /bin/cat; U=$WID
# shellcheck disable=SC2016  # the worker's shell expands it
create "a worker with egress" --class trusted --allow "$HOST" -- /bin/sh -c \
    "while read n; do curl -sS -m 20 --cacert $W/cert.pem https://$HOST/\$n; echo; done"; E=$WID
for id in "$T" "$S" "$U"; do
    check "faults: a client is attached to $id" attached "$id" "hello-$id"
done
attach_start "$E"
attach_send "$E" 3
check "faults: the egress worker's client gets its first answer through the proxy" wait_until 30 attach_got "$E" '^xxx$'
record "$T" "$S" "$U" "$E"

# -- kill -9 of sandboxd: promised: every worker runs on, same process, is
#    re-adopted (listed, running), and is attachable again; attached clients
#    see their channel close.
old=$(main_pid)
check "kill -9 sandboxd" ct kill -9 "$old"
check "kill -9 sandboxd: systemd restarted it" wait_until 60 restarted "$old"
client_gone() { ! attach_alive "$1"; }
check "kill -9 sandboxd: the attached client saw its channel close" wait_until 15 client_gone "$T"
for id in "$T" "$S" "$U" "$E"; do
    check_output "kill -9 sandboxd: $id is re-adopted and running" '^running$' sbx_prop "$id" State
done
unharmed "kill -9 sandboxd" "$T" "$S" "$U"
attach_start "$E"

# -- kill -9 of the egress proxy: promised: the worker runs on (same
#    process), its next connection gets a fresh proxy (socket-activated).
proxy=sandbox-$E-egress.service
ppid=$(unit_prop "$proxy" MainPID)
check_output "egress proxy: it runs (MainPID $ppid)" '^[1-9][0-9]*$' echo "$ppid"
check "kill -9 of the egress proxy" ct kill -9 "$ppid"
proxy_gone() { [ "$(unit_prop "$proxy" MainPID)" != "$ppid" ]; }
check "egress proxy: the killed proxy is gone" wait_until 15 proxy_gone
attach_send "$E" 4
check "egress proxy: the next connection gets through a fresh proxy" wait_until 30 attach_got "$E" '^xxxx$'
fresh_proxy() { local p; p=$(unit_prop "$proxy" MainPID); [ "$p" != 0 ] && [ "$p" != "$ppid" ] && echo "$p"; }
check_output "egress proxy: a new proxy process serves it" '^[1-9][0-9]*$' fresh_proxy
check_output "egress proxy: the worker is the same process" "^${PID_OF[$E]}\$" wmain "$E"
unharmed "egress proxy killed, the others" "$T" "$S"

# -- kill -9 of runsc's sentry and of its gofer: promised: that worker ends
#    as failed (not "stopped") and is cleaned (no unit, home, bundle, state
#    file, runsc state); the other workers are unharmed.
create "a gVisor worker whose sentry is killed" --class standard -- /bin/cat; G1=$WID
create "a gVisor worker whose gofer is killed" --class standard -- /bin/cat; G2=$WID
# runsc_pid ID ARGV0: the process of the worker's cgroup with that argv[0].
runsc_pid() {
    ct sh -c 'cg=$(systemctl show -P ControlGroup "sandbox-$1.service")
        for f in /sys/fs/cgroup/unified$cg/cgroup.procs /sys/fs/cgroup$cg/cgroup.procs /sys/fs/cgroup/systemd$cg/cgroup.procs; do
            [ -r "$f" ] || continue
            for p in $(cat "$f"); do
                [ "$(tr "\0" "\n" <"/proc/$p/cmdline" 2>/dev/null | head -n1)" = "$2" ] && { echo "$p"; exit 0; }
            done
        done; exit 1' sh "$1" "$2"
}
for pair in "$G1:runsc-sandbox:sentry" "$G2:runsc-gofer:gofer"; do
    IFS=: read -r id argv0 what <<<"$pair"
    check "$what: a client is attached to $id" attached "$id" "hello-$id"
    wait_until 30 runsc_pid "$id" "$argv0"
    p=$(runsc_pid "$id" "$argv0")
    check_output "$what: the worker's $argv0 process is found" '^[0-9]+$' echo "$p"
    check "kill -9 of runsc's $what" ct kill -9 "$p"
    _ended() { [ "$(sbx_prop "$1" State)" = ended ] || ! sbx_prop "$1" Id; }
    check "$what: the worker ends" wait_until 60 _ended "$id"
    result=$(sbx_prop "$id" Result)
    diag "$what: Result of $id: $result"
    if [ -n "$result" ] && [ "$result" != stopped ]; then
        ok "$what: it ended as failed, not stopped ($result)"
    else
        not_ok "$what: it ended as failed, not stopped" "Result: ${result:-none}"
    fi
    check "$what: its unit is gone" wait_until 30 unit_gone "sandbox-$id.service"
    check "$what: its home is deleted" wait_until 30 home_absent "$id"
    check "$what: its bundle is deleted" wait_until 30 ct sh -c "! test -e /run/sandboxd/bundles/$id"
    check "$what: its state file is deleted" wait_until 30 ct sh -c "! test -e /run/sandboxd/workers/$id"
    check "$what: no runsc state of it is left" wait_until 30 ct sh -c "! ls /run/sandboxd/runsc | grep -q $id"
    check "$what: its dynamic user is gone" wait_until 30 ct sh -c "! getent passwd sandbox-$id"
    check "$what: its attached client saw the channel close" wait_until 15 client_gone "$id"
    unharmed "$what killed, the others" "$T" "$S" "$U"
done

# -- systemctl restart dbus: promised: systemd itself carries on, sandboxd
#    comes back on the new bus (a new process: the old one's connection is
#    dead) and re-adopts every worker, each the same process and attachable.
old=$(main_pid)
check "systemctl restart dbus" ct systemctl restart dbus.service
check "restart dbus: systemd answers on the new bus" wait_until 30 ct busctl --system status org.freedesktop.systemd1
check "restart dbus: sandboxd is back on the bus" wait_until 90 restarted "$old"
for id in "$T" "$S" "$U" "$E"; do
    check_output "restart dbus: $id is re-adopted and running" '^running$' sbx_prop "$id" State
done
unharmed "restart dbus" "$T" "$S" "$U"
check_output "restart dbus: $E still runs, the same process" "^${PID_OF[$E]}\$" wmain "$E"
attach_start "$E"
attach_send "$E" 6
check "restart dbus: $E still gets out through its proxy" wait_until 30 attach_got "$E" '^xxxxxx$'

# -- a full file system under the homes: promised: CreateWorker is refused
#    with a named error that says so, nothing of the refused worker exists,
#    and the running workers are unharmed.
ct sh -c "dd if=/dev/zero of=$SBX_STATE_ROOT/.fill bs=1M >/dev/null 2>&1; true"
leaks_before=$(leaks)
check_output "full disk: the homes' file system is full" '^0$' ct stat -f -c %a "$SBX_STATE_ROOT"
check_error "full disk: CreateWorker is refused" org.sandboxd1.Error.StartFailed root CreateWorker 'a{sv}' 2 Argv as 1 /bin/true Class s trusted
check_output "full disk: the error says the homes' file system is full" "No room for a worker's home" echo "$BUS_ERRMSG"
check_eq "full disk: nothing of the refused worker exists" "$leaks_before" "$(leaks)"
unharmed "full disk" "$T" "$S" "$U"
ct rm -f "$SBX_STATE_ROOT/.fill"
check_output "full disk: once there is room, workers start again" '^again$' ct sandboxctl run --class trusted -- /bin/echo again

# -- the credential socket removed: promised: a new worker that needs it
#    (a secret, its environment, egress) is refused with a named error that
#    says so, nothing of it exists; running workers are unharmed.
ct rm /run/sandboxd/credentials.sock
leaks_before=$(leaks)
check_error "no credential socket: CreateWorker with a secret is refused" org.sandboxd1.Error.StartFailed root \
    CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted Environment as 1 A=1
check_output "no credential socket: the error names the socket" 'credentials\.sock' echo "$BUS_ERRMSG"
check_eq "no credential socket: nothing of the refused worker exists" "$leaks_before" "$(leaks)"
unharmed "no credential socket" "$T" "$S" "$U"

# ---- the end: everything stopped, nothing left ---------------------------------------
for id in "$T" "$S" "$U" "$E"; do
    attach_stop "$id"
    ct sandboxctl stop "$id" >/dev/null
done
if wait_until 60 no_leaks; then ok "the end: nothing left behind"; else not_ok "the end: nothing left behind" "$(leaks)"; fi
tap_done
