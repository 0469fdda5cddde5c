#!/bin/sh
# sandbox-exec's contract with the worker unit, without systemd: argv runs
# verbatim with the environment it was given plus the spec's from the unit's
# credential; each failure before the workload has its own exit status and a
# message on stderr. The credential cases need root (/run/credentials).
EXEC=${1:?usage: test-exec-cli.sh PATH-TO-sandbox-exec}
. "$(dirname "$0")/../common/cli-check.sh"
id=sbxexectest$$
out=$("$EXEC" 2>&1); rc=$?
check "no arguments: 123 and the usage" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" /bin/true 2>&1); rc=$?
check "no '--': 123" 123 'Usage: sandbox-exec' "$rc" "$out"
out=$("$EXEC" --id="$id" -- true 2>&1); rc=$?
check "a relative command: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id=../x -- /bin/true 2>&1); rc=$?
check "an id with a slash: 123" 123 "invalid worker id '../x'" "$rc" "$out"
out=$("$EXEC" --id="$id" -- /nonexistent/cmd 2>&1); rc=$?
check "a missing command: 127" 127 '^sandbox-exec: cannot execute /nonexistent/cmd: No such file' "$rc" "$out"
out=$("$EXEC" --id="$id" -- /etc 2>&1); rc=$?
check "a command that cannot be executed (a directory): 126" 126 "^sandbox-exec: cannot execute /etc: Permission denied" "$rc" "$out"
out=$("$EXEC" --id="$id" --check -- /bin/sh 2>&1); rc=$?
check "--check of an executable: 0, silent" 0 '^$' "$rc" "$out"
out=$("$EXEC" --id="$id" --check -- /nonexistent/cmd 2>&1); rc=$?
check "--check of a missing command: 127" 127 '^sandbox-exec: cannot execute /nonexistent/cmd: No such file' "$rc" "$out"
out=$("$EXEC" --id="$id" --check -- /etc 2>&1); rc=$?
check "--check of a directory: 126" 126 '^sandbox-exec: cannot execute /etc: Permission denied' "$rc" "$out"
plain=$(mktemp)
out=$("$EXEC" --id="$id" --check -- "$plain" 2>&1); rc=$?
rm -f "$plain"
check "--check of a file without execute permission: 126" 126 'Permission denied' "$rc" "$out"
# The walls half: a namespace that is the one given (as if PID 1's) refuses
# with 125 before the command is looked at; other identities pass.
own_net=$(stat -L -c %d:%i /proc/self/ns/net)
out=$("$EXEC" --id="$id" --check --net="$own_net" -- /bin/sh 2>&1); rc=$?
check "--check with our own net namespace as PID 1's: 125, naming it" 125 \
    "Refusing to start worker $id: the network namespace is PID 1's \\(net=$own_net\\)" "$rc" "$out"
out=$("$EXEC" --id="$id" --check --net="$own_net" -- /nonexistent/cmd 2>&1); rc=$?
check "--check: the walls come before the command" 125 "Refusing to start worker" "$rc" "$out"
own_ipc=$(stat -L -c %d:%i /proc/self/ns/ipc) own_mnt=$(stat -L -c %d:%i /proc/self/ns/mnt)
out=$("$EXEC" --id="$id" --check --net=1:1 --ipc="$own_ipc" --mnt="$own_mnt" -- /bin/sh 2>&1); rc=$?
check "--check: shared IPC and mount namespaces are both named" 125 "the IPC and mount namespaces are PID 1's" \
    "$rc" "$out"
out=$("$EXEC" --id="$id" --check --net=1:1 --ipc=1:2 --mnt=1:3 -- /bin/sh 2>&1); rc=$?
check "--check with other namespaces than ours: 0, silent" 0 '^$' "$rc" "$out"
out=$("$EXEC" --id="$id" --check --net=1:1 --net=1:2 -- /bin/sh 2>&1); rc=$?
check "--check with a namespace named twice: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --check --net=bogus -- /bin/sh 2>&1); rc=$?
check "--check with a malformed identity: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --net=1:1 -- /bin/true 2>&1); rc=$?
check "a namespace without --check: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --check --environment -- /bin/sh 2>&1); rc=$?
check "--check with --environment: 123" 123 'bad command line' "$rc" "$out"
# shellcheck disable=SC2016  # the $ signs are the worker's, unexpanded
out=$("$EXEC" --id="$id" --environment /bin/true 2>&1); rc=$?
check "--environment without '--': 123" 123 'bad command line' "$rc" "$out"
out=$(FROM_UNIT=kept "$EXEC" --id="$id" -- /bin/sh -c 'printf "%s|%s|%s" "$0" "$1" "$FROM_UNIT"' '$HOME' 'a b' 2>&1); rc=$?
check "without --environment: no credential read, argv verbatim, the unit's environment kept" 0 '^\$HOME\|a b\|kept$' "$rc" "$out"

dir=/run/credentials/sandbox-$id.service
if [ "$(id -u)" = 0 ] && mkdir -p "$dir" 2>/dev/null; then
    trap 'rm -rf "$dir"' EXIT
    printf 'TOKEN=s3cret\0MULTI=one\ntwo\0' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/sh -c 'printf "%s|%s" "$TOKEN" "$MULTI"' 2>&1); rc=$?
    check "the credential's entries are the workload's environment" 0 '^s3cret\|one$' "$rc" "$out"
    check "a value's newline is kept" 0 '^two$' "$rc" "$out"
    out=$(CREDENTIALS_DIRECTORY=/nonexistent "$EXEC" --id="$id" --environment -- /bin/sh -c 'printf "%s" "$TOKEN"' 2>&1); rc=$?
    check "the credential comes from the unit's own directory, not \$CREDENTIALS_DIRECTORY" 0 '^s3cret$' "$rc" "$out"
    printf 'TOKEN=unterminated' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check "a malformed credential: 122 and why" 122 'cannot read the worker.s environment from .*: malformed credential' "$rc" "$out"
    printf '1BAD=x\0' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check "an invalid name: 122" 122 'malformed credential' "$rc" "$out"
    rm -f "$dir/sandboxd.environment"
    ln -s /etc/hostname "$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check "a symlink in place of the credential: 122" 122 'malformed credential' "$rc" "$out"
    rm -f "$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check "--environment without the credential: 122, not an empty environment" 122 'No such file' "$rc" "$out"
else
    for t in entries newline pinned malformed name symlink missing; do
        n=$((n + 1)); echo "ok $n - credential case $t # SKIP needs root to create $dir"
    done
fi
cli_check_done
