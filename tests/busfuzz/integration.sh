#!/usr/bin/env bash
# shellcheck disable=SC2317  # the same_* checks are called through wait_until
# Issue 8: the worker spec fuzzer for the bus. sbx-busfuzz (tests/busfuzz)
# sends BUSFUZZ_COUNT generated specs (valid, mutated, random, wrongly typed
# arguments; deterministic for BUSFUZZ_SEED) to CreateWorker as root and
# checks each answer itself: every refusal a named org.sandboxd1.Error.*
# (InvalidArgs only for arguments that are not one a{sv}), every accepted
# spec a worker that it stops and sees removed. Then this script checks that
# the daemon is the same process and still answers, and that nothing is left
# behind: no sandbox-* unit, no home, no dynamic user, no extra fd in sandboxd.
#   tests/busfuzz/integration.sh LEADER_PID STAGE_DIR   (run-all.sh runs it)
#   BUSFUZZ_COUNT (default 3000), BUSFUZZ_SEED (default 1): bench/fuzz-bus.sh sets them
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

COUNT=${BUSFUZZ_COUNT:-3000}
SEED=${BUSFUZZ_SEED:-1}
FUZZER=/usr/lib/sandboxd-tests/sbx-busfuzz
# Workers that ended stay on the bus (and hold their channel) for 30 s.
LINGER_WAIT=90

ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
if ! ct test -x "$FUZZER"; then
    not_ok "the fuzzer $FUZZER is installed (run-all.sh stages it from build-ci/tests/busfuzz)"
    tap_done
fi

# one_line [TEXT]: TEXT (or stdin) with its lines joined by spaces, for a diagnostic.
one_line() { if [ $# -gt 0 ]; then printf '%s\n' "$1"; else cat; fi | paste -sd' ' -; }
main_pid() { ct systemctl show -P MainPID sandboxd.service; }
fd_count() { ct sh -c "ls /proc/$1/fd | wc -l"; }
# The dynamic users of workers, but not of the warm pool's waiting sandboxes.
dynamic_users() {
    local waiting
    waiting=$(ct systemctl list-units --all --plain --no-legend --no-pager 'sandbox-*.service' |
        awk '/sandboxd pool sandbox/ { print substr($1, 9, 12) }')
    ct sh -c 'ls /run/systemd/dynamic-uid 2>/dev/null | grep "^direct:sandbox-"; getent passwd | grep "^sandbox-"' |
        grep -v -F -e "${waiting:-/}" | sort -u
}
# The pool refills by itself after claims; with it full, as many sandboxes
# wait (each holding its stdio pipes in sandboxd) as at the baseline. Its
# defaults: StandardSize=2 and UntrustedSize=2, each with and without egress.
POOL_FULL=8
pool_full() { [ "$(sbx_mgr_prop PooledSandboxes)" = "$POOL_FULL" ]; }
wait_until 120 pool_full || diag "the pool did not fill: $(sbx_mgr_prop PooledSandboxes) of $POOL_FULL waiting"

pid_before=$(main_pid)
restarts_before=$(ct systemctl show -P NRestarts sandboxd.service)
fds_before=$(fd_count "$pid_before")
units_before=$(sbx_units)
homes_before=$(sbx_state_entries)
users_before=$(dynamic_users)
diag "sandboxd PID $pid_before with $fds_before open fds; seed $SEED, $COUNT specs"

out=$TAP_TMP/busfuzz.out
t0=$SECONDS
ct "$FUZZER" --seed "$SEED" --count "$COUNT" >"$out" 2>&1
rc=$?
diag "$(grep '^busfuzz:' "$out")"
if [ $rc -eq 0 ]; then
    ok "$COUNT specs (seed $SEED): every refusal named, every accepted worker stopped and removed ($((SECONDS - t0)) s)"
else
    not_ok "$COUNT specs (seed $SEED): every refusal named, every accepted worker stopped and removed" \
        "$(grep -v '^busfuzz:' "$out" | head -n 60)"
fi

# The run means something only if it sent what it was asked to and the
# daemon both accepted and refused, for more than one reason.
summary=$(grep -m1 '^busfuzz: seed' "$out")
sent=$(sed -n 's/.*: \([0-9]*\) sent.*/\1/p' <<<"$summary")
accepted=$(sed -n 's/.* \([0-9]*\) accepted and stopped.*/\1/p' <<<"$summary")
named=$(grep -c '^busfuzz: .* org\.sandboxd1\.Error\.' "$out")
check_eq "all $COUNT specs were sent" "$COUNT" "${sent:-0}"
if [ "${accepted:-0}" -gt 0 ] && [ "$named" -ge 6 ]; then
    ok "the run created workers ($accepted) and met at least 6 different named refusals ($named)"
else
    not_ok "the run created workers and met at least 6 different named refusals" "accepted ${accepted:-0}, error names $named"
fi

check_eq "sandboxd is the same process (no crash, no restart)" "$pid_before" "$(main_pid)"
check_eq "sandboxd was not restarted (NRestarts)" "$restarts_before" "$(ct systemctl show -P NRestarts sandboxd.service)"
check_output "sandboxd still answers (Version)" '^s "' ct busctl --system get-property "$SBX_DEST" "$SBX_PATH" "$SBX_MGR" Version
check_output "sandboxd still answers (ListWorkers)" '^a\(ssssuuo\) ' sbx_call_out ListWorkers

same_units() { [ "$(sbx_units)" = "$units_before" ]; }
same_homes() { [ "$(sbx_state_entries)" = "$homes_before" ]; }
same_users() { [ "$(dynamic_users)" = "$users_before" ]; }
same_fds() { pool_full && [ "$(fd_count "$pid_before")" = "$fds_before" ]; }
if wait_until 60 same_units; then
    ok "no sandbox-* unit left behind"
else
    not_ok "no sandbox-* unit left behind" "before: $(one_line "$units_before")" "after: $(sbx_units | one_line)"
fi
if wait_until 30 same_homes; then
    ok "no worker home left under $SBX_STATE_ROOT"
else
    not_ok "no worker home left under $SBX_STATE_ROOT" "after: $(sbx_state_entries | one_line)"
fi
if wait_until 30 same_users; then
    ok "no sandbox-* dynamic user left"
else
    not_ok "no sandbox-* dynamic user left" "after: $(dynamic_users | one_line)"
fi
if wait_until $LINGER_WAIT same_fds; then
    ok "sandboxd's open fds are back to $fds_before"
else
    not_ok "sandboxd's open fds are back to $fds_before" "now $(fd_count "$pid_before"):" \
        "$(ct ls -l "/proc/$pid_before/fd" 2>&1 | tail -n +2)"
fi
check_output "NWorkers is 0" '^0$' sbx_mgr_prop NWorkers

tap_done
