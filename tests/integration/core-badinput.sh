#!/usr/bin/env bash
# sandboxd core (issue 2): every bad input gets its own org.sandboxd1.Error.*
# with a message, and changes nothing: no new sandbox-* unit, no new entry in
# the sessions root. Classes are honoured or refused, never downgraded. A plain
# user may not create, stop or attach.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

E=org.sandboxd1.Error
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

units_before=$(sbx_units)
state_before=$(sbx_state_entries)

nothing_new() {
    local units state
    units=$(sbx_units)
    state=$(sbx_state_entries)
    if [ "$units" = "$units_before" ] && [ "$state" = "$state_before" ]; then
        ok "$1: no new unit, no new home"
    else
        not_ok "$1: no new unit, no new home" \
            "units before: $(echo $units_before)" "units after:  $(echo $units)" \
            "homes before: $(echo $state_before)" "homes after:  $(echo $state)"
    fi
}

# bad NAME ERROR N KEY SIG VALUE...: CreateWorker with that spec must fail with ERROR.
bad() {
    local name=$1 want=$2
    shift 2
    check_error "$name: $want" "$want" root CreateWorker 'a{sv}' "$@"
    nothing_new "$name"
}

# ---- the spec ------------------------------------------------------------
bad "empty spec"                  $E.MissingArgv 0
bad "missing Argv"                $E.MissingArgv 1 Class s trusted
bad "empty Argv"                  $E.MissingArgv 2 Argv as 0 Class s trusted
bad "relative Argv[0] ./true"     $E.InvalidSpec 2 Argv as 1 ./true Class s trusted
bad "relative Argv[0] bin/true"   $E.InvalidSpec 2 Argv as 1 bin/true Class s trusted
bad "unknown spec key"            $E.UnknownSpecKey 3 Argv as 1 /bin/true Class s trusted Bogus s x
bad "Argv as a string"            $E.WrongType 2 Argv s /bin/true Class s trusted
bad "Class as an array"           $E.WrongType 2 Argv as 1 /bin/true Class as 1 trusted
bad "MemoryMax as u"              $E.WrongType 3 Argv as 1 /bin/true Class s trusted MemoryMax u 134217728
bad "CPUQuotaPercent as t"        $E.WrongType 3 Argv as 1 /bin/true Class s trusted CPUQuotaPercent t 20
bad "Credentials as a(ss)"        $E.WrongType 3 Argv as 1 /bin/true Class s trusted Credentials 'a(ss)' 1 tok value
bad "Environment as s"            $E.WrongType 3 Argv as 1 /bin/true Class s trusted Environment s A=b
bad "Environment entry without ="  $E.InvalidEnvironment 3 Argv as 1 /bin/true Class s trusted Environment as 1 NOEQUALS

for key in "MemoryMax t" "TasksMax t" "CPUQuotaPercent u" "RuntimeMaxUSec t" "IdleTimeoutUSec t"; do
    set -- $key
    bad "zero $1" $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted "$1" "$2" 0
done
bad "absurd MemoryMax (2^64-1)"    $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted MemoryMax t 18446744073709551615
bad "absurd MemoryMax (1 PiB)"     $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted MemoryMax t 1125899906842624
bad "absurd TasksMax (10^12)"      $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted TasksMax t 1000000000000
bad "absurd CPUQuotaPercent (2^32-1)" $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted CPUQuotaPercent u 4294967295
bad "absurd RuntimeMaxUSec (2^64-1)" $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted RuntimeMaxUSec t 18446744073709551615
bad "absurd IdleTimeoutUSec (100 years)" $E.LimitOutOfRange 3 Argv as 1 /bin/true Class s trusted IdleTimeoutUSec t 3153600000000000

bad "unknown class"               $E.UnknownClass 2 Argv as 1 /bin/true Class s bogus
bad "empty class"                 $E.UnknownClass 2 Argv as 1 /bin/true Class s ''
bad "credential name with /"      $E.InvalidCredential 3 Argv as 1 /bin/true Class s trusted Credentials 'a(say)' 1 a/b 1 65
bad "credential name ../x"        $E.InvalidCredential 3 Argv as 1 /bin/true Class s trusted Credentials 'a(say)' 1 ../x 1 65
bad "empty credential name"       $E.InvalidCredential 3 Argv as 1 /bin/true Class s trusted Credentials 'a(say)' 1 '' 1 65
bad "duplicate credential name"   $E.InvalidCredential 3 Argv as 1 /bin/true Class s trusted Credentials 'a(say)' 2 tok 1 65 tok 1 66
# sandboxd's own credential (the environment) and its namespace are not the spec's to supply.
bad "reserved credential sandboxd.environment" $E.InvalidCredential 4 Argv as 1 /bin/true Class s trusted \
    Environment as 1 A=b Credentials 'a(say)' 1 sandboxd.environment 4 65 61 61 0
