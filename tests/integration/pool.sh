#!/usr/bin/env bash
# The warm pool of gVisor sandboxes (issue 14): a claim starts the workload
# with its argv, environment, credentials, caps and egress; claims never see
# each other; the pool refills, counts against MaxWorkers, shrinks when memory
# is short, never serves a class the gate refuses, and falls back to a cold
# start (saying why) for what a running sandbox cannot get.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CONF=/etc/sandboxd/sandboxd.conf

set_conf() {
    ct sh -c "printf '%b' '$1' > $CONF"
    ct systemctl restart sandboxd.service
}
# create ARGS... -- ARGV: the new worker's id in $WID (sandboxctl create prints it)
create() { WID=$(ct timeout 120 sandboxctl create "$@" 2>"$TAP_TMP/create.err"); }
output() { ct timeout 60 sandboxctl attach "$1" </dev/null 2>&1; }
ended() { [ "$(sbx_prop "$1" State)" = ended ] || ! sbx_prop "$1" State; }

ct systemctl start sandboxd.service
ct sh -c 'printf s3cr3t-one > /root/cred-one; printf s3cr3t-two > /root/cred-two; chmod 600 /root/cred-*'

# ---- the default pool ------------------------------------------------------
if wait_until 120 pooled_is 8; then ok "default pool: 2 standard + 2 untrusted sandboxes of each kind (with and without egress) wait"; else
    not_ok "default pool: 2 standard + 2 untrusted sandboxes of each kind (with and without egress) wait" "PooledSandboxes=$(pooled)"; fi
check_eq "waiting sandboxes are not workers (ListWorkers is empty)" "" \
    "$(ct sandboxctl list --no-legend 2>&1)"
check_eq "NWorkers does not count them" "0" "$(sbx_mgr_prop NWorkers)"

# ---- a claim: argv, environment, credentials, caps -----------------------------
create --class standard --memory 200M --tasks 40 --cpu 30 --setenv POOLVAR=first-value \
    --credential tok:/root/cred-one -- /bin/sh -c \
    'echo "argv:$0:$1"; echo "env:$POOLVAR"; echo "cred:$(cat "$CREDENTIALS_DIRECTORY/tok")"; echo "home:$HOME";
     echo "uid:$(id -u)"; echo "nproc:$(grep "Max processes" /proc/self/limits | tr -s " " | cut -d" " -f3)";
     echo "kernel:$(uname -r)"; echo "proxy:${HTTPS_PROXY:-none}";
     echo secret-file > "$HOME/left-behind" && echo written; echo tmp > /tmp/left-behind; read -r line; echo "stdin:$line"' zero one
first=$WID
check "claim: created ($first)" test -n "$first"
check_eq "claim: StartMode is pooled" "pooled" "$(sbx_prop "$first" StartMode)"
unit=sandbox-$first.service
check_output "claim: the unit is described as a worker's now" "sandboxd worker $first" unit_prop "$unit" Description
check_output "claim: no egress asked, gVisor's own loopback as for a cold worker (runsc --network=none)" \
    '--network=none' unit_prop "$unit" ExecStart
check_eq "claim: MemoryMax applied to the running unit" "209715200" "$(unit_prop "$unit" MemoryMax)"
check_eq "claim: CPUQuota applied to the running unit" "300ms" "$(unit_prop "$unit" CPUQuotaPerSecUSec)"
check_eq "claim: the memory guard's limit is the worker's" "209715200" \
    "$(ct cat /run/sandboxd/bundles/"$first"/memory-max)"
out=$(ct sh -c "echo hello-stdin | timeout 60 sandboxctl attach $first" 2>&1)
diag "$out"
check_output "claim: argv reaches the workload verbatim" '^argv:zero:one$' echo "$out"
check_output "claim: the spec's environment" '^env:first-value$' echo "$out"
check_output "claim: the credential, from \$CREDENTIALS_DIRECTORY" '^cred:s3cr3t-one$' echo "$out"
check_output "claim: HOME is the worker's own, as a cold gVisor worker's (its real path)" \
    "^home:/var/lib/private/sandboxd/workers/$first\$" echo "$out"
check_output "claim: the home is writable" '^written$' echo "$out"
check_output "claim: RLIMIT_NPROC is the worker's TasksMax" '^nproc:40$' echo "$out"
check_output "claim: runs under gVisor" "^kernel:" echo "$out"
check_output "claim: no egress asked, no proxy variable" '^proxy:none$' echo "$out"
check "claim: no egress asked, no proxy socket unit" unit_gone "sandbox-$first-egress.socket"
check_output "claim: stdin after the job is the workload's" '^stdin:hello-stdin$' echo "$out"
uid=$(printf '%s\n' "$out" | sed -n 's/^uid://p')
if [ "$uid" -ge "$DYNAMIC_UID_MIN" ] 2>/dev/null && [ "$uid" -le "$DYNAMIC_UID_MAX" ]; then
    ok "claim: runs as a dynamic UID ($uid)"; else not_ok "claim: runs as a dynamic UID" "uid=$uid"; fi
