#!/usr/bin/env bash
# [Suspend] KeepAcrossReboot= (issue 13): a suspended worker whose home is a
# workspace survives a reboot (a final stop of sandboxd, then a start with
# another boot ID): it is listed again as suspended with its id, owner and
# workspace, resumes, and its Python counter counts on and reads its
# workspace file; one with egress gets its proxy back at the resume, with its
# allow-list (an allowed name that resolves to a private address is refused
# as private-address, another name as not-in-allow-list).
# Everything else is still wiped: a suspended worker without
# a workspace, any worker with the option off, and a kept record that was
# cut short or tampered with (refused, logged, its image removed).
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CHANNEL=/usr/lib/sandboxd-tests/sbx-channel
IMAGES=/var/lib/sandboxd/suspend
CONF=/etc/sandboxd/sandboxd.conf
MIB=$((1024 * 1024))
# Writes a note in its home once, then prints "N NOTE" every 0.2 s, N held in memory.
COUNTER='import os, time
p = os.path.join(os.environ["HOME"], "note")
if not os.path.exists(p):
    open(p, "w").write("note-%d\n" % os.getpid())
i = 0
while True:
    i += 1
    print(i, open(p).read().strip(), flush=True)
    time.sleep(0.2)'
# The same, asking its proxy every tenth line (2 s) for an allowed and a
# forbidden name: prints "N NOTE ALLOWED-REASON OTHER-REASON"
# (X-Sandbox-Egress-Reason) then, "N NOTE" otherwise. Fewer connections: runsc
# 0.0~20240729 sometimes fails to encode its network stack at a checkpoint
# taken amid a stream of short ones (a nil dereference; SuspendFailed, the
# worker runs on).
EGRESS_COUNTER='import os, socket, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
def ask(host):
    try:
        s = socket.create_connection((u.hostname, u.port), timeout=5)
        s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
        head = s.recv(4096).split(b"\r\n")
        s.close()
        for h in head[1:]:
            if h.lower().startswith(b"x-sandbox-egress-reason:"):
                return h.split(b":", 1)[1].strip().decode()
        return "no-reason"
    except OSError as e:
        return "err-%d" % (e.errno or 0)
p = os.path.join(os.environ["HOME"], "note")
if not os.path.exists(p):
    open(p, "w").write("note-%d\n" % os.getpid())
i = 0
while True:
    i += 1
    if i % 10 == 0:
        print(i, open(p).read().strip(), ask("priv.sbx-keep.test"), ask("other.sbx-keep.test"), flush=True)
    else:
        print(i, open(p).read().strip(), flush=True)
    time.sleep(0.2)'