bad "reserved credential prefix sandboxd."   $E.InvalidCredential 3 Argv as 1 /bin/true Class s standard Credentials 'a(say)' 1 sandboxd.x 1 65

# ---- bare command names ------------------------------------------------------
# A name is searched in /usr/local/bin:/usr/bin:/bin as the worker will see
# them; one that is not there is ExecutableNotFound naming it, and nothing is
# made. A name whose file the host has but the gVisor sandbox masks
# (/etc/sandboxd, through a link in /usr/local/bin) is not found for a
# gVisor worker; a trusted worker sees /etc and runs it (tests/cli/integration.sh).
not_found() {
    local name=$1 cmd=$2 cls=$3
    check_error "$name: ExecutableNotFound" $E.ExecutableNotFound root CreateWorker 'a{sv}' 2 Argv as 1 "$cmd" Class s "$cls"
    if [[ $BUS_ERRMSG == *"executable '$cmd' not found in /usr/local/bin:/usr/bin:/bin"* ]]; then
        ok "$name: the message names it and the search path"
    else
        not_ok "$name: the message names it and the search path" "got: $BUS_ERRMSG"
    fi
    nothing_new "$name"
}
not_found "nosuchcmd (trusted)" nosuchcmd trusted
not_found "nosuchcmd (standard)" nosuchcmd standard
ct sh -c 'mkdir -p /usr/local/bin && printf "#!/bin/sh\necho host-only\n" >/etc/sandboxd/sbx-hostonly &&
    chmod 0755 /etc/sandboxd/sbx-hostonly && ln -sf /etc/sandboxd/sbx-hostonly /usr/local/bin/sbx-hostonly'
not_found "a name only the host's /etc/sandboxd has (standard)" sbx-hostonly standard
ct sh -c 'printf "#!/bin/sh\n" >/usr/local/bin/sbx-noexec && chmod 0644 /usr/local/bin/sbx-noexec'
not_found "a file without execute permission (trusted)" sbx-noexec trusted
ct sh -c 'mkdir -p /usr/local/bin/sbx-dir'
not_found "a directory (trusted)" sbx-dir trusted
ct rm -rf /usr/local/bin/sbx-hostonly /etc/sandboxd/sbx-hostonly /usr/local/bin/sbx-noexec /usr/local/bin/sbx-dir

# ---- unknown workers -------------------------------------------------------
for id in 000000000000 ../../../etc nonexistent; do
    for method in GetWorker StopWorker OpenChannel; do
        check_error "$method('$id'): NoSuchWorker" $E.NoSuchWorker root "$method" s "$id"
    done
done
nothing_new "calls on unknown workers"

# ---- classes: honoured or refused, never downgraded -------------------------
# Preflight says which runtimes this host offers; a class whose runtime is
# available must run on exactly that runtime, any other must be refused.
preflight=$(ct busctl --system --json=short call org.sandboxd1 /org/sandboxd1 org.sandboxd1.Manager Preflight 2>&1)
check_output "Preflight lists every class" '"trusted".*"standard".*"untrusted".*"hostile"' echo "$preflight"
runtime_of() {
    python3 -c '
import json, sys
cls = sys.argv[1]
try:
    rows = json.loads(sys.argv[2])["data"][0]
except (ValueError, KeyError, IndexError):
    sys.exit(1)
for c, runtime, path, available, reason in rows:
    if c == cls:
        print(runtime, "yes" if available else "no")
' "$1" "$preflight"
}

