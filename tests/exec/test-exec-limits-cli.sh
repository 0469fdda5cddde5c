#!/usr/bin/env bash
# sandbox-exec-limits, what an Exec into a gVisor worker runs first (inside
# the sandbox; here on the host, without one): RLIMIT_NPROC and NoNewPrivs
# set, the request's environment over the worker's first process's with
# --init-env, then argv verbatim; each failure its own status and message.
LIMITS=${1:?usage: test-exec-limits-cli.sh PATH-TO-sandbox-exec-limits}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
tap_init
run() { out=$("$LIMITS" "$@" 2>&1); rc=$?; }

run; check_exit "no arguments: 123 and the usage" 123 '^Usage: sandbox-exec-limits' "$rc" "$out"
run --nproc=7 /bin/true; check_exit "no '--': 123" 123 '^Usage' "$rc" "$out"
run --nproc=7 -- true; check_exit "a relative command: 123" 123 '^Usage' "$rc" "$out"
run --nproc=0 -- /bin/true; check_exit "--nproc=0: 123" 123 '^Usage' "$rc" "$out"
run --nproc=-3 -- /bin/true; check_exit "a negative --nproc: 123" 123 '^Usage' "$rc" "$out"
run --nproc=7x -- /bin/true; check_exit "--nproc=7x: 123" 123 '^Usage' "$rc" "$out"
run --nproc=7 -- /nonexistent/cmd
check_exit "a missing command: 127" 127 '^sandbox-exec-limits: cannot execute /nonexistent/cmd: No such file' "$rc" "$out"
run --nproc=7 -- /etc; check_exit "a directory: 126" 126 'cannot execute /etc: Permission denied' "$rc" "$out"

# The control: the same command line with a good count runs the command.
run --nproc=7 -- /bin/sh -c 'grep "^Max processes" /proc/self/limits | awk "{print \$3, \$4}"; grep ^NoNewPrivs: /proc/self/status | tr -d "\t "; echo "$@"' sh a 'b c'
check_exit "the command runs with its arguments verbatim, exit 0" 0 '^a b c$' "$rc" "$out"
check_eq "RLIMIT_NPROC soft and hard are the count" "7 7" "$(printf '%s\n' "$out" | head -n1)"
check_exit "NoNewPrivs is set" 0 '^NoNewPrivs:1$' "$rc" "$out"
run --nproc=7 -- /bin/sh -c 'exit 9'; check_exit "the command's own status" 9 '^$' "$rc" "$out"

# --init-env: the environment of PID 1, the request's own entries over it.
# Here PID 1 is the host's (or a container's), readable as root only.
if cat /proc/1/environ >/dev/null 2>&1; then
    key=$(tr '\0' '\n' < /proc/1/environ | grep -m1 -E '^[A-Za-z_][A-Za-z0-9_]*=' | cut -d= -f1)
    out=$(env -i SBX_OWN=request "$LIMITS" --nproc=7 --init-env -- /usr/bin/env 2>&1); rc=$?
    check_exit "--init-env: the request's entry is there" 0 '^SBX_OWN=request$' "$rc" "$out"
    if [ -n "$key" ]; then
        check_exit "--init-env: and PID 1's ($key)" 0 "^$key=" "$rc" "$out"
        out=$(env -i "$key=from-request" "$LIMITS" --nproc=7 --init-env -- /usr/bin/env 2>&1); rc=$?
        check_exit "--init-env: the request's $key wins over PID 1's" 0 "^$key=from-request$" "$rc" "$out"
    else
        skip "--init-env: PID 1 has no environment to read here"
    fi
else
    # Where PID 1's environment cannot be read, that is said, and nothing runs.
    out=$("$LIMITS" --nproc=7 --init-env -- /bin/echo ran 2>&1); rc=$?
    check_exit "--init-env, PID 1's environment unreadable here: 122, the command not run" 122 \
        "^sandbox-exec-limits: cannot read the worker's environment: " "$rc" "$out"
    check_eq "--init-env: ... and it did not run" 0 "$(printf '%s\n' "$out" | grep -c '^ran$')"
fi
tap_done
