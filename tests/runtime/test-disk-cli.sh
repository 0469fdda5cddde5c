#!/usr/bin/env bash
# sandbox-disk's contract without a unit (daemon/runtime/README.md,
# "sandbox-disk"): setup makes, mounts and binds a capped disk, again without
# harm; stop takes it all away, or keeps a marked image with its home handed
# to the disk home's owner; a failed setup leaves nothing mounted and a stop
# after it cleans up; bad arguments are 2. Needs root and loop devices: the
# checks are skipped without them.
DISK=${1:?usage: test-disk-cli.sh PATH-TO-sandbox-disk}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
MKFS=$(command -v mkfs.ext4 || echo /sbin/mkfs.ext4)

out=$("$DISK" setup 2>&1); rc=$?
check_exit "setup without its arguments: usage" 2 '^usage: sandbox-disk' "$rc" "$out"
out=$("$DISK" frobnicate a b 2>&1); rc=$?
check_exit "an unknown verb: usage" 2 '^usage: sandbox-disk' "$rc" "$out"
out=$("$DISK" setup /nonexistent/d /nonexistent/h 12x "$MKFS" 2>&1); rc=$?
check_exit "a size that is no number is refused, nothing made" 2 "SIZE must be a number of bytes, got '12x'" "$rc" "$out"
check_fails "... and nothing was made" test -e /nonexistent/d

if [ "$(id -u)" != 0 ] || [ ! -w /dev/loop-control ] || [ ! -x "$MKFS" ]; then
    skip "setup and stop need root, /dev/loop-control and mkfs.ext4"
    tap_done
fi
T=$(mktemp -d)
trap 'umount -l "$T/home" "$T/d/fs" 2>/dev/null; rm -rf "$T"' EXIT
D=$T/disks/w1/d H=$T/workers/w1
mounted() { mountpoint -q "$1"; }

out=$("$DISK" setup "$D" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup: made, mounted, bound" 0 '' "$rc" "$out"
check "the image is a 32 MiB sparse file, 0600" test "$(stat -c '%s %a' "$D/image")" = "33554432 600"
check_fails "no image.new is left" test -e "$D/image.new"
check "the image is mounted on fs" mounted "$D/fs"
check_output "... as ext4 through a loop device, nosuid, nodev, noatime, exec" \
    '^/dev/loop[0-9]+ +ext4 +[^ ]*nosuid,nodev,noatime' sh -c "findmnt -n -o SOURCE,FSTYPE,OPTIONS '$D/fs' | grep -v noexec"
check "fs/home is bound on the home" mounted "$H"
check_eq "the home and the disk's directory are 0700" "700 700" "$(stat -c %a "$H") $(stat -c %a "$D")"
check_eq "... their missing parents 0755, as mkdir -p makes them" "755 755" \
    "$(stat -c %a "$T/disks/w1") $(stat -c %a "$T/workers")"
check_eq "fs/tmp is 1777" 1777 "$(stat -c %a "$D/fs/tmp")"
check_output "the file system is labelled sandboxd-disk" '^sandboxd-disk$' \
    sh -c "blkid -o value -s LABEL \$(findmnt -n -o SOURCE '$D/fs')"
# The cap: a write into the home stops at the disk's size with ENOSPC.
out=$(dd if=/dev/zero of="$H/fill" bs=1M count=64 2>&1); rc=$?
check_exit "a write past the cap fails with ENOSPC" 1 'No space left on device' "$rc" "$out"
check "... having written at most the cap" test "$(stat -c %s "$H/fill")" -le $((32 * 1024 * 1024))
# The control: the same write under the cap succeeds.
rm -f "$H/fill"
check "a write under the cap succeeds (the control)" dd if=/dev/zero of="$H/fill" bs=1M count=8 status=none
chown 4242:4242 "$H"
out=$("$DISK" setup "$D" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup again (a resume): succeeds" 0 '' "$rc" "$out"
check_eq "... mounting nothing twice" 2 "$(findmnt -n -l -o TARGET | grep -c -e "^$D/fs\$" -e "^$H\$")"
check_eq "... keeping the home's files and owner" "8388608 4242" "$(stat -c %s "$H/fill") $(stat -c %u "$H")"

# A suspend marks the image kept: the stop unmounts, keeps the image, and
# leaves the home an empty directory owned as the disk's home.
touch "$D/keep"
out=$("$DISK" stop "$D" "$H" 2>&1); rc=$?
check_exit "stop with the keep mark: succeeds" 0 '' "$rc" "$out"
check_fails "... nothing mounted on the home" mounted "$H"
check_fails "... nor on fs" mounted "$D/fs"
check "... the image kept" test -s "$D/image"
check_eq "... the empty home owned as the disk's home was" 4242:4242 "$(stat -c %u:%g "$H")"
out=$("$DISK" setup "$D" "$H" $((32 * 1024 * 1024)) "$MKFS" 2>&1); rc=$?
check_exit "setup after it (the resume): succeeds" 0 '' "$rc" "$out"
check "... the files written before are back" test "$(stat -c %s "$H/fill")" = 8388608
rm -f "$D/keep"
out=$("$DISK" stop "$D" "$H" 2>&1); rc=$?
check_exit "stop without the mark: succeeds" 0 '' "$rc" "$out"
check_fails "... the disk's directory is gone" test -e "$D"
check_fails "... the home is gone" test -e "$H"
out=$("$DISK" stop "$D" "$H" 2>&1); rc=$?
check_exit "stop again: nothing to do, succeeds" 0 '' "$rc" "$out"

# A setup that fails (mkfs cannot run) leaves nothing mounted and exits 1;
# the stop systemd runs after it (ExecStopPost=) removes what there is.
out=$("$DISK" setup "$D" "$H" $((32 * 1024 * 1024)) /bin/false 2>&1); rc=$?
check_exit "setup with a failing mkfs: 1, said" 1 'cannot make the image' "$rc" "$out"
check_fails "... nothing mounted" mounted "$D/fs"
check_fails "... no image" test -e "$D/image"
out=$("$DISK" stop "$D" "$H" 2>&1); rc=$?
check_exit "the stop after it: succeeds" 0 '' "$rc" "$out"
check_fails "... and removes the disk's directory" test -e "$D"
tap_done