class_case() {
    local label=$1 cls=$2 runtime avail
    shift 2
    read -r runtime avail <<<"$(runtime_of "$cls")"
    if [ -z "$runtime" ]; then
        not_ok "$label: Preflight reports class $cls" "$preflight"
        return
    fi
    if [ "$avail" = yes ]; then
        if sbx_create "$@"; then
            check_eq "$label: runs on its runtime $runtime, as Preflight reports it available" "$runtime" "$(sbx_prop "$WID" Runtime)"
            sbx_call StopWorker s "$WID"
            wait_until 30 unit_gone "sandbox-$WID.service"
            wait_until 10 home_absent "$WID"
            nothing_new "$label (stopped again)"
        else
            not_ok "$label: Preflight says $runtime is available, so it must start" "$BUS_ERROR $BUS_ERRMSG"
            nothing_new "$label"
        fi
    else
        check_error "$label: refused as $runtime is unavailable" $E.IsolationUnavailable root CreateWorker 'a{sv}' "$@"
        nothing_new "$label"
    fi
}
class_case "no Class (standard by default)" standard 1 Argv as 2 /bin/sleep 1000
class_case "class standard" standard 2 Argv as 2 /bin/sleep 1000 Class s standard
class_case "class untrusted" untrusted 2 Argv as 2 /bin/sleep 1000 Class s untrusted
class_case "class hostile" hostile 2 Argv as 2 /bin/sleep 1000 Class s hostile
class_case "class wasm" wasm 2 Argv as 2 /bin/sleep 1000 Class s wasm
# Kata cannot run in these VMs (no nested KVM, not packaged): hostile is refused here.
check_output "hostile is unavailable on this host (no Kata)" '^kata no$' runtime_of hostile

# ---- a plain user ------------------------------------------------------------
# Any local user may call; without a polkit rule sandboxd itself refuses,
# naming the action the call needed (polkit.sh covers the rules).
denied() {
    local name=$1 action=$2
    shift 2
    if bus_call tester "$SBX_DEST" "$@"; then
        not_ok "$name" "the call succeeded: $BUS_OUT"
    elif [ "$BUS_ERROR" = org.freedesktop.DBus.Error.AccessDenied ] && [[ $BUS_ERRMSG == *"$action"* ]]; then
        ok "$name"
    else
        not_ok "$name" "expected AccessDenied naming $action, got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
    fi
}
denied "tester calling CreateWorker (trusted) gets AccessDenied naming create-trusted-worker" \
    org.sandboxd1.create-trusted-worker "$SBX_PATH" "$SBX_MGR" CreateWorker 'a{sv}' 2 Argv as 2 /bin/sleep 1000 Class s trusted
denied "tester calling CreateWorker (standard) gets AccessDenied naming create-worker" \
    org.sandboxd1.create-worker "$SBX_PATH" "$SBX_MGR" CreateWorker 'a{sv}' 2 Argv as 2 /bin/sleep 1000 Class s standard
nothing_new "tester's CreateWorker"
if sbx_create 2 Argv as 2 /bin/sleep 1000 Class s trusted; then
    live=$WID
    units_before=$(sbx_units)
    state_before=$(sbx_state_entries)
    # Another user's worker is no worker at all to tester (polkit.sh,
    # bus-signals.sh's bus-probe-id-tester).
    hidden() {
        local name=$1 error=$2
        shift 2
        if bus_call tester "$SBX_DEST" "$@"; then
            not_ok "$name" "the call succeeded: $BUS_OUT"
        elif [ "$BUS_ERROR" = "$error" ]; then
            ok "$name"
        else
            not_ok "$name" "expected $error, got: ${BUS_ERROR:-no error name} $BUS_ERRMSG"
        fi
    }
    hidden "tester calling StopWorker on root's live worker gets NoSuchWorker" org.sandboxd1.Error.NoSuchWorker \
        "$SBX_PATH" "$SBX_MGR" StopWorker s "$live"
    hidden "tester calling OpenChannel on root's live worker gets NoSuchWorker" org.sandboxd1.Error.NoSuchWorker \
        "$SBX_PATH" "$SBX_MGR" OpenChannel s "$live"
    hidden "tester calling Worker.Stop() on root's worker gets UnknownObject" org.freedesktop.DBus.Error.UnknownObject \
        "$SBX_PATH/worker/$live" "$SBX_WORKER_IFACE" Stop
    check_eq "the worker still runs after tester's attempts" running "$(sbx_prop "$live" State)"
    nothing_new "tester's StopWorker/OpenChannel"
    sbx_call StopWorker s "$live"
else
    not_ok "CreateWorker as root succeeds (for tester's StopWorker)" "$BUS_ERROR $BUS_ERRMSG"
fi

tap_done
