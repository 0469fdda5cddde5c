#!/usr/bin/env bash
# Suspend and resume of gVisor workers (issue 13): a Python process holding a
# counter in memory is checkpointed (its unit gone, its memory released,
# measured), restored in a new unit with the same identity, and counts on from
# where it was; IdleAction=suspend makes the reaper suspend, and the next
# attach resumes; images are 0600 in a 0700 root-only directory and go on
# resume and on stop; shared-kernel workers get NotSupported.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
IMAGES=/var/lib/sandboxd/suspend
# Holds MiB of touched memory (argument 1), then prints 1, 2, 3, ... every 0.2 s.
COUNTER='import sys, time
buf = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(buf), 4096): buf[i] = 1
i = 0
while True:
    i += 1
    print(i, flush=True)
    time.sleep(0.2)'

unit_active() { [ "$(ct systemctl is-active "sandbox-$1.service" 2>/dev/null)" = active ]; }
slice_memory() { ct cat /sys/fs/cgroup/memory/sandbox.slice/memory.usage_in_bytes 2>/dev/null || echo 0; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }

ct systemctl start sandboxd.service

# ---- suspend, measured ---------------------------------------------------------
WID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER" 50)
diag "worker $WID"
wait_until 60 has_output "$WID"
before=$(read_numbers "$WID" 1500)
last=$(printf '%s\n' "$before" | tail -n1)
uid_before=$(sbx_prop "$WID" UID | awk '{print $NF}')
walls() {
    ct systemctl show -p MemoryMax -p TasksMax -p CPUQuotaPerSecUSec -p DynamicUser -p User -p PrivateNetwork \
        -p PrivateIPC -p PrivateTmp -p ProtectSystem -p NoNewPrivileges -p CapabilityBoundingSet -p SystemCallFilter \
        -p RestrictAddressFamilies -p StateDirectory -p StateDirectoryMode -p Slice "sandbox-$1.service"
}
walls_before=$(walls "$WID")
mem_unit=$(ct systemctl show -P MemoryCurrent "sandbox-$WID.service")
mem_slice_before=$(slice_memory)
diag "before: last=$last unit MemoryCurrent=$mem_unit sandbox.slice=$mem_slice_before uid=$uid_before"
if [ "$mem_unit" -gt $((40 << 20)) ] 2>/dev/null; then
    ok "the running worker's unit holds its 50 MiB ($mem_unit bytes)"
else
    not_ok "the running worker's unit holds its 50 MiB" "MemoryCurrent=$mem_unit"
fi

check "SuspendWorker answers once the worker is suspended" sbx_call SuspendWorker s "$WID"
check_eq "the worker is listed as suspended" suspended "$(state_of "$WID")"
check_output "sandboxctl list shows it" "^$WID +standard +suspended" ct sandboxctl list --no-legend
check "its unit is gone" unit_gone "sandbox-$WID.service"
check_fails "its cgroup is gone" ct test -d "/sys/fs/cgroup/memory/sandbox.slice/sandbox-$WID.service"
mem_after=$(ct systemctl show -P MemoryCurrent "sandbox-$WID.service")
# The sentry writes the image itself: on the test bed's tmpfs-backed overlay
# those pages are memory, charged on to sandbox.slice once the unit's cgroup
# is gone; on a disk they are page cache.
diag "after suspend: unit MemoryCurrent=$mem_after sandbox.slice=$(slice_memory)"
case $mem_after in
    ''|'[not set]'|0) ok "its memory is released: MemoryCurrent $mem_unit -> ${mem_after:-none}" ;;
    *) not_ok "its memory is released" "MemoryCurrent after suspend: $mem_after" ;;
esac
check_fails "no process of its sandbox is left" ct pgrep -f "sandbox-$WID( |\$)"
check "its home is kept" ct test -d "$SBX_STATE_ROOT/$WID"
check_output "the image directory is root's and 0700" '^700 root root$' ct stat -c '%a %U %G' "$IMAGES/$WID"
check_output "the image root is root's and 0700" '^700 root root$' ct stat -c '%a %U %G' "$IMAGES"
check "the image has runsc's checkpoint" ct test -s "$IMAGES/$WID/checkpoint.img"
# The checkpoint's three files and the marker, none of them other than 0600 root.
check_output "every image file is 0600 and root's" '^0600 root checkpoint.img,0600 root pages.img,0600 root pages_meta.img,0600 root sandboxd-uid,$' \
    sh -c "nsenter -t $CT_PID -a find '$IMAGES/$WID' -type f -printf '%#m %u %f\n' | sort | tr '\n' ,"
