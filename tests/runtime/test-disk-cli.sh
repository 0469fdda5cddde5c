#!/usr/bin/env bash
# sandbox-disk's contract without a unit (daemon/runtime/README.md,
# "sandbox-disk"): setup makes, mounts and binds a capped disk, again without
# harm, its mount point in a 0700 root; with "-" for the home it binds nothing
# (a launcher does, in its own namespace); stop takes it all away, or keeps a
# marked image with its home handed to the disk home's owner; a failed setup
# leaves nothing mounted and a stop after it cleans up; bad arguments are 2. Needs root and loop devices: the
# checks are skipped without them.
DISK=${1:?usage: test-disk-cli.sh PATH-TO-sandbox-disk}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
MKFS=$(command -v mkfs.ext4 || echo /sbin/mkfs.ext4)

out=$("$DISK" setup 2>&1); rc=$?
check_exit "setup without its arguments: usage" 2 '^usage: sandbox-disk' "$rc" "$out"
out=$("$DISK" frobnicate a b 2>&1); rc=$?
check_exit "an unknown verb: usage" 2 '^usage: sandbox-disk' "$rc" "$out"
out=$("$DISK" setup /nonexistent/d /nonexistent/m /nonexistent/h 12x "$MKFS" 2>&1); rc=$?
check_exit "a size that is no number is refused, nothing made" 2 "SIZE must be a number of bytes, got '12x'" "$rc" "$out"
check_fails "... and nothing was made" test -e /nonexistent/d

if [ "$(id -u)" != 0 ] || [ ! -w /dev/loop-control ] || [ ! -x "$MKFS" ]; then
    skip "setup and stop need root, /dev/loop-control and mkfs.ext4"
    tap_done
fi
T=$(mktemp -d)
trap 'umount -l "$H" "$M" "$T/mnt/w2" "$T/workers/w3" "$T/disks/w3/d/fs" 2>/dev/null; rm -rf "$T"' EXIT
D=$T/disks/w1/d M=$T/mnt/w1 H=$T/workers/w1
mounted() { mountpoint -q "$1"; }
# A mount root some earlier hand made 0755: setup makes it 0700.
mkdir -m 0755 "$T/mnt"

