#!/usr/bin/env bash
# sandboxd core (issue 2): what separates workers from each other and from
# other local users. Distinct dynamic UIDs, 0700 homes, no reading a sibling's
# home or /proc/PID/environ, credentials that reach only $CREDENTIALS_DIRECTORY
# (never the environment, argv, unit file, unit properties or journal, and
# nothing the plain user tester can read), and the caps and hardening of the unit.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

SECRET=sbx-secret-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')

# Waits until a worker has written FILE in its home (the worker scripts below
# record what they saw there; root can read it).
home_file() { wait_until 10 ct test -s "$(sbx_home "$1")/$2" && sbx_home_cat "$1" "$2"; }

# ---- two workers ---------------------------------------------------------
if sbx_create 2 Argv as 3 /bin/sh -c 'echo b-private >"$HOME/private"; exec /bin/sleep 1000' Class s trusted; then
    ok "CreateWorker B succeeds"
else
    not_ok "CreateWorker B succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi
b=$WID
# A records what it sees of its credential, environment and process state.
# Each file appears whole (written aside, then renamed): home_file reads a file
# as soon as it is non-empty.
a_script='record() { f=$1; shift; "$@" >"$HOME/.$f"; mv "$HOME/.$f" "$HOME/$f"; }
record cred cat "$CREDENTIALS_DIRECTORY/tok"; record env env;
record status cat /proc/self/status; record netdev cat /proc/net/dev; exec /bin/sleep 1000'
# shellcheck disable=SC2046  # ay_args prints separate busctl words
if sbx_create 4 Argv as 3 /bin/sh -c "$a_script" Class s trusted \
    Environment as 1 SBX_TEST_VAR=visible \
    Credentials 'a(say)' 1 tok $(ay_args "$SECRET"); then
    ok "CreateWorker A with a credential succeeds"
else
    not_ok "CreateWorker A with a credential succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi
a=$WID

uid_a=$(sbx_prop "$a" UID)
uid_b=$(sbx_prop "$b" UID)
for pair in "A $uid_a" "B $uid_b"; do
    set -- $pair
    if [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge $DYNAMIC_UID_MIN ] && [ "$2" -le $DYNAMIC_UID_MAX ]; then
        ok "worker $1 runs as a dynamic UID ($2)"
    else
        not_ok "worker $1 runs as a dynamic UID" "got: $2"
    fi
done
if [ -n "$uid_a" ] && [ "$uid_a" != "$uid_b" ]; then
    ok "the two workers have distinct UIDs"
else
    not_ok "the two workers have distinct UIDs" "A: $uid_a B: $uid_b"
fi
pid_a=$(unit_prop "sandbox-$a.service" MainPID)
pid_b=$(unit_prop "sandbox-$b.service" MainPID)
check_output "A's process runs as its UID" "^ *$uid_a\$" ct ps -o uid= -p "$pid_a"
check_output "B's process runs as its UID" "^ *$uid_b\$" ct ps -o uid= -p "$pid_b"

home_a=$(sbx_prop "$a" Home)
home_b=$(sbx_prop "$b" Home)
check_output "A's home is mode 0700 and owned by A's UID" "^700 $uid_a\$" ct stat -L -c '%a %u' "$home_a"
check_output "B's home is mode 0700 and owned by B's UID" "^700 $uid_b\$" ct stat -L -c '%a %u' "$home_b"
check_output "B wrote its private file" '^b-private$' home_file "$b" private

# ---- a sibling cannot read another worker --------------------------------
# With A's UID and no groups, in the container's namespaces: the file modes alone.
as_a() { ct setpriv --reuid="$uid_a" --regid="$uid_a" --clear-groups -- "$@"; }
check_output "with A's UID, B's home cannot be listed (EACCES)" 'Permission denied' \
    expect_fail as_a ls "$home_b"
check_output "with A's UID, B's file cannot be read (EACCES)" 'Permission denied' \
    expect_fail as_a cat "$home_b/private"
check_output "with A's UID, B's /proc/PID/environ cannot be read (EACCES)" 'Permission denied' \
    expect_fail as_a cat "/proc/$pid_b/environ"