lines_of() { ct timeout 30 "$CHANNEL" read "$1" "$2" 2>/dev/null | grep -E '^[0-9]+ ' || true; }
has_output() { [ -n "$(lines_of "$1" 500)" ]; }
# Read again while nothing comes: a loaded host can leave 0.8 s without a line.
last_count() {
    local n=
    for _ in 1 2 3 4 5; do
        n=$(lines_of "$1" 800 | tail -n1 | awk '{print $1}')
        [ -n "$n" ] && break
    done
    echo "$n"
}
# The egress counter's lines until one of them asked its proxy (every tenth
# does; a loaded host or a slow resume may not have reached one in 2.5 s).
policy_line() { printf '%s\n' "$1" | grep -E '^[0-9]+ [^ ]+ .' | tail -n1; }
lines_until_policy() {
    local all=
    for _ in 1 2 3 4 5 6; do
        all=$(printf '%s\n%s' "$all" "$(lines_of "$1" 2500)")
        [ -n "$(policy_line "$all")" ] && break
    done
    printf '%s\n' "$all"
}
path_gone() { ! ct test -e "$1"; }
daemon_up() { ct busctl --system status org.sandboxd1 >/dev/null 2>&1; }
# A reboot as sandboxd sees it: systemd's final stop at shutdown, then a
# start in a boot with another ID (the recorded one no longer matches).
reboot_daemon() {
    ct systemctl stop sandboxd.service
    ct sh -c "echo 00000000000000000000000000000000 >/run/sandboxd/boot-id"
    ct systemctl start sandboxd.service
    wait_until 30 daemon_up
}
set_keep() {
    ct sh -c "printf '[Suspend]\nKeepAcrossReboot=%s\n[Egress]\nFloor=*.sbx-keep.test\n' $1 >$CONF"
    ct systemctl restart sandboxd.service
    wait_until 30 daemon_up
}
new_ws() { sbx_call CreateWorkspace 'sa{sv}' "$1" 1 SizeMax t $((64 * MIB)); }
start_counter() { # NAME WORKSPACE|-: prints the worker id
    if [ "$2" = - ]; then
        ct sandboxctl create --class standard -- /usr/bin/python3 -c "$COUNTER"
    else
        ct sandboxctl create --class devcontainer --workspace "$2" -- /usr/bin/python3 -c "$COUNTER"
    fi
}
# resumed_counts_on WHAT ID LAST MS: reads ID's channel for MS into $out and
# checks that its first line after the resume counts on from LAST.
resumed_counts_on() {
    local first
    out=$(lines_of "$2" "$4")
    first=$(printf '%s\n' "$out" | head -n1 | awk '{print $1}')
    diag "reboot ($1): last=$3 first=$first: $(printf '%s\n' "$out" | tail -n1)"
    # Four suspends one after the other, each waiting for its UID keeper first.
    if [ -n "$first" ] && [ -n "$3" ] && [ "$first" -gt "$3" ] && [ "$first" -le $(($3 + 100)) ]; then
        ok "reboot: the $1 counts on from where it was ($3 -> $first)"
    else
        not_ok "reboot: the $1 counts on from where it was" "last=$3 first=$first"
    fi
}
journal_reason() { # ID REASON
    ct journalctl --sync
    ct journalctl -o cat SANDBOXD_WORKER_ID="$1" SANDBOXD_EVENT=kept-refused SANDBOXD_REASON="$2" | grep -q .
}

ct systemctl start sandboxd.service
ct cp "$CONF" "$CONF.orig"
ct sh -c "echo '10.9.9.9 priv.sbx-keep.test' >>/etc/hosts"
set_keep yes
check "a workspace" new_ws keep1
check "a second one" new_ws keep2
check "a third one" new_ws keep3

WID=$(start_counter w keep1)
NID=$(start_counter n -)
TID=$(start_counter t keep2)
EID=$(ct sandboxctl create --class devcontainer --workspace keep3 --allow priv.sbx-keep.test -- \
    /usr/bin/python3 -c "$EGRESS_COUNTER")
diag "kept $WID, no workspace $NID, to be tampered $TID, with egress $EID"
check "the workspace worker counts" wait_until 60 has_output "$WID"
check "the plain worker counts" wait_until 60 has_output "$NID"
check "the second workspace worker counts" wait_until 60 has_output "$TID"
check "the egress workspace worker counts" wait_until 60 has_output "$EID"
check_output "... and its proxy answers: the allowed name private-address, another not-in-allow-list" \
    '^[0-9]+ note-[0-9]+ private-address .*not-in-allow-list$' policy_line "$(lines_until_policy "$EID")"
eid_last=$(last_count "$EID")
note=$(lines_of "$WID" 600 | tail -n1 | awk '{print $2}')
uid_before=$(sbx_prop "$WID" UID | awk '{print $NF}')
owner_before=$(sbx_prop "$WID" Owner)
last=$(last_count "$WID")
for id in "$WID" "$NID" "$TID" "$EID"; do
    check "suspend $id" sbx_call SuspendWorker s "$id"
done
check_output "the kept record sits beside the image, root's and 0600" '^600 root$' \
    ct stat -c '%a %U' "$IMAGES/$WID/$WID"
check_output "it is a complete worker record" '^end$' ct tail -n1 "$IMAGES/$WID/$WID"
check_fails "a worker without a workspace gets none" ct test -e "$IMAGES/$NID/$NID"
check "the egress workspace worker gets one" ct test -e "$IMAGES/$EID/$EID"

