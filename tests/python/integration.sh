#!/usr/bin/env bash
# The Python library (python3-sandboxd, installed with apt beside sandboxd by
# the test bed) against the real sandboxd: tests/python/it_test_sandboxd.py
# runs under Debian's python3-pytest inside the container as root, as tester
# without a polkit grant, and as tester with org.sandboxd1.create-worker (one
# pytest marker each); conftest.py prints a PYOK/PYFAIL line per test, and
# each is one TAP check here.
#   usage: integration.sh CONTAINER_LEADER_PID
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

HERE=$(dirname "$0")
RULE=/etc/polkit-1/rules.d/50-sbx-python.rules
ct systemctl start sandboxd.service

# shellcheck disable=SC2016  # dpkg-query's own ${...} fields
check_output "python3-sandboxd is installed by apt beside sandboxd" \
    '^install ok installed python3-sandboxd' \
    ct dpkg-query -W -f='${Status} ${Package}\n' python3-sandboxd python3-jeepney sandboxd
check "python3-sandboxd's files are the package's (dpkg -V)" ct dpkg -V python3-sandboxd
check_output "the example is shipped" agent_loop.py ct ls /usr/share/doc/python3-sandboxd/examples

# A directory tester can read; the test runs from it, never from the tree.
ct install -d -m 0755 /run/sbx-python
for f in it_test_sandboxd.py conftest.py; do
    ct sh -c "cat > /run/sbx-python/$f" < "$HERE/$f"
done
check_output "pytest is Debian's python3-pytest" '^install ok installed python3-pytest' \
    ct dpkg-query -W -f='${Status} ${Package}\n' python3-pytest

# py_phase USER MARKER [ROOT_WORKER]: runs the tests marked MARKER as USER;
# each PYOK/PYFAIL line becomes a check, the other output diagnostics (a
# failure's traceback is in pytest's summary at the end, shown after the
# checks). A phase that ran no test fails.
py_phase() {
    local user=$1 marker=$2 line n=0
    local -a as=()
    [ "$user" = root ] || as=(runuser -u "$user" --)
    ct "${as[@]}" env -C /run/sbx-python PYTHONDONTWRITEBYTECODE=1 SBX_ROOT_WORKER="${3:-}" \
        timeout 900 python3 -X faulthandler -m pytest -p no:cacheprovider -s -q -rfE --tb=short \
        -m "$marker" it_test_sandboxd.py > "$TAP_TMP/py.out" 2>&1
    echo "$?" > "$TAP_TMP/py.rc"
    local diagnostics=()
    while IFS= read -r line; do
        case "$line" in
            "PYOK "*)   [ ${#diagnostics[@]} -gt 0 ] && diag "${diagnostics[@]}"
                        diagnostics=()
                        n=$((n + 1))
                        ok "python ($user): ${line#PYOK }" ;;
            "PYFAIL "*) n=$((n + 1))
                        not_ok "python ($user): ${line#PYFAIL }" "${diagnostics[@]}"; diagnostics=() ;;
            *)          diagnostics+=("$line") ;;
        esac
    done < "$TAP_TMP/py.out"
    [ ${#diagnostics[@]} -gt 0 ] && diag "${diagnostics[@]}"
    check "python ($user, $marker): pytest ran tests" test "$n" -gt 0
    check_eq "python ($user, $marker): pytest exited 0" 0 "$(cat "$TAP_TMP/py.rc")"
}

# An operator floor for set_egress's refusal and its control (the default
# floor is empty, and an empty allow-list is refused).
CONF=/etc/sandboxd/sandboxd.conf
ct sh -ec "cp $CONF $CONF.orig; printf '[Egress]\nFloor=pypi.org *.example.org\n' > $CONF
    systemctl restart sandboxd"
py_phase root root
ct sh -ec "mv $CONF.orig $CONF; systemctl restart sandboxd"

# tester: refused while polkit grants nothing, then with create-worker only.
ct rm -f "$RULE"
py_phase tester tester_denied
ct sh -c "cat > $RULE" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-worker")
        return polkit.Result.YES;
});
JS
sbx_create 3 Argv as 2 /bin/sleep 600 Class s trusted IdleTimeoutUSec t 600000000
root_wid=$WID
check_match "root's worker for the tester's attach" '^[0-9a-f]{12}$' "$root_wid"
py_phase tester tester "$root_wid"
sbx_call StopWorker s "$root_wid"
ct rm -f "$RULE"

tap_done