out=$("$DISK" setup "$D" "$M" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup: made, mounted, bound" 0 '' "$rc" "$out"
check "the image is a 32 MiB sparse file, 0600" test "$(stat -c '%s %a' "$D/image")" = "33554432 600"
check_fails "no image.new is left" test -e "$D/image.new"
check "the image is mounted on its mount point" mounted "$M"
check_fails "... not in the image's directory" mounted "$D/fs"
check_output "... as ext4 through a loop device, nosuid, nodev, noatime, exec" \
    '^/dev/loop[0-9]+ +ext4 +[^ ]*nosuid,nodev,noatime' sh -c "findmnt -n -o SOURCE,FSTYPE,OPTIONS '$M' | grep -v noexec"
check "its home is bound on the home" mounted "$H"
check_eq "the home, the disk's directory, the mount root and the file system's root are 0700" "700 700 700 700" \
    "$(stat -c %a "$H") $(stat -c %a "$D") $(stat -c %a "$T/mnt") $(stat -c %a "$M")"
check_eq "... the home's and the image's missing parents 0755, as mkdir -p makes them" "755 755" \
    "$(stat -c %a "$T/disks/w1") $(stat -c %a "$T/workers")"
check_eq "its tmp is 1777" 1777 "$(stat -c %a "$M/tmp")"
check_output "the file system is labelled sandboxd-disk" '^sandboxd-disk$' \
    sh -c "blkid -o value -s LABEL \$(findmnt -n -o SOURCE '$M')"
# The cap: a write into the home stops at the disk's size with ENOSPC.
out=$(dd if=/dev/zero of="$H/fill" bs=1M count=64 2>&1); rc=$?
check_exit "a write past the cap fails with ENOSPC" 1 'No space left on device' "$rc" "$out"
check "... having written at most the cap" test "$(stat -c %s "$H/fill")" -le $((32 * 1024 * 1024))
# The control: the same write under the cap succeeds.
rm -f "$H/fill"
check "a write under the cap succeeds (the control)" dd if=/dev/zero of="$H/fill" bs=1M count=8 status=none
chown 4242:4242 "$H"
out=$("$DISK" setup "$D" "$M" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup again (a resume): succeeds" 0 '' "$rc" "$out"
check_eq "... mounting nothing twice" 2 "$(findmnt -n -l -o TARGET | grep -c -e "^$M\$" -e "^$H\$")"
check_eq "... keeping the home's files and owner" "8388608 4242" "$(stat -c %s "$H/fill") $(stat -c %u "$H")"

# A suspend marks the image kept: the stop unmounts, keeps the image, and
# leaves the home an empty directory owned as the disk's home.
touch "$D/keep"
out=$("$DISK" stop "$D" "$M" "$H" 2>&1); rc=$?
check_exit "stop with the keep mark: succeeds" 0 '' "$rc" "$out"
check_fails "... nothing mounted on the home" mounted "$H"
check_fails "... nor on the mount point, which is gone" test -e "$M"
check "... the image kept" test -s "$D/image"
check_eq "... the empty home owned as the disk's home was" 4242:4242 "$(stat -c %u:%g "$H")"
out=$("$DISK" setup "$D" "$M" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup after it (the resume): succeeds" 0 '' "$rc" "$out"
check "... the files written before are back" test "$(stat -c %s "$H/fill")" = 8388608
rm -f "$D/keep"
out=$("$DISK" stop "$D" "$M" "$H" 2>&1); rc=$?
check_exit "stop without the mark: succeeds" 0 '' "$rc" "$out"
check_fails "... the disk's directory is gone" test -e "$D"
check_fails "... the mount point is gone" test -e "$M"
check_fails "... the home is gone" test -e "$H"
out=$("$DISK" stop "$D" "$M" "$H" 2>&1); rc=$?
check_exit "stop again: nothing to do, succeeds" 0 '' "$rc" "$out"

# A setup that fails (mkfs cannot run) leaves nothing mounted and exits 1;
# the stop systemd runs after it (ExecStopPost=) removes what there is.
out=$("$DISK" setup "$D" "$M" "$H" $((32 * 1024 * 1024)) /bin/false 2>&1); rc=$?
check_exit "setup with a failing mkfs: 1, said" 1 'cannot make the image' "$rc" "$out"
check_fails "... nothing mounted" mounted "$M"
check_fails "... no image" test -e "$D/image"
out=$("$DISK" stop "$D" "$M" "$H" 2>&1); rc=$?
check_exit "the stop after it: succeeds" 0 '' "$rc" "$out"
check_fails "... and removes the disk's directory" test -e "$D"

# A disk unit made by the sandboxd before this one (still running across an
# upgrade): its setup and stop carry no mount point, which is then DIR/fs.
D3=$T/disks/w3/d H3=$T/workers/w3
out=$("$DISK" setup "$D3" "$H3" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "the old setup form (no mount point): succeeds" 0 '' "$rc" "$out"
check "... mounted on DIR/fs, its home bound" sh -c "mountpoint -q '$D3/fs' && mountpoint -q '$H3'"
out=$("$DISK" stop "$D3" "$H3" 2>&1); rc=$?
check_exit "the old stop form: succeeds" 0 '' "$rc" "$out"
check_fails "... nothing of it mounted or left" sh -c "mountpoint -q '$H3' || test -e '$D3' || test -e '$H3'"

# A launcher's worker ("-" for the home): the disk is mounted and nothing is
# bound on the host; its control, the bound home above, is the same setup.
D2=$T/disks/w2/d M2=$T/mnt/w2 H2=$T/workers/w2
out=$("$DISK" setup "$D2" "$M2" - $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup with no home on the host: succeeds" 0 '' "$rc" "$out"
check "... the disk is mounted" mounted "$M2"
check_eq "... its home is there, 0700" 700 "$(stat -c %a "$M2/home")"
check_fails "... no home was made or bound on the host" test -e "$H2"
check_fails "... nor a directory named -" test -e ./-
# own: a shared-kernel worker's ExecStartPre=+ gives the disk's home to the
# owner of its state directory (the worker's dynamic UID), binding nothing.
# The unit's reads STATE through /proc/1/root, which this host may deny (a
# VM's PID 1 in a namespace of its own): the tests give "" as the host's root.
S2=$T/state/w2
mkdir -p -m 0700 "$S2"
out=$("$DISK" own "$M2" "$S2" "" 2>&1); rc=$?
check_exit "own with a state directory of root's: refused" 1 "is not a 0700 directory of a worker's own UID" "$rc" "$out"
check_eq "... the home stays root's" 0 "$(stat -c %u "$M2/home")"
chown 4242:4242 "$S2"
out=$("$DISK" own "$M2" "$S2" "" 2>&1); rc=$?
check_exit "own with the worker's state directory: succeeds (the control)" 0 '' "$rc" "$out"
check_eq "... the home is the worker's, 0700" "4242 4242 700" "$(stat -c '%u %g %a' "$M2/home")"
check_fails "... and nothing was bound" sh -c "findmnt -n -l -o TARGET | grep -q -e '^$M2/home\$'"
out=$("$DISK" own "$M2" "$S2" "" 2>&1); rc=$?
check_exit "own again (the unit started again): succeeds" 0 '' "$rc" "$out"
chmod 0755 "$S2"
out=$("$DISK" own "$M2" "$S2" "" 2>&1); rc=$?
check_exit "own with a state directory others can enter: refused" 1 "is not a 0700 directory" "$rc" "$out"
chmod 0700 "$S2"
mkdir -p -m 0700 "$T/state/other" && chown 5000:5000 "$T/state/other"
out=$("$DISK" own "$M2" "$T/state/other" "" 2>&1); rc=$?
check_exit "own for another UID than the home's: refused" 1 "belongs to UID 4242" "$rc" "$out"
out=$("$DISK" own "$T/mnt/nothing" "$S2" "" 2>&1); rc=$?
check_exit "own of a disk that is not mounted: refused" 1 "its disk is not at" "$rc" "$out"
out=$("$DISK" own "$M2" relative "" 2>&1); rc=$?
check_exit "own with a relative STATE: a bad command line" 2 "must be absolute paths" "$rc" "$out"
out=$("$DISK" stop "$D2" "$M2" - 2>&1); rc=$?
check_exit "its stop: succeeds" 0 '' "$rc" "$out"
check_fails "... the mount point is gone" test -e "$M2"
check_fails "... and the disk's directory" test -e "$D2"
tap_done
