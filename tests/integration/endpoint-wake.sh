#!/usr/bin/env bash
# Endpoints (issue 25, item 4): a sleeping endpoint wakes on a request. A
# gVisor worker serving Python's http.server behind its gate, with
# IdleAction=suspend, is suspended when idle; while it sleeps sandboxd holds
# its endpoint's socket (the group's, 0660, the EndpointName's link beside
# it), and the next request resumes it and is answered by the handler:
# through the front's group (www-data), by name, several at once. The
# loopback port is not held (sandboxd has no network): refused while asleep,
# back with the worker. Beside them: a plain user cannot use the sleeping
# socket; a caller without the token wakes it but gets the gate's 401 and
# never the handler; a resume that cannot be done answers 503 with its
# reason and the worker sleeps on; a worker without IdleAction=suspend holds
# nothing; a stopped one leaves no socket, link or port; and after a
# restart of sandboxd the endpoint is held again. And a disk whose last
# mount a mount namespace still holds is mounted as that one file system.
# The idle reaper waits for a gate that is starting (one that takes longer
# than the idle timeout, as on a loaded host) and for a request at the
# handler longer than the idle timeout: neither is cut by an idle suspend.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
W=/etc/sbx-endpoint-wake        # readable by the workers
CONF=/etc/sandboxd/sandboxd.conf
PORT_FIRST=20300
IDLE_S=6
TOKEN=sbx-wake-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
IDS=()

DROPIN=/etc/systemd/system/sandboxd.service.d/50-sbx-wake.conf
SLOW_GATE=/run/sbx-slow-gate

