#!/usr/bin/env bash
# sandboxctl logs and ReadWorkerLog (issue 10) against the real daemon and
# journald: a worker's lifecycle entries, its egress decisions with --egress,
# to its owner and root only (also once its object is gone), never an entry
# a user forged, -f until the worker ends, -n, --json and the pager.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

RULES=/etc/polkit-1/rules.d
ct systemctl start sandboxd.service
sbx_monitor_start
# tester may create trusted workers (polkit.sh shows that it may not by default).
ct sh -c "cat >$RULES/50-sbx-logs.rules" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-trusted-worker")
        return polkit.Result.YES;
});
JS
ct useradd -m -u 1501 intruder
as_intruder() { ct runuser -u intruder -- "$@"; }

logs() { ct sandboxctl logs --no-pager "$@" 2>&1; }
# logs_match REGEX ARGS...: sandboxctl logs ARGS (as root) matches REGEX.
logs_match() {
    local re=$1
    shift
    logs "$@" | grep -Eq -- "$re"
}
# n_lines ARGS...: how many lines sandboxctl logs --no-pager ARGS prints.
n_lines() { ct sandboxctl logs --no-pager "$@" | wc -l; }
# json_rows ID: --json's lines checked by python (prints "ok").
json_rows() {
    ct sandboxctl logs --json "$1" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert rows and all(set(r) == {"timestamp_usec", "source", "priority", "event", "message"} for r in rows), rows
assert any(r["source"] == "sandboxd" and r["event"] == "ended" and r["message"] == "Worker ended" for r in rows), rows
print("ok")'
}
# not_entries ARGS...: the lines of sandboxctl logs ARGS that are not sandboxd's entries.
not_entries() { ct sandboxctl logs --no-pager "$@" | grep -v ' sandboxd: '; true; }
# egress_lines ID: how many lines sandboxctl logs ID (without --egress) has from the proxy.
egress_lines() { ct sandboxctl logs --no-pager "$1" | grep -c ' egress: '; true; }
# forged_lines_re REGEX CMD...: how many lines of CMD (in the container) match REGEX.
forged_lines_re() {
    local re=$1
    shift
    ct "$@" | grep -c -- "$re"
    true
}
id_of() { [[ $1 =~ ^[0-9a-f]{12}$ ]] && printf '%s' "$1"; }

# ---- a trusted worker's lifecycle -------------------------------------------
wid=$(id_of "$(ct sandboxctl create --class trusted -- /bin/true)")
check "create a trusted worker that exits at once" test -n "$wid"
wait_until 30 logs_match 'sandboxd: Worker ended' "$wid"
check_output "logs shows sandboxd's 'Worker started'" '^[0-9-]+T[0-9:.]+[-+][0-9]{4} sandboxd: Worker started$' \
    logs "$wid"
check_output "... and 'Worker ended'" ' sandboxd: Worker ended$' logs "$wid"
out=$(logs --no-legend "$wid")
last=$(printf '%s\n' "$out" | tail -n1)
check_output "-n 1 prints one entry" '^1$' n_lines --no-legend -n 1 "$wid"
check_eq "... the last one" "$last" "$(ct sandboxctl logs --no-pager --no-legend -n 1 "$wid")"
check_output "-n 2 prints the last two" '^2$' n_lines -n 2 "$wid"
check_output "--json: one object per line with timestamp_usec, source, priority, event, message" '^ok$' \
    json_rows "$wid"
check_output "--no-legend: nothing but entries" '^$' not_entries --no-legend "$wid"
check_output "... where the legend says when there are none" '^-- No entries --$' \
    ct sandboxctl logs --no-pager -n 0 "$wid"
check_output "a malformed id is InvalidArgument (exit non-zero)" 'org\.sandboxd1\.Error\.InvalidArgument' \
    expect_fail ct sandboxctl logs --no-pager NOT-AN-ID
check_output "an id nobody ever used is NoSuchWorker, to root too" 'org\.sandboxd1\.Error\.NoSuchWorker' \
    expect_fail ct sandboxctl logs --no-pager 0123456789ab

# ---- egress decisions only with --egress ---------------------------------------
# The operator floor is empty here, so the proxy refuses even the allowed host.
eid=$(id_of "$(ct sandboxctl create --class trusted --allow refused.sbx-logs.test -- \
    /usr/bin/curl -sS -m 20 -o /dev/null https://refused.sbx-logs.test/)")
check "create a worker that tries a CONNECT its proxy refuses" test -n "$eid"
wait_until 60 logs_match 'egress: egress deny refused\.sbx-logs\.test:443' --egress "$eid"
check_output "--egress shows the proxy's refusal" 'egress: egress deny refused\.sbx-logs\.test:443 ' logs --egress "$eid"
wait_until 30 logs_match 'sandboxd: Worker ended' "$eid"
check_output "without --egress it does not" '^0$' egress_lines "$eid"
check_output "... though sandboxd's entries are there" ' sandboxd: Worker ended$' logs "$eid"
check_output "--json --egress carries the decision as its event" '"source":"egress","priority":[0-9],"event":"deny"' \
    ct sandboxctl logs --json --egress "$eid"

