#!/bin/bash
# The attack suite, section quota-disk (issue 22, item 5): a worker fills its
# home and its /tmp, and the host must lose no more than the worker's cap:
# the writes fail with ENOSPC at about the cap, the file system under /var
# drops by at most that much, and another worker, root and journald still
# write. The caps are made small ([Defaults] DiskMax=64M) because the test
# bed's file system is memory (--volatile=overlay), and a worker writes less
# than its MemoryMax (256M): without a disk of its own, what it writes into
# that memory would be charged to it and end it before anything is measured.
#
#   quota-disk.sh LEADER_PID STAGE_DIR     (tests/run-all.sh runs it)
#   quota-disk.sh --list                   prints the table for README.md
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

# This section's own table (lib-attacks.sh's is integration.sh's).
QUOTA_DISK_ATTACKS='
quota-disk-home|trusted,standard|a worker without DiskMax writes 160 MiB of zeros into its home (head -c)|ENOSPC at the default cap (64M here): between 48 and 64 MiB written
quota-disk-tmp|trusted,standard|a worker writes 160 MiB of zeros into its /tmp|ENOSPC at no more than the cap: at most 64 MiB written
quota-disk-host|trusted,standard|both of those workers full at once|the file system under /var lost at most the two caps (plus 16 MiB of metadata)
quota-disk-others|trusted,standard|while they are full: another worker writes 1 MiB into its home, root writes 1 MiB under /var, a line is logged|all three work
quota-disk-control|trusted,standard|(control) a worker writes 16 MiB into its home and into its /tmp|both writes succeed in full
quota-disk-trusted-diskmax|trusted|a trusted worker with DiskMax=8M writes 16 MiB into its home|accepted (no longer refused by the gate); ENOSPC at 8 MiB
quota-disk-resume|standard|a worker writes 1 MiB, is suspended and resumed, then fills its home|the 1 MiB is still there and the resumed worker stops at its cap with ENOSPC
quota-disk-restart|trusted|sandboxd restarts while a worker runs; the worker then fills its home|the re-adopted worker still stops at its cap with ENOSPC
quota-disk-total|trusted|with Disk:TotalMax=96M, a second worker of DiskMax=64M beside one of 64M|refused with org.sandboxd1.Error.LimitOutOfRange naming TotalMax; the first was accepted
quota-disk-reload|trusted,standard|a worker writes 1 MiB into its home, the host runs systemctl daemon-reload (as any package install does), the worker is stopped|its disk unit stops cleanly and its home and image are gone: nothing is left to fill the host
quota-disk-sibling|trusted|through the mount root of the disks (/var/lib/sandboxd/disks/ID), a worker reads files in the home and /tmp of a sibling, lists the disks and plants a file in the /tmp of the sibling|EACCES: nothing read, listed or planted; root reads both files there (the control)
'
atk_load_table "$QUOTA_DISK_ATTACKS"
if [ "${1:-}" = --list ]; then
    atk_list | sed '1s/^| attack |/| attack (quota-disk.sh) |/'
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's quota-disk table is what --list prints" \
    diff <(bash "$0" --list) <(sed -n '/^| attack (quota-disk.sh) |/,/^$/p' "$HERE/README.md" | sed '/^$/d')

CONF=/etc/sandboxd/sandboxd.conf
MiB=$((1 << 20))
CAP=$((64 * MiB))
CLASSES="trusted standard"