# From inside a real sibling unit, with all its sandboxing: C tries to read B.
# Each result file appears whole, with its rc= line: it is written aside and
# renamed, since home_file reads a file as soon as it is non-empty.
c_script="try() { f=\$1; shift; \"\$@\" >\"\$HOME/.\$f\" 2>&1; echo \"rc=\$?\" >>\"\$HOME/.\$f\"; mv \"\$HOME/.\$f\" \"\$HOME/\$f\"; }
try home-b cat '$home_b/private'; try environ-b cat /proc/$pid_b/environ; exec /bin/sleep 1000"
if sbx_create 2 Argv as 3 /bin/sh -c "$c_script" Class s trusted; then
    c=$WID
    check_output "sibling worker C cannot read B's home" '^rc=[1-9]' last_line home_file "$c" home-b
    check_fails "sibling worker C got nothing of B's file" sbx_home_grep "$c" home-b b-private
    check_output "sibling worker C cannot read B's /proc/PID/environ" '^rc=[1-9]' last_line home_file "$c" environ-b
    check_output "C's failure to read B's home is EACCES or ENOENT" '(Permission denied|No such file)' home_file "$c" home-b
    sbx_call StopWorker s "$c"
else
    not_ok "CreateWorker C (the sibling) succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

# ---- the credential ------------------------------------------------------
check_output "the credential reached \$CREDENTIALS_DIRECTORY/tok" "^$SECRET\$" home_file "$a" cred
env_a=$(home_file "$a" env)
check_output "A's environment has its Environment entry" '^SBX_TEST_VAR=visible$' printf '%s\n' "$env_a"
check_output "A's environment has HOME set to its home" "^HOME=$home_a\$" printf '%s\n' "$env_a"
check_output "A's environment has CREDENTIALS_DIRECTORY" '^CREDENTIALS_DIRECTORY=' printf '%s\n' "$env_a"
check_fails "the secret is not in A's environment (as A saw it)" grep -qF -- "$SECRET" <<<"$env_a"
check "/proc/PID/environ of A is readable by root and holds its Environment (so the next check reads it)" \
    sh -c "nsenter -t $CT_PID -a cat /proc/$pid_a/environ | grep -qaF SBX_TEST_VAR=visible"
check_fails "the secret is not in /proc/PID/environ of A" sh -c "nsenter -t $CT_PID -a cat /proc/$pid_a/environ | grep -qaF -- '$SECRET'"
check_fails "the secret is not in A's argv (/proc/PID/cmdline)" sh -c "nsenter -t $CT_PID -a cat /proc/$pid_a/cmdline | grep -qaF -- '$SECRET'"
tfile=/run/systemd/transient/sandbox-$a.service
check "the transient unit file exists and names A's command ($tfile)" ct grep -q sleep "$tfile"
check_fails "the secret is not in any transient unit file" ct grep -rqF -- "$SECRET" /run/systemd/transient
check_output "systemctl show of A's units answers" 'Id=sandbox-' ct systemctl show --all "sandbox-$a*"
check_fails "the secret is not in any property of A's units (systemctl show --all)" \
    sh -c "nsenter -t $CT_PID -a systemctl show --all 'sandbox-$a*' | grep -qF -- '$SECRET'"
objpath=/org/freedesktop/systemd1/unit/sandbox_2d${a}_2eservice
for prop in SetCredential SetCredentialEncrypted LoadCredential LoadCredentialEncrypted Environment ExecStart ExecStartEx; do
    check_fails "the secret is not in the unit's $prop bus property" \
        sh -c "nsenter -t $CT_PID -a busctl --system get-property org.freedesktop.systemd1 $objpath org.freedesktop.systemd1.Service $prop | grep -qF -- '$SECRET'"
done
# Whatever journald has received so far is searched, not what it got around to writing.
ct journalctl --sync
check_output "the journal mentions worker A (it is being read)" "$a" ct journalctl -b --no-pager -o export
check_fails "the secret is not in the journal" sh -c "nsenter -t $CT_PID -a journalctl -b --no-pager -o export | grep -qaF -- '$SECRET'"

