#!/usr/bin/env bash
# sandbox-exec's contract with the worker unit, without systemd: argv runs
# verbatim with the environment it was given plus the spec's from the unit's
# credential; each failure before the workload has its own exit status and a
# message on stderr. The credential cases need root (/run/credentials).
EXEC=${1:?usage: test-exec-cli.sh PATH-TO-sandbox-exec}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
id=sbxexectest$$
out=$("$EXEC" 2>&1); rc=$?
check_exit "no arguments: 123 and the usage" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" /bin/true 2>&1); rc=$?
check_exit "no '--': 123" 123 'Usage: sandbox-exec' "$rc" "$out"
out=$("$EXEC" --id="$id" -- true 2>&1); rc=$?
check_exit "a relative command: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id=../x -- /bin/true 2>&1); rc=$?
check_exit "an id with a slash: 123" 123 "invalid worker id '../x'" "$rc" "$out"
# Each check fails before the readiness token: nothing at all on stdout
# (sandboxd reads it there), the message on stderr.
fails() {   # NAME STATUS REGEX ARG...
    name=$1 status=$2 regex=$3
    shift 3
    out=$("$EXEC" "$@" 2>&1 >/dev/null); rc=$?
    check_exit "$name: $status" "$status" "$regex" "$rc" "$out"
    stdout=$("$EXEC" "$@" 2>/dev/null | od -An -c)
    check_exit "$name: no readiness token, nothing on stdout" 0 '^$' 0 "$stdout"
}
fails "a missing command" 127 '^sandbox-exec: cannot execute /nonexistent/cmd: No such file' --id="$id" -- /nonexistent/cmd
fails "a command that cannot be executed (a directory)" 126 "^sandbox-exec: cannot execute /etc: Permission denied" \
    --id="$id" -- /etc
plain=$(mktemp)
fails "a file without execute permission" 126 'Permission denied' --id="$id" -- "$plain"
rm -f "$plain"
# The walls: a namespace that is the one given (as if PID 1's) refuses with
# 125 before the command is looked at; other identities pass.
own_net=$(stat -L -c %d:%i /proc/self/ns/net)
fails "our own net namespace as PID 1's, naming it" 125 \
    "Refusing to start worker $id: the network namespace is PID 1's \\(net=$own_net\\)" \
    --id="$id" --net="$own_net" -- /bin/sh -c 'echo escaped'
fails "the walls come before the command" 125 "Refusing to start worker" --id="$id" --net="$own_net" -- /nonexistent/cmd
own_ipc=$(stat -L -c %d:%i /proc/self/ns/ipc) own_mnt=$(stat -L -c %d:%i /proc/self/ns/mnt)
fails "shared IPC and mount namespaces are both named" 125 "the IPC and mount namespaces are PID 1's" \
    --id="$id" --net=1:1 --ipc="$own_ipc" --mnt="$own_mnt" -- /bin/sh
out=$("$EXEC" --id="$id" --net=1:1 --net=1:2 -- /bin/sh 2>&1); rc=$?
check_exit "a namespace named twice: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --net=bogus -- /bin/sh 2>&1); rc=$?
check_exit "a malformed identity: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --check -- /bin/sh 2>&1); rc=$?
check_exit "the old --check: 123" 123 'bad command line' "$rc" "$out"
out=$("$EXEC" --id="$id" --environment --environment -- /bin/sh 2>&1); rc=$?
check_exit "--environment twice: 123" 123 'bad command line' "$rc" "$out"
# Every check passed: exactly the token on stdout, then the workload's own
# bytes, as they are (here bytes that begin like the token again); nothing
# of the token on stderr.
token_then='sandbox-exec: ready\nsandbox-exec: rea\001\n'
hex() { od -An -tx1 | tr -d ' \n'; }
out=$("$EXEC" --id="$id" --net=1:1 --ipc=1:2 --mnt=1:3 -- /usr/bin/printf 'sandbox-exec: rea\001\n' 2>/dev/null | hex)
# shellcheck disable=SC2059  # the format is the bytes
want=$(printf "$token_then" | hex)
check_exit "other namespaces than ours: the token, then the workload's bytes intact" 0 "^$want\$" 0 "$out"
err=$("$EXEC" --id="$id" --net=1:1 -- /bin/sh -c 'echo workload-err >&2' 2>&1 >/dev/null); rc=$?
check_exit "the token is not on stderr: only the workload's" 0 '^workload-err$' "$rc" "$err"
# The workload runs only after the token: its first write follows it.
out=$("$EXEC" --id="$id" -- /bin/sh -c 'printf first' 2>/dev/null | head -c 26)
check_exit "the token comes before the workload's first byte" 0 '^sandbox-exec: ready$' 0 "$(printf '%s' "$out" | head -n1)"
# shellcheck disable=SC2016  # the $ signs are the worker's, unexpanded
out=$("$EXEC" --id="$id" --environment /bin/true 2>&1); rc=$?
check_exit "--environment without '--': 123" 123 'bad command line' "$rc" "$out"
out=$(FROM_UNIT=kept "$EXEC" --id="$id" -- /bin/sh -c 'printf "%s|%s|%s" "$0" "$1" "$FROM_UNIT"' '$HOME' 'a b' 2>&1); rc=$?
check_exit "without --environment: no credential read, argv verbatim, the unit's environment kept" 0 '^\$HOME\|a b\|kept$' "$rc" "$out"

dir=/run/credentials/sandbox-$id.service
if [ "$(id -u)" = 0 ] && mkdir -p "$dir" 2>/dev/null; then
    trap 'rm -rf "$dir"' EXIT
    printf 'TOKEN=s3cret\0MULTI=one\ntwo\0' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/sh -c 'printf "%s|%s" "$TOKEN" "$MULTI"' 2>&1); rc=$?
    check_exit "the credential's entries are the workload's environment" 0 '^s3cret\|one$' "$rc" "$out"
    check_exit "a value's newline is kept" 0 '^two$' "$rc" "$out"
    out=$(CREDENTIALS_DIRECTORY=/nonexistent "$EXEC" --id="$id" --environment -- /bin/sh -c 'printf "%s" "$TOKEN"' 2>&1); rc=$?
    check_exit "the credential comes from the unit's own directory, not \$CREDENTIALS_DIRECTORY" 0 '^s3cret$' "$rc" "$out"
    printf 'TOKEN=unterminated' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check_exit "a malformed credential: 122 and why" 122 'cannot read the worker.s environment from .*: malformed credential' "$rc" "$out"
    printf '1BAD=x\0' >"$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check_exit "an invalid name: 122" 122 'malformed credential' "$rc" "$out"
    rm -f "$dir/sandboxd.environment"
    ln -s /etc/hostname "$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check_exit "a symlink in place of the credential: 122" 122 'malformed credential' "$rc" "$out"
    rm -f "$dir/sandboxd.environment"
    out=$("$EXEC" --id="$id" --environment -- /bin/true 2>&1); rc=$?
    check_exit "--environment without the credential: 122, not an empty environment" 122 'No such file' "$rc" "$out"
else
    for t in entries newline pinned malformed name symlink missing; do
        ok "credential case $t # SKIP needs root to create $dir"
    done
fi
tap_done
