#!/usr/bin/env bash
# The sandbox-launch binary's contract with its callers, without a runtime:
# exit 125 and a message on stderr when "run" is refused, and for "probe" one
# "unavailable <reason>" line on stdout with exit 1.
LAUNCH=${1:?usage: test-launch-cli.sh PATH-TO-sandbox-launch}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# "run" refusals: nothing on stdout (the worker's channel), the reason on stderr
out=$("$LAUNCH" run --id w1 --runtime-path /bin/true --home /h --pids 8 --memory 64M --cpu-percent 50 2>&1 >/dev/null); rc=$?
check_exit "run without a command exits 125 and says why" 125 'command is missing' "$rc" "$out"
out=$("$LAUNCH" run --id w1 --runtime-path /bin/true --home /h --pids 8 --memory 64M --cpu-percent 50 -- /bin/true 2>/dev/null); rc=$?
check_exit "a refused run writes nothing to the channel" 125 '^$' "$rc" "$out"
out=$("$LAUNCH" run --id 'a/b' 2>&1 >/dev/null); rc=$?
check_exit "run with a bad id exits 125" 125 'id must be' "$rc" "$out"
out=$("$LAUNCH" run --id nosuchworker0 --runtime-path /bin/true --home /tmp --pids 8 --memory 64M \
      --cpu-percent 50 -- /bin/true 2>&1 >/dev/null); rc=$?
if [ "$(id -u)" = 0 ]; then
    check_exit "run outside its worker unit is refused" 125 'sandbox-nosuchworker0 does not exist' "$rc" "$out"
else
    check_exit "run as non-root is refused" 125 'needs root' "$rc" "$out"
fi
out=$("$LAUNCH" probe --runtime wasm --runtime-path /nonexistent/wasmtime); rc=$?
check_exit "probe of a missing runtime" 1 '^unavailable wasm runtime not executable at /nonexistent/wasmtime' "$rc" "$out"
out=$("$LAUNCH" probe --runtime kata --runtime-path /bin/false); rc=$?
check_exit "probe of a broken runtime" 1 '^unavailable /bin/false --version failed$' "$rc" "$out"
out=$("$LAUNCH" probe --runtime wasm --runtime-path /bin/echo); rc=$?
check_exit "probe of a runtime that answers --version" 0 '^ok echo \(GNU coreutils\)' "$rc" "$out"
out=$("$LAUNCH" probe --runtime runsc --runtime-path /bin/true --platform kvm 2>/dev/null); rc=$?
check_exit "probe with bad arguments keeps the one-line contract" 1 '^unavailable bad probe arguments: --platform must be systrap or ptrace' "$rc" "$out"
out=$("$LAUNCH" frobnicate 2>/dev/null); rc=$?
check_exit "unknown verb" 2 '^$' "$rc" "$out"
tap_done
