#!/usr/bin/env bash
# testbed: long
# The Worker's file methods (issue 24, item 2) against the real systemd and
# runsc, for a trusted worker and a gVisor one (standard): files both ways,
# binary-identical by checksum (what the workload writes is read out, what
# is written in the workload sees at once), created files owned by the
# worker, the disk cap as DiskFull, an atomic replace that takes effect only
# on CommitFile, and the attacks, each beside a control that succeeds: a
# symlink to /etc/shadow and to a sibling's home, "..", an absolute path
# outside, a FIFO planted at the path, another user (NoSuchWorker).
#   usage: integration.sh CONTAINER_LEADER_PID
set -uo pipefail
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

RULES=/etc/polkit-1/rules.d
E=org.sandboxd1.Error
SBX_FILE=/usr/lib/sandboxd-tests/sbx-file
cleanup() { ct rm -f "$RULES/sbx-files-it.rules" /tmp/f-* >/dev/null 2>&1; }
trap 'cleanup; _tap_cleanup' EXIT

# tester may create trusted workers, nothing else (so a refusal is about the worker).
ct sh -c "cat >$RULES/sbx-files-it.rules" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" &&
        (action.id == "org.sandboxd1.create-worker" || action.id == "org.sandboxd1.create-trusted-worker"))
        return polkit.Result.YES;
});
JS
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

sctl() { ct timeout 120 sandboxctl "$@"; }
# Exit status and stderr of a sandboxctl call, as "STATUS ERROR-LINE".
sctl_fails() { local out rc; out=$(ct timeout 60 sandboxctl "$@" 2>&1 >/dev/null); rc=$?; echo "$rc $out"; }
sha() { ct sh -c "sha256sum <'$1'" | cut -d' ' -f1; }

# A sibling whose home holds a secret the attacks below aim at.
sib=$(sctl create --class trusted -- /bin/sh -c 'echo sibling-secret >secret; exec sleep 600') || sib=
sib_home=$(sbx_prop "$sib" Home)
# The host sees it on the sibling's disk; its Home is where the attacks aim.
wait_until 30 ct test -s "$(sbx_home "$sib")/secret"
check_output "control: the sibling's secret is there (as root, on the host side)" '^sibling-secret$' \
    ct cat "$(sbx_home "$sib")/secret"

# The workload: writes a file to be read out, plants a symlink to
# /etc/shadow and one to the sibling's home and a FIFO, and checksums every
# in.bin that appears (a replace renames it into place whole).
WORKLOAD='head -c 3000000 /dev/urandom >out.bin && sha256sum out.bin >out.sum &&
ln -s /etc/shadow shadow-link && ln -s "$1" sibling-link && mkfifo fifo && echo ready >ready || exit 1
while :; do
    if [ -f in.bin ] && ! [ in.seen -nt in.bin ]; then sha256sum in.bin >in.tmp && mv in.tmp in.seen; fi
    sleep 0.1
done'

ct sh -c 'head -c 5000000 /dev/urandom >/tmp/f-in.bin; head -c 32M /dev/zero >/tmp/f-big; head -c 1M /dev/zero >/tmp/f-1m'
ct sh -c 'mkdir -p /tmp/f-tree/a/b && echo one >/tmp/f-tree/a/one && head -c 100000 /dev/urandom >/tmp/f-tree/a/b/two &&
          ln -s /etc/shadow /tmp/f-tree/link'
shadow_before=$(sha /etc/shadow)
in_sha=$(sha /tmp/f-in.bin)