# ---- root in the worker's unit (the launcher's place), not the workload -------------
# sandbox-launch writes only on trouble (a memory kill, a refused setup), so
# the worker's unit name, free again after it ended, stands in: root's output
# there is the launcher's; the same unit under a dynamic UID is a workload's.
ct systemd-run --wait -q --unit="sandbox-$wid.service" /bin/sh -c 'echo ROOT-IN-THE-UNIT'
ct systemd-run --wait -q --unit="sandbox-$wid.service" -p DynamicUser=yes /bin/sh -c 'echo WORKLOAD-IN-THE-UNIT'
journal_has ROOT-IN-THE-UNIT -u "sandbox-$wid.service"
journal_has WORKLOAD-IN-THE-UNIT -u "sandbox-$wid.service"
check_output "root's entries in sandbox-ID.service are the launcher's" ' launcher: ROOT-IN-THE-UNIT$' logs "$wid"
check_output "... a dynamic UID's there (the workload's) are not in the log" '^0$' \
    forged_lines_re WORKLOAD-IN-THE-UNIT sandboxctl logs --no-pager --egress "$wid"

# ---- who may read: owner, root, nobody else -----------------------------------
tid=$(id_of "$(as_tester sandboxctl create --class trusted -- /bin/sleep 600)")
check "tester creates a trusted worker" test -n "$tid"
check_output "the owner reads their worker's log" ' sandboxd: Worker started$' \
    as_tester sandboxctl logs --no-pager "$tid"
check_output "root reads anyone's" ' sandboxd: Worker started$' logs "$tid"
denied=$(as_intruder sandboxctl logs --no-pager "$tid" 2>&1; echo "rc=$?")
check_output "another user is refused with NoSuchWorker" 'org\.sandboxd1\.Error\.NoSuchWorker' echo "$denied"
check_output "... and a non-zero exit" 'rc=[1-9]' echo "$denied"
check_fails "... and sees none of the entries" grep -q 'Worker started' <<<"$denied"
none=$(as_intruder sandboxctl logs --no-pager 0123456789ab 2>&1; echo "rc=$?")
check_eq "... the same answer as for a worker that never existed" "${none//0123456789ab/ID}" "${denied//$tid/ID}"

# ---- forged entries --------------------------------------------------------
# A plain user can write to the journal with any field it likes, except the
# trusted ones journald adds (_UID, _SYSTEMD_UNIT): a message claiming to be
# the worker's, and one claiming the intruder owns it.
forge() {
    local user=$1 fields=$2
    ct runuser -u "$user" -- python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(sys.argv[1].encode(), "/run/systemd/journal/socket")' "$fields"
}
forged_lines() { forged_lines_re FORGED "$@"; }
forge tester "MESSAGE=FORGED-BY-TESTER
SANDBOXD_WORKER_ID=$tid
SANDBOXD_EVENT=ended
_SYSTEMD_UNIT=sandboxd.service
_UID=0
PRIORITY=6
"
forge intruder "MESSAGE=FORGED-OWNER
SANDBOXD_WORKER_ID=$tid
SANDBOXD_OWNER_UID=1501
SANDBOXD_EVENT=starting
"
journal_has FORGED-BY-TESTER SANDBOXD_WORKER_ID="$tid"
journal_has FORGED-OWNER SANDBOXD_WORKER_ID="$tid"
check_output "a forged entry naming the worker is not in its log (as the owner)" '^0$' \
    forged_lines runuser -u tester -- sandboxctl logs --no-pager "$tid"
check_output "... nor as root" '^0$' forged_lines sandboxctl logs --no-pager "$tid"
check_output "... nor with --egress (which looks at more)" '^0$' forged_lines sandboxctl logs --no-pager --egress "$tid"

# ---- -f follows until the worker ends -------------------------------------------
ct sh -c "timeout 90 runuser -u tester -- sandboxctl logs -f $tid >/run/sbx-logs-follow.out 2>&1; echo \$? >/run/sbx-logs-follow.rc" &
follower=$!
followed() { ct grep -q "$1" /run/sbx-logs-follow.out; }
wait_until 30 followed 'sandboxd: Worker started'
check "-f prints what is there" followed 'sandboxd: Worker started'
check_fails "... and keeps running while the worker does" ct test -e /run/sbx-logs-follow.rc
ct sandboxctl stop "$tid"
wait_until 60 ct test -e /run/sbx-logs-follow.rc
wait "$follower"
check_output "-f exits 0 once the worker has ended" '^0$' ct cat /run/sbx-logs-follow.rc
check_output "... after printing the entry that came while it followed" ' sandboxd: Worker ended$' \
    ct cat /run/sbx-logs-follow.out
check_output "... and saying so" "^-- Worker $tid has ended --$" ct cat /run/sbx-logs-follow.out
check_fails "... and the forged 'ended' did not end it early" ct grep -q FORGED /run/sbx-logs-follow.out

