#!/usr/bin/env bash
# Suspend and resume of a gVisor worker with egress and a Service (issue 13):
# such a sandbox runs on gVisor's own network stack on a veth to its proxy's
# listeners (daemon/shared/worker-veth.h), which runsc can checkpoint. A worker that
# keeps a counter in memory and reaches a TLS upstream through its proxy and
# through the broker is suspended (its unit gone), resumed, counts on, reaches
# the upstream again through the proxy, is still refused a host outside its
# allow-list, and the broker still injects the credential; the same after a
# restart of sandboxd while it is suspended. From inside, the
# veth leads to the proxy's listeners and nowhere else.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
W=/etc/sbx-senet-it             # readable by workers: CA, the worker's scripts
P=/root/sbx-senet-it            # root's alone: the upstream's key and its log of headers
CONF=/etc/sandboxd/sandboxd.conf
UP=11.0.0.14
HOST=api.senet-it.test
OTHER=other.senet-it.test
VETHNAME=veth.senet-it.test     # an allowed name for the proxy's own address
PROXY=10.255.255.1

cleanup() {
    ct sh -c "systemctl stop sbx-senet-it-up 2>/dev/null; $W/upstream-netns.sh down
              sed -i '/# sbx-senet-it$/d' /etc/hosts
              [ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $W $P; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

SECRET=sbx-senet-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
read -r -a SECRET_AY <<<"$(ay_args "$SECRET")"

# ---- one TLS upstream for both paths, signed by a test CA ----------------------
ct mkdir -p "$W" "$P"
ct chmod 700 "$P"
for f in work.py attack.py; do
    cat "$SRC/tests/integration/suspend-egress/$f" > "/proc/$CT_PID/root$W/$f"
done
cat "$SRC/tests/egress/broker-upstream.py" > "/proc/$CT_PID/root$P/upstream.py"
upstream_netns_install "$W"
ct sh -ec "
    $W/upstream-netns.sh up $UP
    printf '%s\n' '$UP $HOST # sbx-senet-it' '$UP $OTHER # sbx-senet-it' '$PROXY $VETHNAME # sbx-senet-it' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout $P/ca.key -out $W/ca.pem -subj /CN=sbx-senet-it-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout $P/up.key -out $P/up.csr -subj /CN=$HOST 2>/dev/null
    printf 'subjectAltName=DNS:$HOST,DNS:$OTHER,DNS:$VETHNAME\n' > $P/ext
    openssl x509 -req -in $P/up.csr -CA $W/ca.pem -CAkey $P/ca.key -CAcreateserial -days 2 -extfile $P/ext \
        -out $P/up.pem 2>/dev/null
    chmod -R a+rX $W
    systemd-run -q --unit=sbx-senet-it-up ip netns exec upstream python3 $P/upstream.py $UP 443 $P/up.pem $P/up.key $P/up.log
    cp $CONF $CONF.orig
    printf '[Egress]\nFloor=*.senet-it.test\nBrokerCAFile=$W/ca.pem\n' > $CONF
    systemctl restart sandboxd"
check "setup: the upstream answers TLS at $UP:443" \
    wait_until 20 ct curl -sS -m 5 -o /dev/null --cacert "$W/ca.pem" --resolve "$HOST:443:$UP" "https://$HOST/setup"

# The Authorization values the upstream received for PATH, one a line.
up_auth() { upstream_auth "$P/up.log" "$1"; }
unit_active() { [ "$(ct systemctl is-active "sandbox-$1.service" 2>/dev/null)" = active ]; }
log_of() { sbx_home_cat "$1" log; }
last_n() { log_of "$1" | tail -n1 | awk '{print $1}'; }
# A line after counter AFTER whose three results are all as they should be
# (urllib reports a refused CONNECT as "Tunnel connection failed: 403").
REFUSED='URLError:<urlopen_error_Tunnel_connection_failed:_403_Forbidden>'
good_line_after() {
    log_of "$1" | awk -v after="$2" -v refused="refused=$REFUSED" '$1 > after && / egress=200:ok / &&
        index($0, refused) && / service=200:ok$/ { print; found = 1; exit } END { exit !found }'
}

# ---- the worker ----------------------------------------------------------------
if sbx_create 4 Argv as 5 /usr/bin/python3 "$W/work.py" "$W/ca.pem" "$HOST" "$OTHER" Class s standard \
    EgressAllow as 2 "$HOST" "$VETHNAME" \
    Services 'a(sa{sv})' 1 API 3 Url s "https://$HOST/v1/" Credential ay "${SECRET_AY[@]}" Methods as 1 GET; then
    ok "CreateWorker: standard, with egress and a Service"
else
    not_ok "CreateWorker: standard, with egress and a Service" "$BUS_ERROR $BUS_ERRMSG"
fi
diag "worker $WID"
check_output "the sandbox runs on gVisor's own network stack on a veth (--network=veth)" '--network=veth' \
    unit_prop "sandbox-$WID.service" ExecStart
check "before: the worker reaches the upstream through its proxy and the broker; a host outside the list is 403" \
    wait_until 90 good_line_after "$WID" 0
diag "before: $(log_of "$WID" | tail -n1)"
n=$(good_line_after "$WID" 0 | awk '{print $1}')
check_eq "before: the broker injected the credential" "Bearer $SECRET" "$(up_auth "/v1/svc/$n" | head -n1)"
check_eq "before: the request through the proxy reached the upstream, with no credential" "-" \
    "$(up_auth "/egress/$n" | head -n1)"
uid_before=$(sbx_prop "$WID" UID | awk '{print $NF}')

# ---- suspend: connections open at the checkpoint are reset, not a refusal --------
check "SuspendWorker answers once the worker is suspended (while it makes requests)" sbx_call SuspendWorker s "$WID"
check_eq "the worker is listed as suspended" suspended "$(state_of "$WID")"
check "its unit is gone" unit_gone "sandbox-$WID.service"
check "its proxy's units are gone" unit_gone "sandbox-$WID-egress.socket"
# The home lies on the worker's disk, which is not mounted while it sleeps:
# its log is read again once it runs.

# ---- resume ------------------------------------------------------------------------
check "ResumeWorker answers once it runs" sbx_call ResumeWorker s "$WID"
check_eq "running again" running "$(state_of "$WID")"
check "in a unit of the same name" unit_active "$WID"
check_eq "with the same UID" "$uid_before" "$(sbx_prop "$WID" UID | awk '{print $NF}')"
# What it wrote up to now: at most a line or two of them after the resume.
last=$(last_n "$WID")
diag "last line once resumed: $(log_of "$WID" | tail -n1)"
counted_on() { [ -n "$(last_n "$WID")" ] && [ "$(last_n "$WID")" -gt "${last:-0}" ]; }
check "the process counts on after the resume" wait_until 60 counted_on
# A restart from scratch would count from 1 again: every line of the log,
# across the suspend, is within three of the one before it.
jumps=$(log_of "$WID" | awk 'NR > 1 && ($1 < prev - 3 || $1 > prev + 3) { print prev " -> " $1 } { prev = $1 }')
if [ -n "$last" ] && [ -z "$jumps" ]; then
    ok "it counts on from where it was (${last} lines once resumed, no restart in the log), it did not start over"
else
    not_ok "it counts on from where it was" "last=$last, jumps in the log: $jumps"
fi
diag "first lines after the resume: $(log_of "$WID" | awk -v after="$last" '$1 > after' | head -n3 | tr '\n' '|')"
check "after resume: the upstream through the proxy again, the other host still 403, the broker again" \
    wait_until 60 good_line_after "$WID" "$last"
n=$(good_line_after "$WID" "$last" | awk '{print $1}')
check_eq "after resume: the broker still injects the credential" "Bearer $SECRET" "$(up_auth "/v1/svc/$n" | head -n1)"
check_eq "after resume: the request through the proxy reached the upstream again" "-" "$(up_auth "/egress/$n" | head -n1)"
check_eq "after resume: the proxy's policy still refuses a host outside the allow-list (403)" "$REFUSED" \
    "$(good_line_after "$WID" "$last" | sed -n 's/.*refused=\([^ ]*\).*/\1/p')"
check_eq "after resume: ... and never let it through to the upstream" "" "$(up_auth "/refused/$n")"

# ---- suspended across a restart of sandboxd: the proxy and the broker come back -----
restarted() { [ "$(unit_prop sandboxd.service MainPID)" != "$1" ] && ct busctl --system status org.sandboxd1 >/dev/null 2>&1; }
# The suspend right after a resume, while the workload makes requests, is
# where runsc 0.0~20240729 used to fail to encode a handshake in flight and
# end the sandbox; the launcher now lets handshakes end first (launch-
# suspend.c; tests/attacks/loss-checkpoint.sh runs 20 such cycles).
if sbx_call SuspendWorker s "$WID"; then
    ok "restart: suspended again"
    old_pid=$(unit_prop sandboxd.service MainPID)
    check "restart: systemctl restart sandboxd while the worker is suspended" ct systemctl restart sandboxd.service
    check "restart: sandboxd is back" wait_until 30 restarted "$old_pid"
    check_eq "restart: the worker is still listed as suspended" suspended "$(state_of "$WID")"
    check "restart: ResumeWorker answers once it runs" sbx_call ResumeWorker s "$WID"
    # Its disk is mounted again: what it wrote up to now.
    last=$(last_n "$WID")
    check "restart: its proxy socket is back" wait_until 30 sh -c \
        "[ \"\$(nsenter -t $CT_PID -a systemctl is-active sandbox-$WID-egress.socket)\" = active ]"
    check "restart: the upstream through the proxy, the other host 403 and the broker, all again" \
        wait_until 90 good_line_after "$WID" "$last"
    n=$(good_line_after "$WID" "$last" | awk '{print $1}')
    check_eq "restart: the broker injects the credential the new daemon restored" "Bearer $SECRET" \
        "$(up_auth "/v1/svc/$n" | head -n1)"
    check_eq "restart: the proxy's policy still refuses a host outside the allow-list (403)" "$REFUSED" \
        "$(good_line_after "$WID" "$last" | sed -n 's/.*refused=\([^ ]*\).*/\1/p')"
else
    not_ok "restart: suspended again" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- from inside, the veth leads to the proxy's listeners and nowhere else ----------
# A second worker with the same walls, after the resume of the first one.
out=$(ct timeout 240 sandboxctl run --class standard --allow "$HOST" --allow "$VETHNAME" -- \
    /usr/bin/python3 "$W/attack.py" "$PROXY" 4000 "$UP:443" 11.0.0.1:22 11.0.0.1:443 10.255.255.1:22 \
    10.255.255.3:3128 8.8.8.8:53 "[2a01:db9::1]:443" "[fe80::1]:3128" "[::1]:3128" 2>&1)
diag "$out"
check_output "attack: the scan ran to its end" '^done$' echo "$out"
check_eq "attack: of ports 1-4000 of the proxy's address only the CONNECT listener accepts" "open 3128" \
    "$(printf '%s\n' "$out" | grep '^open ')"
check_fails "attack: no connection around the proxy succeeds (upstream, the host's addresses, the rest of the /30, IPv6)" \
    grep -q 'connected$' <<<"$out"
check_output "attack: the proxy refuses a CONNECT to its own address (an allowed name for it: private)" \
    'X-Sandbox-Egress-Reason: private' \
    ct timeout 120 sandboxctl run --class standard --allow "$VETHNAME" -- /bin/sh -c \
    "curl -sS -v -m 20 --cacert $W/ca.pem https://$VETHNAME:443/ 2>&1 | grep -i x-sandbox-egress-reason; true"

ct sandboxctl stop "$WID" >/dev/null 2>&1
tap_done
