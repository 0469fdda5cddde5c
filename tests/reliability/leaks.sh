#!/bin/sh
# What a worker may leave behind, counted INSIDE the test bed (as root), one
# line per kind: "KIND COUNT ITEM..." (ITEMs cut to the first 10). Nothing
# outlives a worker, so after a churn every COUNT must be 0 (fdstore: the
# stdio ends sandboxd keeps in systemd's fd store, 3 per live worker).
#   leaks.sh        (tests/reliability/integration.sh and bench/churn.sh copy it in)
# shellcheck disable=SC2010,SC2012  # the entries are sandboxd's own worker IDs and runsc's names for them
set -u

# The warm pool's waiting sandboxes are there by design (README, "Warm pool"):
# everything named by one of their IDs is left out of every count.
waiting=$(systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*.service' |
    awk '/sandboxd pool sandbox/ { print substr($1, 9, 12) }')
unwaiting() { if [ -n "$waiting" ]; then grep -v -F -e "$waiting"; else cat; fi; }

line() {
    kind=$1
    shift
    items=$(unwaiting)
    if [ -z "$items" ]; then
        echo "$kind 0"
    else
        echo "$kind $(printf '%s\n' "$items" | wc -l) $(printf '%s\n' "$items" | head -n 10 | tr '\n' ' ')"
    fi
}

# A disk unit whose worker is gone is still unmounting (it stops once
# unneeded): waited for, 30 s at most; one that never goes is counted.
orphan_disks() {
    systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*' |
        awk '{ u[$1] = 1 } END { for (n in u) if (n ~ /-disk\.service$/ && !((substr(n, 1, 20) ".service") in u)) print n }'
}
i=0
while [ -n "$(orphan_disks)" ] && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
units=$(systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*' | awk '{print $1}' | grep -v '^sandbox-probe-')
printf '%s\n' "$units" | grep -v -e '-egress\.' -e '^$' | line units
printf '%s\n' "$units" | grep -e '-egress\.' | line proxy-units
ls -A /var/lib/private/sandboxd/workers /var/lib/sandboxd/workers 2>/dev/null | grep -v -e '^$' -e ':$' | line homes
ls -A /run/sandboxd/bundles 2>/dev/null | line bundles
ls -A /run/sandboxd/runsc 2>/dev/null | line runsc-state
ls -A /run/sandboxd/workers 2>/dev/null | line state-files
{ ls /run/systemd/dynamic-uid 2>/dev/null | grep '^direct:sandbox-'; getent passwd | cut -d: -f1 | grep '^sandbox-'; } |
    sort -u | line dynamic-users
n=$(systemctl show -P NFileDescriptorStore sandboxd.service)
if [ "${n:-0}" = 0 ]; then echo "fdstore 0"; else echo "fdstore $n"; fi
