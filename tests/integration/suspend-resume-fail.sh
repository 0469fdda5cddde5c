#!/usr/bin/env bash
# A resume that fails before the restored sandbox runs keeps the worker
# suspended, with its image and home (worker-resume.h). The failure is a real
# one of the launcher's restore: the image's marker is made to name another
# UID than the resumed unit's, so launch_restore_check refuses it and
# "sandbox-launch run --restore=yes" exits 125 before runsc starts. ResumeWorker
# answers StartFailed saying the worker is still suspended; the unit is gone,
# the image and home stay, the state file says suspended, resume-failed is
# logged with its reason and the count in a row; a second failure does the
# same; a restart of sandboxd finds it suspended; with the marker put back the
# next Resume restores it and it counts on from where it was. Then runsc's own
# restore fails once (sandboxd's RunscPath is a wrapper of the real runsc,
# tests/integration/suspend-resume-fail/runsc, that fails one restore before
# any sandbox exists, exit status 128): kept suspended the same way, and the
# next Resume works. Then sandboxd restarts while a (slow) restore is under
# way: the resuming unit is stopped, the worker stays suspended with its
# image, and resumes. Last, a worker whose resume failed is stopped: its image
# and home go as for any suspended one.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

IMAGES=/var/lib/sandboxd/suspend
STATES=/run/sandboxd/workers
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CONF=/etc/sandboxd/sandboxd.conf
T=/etc/sbx-resumefail           # the wrapper, root's
SW=/run/sbx-resumefail          # its switch and its count of restores
COUNTER=$SBX_COUNTER_PY

