#!/usr/bin/env bash
# Issue 8, items 1 and 3: a worker's Environment values are secrets, and the
# privileged helpers run with a clean environment. For a trusted and a
# standard (gVisor) worker with Environment=TOKEN=<random>, the value is
# nowhere a local user or root could read it outside the workload (unit file,
# unit properties, command lines, other processes' environments, the
# journal), while the workload sees exactly what its spec set; LD_DEBUG_OUTPUT
# and GLIBC_TUNABLES reach the workload but not root (no root-owned file, and
# no privileged process carries them).
source "$(dirname "$0")/lib.sh"
tap_init "$@"

ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

R=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
TOKEN=sbx-envtok-$R
MULTI="first line $R
second line"
LDOUT=/var/tmp/sbx-lddebug-$R
TUNABLES=glibc.malloc.tcache_count=0

# Waits until a worker has written FILE in its home; root reads it.
home_file() { wait_until 30 ct test -s "$(sbx_home "$1")/$2" && sbx_home_cat "$1" "$2"; }

# The container's processes' command lines and environments, one line each
# ("PID ARGS" / "PID ENV"), read inside the container and searched here: a
# search run inside would find the needle on its own command line.
all_cmdlines() {
    ct sh -c 'for p in /proc/[0-9]*; do a=$(tr "\0\n" "  " <"$p/cmdline" 2>/dev/null) || continue; printf "%s %s\n" "${p#/proc/}" "$a"; done'
}
all_environs() {
    ct sh -c 'for p in /proc/[0-9]*; do e=$(tr "\0\n" "  " <"$p/environ" 2>/dev/null) || continue; printf "%s %s\n" "${p#/proc/}" "$e"; done'
}
# PIDs whose environment holds STRING, sorted.
pids_with_env() { all_environs | grep -F -- "$1" | awk '{print $1}' | sort -n | tr '\n' ' '; }
# Files named like the LD_DEBUG_OUTPUT target anywhere in the container, with owner.
ld_files() {
    ct find / \( -path /proc -o -path /sys \) -prune -o -name "sbx-lddebug-$R*" -printf '%u %p\n' 2>/dev/null
}

# The workload records what it sees, with shell builtins only while LD_DEBUG
# is set (every program it starts would log its libraries), then waits.
script='printf "%s" "$TOKEN" >"$HOME/.token"; mv "$HOME/.token" "$HOME/token"
printf "%s" "$MULTI" >"$HOME/multi"
printf "%s|%s|%s" "$LD_DEBUG" "$LD_DEBUG_OUTPUT" "$GLIBC_TUNABLES" >"$HOME/ld"
unset LD_DEBUG LD_DEBUG_OUTPUT GLIBC_TUNABLES
env >"$HOME/.env"; mv "$HOME/.env" "$HOME/env"
exec /bin/sleep 1000'