cleanup() {
    ct sh -c "for id in ${IDS[*]}; do sandboxctl stop \$id; done; rm -rf $W $DROPIN $SLOW_GATE
              [ -f $CONF.sbx-wake ] && mv $CONF.sbx-wake $CONF; systemctl daemon-reload; systemctl restart sandboxd" \
        >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct mkdir -p "$W"
ct install -d -m 1777 "$W/out"
cat "$SRC/tests/gate/handler.py" > "/proc/$CT_PID/root$W/handler.py"
# runsc as it is, but for checkpoints while /run/sbx-ckretry/fail holds a
# number (suspend-retry.sh's): a checkpoint that fails after the gate drained.
cat "$SRC/tests/integration/suspend-retry/runsc" > "/proc/$CT_PID/root$W/runsc"
ct chmod 0755 "$W/runsc"
ct mkdir -p /run/sbx-ckretry
printf '%s\n' "$TOKEN" > "/proc/$CT_PID/root$W/token"
ct chmod 0600 "$W/token"
# The gate as it is, but for a start of 10 s (past the idle timeout) while
# $SLOW_GATE exists: a gate slow to start on a loaded host, made
# deterministic.
ct sh -c "cat >$W/slow-gate && chmod 755 $W/slow-gate" <<SH
#!/bin/sh
[ -e $SLOW_GATE ] && sleep 10
exec /usr/libexec/sandboxd/sandbox-gate "\$@"
SH
ct sh -c "cp -a $CONF $CONF.sbx-wake 2>/dev/null || : > $CONF.sbx-wake
          printf '[Endpoints]\nPortRange=$PORT_FIRST-$((PORT_FIRST + 9))\n[Isolation]\nRunscPath=$W/runsc\n' > $CONF
          mkdir -p $(dirname $DROPIN)
          printf '[Service]\nEnvironment=SANDBOXD_GATE=$W/slow-gate\n' > $DROPIN
          systemctl daemon-reload; systemctl restart sandboxd"
wait_until 60 ct systemctl is-active -q sandboxd
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
sbx_settled

sock_of() { echo "/run/sandboxd-endpoints/$1.sock"; }
# Requests the handler saw, read while it runs (asleep, its home's disk is
# not mounted).
seen() { sbx_home_cat "$1" seen | wc -l; }
# curl AS-USER ARGS...: the status code; the body in $TAP_TMP/body.
req() {
    local user=$1
    shift
    ct rm -f "$W/out/body"
    ct runuser -u "$user" -- curl -s -m 60 -o "$W/out/body" -w '%{http_code}' "$@"
    ct cat "$W/out/body" > "$TAP_TMP/body" 2>/dev/null
}
bearer=(-H "Authorization: Bearer $TOKEN")
# A standard (gVisor) worker serving handler.py on 8080 behind its gate.
serve() { # NAME IDLE-ACTION [IDLE]
    ct sandboxctl create --class standard --idle "${3:-${IDLE_S}s}" --idle-action "$2" --publish 8080 \
        --publish-token-file "$W/token" --publish-name "$1" -- \
        /bin/sh -c "exec python3 $W/handler.py 8080 \"\$HOME/seen\" 0.0.0.0" 2>&1 | tail -n1
}
answers() { [ "$(ct curl -s -o /dev/null -w '%{http_code}' --unix-socket "$(sock_of "$1")" "${bearer[@]}" \
    http://w/hello)" = 200 ]; }
asleep() { wait_until 120 state_is "$1" suspended; }
# The front's group may hold a socket, as nginx's workers do.
ct id www-data >/dev/null

# ---- a worker that sleeps and wakes ------------------------------------------------
A=$(serve wake-app suspend)
IDS+=("$A")
check_match "a standard worker with --publish, --publish-name wake-app and IdleAction=suspend is created" \
    '^[0-9a-f]{12}$' "$A"
check "its handler answers through its gate" wait_until 90 answers "$A"
PORT=$(ct sandboxctl endpoints --json | python3 -c "
import json, sys, re
for e in json.load(sys.stdin):
    s = json.dumps(e)
    if '$A' in s:
        m = re.search(r'127\.0\.0\.1:(\d+)', s)
        print(m.group(1) if m else '')")
check_match "its gate has a loopback port" '^[0-9]+$' "$PORT"
diag "worker $A, port ${PORT:-none}"

# A mount namespace made while the worker runs keeps a private copy of its
# disk's mount, as a sibling's runsc does, and a process there working in it
# keeps that copy busy: the suspend's unmount (and the removal of the mount
# point, which detaches an idle copy) leaves that file system alive, and the
# wake must mount the same one again, never a second over the same image (two
# ext4 superblocks, each writing back its own view over the other's: the
# handler's lines lost, its file gone).
holder=$(ct sh -c "unshare -m --propagation private sh -c 'cd $SBX_DISK_MOUNT_ROOT/$A/home && exec sleep 600' \
    >/dev/null 2>&1 & echo \$!")
idle_holder=$(ct sh -c 'unshare -m --propagation private sleep 600 >/dev/null 2>&1 & echo $!')
check "both holders have a copy of the disk's mount" wait_until 10 \
    ct sh -c "grep -q ' $SBX_DISK_MOUNT_ROOT/$A ' /proc/$holder/mountinfo /proc/$idle_holder/mountinfo &&
              [ \$(grep -l ' $SBX_DISK_MOUNT_ROOT/$A ' /proc/$holder/mountinfo /proc/$idle_holder/mountinfo | wc -l) = 2 ]"
n=$(seen "$A")
check "idle: it is suspended (IdleAction=suspend)" asleep "$A"
check_output "asleep: its socket is there, 0660 root:www-data, held by sandboxd" '^socket 660 root www-data$' \
    ct stat -c '%F %a %U %G' "$(sock_of "$A")"
check_output "asleep: ... and the EndpointName's link beside it" "^$A\\.sock\$" \
    ct readlink /run/sandboxd-endpoints/wake-app.sock
check_fails "asleep: its loopback port is not held (sandboxd has no network): refused" \
    ct curl -s -m 10 -o /dev/null "http://127.0.0.1:$PORT/hello"
# Attack: a plain user (no group of the front) on the sleeping socket.
out=$(ct runuser -u tester -- curl -s -m 10 -o /dev/null -w '%{http_code}' --unix-socket "$(sock_of "$A")" \
    "${bearer[@]}" http://w/hello 2>&1); rc=$?
check_eq "asleep: tester (not in www-data) cannot connect to the held socket (curl exit 7)" "7 000" "$rc $out"
check_eq "asleep: ... and it did not wake the worker" suspended "$(state_of "$A")"

# The control: the front's user, with the token, through the socket.
t0=$(date +%s%N)
code=$(req www-data --unix-socket "$(sock_of "$A")" "${bearer[@]}" http://w/hello)
t1=$(date +%s%N)
check_eq "wake: www-data's request with the token to the sleeping socket is answered 200" 200 "$code"
check_output "wake: ... by the handler" '^hello$' cat "$TAP_TMP/body"
check_eq "wake: ... which saw it once" "$((n + 1))" "$(seen "$A")"
check_eq "wake: the worker runs again" running "$(state_of "$A")"
check_eq "wake: its disk's image is bound to one loop device, the one still held in a mount namespace" 1 \
    "$(ct losetup -j "/var/lib/private/sandboxd/disks/$A/image" | grep -c .)"
check "wake: ... and the disk's helper said so, in an entry tagged SANDBOXD_WORKER_ID (systemd#2913: journald may miss an exited helper's unit)" \
    journal_has "still held in another mount namespace" SANDBOXD_WORKER_ID="$A"
check_fails "wake: the idle holder's copy was detached by the stop: it holds nothing of the disk" \
    ct grep -q " $SBX_DISK_MOUNT_ROOT/$A " "/proc/$idle_holder/mountinfo"
ct kill "$holder" "$idle_holder"
diag "first request to the suspended endpoint: $(((t1 - t0) / 1000000)) ms"
check "wake: the journal says it was woken by a request" \
    journal_has "Worker woken by a request" "SANDBOXD_WORKER_ID=$A" "SANDBOXD_EVENT=woken"
check_output "wake: the gate's own socket is back in its place (root's, the unit's)" '^socket 660 root www-data$' \
    ct stat -c '%F %a %U %G' "$(sock_of "$A")"

# Awake, the loopback port is the gate's again. On a slow host the checks
# above can outlast the idle timeout: woken again through the socket first.
[ "$(state_of "$A")" = running ] ||
    diag "asleep again before the loopback request: woken by a request ($(req www-data --unix-socket \
        "$(sock_of "$A")" "${bearer[@]}" http://w/hello))"
n=$(seen "$A")
code=$(req tester "${bearer[@]}" "http://127.0.0.1:$PORT/hello")
check_eq "awake: a request with the token to 127.0.0.1:$PORT is answered 200" 200 "$code"
check_eq "awake: ... by the handler" "$((n + 1))" "$(seen "$A")"

# Attack: no token. The wake cannot tell (sandboxd never reads the request),
# but the gate does: 401, the handler untouched.
n=$(seen "$A")
check "idle again: suspended" asleep "$A"
code=$(req www-data --unix-socket "$(sock_of "$A")" http://w/hello)
check_eq "no token: the request that woke it gets the gate's 401" 401 "$code"
check_eq "no token: ... and the handler saw nothing" "$n" "$(seen "$A")"

# Several at once, one of them by name.
n=$(seen "$A")
check "idle again: suspended" asleep "$A"
for i in 1 2 3 4; do
    ct runuser -u www-data -- curl -s -m 60 -o /dev/null -w '%{http_code}\n' --unix-socket "$(sock_of "$A")" \
        "${bearer[@]}" "http://w/hello?$i" > "$TAP_TMP/par.$i" &
done
ct runuser -u www-data -- curl -s -m 60 -o /dev/null -w '%{http_code}\n' \
    --unix-socket /run/sandboxd-endpoints/wake-app.sock "${bearer[@]}" http://w/hello?name > "$TAP_TMP/par.5" &
wait
check_eq "five at once (one by its name's link), all held and answered 200" "200 200 200 200 200" \
    "$(cat "$TAP_TMP"/par.* | xargs)"
check_eq "five at once: the handler saw five" "$((n + 5))" "$(seen "$A")"

# A wake slower than the idle timeout (the restore held IDLE_S + 2 s by the
# test's runsc): the worker's idle clock starts when its resume ends. Before,
# it ran from the resume's start: such a worker was suspended again at once,
# and the request that woke it could be cut (curl's "empty reply", bench/wake.sh
# on a loaded machine).
n=$(seen "$A")
check "idle again: suspended" asleep "$A"
ct sh -c "echo $((IDLE_S + 2)) > /run/sbx-ckretry/slow-restore"
code=$(req www-data --unix-socket "$(sock_of "$A")" "${bearer[@]}" http://w/hello)
ct rm -f /run/sbx-ckretry/slow-restore
check_eq "slow wake (restore $((IDLE_S + 2)) s, idle ${IDLE_S} s): the request is answered 200" 200 "$code"
check_eq "slow wake: ... by the handler" "$((n + 1))" "$(seen "$A")"
sleep 2
check_eq "slow wake: 2 s on it still runs (the idle clock started at the resume's end)" running "$(state_of "$A")"

# A resume that cannot be done: its image's marker gone.
check "idle again: suspended" asleep "$A"
ct rm -f "/var/lib/sandboxd/suspend/$A/sandboxd-uid"
wakes() { ct journalctl -o cat SANDBOXD_WORKER_ID="$A" SANDBOXD_EVENT=wake | grep -c .; }
w0=$(wakes)
code=$(req www-data --unix-socket "$(sock_of "$A")" "${bearer[@]}" http://w/hello)
check_eq "no image: the request gets 503" 503 "$code"
check_output "no image: ... saying why" "^worker $A did not wake: .*image" cat "$TAP_TMP/body"
check_eq "no image: the worker is still suspended" suspended "$(state_of "$A")"
# A caller right after gets the same reason without another resume.
code=$(req www-data --unix-socket "$(sock_of "$A")" "${bearer[@]}" http://w/hello)
check_eq "no image, again within 10 s: 503 at once" 503 "$code"
check_output "no image, again: ... with the same reason" "^worker $A did not wake: .*image" cat "$TAP_TMP/body"
check_eq "no image: the first request tried a resume, the second did not (one 'wake' for two)" 1 \
    "$(($(wakes) - w0))"
ct sandboxctl stop "$A" >/dev/null 2>&1
check "stopped asleep: its socket goes" wait_until 30 ct test ! -e "$(sock_of "$A")"
check "stopped asleep: ... its name's link" ct test ! -L /run/sandboxd-endpoints/wake-app.sock

# ---- a checkpoint drains the gate first ------------------------------------------
# Before a checkpoint the gate's socket goes (sandboxd holds the endpoint
# from then on) and the gate answers what is under way, then ends: no
# request is cut by the suspend, and none reaches the sandbox while runsc
# saves it. Suspended by hand here (a long idle timeout).
# journalctl 252 finds nothing after a cursor once a second field is matched
# (SANDBOXD_EVENT=...): the checks after one match the worker and the text.
cursor() { ct journalctl -n0 --show-cursor | sed -n 's/^-- cursor: //p'; }
D=$(serve drain-app suspend 600s)
IDS+=("$D")
check "drain: a fourth worker answers" wait_until 90 answers "$D"
n=$(seen "$D")
ct rm -f "$W/out/slow" "$W/out/held"
ct runuser -u www-data -- curl -s -m 60 -o "$W/out/slow" -w '%{http_code}' --unix-socket "$(sock_of "$D")" \
    "${bearer[@]}" 'http://w/slow?s=5' > "$TAP_TMP/slow" & slow=$!
seen_more() { [ "$(seen "$D")" -gt "$n" ]; }
wait_until 30 seen_more
cur=$(cursor)
ct sandboxctl suspend "$D" > "$TAP_TMP/suspend" 2>&1 & susp=$!
check "drain: once the gate's socket is gone, sandboxd holds the endpoint (the slow request still under way)" \
    journal_has 'Holding the endpoint' --after-cursor="$cur" SANDBOXD_WORKER_ID="$D"
check_fails "drain: ... the request under way is not answered yet" test -s "$TAP_TMP/slow"
# A request while the gate drains and runsc saves the sandbox: held.
ct runuser -u www-data -- curl -s -m 60 -o "$W/out/held" -w '%{http_code}' --unix-socket "$(sock_of "$D")" \
    "${bearer[@]}" 'http://w/hello?held' > "$TAP_TMP/held" & held=$!
wait "$slow"
check_eq "drain: the request under way when the suspend was asked for is answered 200" 200 "$(cat "$TAP_TMP/slow")"
check_output "drain: ... whole, by the handler" '^slow$' ct cat "$W/out/slow"
wait "$susp"; rc=$?
check_eq "drain: the suspend succeeded" 0 "$rc"
wait "$held"
check_eq "drain: the request that came during the suspend was held, and answered 200 once it woke" 200 \
    "$(cat "$TAP_TMP/held")"
check_output "drain: ... by the handler" '^hello$' ct cat "$W/out/held"
check "drain: ... which woke it" journal_has 'Worker woken by a request' --after-cursor="$cur" SANDBOXD_WORKER_ID="$D"
# --cursor, and the cursor's own entry passed over here: journalctl 252's
# --after-cursor with a match steps over the first matching entry after the
# cursor's (here the drain's own, when the cursor's entry is not this worker's).
order=$(journal -o json --cursor="$cur" SANDBOXD_WORKER_ID="$D" | python3 -c '
import json, sys
first = {}
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("__CURSOR") == sys.argv[1]:
        continue
    m, ev = e.get("MESSAGE", ""), e.get("SANDBOXD_EVENT", "")
    key = "slow-answered" if "GET /slow -> 200" in m else ev
    first.setdefault(key, int(e["__REALTIME_TIMESTAMP"]))
print(" ".join(k for k, _ in sorted(first.items(), key=lambda kv: kv[1])
               if k in ("gate-drain", "wake-hold", "slow-answered", "suspending", "suspended")))' "$cur")
check_eq "drain: in the journal: the drain, the hold, the slow answer, and only then the checkpoint" \
    "gate-drain wake-hold slow-answered suspending suspended" "$order"

# Attack: callers hammering the endpoint through a suspend. None of their
# requests is cut, and the checkpoint never meets one of them. A connect in
# the milliseconds between PID 1's unlink of the socket file and sandboxd's
# bind is refused (curl 7) before a byte is sent: counted, allowed.
ct rm -f /run/sbx-flood-stop
for j in 1 2 3; do
    ct runuser -u www-data -- sh -c "while [ ! -e /run/sbx-flood-stop ]; do
        c=\$(curl -s -m 60 -o /dev/null -w '%{http_code}' --unix-socket $(sock_of "$D") \
            -H 'Authorization: Bearer $TOKEN' http://w/hello?flood); echo \"\$c/\$?\"; done" > "$TAP_TMP/flood.$j" &
done
wait_until 30 test -s "$TAP_TMP/flood.1"
cur=$(cursor)
ct sandboxctl suspend "$D" > "$TAP_TMP/suspend" 2>&1; rc=$?
check_eq "flood: the worker is suspended while three callers keep asking" 0 "$rc"
check "flood: ... and woken by them" journal_has 'Worker woken by a request' --after-cursor="$cur" SANDBOXD_WORKER_ID="$D"
sleep 1
ct touch /run/sbx-flood-stop
wait
codes=$(cat "$TAP_TMP"/flood.* | sort | uniq -c | awk '{print $2 "x" $1}' | xargs)
diag "flood: $codes"
check_match "flood: every request sent was answered 200 (none cut; a refused connect at most)" \
    '^(000/7x[0-9]+ )?200/0x[0-9]+$' "$codes"
failed_ck=$(journal -q -o cat --cursor="$cur" SANDBOXD_WORKER_ID="$D" | grep 'Failed to suspend')
check_eq "flood: no checkpoint of it failed" "" "$failed_ck"
if [ -n "$failed_ck" ] || [ -z "$(grep -E '^(000/7x[0-9]+ )?200/0x[0-9]+$' <<<"$codes")" ]; then
    journal -o short-monotonic --after-cursor="$cur" | grep -v -e 'gate: GET' -e 'kernel:' | tail -n 60 | sed 's/^/#   /'
fi
check "flood: it answers after" answers "$D"

# A checkpoint that fails after the gate drained: the worker runs on, and
# so does its endpoint, the gate made again.
ct sh -c 'echo 3 > /run/sbx-ckretry/fail'
cur=$(cursor)
ct sandboxctl suspend "$D" > "$TAP_TMP/suspend" 2>&1; rc=$?
check "failed checkpoint: the suspend fails" test "$rc" -ne 0
check_output "failed checkpoint: ... saying so" 'checkpoint' cat "$TAP_TMP/suspend"
check_eq "failed checkpoint: the worker runs on" running "$(state_of "$D")"
check "failed checkpoint: its gate's socket unit is there again" \
    wait_until 30 ct systemctl is-active -q "sandbox-$D-gate.socket"
check "failed checkpoint: its endpoint answers 200" answers "$D"
ct rm -f /run/sbx-ckretry/fail
ct sandboxctl stop "$D" >/dev/null 2>&1

# ---- the controls: who holds nothing, and a restart --------------------------------
B=$(serve plain-app stop)
IDS+=("$B")
wait_until 90 answers "$B"
ct sandboxctl suspend "$B" >/dev/null 2>&1
check "IdleAction=stop, suspended by hand: suspended" asleep "$B"
check "IdleAction=stop: sandboxd holds no socket for it (a request finds none, as before)" \
    ct test ! -e "$(sock_of "$B")"
ct sandboxctl stop "$B" >/dev/null 2>&1

C=$(serve restart-app suspend)
IDS+=("$C")
wait_until 90 answers "$C"
n=$(seen "$C")
check "restart: a third worker is suspended" asleep "$C"
ct systemctl restart sandboxd
wait_until 60 ct systemctl is-active -q sandboxd
check_output "restart: sandboxd holds its socket again" '^socket 660 root www-data$' \
    ct stat -c '%F %a %U %G' "$(sock_of "$C")"
code=$(req www-data --unix-socket "$(sock_of "$C")" "${bearer[@]}" http://w/hello)
check_eq "restart: a request wakes it: 200" 200 "$code"
check_eq "restart: ... from the handler" "$((n + 1))" "$(seen "$C")"
ct sandboxctl stop "$C" >/dev/null 2>&1

# ---- the idle reaper waits for a gate that starts and a request under way -------------
# A request that starts a gate (or wakes the worker) counts from when the gate
# takes it; one the handler takes longer over than the idle timeout keeps
# the worker running: neither is cut or answered only by a suspend's drain.
ct touch "$SLOW_GATE"
E=$(serve slow-gate-app suspend)
IDS+=("$E")
check_match "slow gate: a fifth worker, its gate not started yet" '^[0-9a-f]{12}$' "$E"
t0=$(date +%s)
code=$(req www-data --unix-socket "$(sock_of "$E")" "${bearer[@]}" http://w/hello)
waited=$(( $(date +%s) - t0 ))
diag "slow gate: answered after ${waited} s"
check_eq "slow gate: the request that started a gate taking 10 s (idle timeout ${IDLE_S} s) is answered 200" \
    200 "$code"
check_output "slow gate: ... by the handler" '^hello$' cat "$TAP_TMP/body"
check "slow gate: ... and the worker still runs (no idle suspend while its gate started)" state_is "$E" running
n=$(seen "$E")
check "slow gate: idle after it, the worker is suspended (the control: the reaper still reaps)" asleep "$E"
code=$(req www-data --unix-socket "$(sock_of "$E")" "${bearer[@]}" http://w/hello)
check_eq "slow gate: a request that wakes it, its gate taking 10 s, is answered 200" 200 "$code"
check_eq "slow gate: ... from the handler" "$((n + 1))" "$(seen "$E")"
ct rm -f "$SLOW_GATE"
cur=$(ct journalctl -n0 --show-cursor -q | sed -n 's/^-- cursor: //p')
code=$(req www-data --unix-socket "$(sock_of "$E")" "${bearer[@]}" "http://w/slow?s=$((IDLE_S + 3))")
check_eq "slow request: one the handler answers in $((IDLE_S + 3)) s (past the idle timeout) is answered 200" \
    200 "$code"
check "slow request: ... and the worker still runs" state_is "$E" running
check_fails "slow request: ... never taken for idle meanwhile" \
    _journal_match "Worker idle for too long" --after-cursor="$cur" SANDBOXD_WORKER_ID="$E"
check "slow request: idle after it, the worker is suspended (the control)" asleep "$E"
ct sandboxctl stop "$E" >/dev/null 2>&1
IDS=()
tap_done
