#!/usr/bin/env bash
# A failed checkpoint whose sandbox runs on is tried again (ckretry). runsc
# 0.0~20240729 now and then fails to save a busy sandbox on its own network
# stack and leaves it running; here sandboxd's RunscPath is a wrapper of the
# real runsc (tests/integration/suspend-retry/runsc) that makes the first N
# checkpoints fail that way, each leaving part of an image behind. One failure:
# the suspend succeeds at the second attempt, logged as suspend-retry, and the
# image holds nothing of the failed one. Three failures: SuspendFailed after
# three attempts, the worker runs on with no image left, and suspends once
# runsc does again. A failure that took the sandbox with it is not retried.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CONF=/etc/sandboxd/sandboxd.conf
IMAGES=/var/lib/sandboxd/suspend
T=/etc/sbx-ckretry              # the wrapper, root's
SW=/run/sbx-ckretry             # its switches and its count of checkpoint calls
COUNTER=$SBX_COUNTER_PY

cleanup() {
    ct sh -c "[ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $T $SW; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

unit_active() { [ "$(ct systemctl is-active "sandbox-$1.service" 2>/dev/null)" = active ]; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }
calls() { ct sh -c "cat $SW/calls 2>/dev/null | wc -l"; }
# Arms the wrapper: the next N checkpoints fail; KILL=1 kills the sandbox first.
arm() {
    ct sh -c "echo $1 > $SW/fail; : > $SW/calls; rm -f $SW/kill; [ '${2:-0}' = 1 ] && touch $SW/kill; true"
}
cursor() { ct journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p'; }
# The SANDBOXD_ATTEMPT of each suspend-retry entry of worker $1 since cursor $2,
# on one line. --cursor, not --after-cursor: journalctl 252 with matches skips
# the first matching entry after the cursor (the entry at a cursor taken
# before is not one of the worker's).
retries_since() {
    ct journalctl --sync
    ct journalctl --cursor="$2" -o cat --output-fields=SANDBOXD_ATTEMPT SANDBOXD_WORKER_ID="$1" \
        SANDBOXD_EVENT=suspend-retry | xargs
}
# Between a failed attempt and the next the sandbox runs on (the launcher
# resumes it, watches it for a second, backs off and waits for its TCP
# handshakes to end before it pauses it again: launch-suspend.c), about 3 s
# of counting at 5 a second on a loaded machine; a restart would start at 1.
counts_on_from() {
    local first
    first=$(read_numbers "$1" 1500 | head -n1)
    diag "$1: last before the suspend $2, first after the resume $first"
    # It counts on (5 a second) until the checkpoint, which waits for the UID
    # keeper first: seconds on a loaded host.
    [ -n "$first" ] && [ "$first" -gt "$2" ] && [ "$first" -le $(($2 + 40)) ]
}

ct mkdir -p "$T" "$SW"
cat "$SRC/tests/integration/suspend-retry/runsc" > "/proc/$CT_PID/root$T/runsc"
ct chmod 0755 "$T/runsc"
ct cp "$CONF" "$CONF.orig"
ct sh -c "printf '[Isolation]\nRunscPath=$T/runsc\n' > $CONF"
ct systemctl restart sandboxd.service

WID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER")
diag "worker $WID"
check "the worker runs under the wrapper and prints its count" wait_until 60 has_output "$WID"
uid=$(sbx_prop "$WID" UID | awk '{print $NF}')

# ---- one failure: the second attempt saves it -------------------------------------
arm 1
cur=$(cursor)
last=$(read_numbers "$WID" 1000 | tail -n1)
if sbx_call SuspendWorker s "$WID"; then
    ok "once: SuspendWorker succeeds though the first checkpoint failed"
else
    not_ok "once: SuspendWorker succeeds though the first checkpoint failed" "$BUS_ERROR $BUS_ERRMSG"
fi
check_eq "once: the worker is suspended" suspended "$(state_of "$WID")"
check_eq "once: runsc was asked to checkpoint twice" 2 "$(calls)"
check_eq "once: the second attempt was logged as suspend-retry, attempt 2" 2 "$(retries_since "$WID" "$cur")"
check_fails "once: nothing the failed attempt wrote is in the image" ct test -e "$IMAGES/$WID/sbx-ckretry-partial"
check "once: the image is complete (its marker)" ct test -s "$IMAGES/$WID/sandboxd-uid"
check_output "once: its checkpoint.img is runsc's, not the failed attempt's" '^[0-9]{4,}$' \
    ct stat -c %s "$IMAGES/$WID/checkpoint.img"
check "once: ResumeWorker restores it" sbx_call ResumeWorker s "$WID"
check "once: running in its unit again" unit_active "$WID"
check_eq "once: with the same UID" "$uid" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
check "once: it counts on from where it was" counts_on_from "$WID" "$last"

# ---- every attempt fails: SuspendFailed, and the worker runs on -----------------------
arm 3
cur=$(cursor)
check_error "three: SuspendWorker answers SuspendFailed when all three attempts fail" \
    org.sandboxd1.Error.SuspendFailed root SuspendWorker s "$WID"
check_output "three: the message says runsc is tried 3 times" 'tried up to 3 times' echo "$BUS_ERRMSG"
check_eq "three: runsc was asked three times" 3 "$(calls)"
check_eq "three: attempts 2 and 3 were logged as suspend-retry" "2 3" "$(retries_since "$WID" "$cur")"
check_eq "three: the worker runs on" running "$(state_of "$WID")"
check "three: in its unit" unit_active "$WID"
check_fails "three: no image is left" ct test -e "$IMAGES/$WID"
last=$(read_numbers "$WID" 1000 | tail -n1)
check_output "three: it still counts" '^[0-9]+$' echo "$last"
arm 0
check "three: once runsc saves again, the suspend succeeds" sbx_call SuspendWorker s "$WID"
check_eq "three: runsc was asked once" 1 "$(calls)"
check "three: and the worker resumes" sbx_call ResumeWorker s "$WID"
check "three: counting on" counts_on_from "$WID" "$last"

# ---- a failure that took the sandbox with it: no retry ----------------------------------
arm 1 1
cur=$(cursor)
check_error "gone: SuspendWorker answers SuspendFailed" org.sandboxd1.Error.SuspendFailed root SuspendWorker s "$WID"
check_eq "gone: runsc was asked once, not again" 1 "$(calls)"
check_eq "gone: no suspend-retry was logged" "" "$(retries_since "$WID" "$cur")"
check "gone: the worker ended" wait_until 30 state_is "$WID" ended
check_fails "gone: no image is left" ct test -e "$IMAGES/$WID"
check "gone: its home is gone" wait_until 20 home_absent "$WID"

tap_done