unit_active() { [ "$(ct systemctl is-active "sandbox-$1.service" 2>/dev/null)" = active ]; }
has_output() { [ -n "$(read_numbers "$1" 500 | tail -n1)" ]; }
counts_on_from() {
    local first
    first=$(read_numbers "$1" 1500 | head -n1)
    diag "$1: last before the suspend $2, first after the resume $first"
    # It counts on (5 a second) until the checkpoint, which waits for the UID
    # keeper first: seconds on a loaded host.
    [ -n "$first" ] && [ "$first" -gt "$2" ] && [ "$first" -le $(($2 + 40)) ]
}
cursor() { ct journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p'; }
# FIELD of each resume-failed entry of worker $1 since cursor $2, one a line.
failed_since() {
    ct journalctl --sync
    ct journalctl --cursor="$2" -o cat --output-fields="$3" SANDBOXD_WORKER_ID="$1" SANDBOXD_EVENT=resume-failed
}
image_whole() { ct test -s "$IMAGES/$1/sandboxd-uid" && ct test -s "$IMAGES/$1/checkpoint.img"; }
home_there() { ct test -d "$SBX_STATE_ROOT/$1"; }
saved_suspended() { ct grep -qx 'suspended=yes' "$STATES/$1"; }
break_marker() { ct sh -c "cp -p $IMAGES/$1/sandboxd-uid /run/sbx-marker-$1 && echo 1 > $IMAGES/$1/sandboxd-uid"; }
mend_marker() { ct sh -c "cp -p /run/sbx-marker-$1 $IMAGES/$1/sandboxd-uid && rm -f /run/sbx-marker-$1"; }

cleanup() {
    ct sh -c "[ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $T $SW; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT
restores() { ct sh -c "cat $SW/restores 2>/dev/null | wc -l"; }

ct mkdir -p "$T" "$SW"
cat "$SRC/tests/integration/suspend-resume-fail/runsc" > "/proc/$CT_PID/root$T/runsc"
ct chmod 0755 "$T/runsc"
ct cp "$CONF" "$CONF.orig"
ct sh -c "printf '[Isolation]\nRunscPath=$T/runsc\n' > $CONF"
ct systemctl restart sandboxd.service

WID=$(ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER")
diag "worker $WID"
check "the worker runs and prints its count" wait_until 60 has_output "$WID"
uid=$(sbx_prop "$WID" UID | awk '{print $NF}')
last=$(read_numbers "$WID" 1000 | tail -n1)
check "SuspendWorker suspends it" sbx_call SuspendWorker s "$WID"
check_eq "it is suspended" suspended "$(state_of "$WID")"
check "its image is complete" image_whole "$WID"
check "its state file says suspended" saved_suspended "$WID"

# ---- the launcher refuses the image: the resume fails, the worker stays ------------
break_marker "$WID"
cur=$(cursor)
check_error "ResumeWorker answers StartFailed when the restore fails" \
    org.sandboxd1.Error.StartFailed root ResumeWorker s "$WID"
check_output "the message says it is still suspended and can be resumed or stopped" \
    'still suspended.*Resume it again, or Stop it' echo "$BUS_ERRMSG"
check_eq "the worker is suspended again" suspended "$(state_of "$WID")"
check_output "sandboxctl list shows it suspended" "^$WID +standard +suspended" ct sandboxctl list --no-legend
check "the resumed unit is gone" unit_gone "sandbox-$WID.service"
check "its image is still there, whole" image_whole "$WID"
check "its home is still there" home_there "$WID"
check "its state file says suspended" saved_suspended "$WID"
check_output "resume-failed is logged, attempt 1" '^1$' failed_since "$WID" "$cur" SANDBOXD_ATTEMPT
check_output "with the launcher's refusal as its reason" 'could not restore the sandbox' \
    failed_since "$WID" "$cur" SANDBOXD_REASON

# ---- again: nothing loops, each Resume tries once --------------------------------------
check_error "a second Resume fails the same way" org.sandboxd1.Error.StartFailed root ResumeWorker s "$WID"
check_eq "still suspended" suspended "$(state_of "$WID")"
check_eq "resume-failed is logged for attempts 1 and 2" "1 2" "$(failed_since "$WID" "$cur" SANDBOXD_ATTEMPT | xargs)"
check "the image is still whole" image_whole "$WID"

# ---- the same bookkeeping as a plain suspended worker: a restart keeps it --------------
ct systemctl restart sandboxd.service
check_eq "after a restart of sandboxd it is listed as suspended" suspended "$(state_of "$WID")"
check "and its image is still there" image_whole "$WID"

# ---- mended: the next Resume restores it -----------------------------------------------
mend_marker "$WID"
check "with its image mended, ResumeWorker restores it" sbx_call ResumeWorker s "$WID"
check_eq "it runs" running "$(state_of "$WID")"
check "in its unit" unit_active "$WID"
check_eq "with the same UID" "$uid" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
check "it counts on from where it was" counts_on_from "$WID" "$last"
check "the image went once the sandbox ran" wait_until 30 sh -c "! nsenter -t $CT_PID -a test -e $IMAGES/$WID"

# ---- runsc's restore fails once: kept suspended, and the next Resume works ------------
last=$(read_numbers "$WID" 1000 | tail -n1)
check "SuspendWorker suspends it again" sbx_call SuspendWorker s "$WID"
ct sh -c ": > $SW/restores; touch $SW/fail-restore"
cur=$(cursor)
check_error "ResumeWorker answers StartFailed when runsc's restore fails" \
    org.sandboxd1.Error.StartFailed root ResumeWorker s "$WID"
check_eq "runsc was asked to restore once" 1 "$(restores)"
check_eq "the worker is suspended again" suspended "$(state_of "$WID")"
check "the resumed unit is gone" unit_gone "sandbox-$WID.service"
check "its image is still whole" image_whole "$WID"
check "its home is still there" home_there "$WID"
check_output "resume-failed gives runsc's exit status as the reason" 'restore exited 128' \
    failed_since "$WID" "$cur" SANDBOXD_REASON
check "the next ResumeWorker restores it" sbx_call ResumeWorker s "$WID"
check_eq "runsc was asked again" 2 "$(restores)"
check_eq "it runs" running "$(state_of "$WID")"
check "it counts on from where it was" counts_on_from "$WID" "$last"

# ---- sandboxd restarts in the middle of a resume ------------------------------------
# Its record says suspended until the resume is done; the resumed unit, still
# restoring, must not run on unmanaged: it is stopped, and the image, still
# whole, keeps the worker suspended for the next resume.
last=$(read_numbers "$WID" 1000 | tail -n1)
check "restart: SuspendWorker suspends it" sbx_call SuspendWorker s "$WID"
ct sh -c "echo 15 > $SW/slow-restore"
ct busctl --system --timeout=60 call "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" ResumeWorker s "$WID" >/dev/null 2>&1 &
bg=$!
check "restart: the resume is under way" wait_until 20 state_is "$WID" resuming
check "restart: its unit is starting" wait_until 20 sh -c \
    "[ \"\$(nsenter -t $CT_PID -a systemctl is-active sandbox-$WID.service)\" = activating ]"
check "restart: sandboxd restarts meanwhile" ct systemctl restart sandboxd.service
wait "$bg" 2>/dev/null
ct rm -f "$SW/slow-restore"
check "restart: the resuming unit was stopped" wait_until 30 unit_gone "sandbox-$WID.service"
check_eq "restart: the worker is suspended" suspended "$(state_of "$WID")"
check "restart: its image is still whole" image_whole "$WID"
check "restart: its home is still there" home_there "$WID"
check_output "restart: sandboxd logged the interrupted resume" . sh -c \
    "nsenter -t $CT_PID -a journalctl --sync; nsenter -t $CT_PID -a journalctl -o cat SANDBOXD_WORKER_ID=$WID SANDBOXD_EVENT=resume-interrupted"
check "restart: the next ResumeWorker restores it" sbx_call ResumeWorker s "$WID"
check "restart: it counts on from where it was" counts_on_from "$WID" "$last"

# ---- a worker whose resume failed is stopped: image and home go ------------------------
check "SuspendWorker suspends it again" sbx_call SuspendWorker s "$WID"
break_marker "$WID"
check_error "its resume fails again" org.sandboxd1.Error.StartFailed root ResumeWorker s "$WID"
check_eq "suspended" suspended "$(state_of "$WID")"
check "StopWorker stops it" sbx_call StopWorker s "$WID"
check "it ended" wait_until 30 state_is "$WID" ended
check_fails "its image is gone" ct test -e "$IMAGES/$WID"
check "its home is gone" wait_until 20 home_absent "$WID"
ct rm -f "/run/sbx-marker-$WID"

tap_done