# The plain user tester, by every route above and by searching what it can read.
check_output "tester cannot read A's credential file" 'Permission denied|No such file' \
    expect_fail as_tester cat "/run/credentials/sandbox-$a.service/tok"
check_output "tester cannot read A's /proc/PID/environ" 'Permission denied' \
    expect_fail as_tester cat "/proc/$pid_a/environ"
check "tester can read the transient unit file (so the next check reads it)" as_tester grep -q sleep "$tfile"
check_fails "tester finds no secret in the transient unit files" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- cat /run/systemd/transient/sandbox-$a.service | grep -qF -- '$SECRET'"
check_fails "tester finds no secret in systemctl show" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- systemctl show --all 'sandbox-$a*' | grep -qF -- '$SECRET'"
check_fails "tester finds no secret in the unit's SetCredential/LoadCredential properties" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- busctl --system get-property org.freedesktop.systemd1 $objpath org.freedesktop.systemd1.Service SetCredential LoadCredential | grep -qF -- '$SECRET'"
check_fails "tester finds no secret in the journal" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- journalctl -b --no-pager -o export 2>/dev/null | grep -qaF -- '$SECRET'"
check_fails "tester finds no secret in any process's argv" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- ps -eo args | grep -qF -- '$SECRET'"
check "root finds the secret in A's home (so the search below works)" \
    ct grep -rqF -- "$SECRET" "$SBX_STATE_ROOT" "$SBX_DISK_MOUNT_ROOT"
check_fails "tester finds no secret in any file it can read" \
    sh -c "nsenter -t $CT_PID -a runuser -u tester -- grep -rlsF -- '$SECRET' /run /var /tmp /dev/shm /etc /home /usr/lib/systemd 2>/dev/null | grep ."
check_fails "tester cannot OpenChannel to A" as_tester /usr/lib/sandboxd-tests/sbx-channel read "$a" 500