for class in trusted standard; do
    t="[$class]"
    w=$(sctl create --class "$class" --disk 16M -- /bin/sh -c "$WORKLOAD" sh "$sib_home") || w=
    if [ -z "$w" ]; then
        not_ok "$t a worker runs"
        continue
    fi
    home=$(sbx_prop "$w" Home)
    uid=$(sbx_prop "$w" UID | awk '{print $NF}')
    check "$t the workload is ready (ls sees its file)" wait_until 60 ct sandboxctl ls "$w:ready"

    # ---- both ways, binary-identical ---------------------------------------------
    check "$t cp ID:out.bin out (a file the workload wrote)" sctl cp "$w:out.bin" /tmp/f-out.bin
    check_eq "$t ... the same bytes as the workload's own checksum" \
        "$(sctl cp "$w:out.sum" - | cut -d' ' -f1)" "$(sha /tmp/f-out.bin)"
    check "$t cp in.bin in (5 MB)" sctl cp /tmp/f-in.bin "$w:in.bin"
    check "$t ... the workload sees it at once and checksums it" wait_until 20 ct sandboxctl ls "$w:in.seen"
    check_eq "$t ... the workload's checksum is the file's" "$in_sha" "$(sctl cp "$w:in.seen" - | cut -d' ' -f1)"
    check_eq "$t ... and read back out it is the same" "$in_sha" "$(sctl cp "$w:in.bin" - | ct sha256sum | cut -d' ' -f1)"
    check_eq "$t a file written in is owned by the worker's UID" "$uid" \
        "$(sctl ls --no-legend "$w:in.bin" | awk '{print $2}')"
    check_output "$t an absolute path inside the home as the worker sees it" '^ready$' sctl cp "$w:$home/ready" -

    # ---- symlinks, "..", absolute paths: refused, each beside its control ---------
    check_output "$t a symlink to /etc/shadow: PathOutsideHome (exit 77)" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:shadow-link" -
    check_output "$t ... nor copied to a local file, which is not made" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:shadow-link" /tmp/f-shadow
    check "$t ... (no /tmp/f-shadow)" ct test ! -e /tmp/f-shadow
    check_output "$t ... control: a plain file beside it is read" '^ready$' sctl cp "$w:ready" -
    check_output "$t a write through the symlink: PathOutsideHome" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp /tmp/f-1m "$w:shadow-link"
    check_eq "$t ... /etc/shadow is unchanged" "$shadow_before" "$(sha /etc/shadow)"
    check_output "$t the sibling's home through a planted symlink: PathOutsideHome" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:sibling-link/secret" -
    check_output "$t ... nor listed" "^77 .*$E.PathOutsideHome" sctl_fails ls "$w:sibling-link"
    check_output "$t the sibling's home by '..': PathOutsideHome" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:../$sib/secret" -
    check_output "$t ... control: './ready' is read" '^ready$' sctl cp "$w:./ready" -
    check_output "$t an absolute path outside the home (/etc/passwd): PathOutsideHome" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:/etc/passwd" -
    check_output "$t ... the sibling's home by its absolute path: PathOutsideHome" "^77 .*$E.PathOutsideHome" \
        sctl_fails cp "$w:$sib_home/secret" -

    # ---- a FIFO planted at the path: refused at once, nothing blocks ---------------
    start=$SECONDS
    check_output "$t reading a FIFO: NotRegularFile" "^77 .*$E.NotRegularFile" sctl_fails cp "$w:fifo" -
    check_output "$t writing a FIFO (OpenFile write): NotRegularFile" "$E.NotRegularFile" \
        ct sh -c "echo x | timeout 30 $SBX_FILE $w fifo write commit 2>&1; true"
    check "$t ... neither waited (under 20 s together)" test $((SECONDS - start)) -lt 20

    # ---- the disk cap -------------------------------------------------------------
    check_output "$t 32 MB into a 16 MB disk: DiskFull (exit 70)" "^70 .*$E.DiskFull" sctl_fails cp /tmp/f-big "$w:big"
    check_output "$t ... the replace left nothing behind" '^$' \
        ct sh -c "sandboxctl ls --no-legend $w: | grep -E ' (big|\\.big\\.sbx-[0-9a-f]+)\$' || true"
    check "$t ... control: 1 MB fits" sctl cp /tmp/f-1m "$w:small"

    # ---- the atomic replace: only CommitFile makes it the file ------------------
    ct rm -f /tmp/f-go
    ct sh -c "printf replaced | $SBX_FILE $w in.bin replace commit-when:/tmp/f-go >/tmp/f-commit.out 2>/tmp/f-commit.err &"
    check "$t replace: the data is written" wait_until 30 ct grep -q written /tmp/f-commit.err
    check_eq "$t ... before CommitFile the file is the old one" "$in_sha" \
        "$(sctl cp "$w:in.bin" - | ct sha256sum | cut -d' ' -f1)"
    ct touch /tmp/f-go
    check "$t ... CommitFile answers" wait_until 30 ct test -s /tmp/f-commit.out
    check_output "$t ... with the bytes" '^8$' ct cat /tmp/f-commit.out
    check_output "$t ... and now the file is the new one" '^replaced$' sctl cp "$w:in.bin" -
    check "$t AbortFile" ct sh -c "printf aborted | $SBX_FILE $w in.bin replace abort"
    check_output "$t ... the file is unchanged" '^replaced$' sctl cp "$w:in.bin" -
    check "$t a caller that leaves without CommitFile" ct sh -c "printf left | $SBX_FILE $w in.bin replace leave"
    check_output "$t ... the file is unchanged" '^replaced$' sctl cp "$w:in.bin" -
    check_output "$t ... and no temporary file is left (abort and leave)" '^$' \
        wait_until 10 ct sh -c "! sandboxctl ls --no-legend $w: | grep -F '.in.bin.sbx-'"
    check_output "$t write (create) of an existing file: FileExists" "$E.FileExists" \
        ct sh -c "echo x | $SBX_FILE $w in.bin create commit 2>&1; true"

    # ---- directories: cp -r both ways, mkdir, rename, remove ------------------------
    check "$t cp -r a tree in" sctl cp -r /tmp/f-tree "$w:tree"
    ct rm -rf /tmp/f-tree-out
    check "$t cp -r it out again" sctl cp -r "$w:tree" /tmp/f-tree-out
    check "$t ... the same files (the symlink skipped both ways)" \
        ct diff -r --no-dereference -x link /tmp/f-tree /tmp/f-tree-out
    check "$t ... and the symlink was not copied" ct test ! -e /tmp/f-tree-out/link
    check "$t MakeDirectory with Parents" bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" \
        MakeDirectory 'sa{sv}' x/y/z 1 Parents b true
    check "$t Rename" bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" Rename ss x/y x/w
    bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" Stat s x/w
    check_match "$t ... Stat sees it as a directory of the worker" \
        "sstutuu \"w\" \"directory\" [0-9]+ [0-9]+ [0-9]+ $uid $uid" "$BUS_OUT"
    bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" Remove 'sa{sv}' x 0
    check_eq "$t Remove of a directory that is not empty: DirectoryNotEmpty" "$E.DirectoryNotEmpty" "$BUS_ERROR"
    check "$t ... control: with Recursive" bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" \
        Remove 'sa{sv}' x 1 Recursive b true
    check_output "$t ... gone" "^66 .*$E.FileNotFound" sctl_fails ls "$w:x"
    bus_call root "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" Rename ss ready ../escaped
    check_eq "$t Rename out of the home: PathOutsideHome" "$E.PathOutsideHome" "$BUS_ERROR"

    # ---- another user ---------------------------------------------------------------
    check_output "$t another user's cp: NoSuchWorker (exit 66)" "^66 .*$E.NoSuchWorker" \
        ct sh -c "out=\$(runuser -u tester -- timeout 60 sandboxctl cp $w:ready - 2>&1 >/dev/null); echo \"\$? \$out\""
    bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" OpenFile 'ssa{sv}' ready read 0
    check_match "$t ... and OpenFile on its object: no such object" \
        'org\.freedesktop\.DBus\.Error\.UnknownObject' "$BUS_ERROR"
    bus_call tester "$SBX_DEST" "$SBX_PATH/worker/$w" "$SBX_WORKER_IFACE" ListDirectory s ""
    check_match "$t ... nor ListDirectory" 'org\.freedesktop\.DBus\.Error\.UnknownObject' "$BUS_ERROR"
    sctl stop "$w" >/dev/null
done

# The control for another user: tester's own worker, tester's own files.
tw=$(as_tester sandboxctl create --class trusted -- /bin/sh -c 'echo mine >mine; exec sleep 600') || tw=
check "the owner (a plain user) reads a file of its own worker" wait_until 30 ct sh -c \
    "[ \"\$(runuser -u tester -- sandboxctl cp $tw:mine - 2>/dev/null)\" = mine ]"
check "... and writes one" as_tester sh -c "echo theirs | sandboxctl cp - $tw:theirs"
check_output "... which it reads back" '^theirs$' as_tester sandboxctl cp "$tw:theirs" -
check "each file call is a journal entry with the caller's UID (tester: 1500)" \
    journal_has "OpenFile theirs replace by UID 1500" SANDBOXD_FILE_CALL=OpenFile SANDBOXD_CALLER_UID=1500 SANDBOXD_WORKER_ID="$tw"
check "... and root's (0)" journal_has "ListDirectory" SANDBOXD_FILE_CALL=ListDirectory SANDBOXD_CALLER_UID=0
sctl stop "$tw" >/dev/null 2>&1
sctl stop "$sib" >/dev/null 2>&1
tap_done