# ---- once the object is gone -------------------------------------------------
# WorkerRemoved comes when it ends; the object lingers 30 s after that.
check "the worker ended (WorkerRemoved)" sbx_wait_removed "$tid" 90
object_gone() { ! sbx_call GetWorker s "$1" && [ "$BUS_ERROR" = org.sandboxd1.Error.NoSuchWorker ]; }
wait_until 90 object_gone "$tid"
check_error "its object is gone (GetWorker: NoSuchWorker)" org.sandboxd1.Error.NoSuchWorker root GetWorker s "$tid"
check_output "the owner still reads an ended worker's log" ' sandboxd: Worker ended$' \
    as_tester sandboxctl logs --no-pager "$tid"
check_output "... and root" ' sandboxd: Worker ended$' logs "$tid"
check_output "the intruder, despite its forged SANDBOXD_OWNER_UID, is still refused" \
    'org\.sandboxd1\.Error\.NoSuchWorker' expect_fail as_intruder sandboxctl logs --no-pager "$tid"

# Holders of manage-workers read anyone's, as with ListWorkers.
ct sh -c "cat >$RULES/50-sbx-logs-manage.rules" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "intruder" && action.id == "org.sandboxd1.manage-workers")
        return polkit.Result.YES;
});
JS
intruder_reads() { as_intruder sandboxctl --no-ask-password logs --no-pager "$1" | grep -q ' sandboxd: Worker ended$'; }
wait_until 30 intruder_reads "$tid"
check "a holder of org.sandboxd1.manage-workers reads another's ended worker's log" intruder_reads "$tid"
ct rm -f "$RULES/50-sbx-logs-manage.rules"

# ---- ReadWorkerLog itself -------------------------------------------------------
sbx_call ReadWorkerLog ssbu "$wid" "" false 1
check_output "ReadWorkerLog pages: max_entries 1 gives one entry and a cursor" '^a\(tsuss\)s 1 [0-9]+ "sandboxd" [0-9] "[a-z-]*" ".*" "s=[^"]+"$' \
    echo "$BUS_OUT"
cursor=$(sed -E 's/.*"(s=[^"]+)"$/\1/' <<<"$BUS_OUT")
sbx_call ReadWorkerLog ssbu "$wid" "$cursor" false 1000
all=$(logs --no-legend "$wid" | wc -l)
check_output "... and the rest after that cursor" "^a\\(tsuss\\)s $((all - 1)) " echo "$BUS_OUT"
check_error "a cursor journald cannot parse is InvalidArgument" org.sandboxd1.Error.InvalidArgument root \
    ReadWorkerLog ssbu "$wid" "garbage" false 10

# ---- the pager ------------------------------------------------------------------
# script(1) gives sandboxctl a terminal for its stdout.
paged() {
    ct rm -f /run/sbx-paged
    ct env "$@" script -qec "sandboxctl logs $wid" /dev/null >/dev/null
}
paged SANDBOXCTL_PAGER='cat >/run/sbx-paged' PAGER=false
check_output "on a terminal the output goes through \$SANDBOXCTL_PAGER" ' sandboxd: Worker ended$' ct cat /run/sbx-paged
ct rm -f /run/sbx-paged
ct env PAGER='cat >/run/sbx-paged' script -qec "sandboxctl logs $wid" /dev/null >/dev/null
check_output "... else \$PAGER" ' sandboxd: Worker ended$' ct cat /run/sbx-paged
ct rm -f /run/sbx-paged
out=$(ct env PAGER='cat >/run/sbx-paged' script -qec "sandboxctl logs --no-pager $wid" /dev/null)
check_fails "--no-pager prints directly" ct test -e /run/sbx-paged
check_output "... to the terminal" 'sandboxd: Worker ended' echo "$out"
out=$(ct env SANDBOXCTL_PAGER=cat PAGER='cat >/run/sbx-paged' script -qec "sandboxctl logs $wid" /dev/null)
check_fails "SANDBOXCTL_PAGER=cat means no pager" ct test -e /run/sbx-paged
check_output "... and prints directly" 'sandboxd: Worker ended' echo "$out"
out=$(ct env SANDBOXCTL_PAGER='true' script -qec "sandboxctl logs $wid; echo rc=\$?" /dev/null)
check_output "a pager that quits at once ends sandboxctl quietly (exit 0)" '^rc=0' echo "${out//$'\r'/}"
check_fails "... with nothing on stderr" grep -q 'sandboxctl:' <<<"$out"
# Neither variable: less -FRX, which prints a short log and exits; or, where
# less is not installed (the test bed has none), the log printed directly.
out=$(ct timeout 30 env -u PAGER -u SANDBOXCTL_PAGER script -qec "sandboxctl logs $wid; echo rc=\$?" /dev/null)
check_output "no pager variable: the default pager or none, and the entries reach the terminal" \
    'sandboxd: Worker ended' echo "$out"
check_output "... exit 0" 'rc=0' echo "${out//$'\r'/}"
check_output "not a terminal: no pager" 'sandboxd: Worker ended' \
    ct env SANDBOXCTL_PAGER='cat >/run/sbx-paged-never' sandboxctl logs "$wid"
check_fails "... (it never ran)" ct test -e /run/sbx-paged-never

ct rm -f "$RULES/50-sbx-logs.rules"
tap_done