diag "image bytes: $(ct du -sb "$IMAGES/$WID" | cut -f1)"
check_error "a second suspend of a suspended worker is refused" org.sandboxd1.Error.Suspended root SuspendWorker s "$WID"

# ---- resume --------------------------------------------------------------------
check "ResumeWorker answers once it runs" sbx_call ResumeWorker s "$WID"
check_eq "running again" running "$(state_of "$WID")"
check "in a unit of the same name" unit_active "$WID"
check_eq "under the same caps and walls (systemctl show of the unit)" "$walls_before" "$(walls "$WID")"
check_eq "with the same UID" "$uid_before" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
check_output "its home is still that UID's" "^$uid_before\$" ct stat -c %u "$SBX_STATE_ROOT/$WID"
image_gone() { ! ct test -e "$IMAGES/$WID"; }
check "the image is deleted on resume" wait_until 20 image_gone
after=$(read_numbers "$WID" 1500)
first=$(printf '%s\n' "$after" | head -n1)
diag "after resume: first=$first (last before suspend: $last)"
# It counts on (5 a second) until the checkpoint, which waits for the UID
# keeper first: seconds on a loaded host.
if [ -n "$first" ] && [ -n "$last" ] && [ "$first" -gt "$last" ] && [ "$first" -le $((last + 40)) ]; then
    ok "the process counts on from where it was ($last -> $first), it did not start over"
else
    not_ok "the process counts on from where it was" "last=$last first=$first"
fi

# ---- stop of a suspended worker --------------------------------------------------
check "suspended again" sbx_call SuspendWorker s "$WID"
check "stop of a suspended worker" sbx_call StopWorker s "$WID"
check "it ended" wait_until 10 state_is "$WID" ended
check_output "as stopped" '^stopped$' sbx_prop "$WID" Result
check_fails "its image is gone" ct test -e "$IMAGES/$WID"
check "its home is gone" home_absent "$WID"

# ---- the image cap ----------------------------------------------------------------
CONF=/etc/sandboxd/sandboxd.conf
ct cp "$CONF" "$CONF.orig"
ct sh -c "printf '[Limits]\nSuspendImageMax=16M\n' > $CONF"
ct systemctl restart sandboxd.service
CID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER" 50)
wait_until 60 has_output "$CID"
check_error "cap: a worker above SuspendImageMax is refused" org.sandboxd1.Error.SuspendFailed root SuspendWorker s "$CID"
check_eq "cap: and runs on" running "$(state_of "$CID")"
check "cap: in its unit" unit_active "$CID"
check_fails "cap: no image is left" ct test -e "$IMAGES/$CID"
cap_logged() { ct journalctl --sync; ct journalctl -o cat SANDBOXD_WORKER_ID="$CID" | grep -q 'more than the image cap'; }
check "cap: the journal says why" cap_logged
ct sandboxctl stop "$CID" >/dev/null
ct mv "$CONF.orig" "$CONF"
ct systemctl restart sandboxd.service

# ---- shared kernel: NotSupported -------------------------------------------------
TID=$(ct sandboxctl create --class trusted -- /bin/sleep 300)
check_error "a trusted worker cannot be suspended" org.sandboxd1.Error.NotSupported root SuspendWorker s "$TID"
check_output "the message says why" 'shared kernel' echo "$BUS_ERRMSG"
check_eq "and it runs on" running "$(state_of "$TID")"
out=$(ct sandboxctl suspend "$TID" 2>&1)
check_output "sandboxctl suspend names the error" 'org.sandboxd1.Error.NotSupported' echo "$out"
ct sandboxctl stop "$TID" >/dev/null
# The stop is answered as the unit goes; its home goes just after.
wait_until 30 unit_gone "sandbox-$TID.service"
wait_until 30 home_absent "$TID"
# Its disk unit unmounts after its own unit is gone: count from a steady state.
sbx_settled
before_units=$(sbx_units)
before_state=$(sbx_state_entries)
check_error "IdleAction=suspend on a trusted worker is refused at creation" org.sandboxd1.Error.NotSupported \
    root CreateWorker 'a{sv}' 3 Argv as 1 /bin/true Class s trusted IdleAction s suspend