check "claim: the secret is in no unit file" sh -c "! nsenter -t $CT_PID -a grep -rq s3cr3t-one /run/systemd/transient"
check "claim: the environment value is in no unit file" sh -c "! nsenter -t $CT_PID -a grep -rq first-value /run/systemd/transient"

# ---- a second claim sees nothing of the first --------------------------------
create --class standard -- /bin/sh -c \
    "ls /var/lib/private/sandboxd/workers/$first/left-behind 2>&1; echo tmp:\$(ls -A /tmp); echo env:\${POOLVAR:-unset};
     ls \${CREDENTIALS_DIRECTORY:-/run/credentials/sandbox-$first.service} 2>&1; ps -e -o comm= | sort -u | tr '\n' ' '"
second=$WID
check "second claim: a different sandbox" test "$second" != "$first"
check_eq "second claim: StartMode is pooled" "pooled" "$(sbx_prop "$second" StartMode)"
out=$(output "$second")
diag "$out"
check_output "second claim: the first's home is not there" 'No such file' echo "$out"
check "second claim: the first's /tmp file is not there" sh -c "! printf '%s' \"\$1\" | grep -q '^tmp:.*left-behind'" _ "$out"
check_output "second claim: the first's environment is not there" '^env:unset$' echo "$out"
check "second claim: the first's credential is not there" sh -c "! printf '%s' \"\$1\" | grep -q tok" _ "$out"
check "second claim: no process of the first (its sh, its read)" sh -c "! printf '%s' \"\$1\" | grep -q sandbox-exec" _ "$out"

# ---- refill ------------------------------------------------------------------
if wait_until 120 pooled_is 8; then ok "the pool refills after claims"; else not_ok "the pool refills after claims" "PooledSandboxes=$(pooled)"; fi
check "the claimed sandboxes are gone with their workers (homes removed)" \
    wait_until 60 sh -c "! nsenter -t $CT_PID -a test -e /var/lib/private/sandboxd/workers/$first"

# ---- run time: from the claim, kept by sandboxd ---------------------------------
wait_until 120 pooled_is 8
create --class standard --runtime 2 -- /bin/sleep 600
timed=$WID
check_eq "run time: StartMode is pooled" "pooled" "$(sbx_prop "$timed" StartMode)"
result_is() { [ "$(sbx_prop "$1" Result)" = "$2" ]; }
if wait_until 30 result_is "$timed" timeout; then ok "run time: a pooled worker is stopped at its RuntimeMaxSec (result timeout)"; else
    not_ok "run time: a pooled worker is stopped at its RuntimeMaxSec" "State=$(sbx_prop "$timed" State) Result=$(sbx_prop "$timed" Result)"; fi

# ---- what a running sandbox cannot get: cold, and it says so -------------------
create --class standard --disk 32M -- /bin/true
check_eq "DiskMax: StartMode is cold" "cold" "$(sbx_prop "$WID" StartMode)"
check_output "DiskMax: StartModeReason says why" 'DiskMax' sbx_prop "$WID" StartModeReason
create --class trusted -- /bin/true
check_eq "trusted: no pool, StartMode cold" "cold" "$(sbx_prop "$WID" StartMode)"

# ---- egress through a pooled sandbox ------------------------------------------
create --class untrusted --allow example.invalid -- /bin/sh -c \
    'echo "proxy:$HTTPS_PROXY"; printf "CONNECT denied.invalid:443 HTTP/1.1\r\nHost: denied.invalid:443\r\n\r\n" |
     timeout 10 python3 -c "import socket,sys; s=socket.create_connection((\"10.255.255.1\",3128)); s.sendall(sys.stdin.buffer.read()); print(\"reply:\"+s.recv(200).decode().splitlines()[0])"'
check_eq "egress: StartMode is pooled" "pooled" "$(sbx_prop "$WID" StartMode)"
out=$(output "$WID")
diag "$out"
check_output "egress: the proxy variable is set (the veth's proxy address)" '^proxy:http://10.255.255.1:3128$' echo "$out"
check_output "egress: the proxy answers with the worker's policy (a forbidden host: 403)" '^reply:HTTP/1.[01] 403' echo "$out"
create --class untrusted -- /bin/sh -c \
    'timeout 10 python3 -c "import socket; s=socket.create_connection((\"127.0.0.1\",3128)); s.sendall(b\"CONNECT a.invalid:443 HTTP/1.1\r\n\r\n\"); print(\"reply:\"+repr(s.recv(200)))" 2>&1 | tail -n1'