for class in trusted standard; do
    if sbx_create 3 Argv as 3 /bin/sh -c "$script" Class s "$class" \
        Environment as 6 "TOKEN=$TOKEN" "MULTI=$MULTI" SBX_PLAIN=visible LD_DEBUG=libs "LD_DEBUG_OUTPUT=$LDOUT" \
        "GLIBC_TUNABLES=$TUNABLES"; then
        ok "$class: CreateWorker with Environment TOKEN succeeds"
    else
        not_ok "$class: CreateWorker with Environment TOKEN succeeds" "$BUS_ERROR $BUS_ERRMSG"
        continue
    fi
    id=$WID
    unit=sandbox-$id.service
    objpath=/org/freedesktop/systemd1/unit/sandbox_2d${id//_/_5f}_2eservice

    # ---- the workload sees its environment --------------------------------
    check_eq "$class: the workload sees TOKEN" "$TOKEN" "$(home_file "$id" token)"
    check_eq "$class: the workload sees a value with a newline intact" "$MULTI" "$(home_file "$id" multi)"
    check_eq "$class: the workload sees LD_DEBUG, LD_DEBUG_OUTPUT and GLIBC_TUNABLES" "libs|$LDOUT|$TUNABLES" \
        "$(home_file "$id" ld)"
    env_w=$(home_file "$id" env)
    check_output "$class: the workload sees its plain variable" '^SBX_PLAIN=visible$' printf '%s\n' "$env_w"
    check_output "$class: the workload has HOME set by sandboxd" "^HOME=$SBX_STATE_LINK_ROOT/$id\$|^HOME=$SBX_STATE_ROOT/$id\$" \
        printf '%s\n' "$env_w"

    # ---- nothing outside the workload holds the value -----------------------
    check "$class: tester reads the unit's properties (so the next check reads them)" \
        as_tester systemctl show --all "$unit"
    check_fails "$class: TOKEN is not in any property of the unit (systemctl show --all, as tester)" \
        sh -c "nsenter -t $CT_PID -a runuser -u tester -- systemctl show --all '$unit' | grep -qF -- '$TOKEN'"
    check_output "$class: tester reads the unit's Environment property (it holds sandboxd's HOME)" 'HOME=' \
        as_tester busctl --system get-property org.freedesktop.systemd1 "$objpath" org.freedesktop.systemd1.Service Environment
    check_fails "$class: TOKEN and LD_DEBUG_OUTPUT are not in the unit's Environment property" \
        sh -c "nsenter -t $CT_PID -a runuser -u tester -- busctl --system get-property org.freedesktop.systemd1 $objpath org.freedesktop.systemd1.Service Environment | grep -qF -e '$TOKEN' -e '$LDOUT'"
    check "$class: tester reads the transient unit file (so the next check reads it)" \
        as_tester test -r "/run/systemd/transient/$unit"
    check_fails "$class: TOKEN is not in any transient unit file (cat as tester)" \
        sh -c "nsenter -t $CT_PID -a runuser -u tester -- sh -c 'cat /run/systemd/transient/*' | grep -qF -- '$TOKEN'"
    check_fails "$class: TOKEN is not in ps -eo args (as tester)" \
        sh -c "nsenter -t $CT_PID -a runuser -u tester -- ps -eo args | grep -qF -- '$TOKEN'"
    cmdlines=$(all_cmdlines)
    # Trusted: sandbox-exec has exec'd the workload; standard: the launcher runs.
    check_output "$class: root reads the worker's command lines (so the next check reads them)" \
        '^[0-9]+ (/bin/sleep 1000|/usr/libexec/sandboxd/sandbox-launch run )' printf '%s\n' "$cmdlines"
    check_fails "$class: TOKEN is on no process's command line (/proc/*/cmdline as root)" \
        grep -qF -e "$TOKEN" -e "first line $R" <<<"$cmdlines"
    ct journalctl --sync
    check_output "$class: the journal mentions the worker (it is being read)" "$id" ct journalctl -b --no-pager -o export
    check_fails "$class: TOKEN is not in the journal (journalctl -o export)" \
        sh -c "nsenter -t $CT_PID -a journalctl -b --no-pager -o export | grep -qaF -- '$TOKEN'"

    # ---- root's processes do not get the spec's environment -----------------
    main_pid=$(unit_prop "$unit" MainPID)
    if [ "$class" = trusted ]; then
        # The workload is the unit's main process (sandbox-exec exec'd it).
        check_output "trusted: the unit's main process is the workload (/bin/sleep)" '^/bin/sleep 1000 *$' \
            ct sh -c 'tr "\0" " " <"/proc/$1/cmdline"' sh "$main_pid"
        check_eq "trusted: only the workload's process carries TOKEN in its environment" "$main_pid " "$(pids_with_env "$TOKEN")"
    else
        launcher=$(printf '%s\n' "$cmdlines" | awk -v id="--id=$id" '$2 ~ /sandbox-launch$/ && $3 == "run" && index($0, id) {print $1}')
        runsc=$(printf '%s\n' "$cmdlines" | grep -F "sandbox-$id" | grep -c runsc)
        # The launcher and the child it keeps for Worker.Exec (runsc exec):
        # every process of it runs as root.
        launcher_uids=$(ct ps -o uid= -p "$(printf '%s\n' "${launcher:-0}" | paste -sd, -)" | tr -d ' ' | sort -u | tr '\n' ' ')
        check_eq "standard: sandbox-launch run is running as root" "0 " "$launcher_uids"
        check_output "standard: runsc processes run for the worker" '^[1-9]' echo "$runsc"
        check_eq "standard: no host process carries TOKEN in its environment (the workload lives inside gVisor)" \
            "" "$(pids_with_env "$TOKEN")"
        # /proc/PID/environ is what a program was started with: the launcher
        # starts runsc with a fixed environment, whatever it was given.
        runsc_run=$(printf '%s\n' "$cmdlines" | awk -v c="sandbox-$id" '$2 ~ /runsc$/ && / run --bundle / && $NF == c {print $1}')
        check_eq "standard: runsc's environment is the launcher's fixed PATH and nothing else" \
            "PATH=/usr/sbin:/usr/bin:/sbin:/bin " "$(ct sh -c 'tr "\0" " " <"/proc/$1/environ"' sh "${runsc_run:-0}" 2>&1)"
    fi
    # The workload unset them after recording them: no process may hold them now.
    check_eq "$class: no process carries LD_DEBUG_OUTPUT in its environment" "" "$(pids_with_env "LD_DEBUG_OUTPUT=")"
    check_eq "$class: no process carries GLIBC_TUNABLES in its environment" "" "$(pids_with_env "GLIBC_TUNABLES=")"
    check_eq "$class: no root-owned LD_DEBUG_OUTPUT file exists while the worker runs" "" \
        "$(ld_files | grep '^root ')"

    sbx_call StopWorker s "$id" >/dev/null
    check "$class: the worker's unit is gone after StopWorker" wait_until 60 unit_gone "$unit"
    check_eq "$class: no LD_DEBUG_OUTPUT file exists anywhere after the worker ran" "" "$(ld_files)"
done

tap_done