# ---- the channel: three pipes whose other ends only sandboxd (and PID 1) hold
fd0=$(ct readlink "/proc/$pid_a/fd/0")
fd1=$(ct readlink "/proc/$pid_a/fd/1")
fd2=$(ct readlink "/proc/$pid_a/fd/2")
check_output "A's stdin is a pipe" '^pipe:\[[0-9]+\]$' echo "$fd0"
check_output "A's stdout is a pipe" '^pipe:\[[0-9]+\]$' echo "$fd1"
check_output "A's stderr is a pipe" '^pipe:\[[0-9]+\]$' echo "$fd2"
check_eq "A's stdin, stdout and stderr are three different pipes" 3 "$(printf '%s\n' "$fd0" "$fd1" "$fd2" | sort -u | wc -l)"
dpid=$(unit_prop sandboxd.service MainPID)
# pipe_ends PIPE MODE: "pid:comm" of every fd in the container on PIPE opened
# for MODE (0 read, 1 write), from each fd's fdinfo flags
pipe_ends() {
    ct sh -c 'for f in /proc/[0-9]*/fd/*; do
                  [ "$(readlink "$f" 2>/dev/null)" = "$1" ] || continue
                  p=${f#/proc/}; p=${p%%/*}; n=${f##*/}
                  fl=$(awk "/^flags:/ {print \$2}" "/proc/$p/fdinfo/$n" 2>/dev/null)
                  [ -n "$fl" ] && [ $((0$fl & 3)) = "$2" ] && echo "$p:$(cat /proc/$p/comm)"
              done | sort -u' sh "$1" "$2"
}
# Besides sandboxd, only systemd (PID 1) holds them: its file descriptor store
# keeps them across a restart of sandboxd, which re-adopts the worker.
holders=$(printf '%s\n' "1:systemd" "$dpid:sandboxd" | sort -u)
check_eq "the write end of A's stdin is held by sandboxd and systemd's fd store alone" "$holders" "$(pipe_ends "$fd0" 1)"
check_eq "the read end of A's stdout is held by sandboxd and systemd's fd store alone" "$holders" "$(pipe_ends "$fd1" 0)"
check_eq "the read end of A's stderr is held by sandboxd and systemd's fd store alone" "$holders" "$(pipe_ends "$fd2" 0)"
check_fails "A holds no listening socket" \
    sh -c "nsenter -t $CT_PID -a nsenter -t $pid_a -n ss -Hltuxpn | grep -F 'pid=$pid_a,'"

# ---- caps and hardening --------------------------------------------------
unit_a=sandbox-$a.service
check_output "default MemoryMax is 256 MiB" '^268435456$' unit_prop "$unit_a" MemoryMax
check_output "default TasksMax is 256" '^256$' unit_prop "$unit_a" TasksMax
check_output "default CPUQuota is 50%" '^500ms$' unit_prop "$unit_a" CPUQuotaPerSecUSec
check_output "default RuntimeMax is 1h" '^1h$' unit_prop "$unit_a" RuntimeMaxUSec

if sbx_create 6 Argv as 2 /bin/sleep 1000 Class s trusted MemoryMax t 134217728 TasksMax t 64 \
    CPUQuotaPercent u 25 RuntimeMaxUSec t 300000000; then
    d=sandbox-$WID.service
    check_output "MemoryMax from the spec (128 MiB)" '^134217728$' unit_prop "$d" MemoryMax
    check_output "TasksMax from the spec (64)" '^64$' unit_prop "$d" TasksMax
    check_output "CPUQuotaPercent 25 is CPUQuotaPerSecUSec=250ms" '^250ms$' unit_prop "$d" CPUQuotaPerSecUSec
    check_output "RuntimeMaxUSec from the spec (5min)" '^5min$' unit_prop "$d" RuntimeMaxUSec
    sbx_call StopWorker s "$WID"
else
    not_ok "CreateWorker with explicit limits succeeds" "$BUS_ERROR $BUS_ERRMSG"
fi

while read -r prop re; do
    check_output "the worker unit has $prop=$re" "^$re\$" unit_prop "$unit_a" "$prop"
done <<'EOF'
DynamicUser yes
NoNewPrivileges yes
CapabilityBoundingSet 
AmbientCapabilities 
PrivateNetwork yes
ProtectSystem strict
ProtectHome yes
PrivateTmp yes
PrivateDevices yes
RestrictSUIDSGID yes
ProtectKernelTunables yes
ProtectKernelModules yes
ProtectControlGroups yes
EOF
check_output "the worker unit has a SystemCallFilter" '.' unit_prop "$unit_a" SystemCallFilter
status_a=$(home_file "$a" status)
check_output "inside A: the capability bounding set is empty" '^CapBnd:[[:space:]]+0+$' printf '%s\n' "$status_a"
check_output "inside A: no_new_privs is set" '^NoNewPrivs:[[:space:]]+1$' printf '%s\n' "$status_a"
check_eq "inside A: the only network interface is lo" lo \
    "$(home_file "$a" netdev | awk -F: 'NR > 2 {gsub(/ /, "", $1); printf "%s%s", sep, $1; sep = " "}')"

# ---- no host socket (issue 8 item 4) and exposure scores (item 9) ---------
check_output "the worker unit hides /run behind a read-only tmpfs" '(^| )/run:ro' unit_prop "$unit_a" TemporaryFileSystem
check_no_host_sockets trusted
check_exposure "the trusted worker unit's exposure is held" "$unit_a" 1.0
check_exposure "sandboxd.service's exposure is held" sandboxd.service 0.9

# ---- after the worker: nothing of the secret is left -----------------------
sbx_call StopWorker s "$a"
sbx_call StopWorker s "$b"
check "A's unit is gone after StopWorker" wait_until 15 unit_gone "sandbox-$a.service"
check "A's credentials directory is gone" wait_until 5 ct test ! -e "/run/credentials/sandbox-$a.service"
# sandboxd deletes the home (which holds the copy A wrote) only after systemd
# reported the unit gone, so this may lag what systemctl already shows.
check "A's home is deleted" wait_until 10 home_absent "$a"
check_fails "no file under /run, /var, /tmp or /etc holds the secret any more (as root)" \
    sh -c "nsenter -t $CT_PID -a grep -rlsF -- '$SECRET' /run /var/lib /var/tmp /var/cache /tmp /dev/shm /etc 2>/dev/null | grep ."

tap_done