cleanup() {
    ct sh -c "sandboxctl list --no-legend 2>/dev/null | awk '{print \$1}' | xargs -r -n1 sandboxctl stop
              [ -f $CONF.sbx-quota ] && mv $CONF.sbx-quota $CONF; rm -f /var/tmp/sbx-quota
              systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# CONFIG: sandboxd.conf's text. A build that refuses it (the old one knew no
# DiskMax default) runs with its own defaults instead, said in a diag.
set_config() {
    ct sh -c "[ -f $CONF.sbx-quota ] || cp -a $CONF $CONF.sbx-quota 2>/dev/null || : > $CONF.sbx-quota"
    printf '%s\n' "$1" | ct sh -c "cat > $CONF"
    ct systemctl restart sandboxd
    if ! wait_until 60 ct systemctl is-active -q sandboxd; then
        diag "sandboxd refused this configuration; running with the original one:" "$1"
        ct sh -c "cp -a $CONF.sbx-quota $CONF; systemctl restart sandboxd"
        wait_until 60 ct systemctl is-active -q sandboxd
    fi
    sbx_settled
}

# The free bytes under /var: that of the homes' file system, plus that of the
# disks' where it is another one (the test bed gives them a tmpfs of their own).
var_free() {
    ct sh -c 'a=$(df -B1 --output=avail /var/lib/private/sandboxd | tail -n1)
              b=$(df -B1 --output=avail /var/lib/private/sandboxd/disks | tail -n1)
              if [ ! -d /var/lib/private/sandboxd/disks ] ||
                 [ "$(stat -c %d /var/lib/private/sandboxd)" = "$(stat -c %d /var/lib/private/sandboxd/disks)" ]
              then echo $a; else echo $((a + b)); fi'
}

# FILL: a worker script that fills $1 (a directory) with head -c, then leaves
# head's exit status, the file's size and its error in its home and waits.
# A block is kept aside first, so that a full file system still takes them.
fill_script() {
    printf '%s' 'head -c 4096 /dev/zero > "$HOME/.pad"; f="'"$1"'/fill"
head -c 160M /dev/zero > "$f" 2> "$HOME/.err"; rc=$?; sync
rm -f "$HOME/.pad"; size=$(stat -c %s "$f")
printf "%s %s %s\n" "$rc" "$size" "$(head -c 200 "$HOME/.err" | tr "\n" " ")" > "$HOME/result"
exec sleep 600'
}
result_of() { sbx_home_cat "$1" result; }
has_result() { [ -n "$(result_of "$1")" ]; }
create() { ct timeout 120 sandboxctl create "$@" 2>&1; }
stop_worker() { ct sandboxctl stop "$1" >/dev/null 2>&1; wait_until 60 unit_gone "sandbox-$1.service"; }

# atk_fill ID CLASS WORKER MIN MAX: the worker's head failed with ENOSPC after
# writing between MIN and MAX bytes.
atk_fill() {
    local id=$1 class=$2 w=$3 min=$4 max=$5 res rc size
    if ! wait_until 180 has_result "$w"; then
        atk_not_ok "$id" "$class" "worker $w left no result: $(ct sandboxctl status "$w" 2>&1 | head -n 5)"
        return
    fi
    res=$(result_of "$w")
    read -r rc size _ <<<"$res"
    if [ "$rc" != 0 ] && grep -q 'No space left' <<<"$res" && [ "$size" -ge "$min" ] && [ "$size" -le "$max" ]; then
        atk_ok "$id" "$class"
    else
        atk_not_ok "$id" "$class" "head's status, bytes written, error: $res" "wanted ENOSPC after $min-$max bytes"
    fi
}

set_config "[Defaults]
DiskMax=64M"

for class in $CLASSES; do
    free_before=$(var_free)
    home_w=$(create --class "$class" -- /bin/sh -c "$(fill_script '$HOME')")
    tmp_w=$(create --class "$class" -- /bin/sh -c "$(fill_script /tmp)")
    diag "$class: home filler $home_w, /tmp filler $tmp_w, free before: $free_before"
    atk_fill quota-disk-home "$class" "$home_w" $((48 * MiB)) "$CAP"
    atk_fill quota-disk-tmp "$class" "$tmp_w" 0 "$CAP"
    free_after=$(var_free)
    drop=$((free_before - free_after))
    if [ "$drop" -le $((2 * CAP + 16 * MiB)) ]; then
        atk_ok quota-disk-host "$class"
    else
        atk_not_ok quota-disk-host "$class" "free bytes before $free_before, after $free_after: $drop lost"
    fi

    # Nothing else harmed while both are full.
    other=$(ct timeout 120 sandboxctl run --class "$class" -- /bin/sh -c \
        'head -c 1M /dev/zero > "$HOME/x" && echo wrote-$(stat -c %s "$HOME/x")' 2>&1)
    root=$(ct sh -c 'head -c 1M /dev/zero > /var/tmp/sbx-quota && stat -c %s /var/tmp/sbx-quota; rm -f /var/tmp/sbx-quota' 2>&1)
    marker="sbx-quota-$class-$RANDOM$RANDOM"
    ct logger -t sbx-quota "$marker"
    if grep -q "wrote-$MiB" <<<"$other" && [ "$root" = "$MiB" ] && journal_has "$marker" -t sbx-quota; then
        atk_ok quota-disk-others "$class"
    else
        atk_not_ok quota-disk-others "$class" "another worker: $other" "root: $root" \
            "journal: $(journal -t sbx-quota | tail -n 2)"
    fi
    stop_worker "$home_w"
    stop_worker "$tmp_w"

    out=$(ct timeout 120 sandboxctl run --class "$class" -- /bin/sh -c \
        'head -c 16M /dev/zero > "$HOME/ok" && head -c 16M /dev/zero > /tmp/ok && stat -c %s "$HOME/ok" /tmp/ok' 2>&1)
    if [ "$(grep -c "^$((16 * MiB))\$" <<<"$out")" = 2 ]; then
        atk_ok quota-disk-control "$class"
    else
        atk_not_ok quota-disk-control "$class" "output: $out"
    fi
done

out=$(ct timeout 120 sandboxctl run --class trusted --disk 8M -- /bin/sh -c \
    'head -c 16M /dev/zero > "$HOME/f"; echo "status $? size $(stat -c %s "$HOME/f")"' 2>&1)
if grep -q 'No space left' <<<"$out" && grep -Eq "size ([0-9]+)" <<<"$out" &&
    [ "$(sed -n 's/.*size \([0-9]*\).*/\1/p' <<<"$out")" -le $((8 * MiB)) ]; then
    atk_ok quota-disk-trusted-diskmax trusted
else
    atk_not_ok quota-disk-trusted-diskmax trusted "output: $out"
fi

# Suspend and resume: the home (its image) is kept, and so is the cap.
w=$(create --class standard -- /bin/sh -c 'head -c 1M /dev/zero > "$HOME/kept"; while [ ! -e "$HOME/go" ]; do sleep 0.2; done; '"$(fill_script '$HOME')")
wait_until 60 ct test -s "$(sbx_home "$w")/kept"
suspended=$(sbx_call SuspendWorker s "$w" 2>&1 && state_of "$w")
resumed=$(sbx_call ResumeWorker s "$w" 2>&1 && state_of "$w")
ct sh -c "touch $(sbx_home "$w")/go"
kept=$(ct stat -c %s "$(sbx_home "$w")/kept" 2>&1)
diag "resume: worker $w, after suspend: $suspended, after resume: $resumed, kept: $kept"
if [ "$kept" = "$MiB" ] && [ "${suspended##*$'\n'}" = suspended ]; then
    atk_fill quota-disk-resume standard "$w" $((48 * MiB)) "$CAP"
else
    atk_not_ok quota-disk-resume standard "suspend: $suspended" "resume: $resumed" "kept: $kept"
fi
stop_worker "$w"

# A daemon-reload reads every transient unit back from its file: the disk
# unit's stop must still work after it (systemd 252 mangled an inline
# script's "$" there, and every home and image stayed behind). Before the
# restart below sets Disk:TotalMax=96M, which the warm pool's disks and one
# worker's fill: a worker made while the last one's disk is still counted
# would be refused.
for class in $CLASSES; do
    w=$(create --class "$class" -- /bin/sh -c 'head -c 1048576 /dev/zero > "$HOME/written"; exec sleep 600')
    wait_until 60 ct test -s "$(sbx_home "$w")/written"
    ct systemctl daemon-reload
    stop_worker "$w"
    disk_gone() { ! ct test -e "/var/lib/private/sandboxd/disks/$1" && ! ct test -e "$SBX_DISK_MOUNT_ROOT/$1" && home_absent "$1"; }
    wait_until 60 disk_gone "$w"
    atk_result quota-disk-reload "$class" \
        "$(disk_gone "$w" || echo "worker $w: its disk or home is still there: $(ct ls -la "/var/lib/private/sandboxd/disks/$w" 2>&1 | head -n 4)")" \
        "$(ct journalctl -q -u "sandbox-$w-disk.service" --no-pager | grep -E "Failed with result|Syntax error" | head -n 3)"
done

# A restart (and a new configuration) while a worker waits to fill its home.
w=$(create --class trusted -- /bin/sh -c 'while [ ! -e "$HOME/go" ]; do sleep 0.2; done; '"$(fill_script '$HOME')")
wait_until 60 ct test -d "$SBX_STATE_LINK_ROOT/$w/"
set_config "[Defaults]
DiskMax=64M
[Limits]
DiskMax=64M
[Disk]
TotalMax=96M"
ct sh -c "touch $(sbx_home "$w")/go"
diag "restart: worker $w, state $(state_of "$w")"
atk_fill quota-disk-restart trusted "$w" $((48 * MiB)) "$CAP"
stop_worker "$w"

# The total: the pool is off for this part (it holds default-sized disks).
set_config "[Defaults]
DiskMax=64M
[Limits]
DiskMax=64M
[Disk]
TotalMax=96M
[Pool]
StandardSize=0
UntrustedSize=0"
first=$(create --class trusted --disk 64M -- /bin/sleep 600)
second=$(create --class trusted --disk 64M -- /bin/sleep 600)
diag "first: $first" "second: $second"
if ct sandboxctl status "$first" >/dev/null 2>&1 && grep -q 'LimitOutOfRange' <<<"$second" &&
    grep -q 'TotalMax' <<<"$second"; then
    atk_ok quota-disk-total trusted
else
    atk_not_ok quota-disk-total trusted "first: $first" "second: $second"
fi
stop_worker "$first"
grep -Eq '^[0-9a-f]{12}$' <<<"$second" && stop_worker "$second"

# The disks' mounts (daemon/shared/worker-disk-layout.h): a disk is one mount
# under the 0700 mount root; a gVisor worker's home is bound from it only in
# its launcher's namespace, a trusted worker's only in its unit's (BindPaths=).
# systemd unmounts everything under /var/lib/private in every unit it starts,
# one mount at a time, so no worker puts anything there.
set_config "[Defaults]
DiskMax=16M
[Pool]
StandardSize=0
UntrustedSize=0"
under_private() { ct awk -v id="$1" 'index($5, "/var/lib/private/") == 1 && index($5, id) { n++ } END { print n + 0 }' /proc/self/mountinfo; }
disk_mounts() { ct awk -v p="$SBX_DISK_MOUNT_ROOT/$1" '$5 == p { n++ } END { print n + 0 }' /proc/self/mountinfo; }
std=$(create --class standard -- /bin/sh -c 'echo std-home > "$HOME/mine"; exec sleep 600')
sib=$(create --class trusted -- /bin/sh -c 'echo sib-home > "$HOME/mine"; echo sib-tmp > /tmp/mine; exec sleep 600')
check "standard and trusted workers with disks wrote their files" \
    wait_until 60 sh -c "nsenter -t $CT_PID -a grep -q std-home $SBX_DISK_MOUNT_ROOT/$std/home/mine &&
                         nsenter -t $CT_PID -a grep -q sib-tmp $SBX_DISK_MOUNT_ROOT/$sib/tmp/mine"
check_eq "standard: its disk is one mount, under $SBX_DISK_MOUNT_ROOT" 1 "$(disk_mounts "$std")"
check_eq "standard: ... and nothing of it is mounted under /var/lib/private" 0 "$(under_private "$std")"
check_eq "trusted: its disk is one mount, under $SBX_DISK_MOUNT_ROOT" 1 "$(disk_mounts "$sib")"
check_eq "trusted: ... and nothing of it is mounted under /var/lib/private (its unit binds the home)" 0 \
    "$(under_private "$sib")"
check_eq "the mount root is root's, 0700" "0 700" "$(ct stat -c '%u %a' "$SBX_DISK_MOUNT_ROOT")"
check_eq "root reads the sibling's home and /tmp files there (the attack's control)" "sib-home sib-tmp" \
    "$(ct cat "$SBX_DISK_MOUNT_ROOT/$sib/home/mine" "$SBX_DISK_MOUNT_ROOT/$sib/tmp/mine" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
out=$(ct timeout 120 sandboxctl run --class trusted -- /bin/sh -c "
    cat $SBX_DISK_MOUNT_ROOT/$sib/home/mine $SBX_DISK_MOUNT_ROOT/$sib/tmp/mine; ls -A $SBX_DISK_MOUNT_ROOT
    echo planted > $SBX_DISK_MOUNT_ROOT/$sib/tmp/planted; cat /tmp/mine 2>/dev/null; echo done" 2>&1)
# Nothing read (sib-home, sib-tmp) and nothing listed (a line that is an ID).
if grep -q done <<<"$out" && ! grep -q -e sib-home -e sib-tmp <<<"$out" && ! grep -qx -e "$sib" -e "$std" <<<"$out" &&
    [ "$(grep -c 'Permission denied' <<<"$out")" -ge 3 ] &&
    ! ct test -e "$SBX_DISK_MOUNT_ROOT/$sib/tmp/planted"; then
    atk_ok quota-disk-sibling trusted
else
    atk_not_ok quota-disk-sibling trusted "the attacker's output: $out"
fi
stop_worker "$std"
stop_worker "$sib"

atk_coverage
tap_done