# The second one's record is tampered with: another UID than its image's.
ct sed -i 's/^uid=.*/uid=12345/' "$IMAGES/$TID/$TID"

check "reboot: sandboxd stops for good and starts in another boot" reboot_daemon
check_eq "reboot: the workspace worker is listed as suspended" suspended "$(state_of "$WID")"
check_eq "reboot: with its owner" "$owner_before" "$(sbx_prop "$WID" Owner)"
check_eq "reboot: the workspace is held by it" "true $WID" "$(ws_prop keep1 InUse) $(ws_prop keep1 Worker)"
check_fails "reboot: the worker without a workspace is gone" sbx_prop "$NID" State
check_fails "reboot: and so is its image" ct test -e "$IMAGES/$NID"
check_fails "reboot: the tampered worker is refused" sbx_prop "$TID" State
check_fails "reboot: its image is removed" ct test -e "$IMAGES/$TID"
check "reboot: the journal says why (image-mismatch)" wait_until 10 journal_reason "$TID" image-mismatch
check_eq "reboot: its workspace is kept and free" "false" "$(ws_prop keep2 InUse)"

check "reboot: ResumeWorker restores it" sbx_call ResumeWorker s "$WID"
check_eq "reboot: running" running "$(state_of "$WID")"
check_eq "reboot: with the same UID" "$uid_before" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
diag "reboot: note=$note"
resumed_counts_on process "$WID" "$last" 1500
check_output "reboot: and reads its workspace file" "^[0-9]+ $note\$" sh -c "printf '%s\n' \"\$1\" | tail -n1" sh "$out"
check "reboot: the image and its record are gone after the resume" wait_until 20 path_gone "$IMAGES/$WID"

check_eq "reboot: the egress workspace worker is listed as suspended" suspended "$(state_of "$EID")"
check "reboot: ResumeWorker restores it" sbx_call ResumeWorker s "$EID"
check_eq "reboot: running" running "$(state_of "$EID")"
check "reboot: its proxy socket is back" wait_until 30 sh -c \
    "[ \"\$(nsenter -t $CT_PID -a systemctl is-active sandbox-$EID-egress.socket)\" = active ]"
resumed_counts_on "egress worker" "$EID" "$eid_last" 2500
# ci41 read lines 42-49 only after the resume: read on until one asked.
[ -n "$(policy_line "$out")" ] || out=$(printf '%s\n%s' "$out" "$(lines_until_policy "$EID")")
check_output "reboot: its proxy enforces the same policy (private-address for the allowed name, not-in-allow-list for another)" \
    '^[0-9]+ note-[0-9]+ private-address .*not-in-allow-list$' policy_line "$out"
check "reboot: stop the egress worker" sbx_call StopWorker s "$EID"

# ---- a record cut short is refused -----------------------------------------------
check "cut: suspended again" sbx_call SuspendWorker s "$WID"
ct sed -i '$d' "$IMAGES/$WID/$WID"
check "cut: reboot" reboot_daemon
check_fails "cut: the worker is gone" sbx_prop "$WID" State
check_fails "cut: its image is removed" ct test -e "$IMAGES/$WID"
check "cut: the journal says why (record-unreadable)" wait_until 10 journal_reason "$WID" record-unreadable
check_output "cut: its workspace stays" '^keep1' ct sandboxctl workspace list --no-legend

# ---- the option off: wiped at boot as before -------------------------------------
set_keep no
OID=$(start_counter o keep1)
check "off: the workspace worker counts" wait_until 60 has_output "$OID"
check "off: suspended" sbx_call SuspendWorker s "$OID"
check_fails "off: no kept record is written" ct test -e "$IMAGES/$OID/$OID"
check "off: reboot" reboot_daemon
check_fails "off: the suspended workspace worker is gone" sbx_prop "$OID" State
check_output "off: no image is left" '^$' ct ls -A "$IMAGES"
check_output "off: the workspace stays" '^keep1' ct sandboxctl workspace list --no-legend

ct mv "$CONF.orig" "$CONF"
tap_done