out=$(output "$WID")
diag "$out"
check "no egress: the pooled sandbox's proxy serves nothing" sh -c "! printf '%s' \"\$1\" | grep -q 'HTTP/1'" _ "$out"

# ---- restart: waiting sandboxes are stopped, claimed workers re-adopted ---------
create --class standard -- /bin/sleep 600
survivor=$WID
before=$(ct systemctl list-units --plain --no-legend --no-pager 'sandbox-*.service' | grep 'sandboxd pool sandbox' | awk '{print $1}' | grep -v "$survivor" | sort)
ct systemctl restart sandboxd.service
check_eq "restart: the claimed worker is re-adopted" "running" "$(sbx_prop "$survivor" State)"
check_eq "restart: the re-adopted worker is still pooled" "pooled" "$(sbx_prop "$survivor" StartMode)"
gone=0
for u in $before; do unit_gone "$u" || gone=1; done
check_eq "restart: the earlier daemon's waiting sandboxes were stopped" 0 "$gone"
if wait_until 120 pooled_is 8; then ok "restart: the pool is made again"; else not_ok "restart: the pool is made again" "PooledSandboxes=$(pooled)"; fi
ct sandboxctl stop "$survivor" >/dev/null 2>&1

# ---- counted against MaxWorkers --------------------------------------------------
set_conf '[Limits]\nMaxWorkers=4\n'
wait_until 60 pooled_is 4
check_eq "MaxWorkers=4: four sandboxes wait, not eight" 4 "$(pooled)"
create --class trusted -- /bin/sleep 600; a=$WID
create --class trusted -- /bin/sleep 600; b=$WID
check "MaxWorkers=4: two cold workers got slots the pool held" test -n "$a" -a -n "$b"
if wait_until 60 pool_units_at_most 2; then ok "MaxWorkers=4 with two workers: at most two sandboxes wait"; else
    not_ok "MaxWorkers=4 with two workers: at most two sandboxes wait" "pool units=$(pool_units)"; fi
ct sandboxctl stop "$a" >/dev/null 2>&1; ct sandboxctl stop "$b" >/dev/null 2>&1

# ---- a reload of systemd: waiting sandboxes are replaced, claims still work -----
set_conf ''
wait_until 120 pooled_is 8
old_units=$(ct systemctl list-units --plain --no-legend --no-pager 'sandbox-*.service' | awk '/sandboxd pool sandbox/ {print $1}')
ct systemctl daemon-reload
replaced() { for u in $old_units; do unit_gone "$u" || return 1; done; }
check "reload: the waiting sandboxes systemd re-read are stopped" wait_until 60 replaced
wait_until 120 pooled_is 8
create --class standard -- /bin/echo after-reload
check_eq "reload: a claim after it is pooled" "pooled" "$(sbx_prop "$WID" StartMode)"
check_output "reload: and runs" '^after-reload$' output "$WID"

# ---- pool off: cold --------------------------------------------------------------
set_conf '[Pool]\nStandardSize=0\nUntrustedSize=0\n'
check_eq "pool off: no sandbox waits" 0 "$(pooled)"
create --class standard -- /bin/true
check_eq "pool off: StartMode is cold" "cold" "$(sbx_prop "$WID" StartMode)"
check_eq "pool off: StartModeReason says so" "the pool is off" "$(sbx_prop "$WID" StartModeReason)"
check_eq "pool off: no pool unit exists" 0 "$(pool_units)"

# ---- memory short: the pool shrinks --------------------------------------------------
set_conf '[Pool]\nMinMemAvailable=1000T\n'
check "memory short: no sandbox waits" wait_until 30 pooled_is 0
check "memory short: no pool unit exists" wait_until 30 pool_units_at_most 0

# ---- a refused class is never pooled ------------------------------------------
set_conf '[Isolation]\nRunscPath=/nonexistent/runsc\n[Pool]\nStandardSize=2\nUntrustedSize=2\n'
check_eq "runsc refused: no sandbox waits" 0 "$(pooled)"
check_eq "runsc refused: no pool unit exists" 0 "$(pool_units)"
sbx_call CreateWorker 'a{sv}' 2 Argv as 1 /bin/true Class s standard
check_eq "runsc refused: standard is IsolationUnavailable" org.sandboxd1.Error.IsolationUnavailable "$BUS_ERROR"

tap_done