check_eq "and creates no unit" "$before_units" "$(sbx_units)"
check_eq "and no home" "$before_state" "$(sbx_state_entries)"
check_error "an IdleAction that is not stop or suspend is refused" org.sandboxd1.Error.InvalidSpec \
    root CreateWorker 'a{sv}' 2 Argv as 1 /bin/true IdleAction s sleep
# (A gVisor worker with egress or Services can be: tests/integration/suspend-egress.sh.)

# ---- a restart of sandboxd keeps a suspended worker; a boot loses it ------------------
RID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER" 4)
wait_until 60 has_output "$RID"
last=$(read_numbers "$RID" 1000 | tail -n1)
check "restart: suspended" sbx_call SuspendWorker s "$RID"
check "restart: sandboxd restarts" ct systemctl restart sandboxd.service
check_eq "restart: the worker is still listed as suspended" suspended "$(state_of "$RID")"
check "restart: its image is kept" ct test -e "$IMAGES/$RID/checkpoint.img"
check "restart: its home is kept" ct test -d "$SBX_STATE_ROOT/$RID"
check "restart: and it resumes" sbx_call ResumeWorker s "$RID"
first=$(read_numbers "$RID" 1500 | head -n1)
diag "restart: last=$last first=$first"
if [ -n "$first" ] && [ -n "$last" ] && [ "$first" -gt "$last" ]; then
    ok "restart: the resumed process counts on ($last -> $first)"
else
    not_ok "restart: the resumed process counts on" "last=$last first=$first"
fi
check "boot: suspended again" sbx_call SuspendWorker s "$RID"
ct sh -c "echo 00000000000000000000000000000000 >/run/sandboxd/boot-id"
check "boot: restart with another recorded boot ID" ct systemctl restart sandboxd.service
check_fails "boot: the suspended worker is gone" sbx_prop "$RID" State
check_output "boot: no image is left" '^$' ct ls -A "$IMAGES"
check "boot: its home is wiped" home_absent "$RID"

# ---- IdleAction=suspend: the reaper suspends, attach resumes ------------------------
# Idle means no byte on the channel: this one counts in memory, quietly,
# and answers each line of input with the count.
QUIET='import sys, threading, time
n = [0]
def count():
    while True:
        n[0] += 1
        time.sleep(0.1)
threading.Thread(target=count, daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    print(n[0], flush=True)
while True:
    time.sleep(1)'
IID=$(ct sandboxctl create --class standard --idle 2s --idle-action suspend -- /usr/bin/python3 -c "$QUIET")
diag "idle worker $IID"
ready() { ct timeout 30 "$CHANNEL" read "$1" 1000 2>/dev/null | grep -q ready; }
wait_until 60 ready "$IID"
check "the reaper suspends an idle IdleAction=suspend worker" wait_until 40 state_is "$IID" suspended
check "its unit is gone" unit_gone "sandbox-$IID.service"
out=$(printf 'count?\n' | ct timeout 30 sandboxctl attach "$IID" 2>/dev/null | grep -E '^[0-9]+$' | head -n1)
diag "attach: $out"
resumed_logged() { ct journalctl --sync; ct journalctl -o cat SANDBOXD_WORKER_ID="$IID" SANDBOXD_EVENT=resumed | grep -q 'Worker resumed'; }
check "sandboxd logged its resume" resumed_logged
# Counting started at least the 2 s idle timeout before the suspend.
if [ -n "$out" ] && [ "$out" -ge 10 ]; then
    ok "sandboxctl attach resumes it, and its in-memory count went on ($out)"
else
    not_ok "sandboxctl attach resumes it, and its in-memory count went on" "answer after attach: '$out'"
fi
check "quiet again, the reaper suspends it again" wait_until 40 state_is "$IID" suspended
ct sandboxctl stop "$IID" >/dev/null 2>&1

tap_done
