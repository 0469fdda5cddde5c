#!/usr/bin/env bash
# The Debian package on a fresh test-bed container, the way an operator
# meets it (issue 10): `apt install ./sandboxd_*.deb` gives an enabled,
# running, bus-activatable service whose CLI runs a worker; the man pages and
# the completion are installed and work; an upgrade restarts sandboxd, which
# re-adopts the running workers (a stop would end them); remove stops
# the workers and keeps the configuration; purge leaves nothing of sandboxd.
#
#   integration.sh LEADER_PID STAGE_DIR   (tests/run-all.sh runs it)
#
# STAGE_DIR/debs holds the package (the container sees it under
# /run/stage/debs). The line below asks run-all for a container where it is
# not installed yet, so the file list before the first install can be taken.
# testbed: install=none
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"
STAGE=${2:?usage: $0 LEADER_PID STAGE_DIR}
W=/run/pkg-it
MAN_PAGES="man8/sandboxd.8 man1/sandboxctl.1 man5/sandboxd.conf.5 man8/sandbox-egress.8 man5/org.sandboxd1.5"

deb=$(cd "$STAGE/debs" && ls sandboxd_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || { echo "Bail out! no sandboxd_*.deb in $STAGE/debs"; exit 1; }
version=$(dpkg-deb -f "$STAGE/debs/$deb" Version)

# What is on the system, by path, with the noise that is no package's own
# left out: kernel and device trees, the read-only stage, the journal (the
# daemon's log lines are the journal's, rotated by it) and apt's and dpkg's
# own bookkeeping (package lists, archives, the status database: dpkg
# forgets a purged package there itself), and the private /dev that systemd
# builds under /tmp while it sets up a unit's namespaces (namespace-dev-*),
# which a unit starting just then shows for a moment.
file_list() {
    ct find / \( -path /proc -o -path /sys -o -path /dev -o -path /run/stage -o -path /var/log/journal \
        -o -path /var/cache/apt -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path '/tmp/namespace-dev-*' \) \
        -prune -o -print | sort
}
apt_in() { ct env DEBIAN_FRONTEND=noninteractive apt-get -q -y "$@"; }
installed_version() { ct dpkg-query -W -f='${Status} ${Version}' sandboxd 2>/dev/null; }
main_pid() { unit_prop sandboxd.service MainPID; }
home_exists() { ct test -d "$SBX_STATE_LINK_ROOT/$1/"; }
worker_active() { [ "$(unit_prop "sandbox-$1.service" ActiveState)" = active ]; }

file_list >"$TAP_TMP/before"
check_eq "the fresh container has no sandboxd installed" "" "$(installed_version)"

# ---- install ----------------------------------------------------------------
check "apt install ./$deb (no network: the rootfs has every dependency)" \
    ct sh -c "cd /run/stage/debs && DEBIAN_FRONTEND=noninteractive apt-get -q -y install ./$deb"
check_output "dpkg has sandboxd $version installed" "^install ok installed $version\$" installed_version
check_output "sandboxd.service is enabled (wipe-on-boot runs at boot)" '^enabled$' ct systemctl is-enabled sandboxd.service
check_output "the install started sandboxd.service" '^active$' ct systemctl is-active sandboxd.service
check_output "/etc/sandboxd/sandboxd.conf is a conffile" '^ /etc/sandboxd/sandboxd.conf [0-9a-f]{32}$' \
    ct dpkg-query -W -f='${Conffiles}\n' sandboxd
docs_missing=
for unit in sandboxd.service sandbox.slice; do
    for url in $(unit_prop "$unit" Documentation); do
        case $url in file://*) ct test -e "${url#file://}" || docs_missing="$docs_missing $unit:$url" ;; esac
    done
done
if [ -z "$docs_missing" ]; then ok "the units' Documentation= files are installed"; else not_ok "the units' Documentation= files are installed" "missing:$docs_missing"; fi
ct systemctl stop sandboxd.service
check_eq "stopped, sandboxd.service is inactive" inactive "$(ct systemctl is-active sandboxd.service)"
check "a bus call to org.sandboxd1 activates it again" sbx_mgr_prop Version
check_output "and sandboxd.service is active after it" '^active$' ct systemctl is-active sandboxd.service
check_output "sandboxctl run -- /bin/sh -c id works as root" '^uid=[0-9]+' ct timeout 120 sandboxctl run -- /bin/sh -c id

# ---- man pages and completion (the docs' part of the package) ---------------
shipped=$(ct dpkg -L sandboxd)
missing=
for page in $MAN_PAGES; do
    grep -Eqx "/usr/share/man/$page(\\.gz)?" <<<"$shipped" || missing="$missing $page"
done
if [ -z "$missing" ]; then ok "the package ships the five man pages"; else not_ok "the package ships the five man pages" "missing:$missing"; fi
# As a plain user, who reads sandboxctl(1) most (and whose man, unlike
# root's, leaves no formatted copy in man-db's cache that purge would see).
check_output "man -w sandboxctl finds the page" '^/usr/share/man/man1/sandboxctl\.1(\.gz)?$' as_tester man -w sandboxctl
check_output "man sandboxctl renders it" 'sandboxctl' as_tester env MANPAGER=cat MANWIDTH=80 man sandboxctl
check_output "bash-completion loads the completion of sandboxctl" '^complete .* sandboxctl$' \
    ct bash -c '. /usr/share/bash-completion/bash_completion && __load_completion sandboxctl && complete -p sandboxctl'

# ---- upgrade keeps running workers -------------------------------------------
# The next version of the same package: only the version differs, which is
# what an upgrade's maintainer scripts see.
new_version=${version%-*}-$((${version##*-} + 1))
mkdir -p "$TAP_TMP/deb"
dpkg-deb -R "$STAGE/debs/$deb" "$TAP_TMP/deb/tree"
sed -i "s/^Version: .*/Version: $new_version/" "$TAP_TMP/deb/tree/DEBIAN/control"
new_deb=sandboxd_${new_version}_$(dpkg-deb -f "$STAGE/debs/$deb" Architecture).deb
dpkg-deb --root-owner-group -b "$TAP_TMP/deb/tree" "$TAP_TMP/deb/$new_deb" >/dev/null
ct mkdir -p "$W"
ct sh -c "cat > $W/$new_deb" <"$TAP_TMP/deb/$new_deb"

id=$(ct sandboxctl create --class trusted -- /bin/cat 2>&1)
if [[ $id =~ ^[A-Za-z0-9_-]+$ ]] && wait_until 30 worker_active "$id"; then
    ok "sandboxctl create starts a long-running worker ($id)"
else
    not_ok "sandboxctl create starts a long-running worker" "got: $id"
fi
check "its dynamic user exists while it runs" ct getent passwd "sandbox-$id"
pid_before=$(main_pid)
worker_pid_before=$(unit_prop "sandbox-$id.service" MainPID)
check "apt install ./$new_deb (an upgrade)" ct sh -c "cd $W && DEBIAN_FRONTEND=noninteractive apt-get -q -y install ./$new_deb"
check_output "dpkg has sandboxd $new_version installed" "^install ok installed $new_version\$" installed_version
# The postinst restarts sandboxd (a restart job): the new binary runs and
# re-adopts the worker instead of stopping it.
pid_after=$(main_pid)
if [ -n "$pid_after" ] && [ "$pid_after" != 0 ] && [ "$pid_after" != "$pid_before" ]; then
    ok "the upgrade restarted sandboxd (MainPID $pid_before -> $pid_after)"
else
    not_ok "the upgrade restarted sandboxd" "MainPID before $pid_before, after $pid_after"
fi
check "the worker's unit is still active" worker_active "$id"
check_eq "... with the same process (MainPID)" "$worker_pid_before" "$(unit_prop "sandbox-$id.service" MainPID)"
check "the worker's home still exists" home_exists "$id"
check_output "sandboxctl status still sees the worker running" 'running' ct sandboxctl status "$id"
check_output "sandboxctl attach still talks to the worker" '^ping-after-upgrade$' \
    ct sh -c "printf 'ping-after-upgrade\\n' | timeout 30 sandboxctl attach $id"
ct rm -rf "$W"

# ---- remove stops every worker, keeps the configuration ------------------
# Of the default class (gVisor): a runsc sandbox, its bundle under
# /run/sandboxd and its cleanup unit are what remove and purge must not leave.
id2=$(ct sandboxctl create -- /bin/sleep 1000 2>&1)
if [[ $id2 =~ ^[A-Za-z0-9_-]+$ ]] && wait_until 60 worker_active "$id2" && home_exists "$id2"; then
    ok "a gVisor worker runs before remove ($id2)"
else
    not_ok "a gVisor worker runs before remove" "got: $id2"
fi
check "its runsc sandbox runs" ct pgrep -f "runsc.*$id2"
check "apt remove sandboxd" apt_in remove sandboxd
check_output "dpkg keeps only its configuration" '^deinstall ok config-files ' installed_version
check "the worker's unit is gone" unit_gone "sandbox-$id2.service"
check "the worker's home is gone" home_absent "$id2"
check_fails "no runsc sandbox is left" ct pgrep -f runsc
check_eq "no sandbox-* unit is left running" "" "$(ct systemctl list-units --state=active --plain --no-legend 'sandbox-*')"
check "/etc/sandboxd/sandboxd.conf is kept" ct test -s /etc/sandboxd/sandboxd.conf

# ---- purge leaves nothing ------------------------------------------------------
check "apt purge sandboxd" apt_in purge sandboxd
check_eq "dpkg no longer knows sandboxd" "" "$(installed_version)"
# A unit PID 1 is still setting up has a /tmp/namespace-dev-* of systemd's
# own: list the files once no job is left (seen in CI).
no_jobs() { [ -z "$(ct systemctl list-jobs --no-legend 2>/dev/null)" ]; }
wait_until 60 no_jobs || diag "jobs still queued: $(ct systemctl list-jobs --no-legend)"
file_list >"$TAP_TMP/after"
# Two directories of the manager's own stay: it makes them the first time any
# unit is transient or has a DynamicUser=, and they are empty again once the
# workers are gone (a worker's unit file or UID lock left in them still shows).
new_files=$(comm -13 "$TAP_TMP/before" "$TAP_TMP/after" | grep -vx -e /run/systemd/transient -e /run/systemd/dynamic-uid)
if [ -z "$new_files" ]; then
    ok "after purge no file exists that did not before the install"
else
    not_ok "after purge no file exists that did not before the install" "new since before the install:" "$new_files"
fi
gone_files=$(comm -23 "$TAP_TMP/before" "$TAP_TMP/after")
if [ -z "$gone_files" ]; then
    ok "and purge took nothing that was there before the install"
else
    not_ok "and purge took nothing that was there before the install" "gone since before the install:" "$gone_files"
fi
check_eq "systemd knows no sandbox-* unit (workers, proxies, cleanups; loaded or not)" "" "$(sbx_units)"
check_eq "no sandbox* unit file is left" "" "$(ct systemctl list-unit-files --no-legend 'sandbox*')"
# The manager may still remember the name until its next reload (remove's
# daemon-reload ran while purge's enablement links existed), but from no file.
check_output "sandboxd.service loads from no file" '^(not-found)?$' unit_prop sandboxd.service LoadState
check_eq "no sandbox-* dynamic user is left" "" "$(ct getent passwd | grep '^sandbox-')"
for d in /run/sandboxd /var/lib/sandboxd /etc/sandboxd; do
    check_fails "$d is gone" ct test -e "$d"
done
# The test bed mounts a file system of its own for worker disks on
# /var/lib/private/sandboxd/disks (tests/testbed/testbed.sh), as an operator
# may: purge empties it and keeps it, and with it its parent, nothing else.
check_output "/var/lib/private/sandboxd holds nothing but the emptied mount point for disks" '^disks:0$' \
    ct sh -c 'cd /var/lib/private/sandboxd && printf "%s:%s\n" "$(ls -A)" "$(ls -A disks | wc -l)"'
check "... which is a mount point (the test bed's)" ct mountpoint -q /var/lib/private/sandboxd/disks

tap_done
