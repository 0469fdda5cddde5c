#!/usr/bin/env bash
# The test bed itself: the container runs a real systemd that can do what
# sandboxd relies on (DynamicUser, transient units, a working loopback in
# PrivateNetwork units, credentials), so a failure elsewhere is sandboxd's.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

check_output "PID 1 in the container is systemd" '^systemd$' ct cat /proc/1/comm
check_output "the system finished booting" '^(running|degraded)$' ct systemctl is-system-running
check "the system bus answers" ct busctl --system status org.freedesktop.DBus

uid=$(ct systemd-run --wait --pipe -q -p DynamicUser=yes id -u 2>&1)
if [[ $uid =~ ^[0-9]+$ ]] && [ "$uid" -ge $DYNAMIC_UID_MIN ] && [ "$uid" -le $DYNAMIC_UID_MAX ]; then
    ok "a DynamicUser unit runs as a UID in $DYNAMIC_UID_MIN-$DYNAMIC_UID_MAX ($uid)"
else
    not_ok "a DynamicUser unit runs as a UID in $DYNAMIC_UID_MIN-$DYNAMIC_UID_MAX" "got: $uid"
fi

check_output "loopback works inside a PrivateNetwork unit" 'inet 127\.0\.0\.1' \
    ct systemd-run --wait --pipe -q -p PrivateNetwork=yes ip -4 addr show dev lo up

ct sh -c 'umask 077; printf s3cr3t >/run/selfcheck-cred'
check_output "LoadCredential delivers a root-only file to a DynamicUser unit" '^s3cr3t$' \
    ct systemd-run --wait --pipe -q -p DynamicUser=yes -p LoadCredential=tok:/run/selfcheck-cred \
    sh -c 'cat "$CREDENTIALS_DIRECTORY/tok"; echo'

check_output "the plain user tester exists" '^1500$' ct id -u tester
check_fails "tester is not root" as_tester test -r /etc/shadow
check "runsc is installed" ct test -x /usr/bin/runsc

tap_done
