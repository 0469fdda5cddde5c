#!/usr/bin/env bash
# The attack suite (issue 8): every named attack of lib-attacks.sh's table,
# tried as an attacker would against the installed build in one booted
# test-bed container, each in the classes it applies to. Each TAP line names
# the attack, its class and the refusal expected; its body proves nothing
# escaped (no secret in the output, no forged journal entry, no contact in
# the upstreams' log, no process left).
#
#   integration.sh LEADER_PID STAGE_DIR    run it (tests/run-all.sh does)
#   integration.sh --list                  print the table of attacks (Markdown)
#
# The world: two victim workers (trusted, standard) holding secrets; an
# "upstream" network namespace behind a veth with ordinary unicast addresses
# (11.0.0.0/24, 2a0b:1100::13; tests/testbed/upstream-netns.sh) and the special-purpose ones the proxy must
# refuse, each listener logging every contact (upstream.py); a resolver on
# the host's own 11.0.0.1 with a search list that would rewrite names.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"
if [ "${1:-}" = --list ]; then
    atk_list
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's table is what --list prints" \
    diff <(atk_list) <(awk '/^\| attack \|/ { p = 1 } p && /^$/ { exit } p' "$HERE/README.md")

W=/etc/sbx-attacks             # readable by workers of every class
LOG=/run/sbx-attacks/upstream.log
CONF=/etc/sandboxd/sandboxd.conf
CLASSES="trusted standard"
NONCE=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
secret() { printf 'SBXATK%s-%s' "$1" "$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n')"; }
declare -A ENV_SECRET=([trusted]=$(secret env) [standard]=$(secret env))
declare -A CRED_SECRET=([trusted]=$(secret cred) [standard]=$(secret cred))
declare -A VICTIM=()

run() { ct timeout 180 sandboxctl run "$@" 2>&1; }
stop_worker() { ct sandboxctl stop "$1" >/dev/null 2>&1; wait_until 60 unit_gone "sandbox-$1.service"; }
# Where root on the host reads a worker's files (lib.sh).
home_of() { sbx_home "$1"; }
# has_secret CLASS TEXT: TEXT holds the Environment or credential secret of CLASS's victim.
has_secret() { printf '%s' "$2" | grep -aqF -e "${ENV_SECRET[$1]}" -e "${CRED_SECRET[$1]}"; }
# no_secret CLASS TEXT: CLASS's victim runs with its secrets (else there is
# nothing to find, and the search proves nothing) and TEXT holds neither.
declare -A VICTIM_OK=()
no_secret() { [ -n "${VICTIM_OK[$1]:-}" ] && ! has_secret "$1" "$2"; }
# Lines the upstreams logged since position N (wc -l of the log before).
log_since() { ct tail -n +"$(($1 + 1))" "$LOG" 2>/dev/null; }
log_lines() { ct sh -c "wc -l < $LOG" 2>/dev/null || echo 0; }

cleanup() {
    ct sh -c "systemctl stop 'sbx-attacks-*' 2>/dev/null; $W/upstream-netns.sh down
              sed -i '/# sbx-attacks$/d' /etc/hosts
              [ -f /etc/resolv.conf.sbx-attacks ] && cat /etc/resolv.conf.sbx-attacks > /etc/resolv.conf
              [ -f $CONF.sbx-attacks ] && mv $CONF.sbx-attacks $CONF
              rm -rf $W /run/sbx-attacks /root/sbx-attack-cred-*" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# ---------------------------------------------------------------- the world
ct mkdir -p "$W" /run/sbx-attacks
for f in probe.py victim.py egress-attack.py upstream.py ../egress/tls_hello.py; do
    cat "$HERE/$f" > "/proc/$CT_PID/root$W/${f##*/}"
done
ct chmod 755 "$W" "$W"/probe.py "$W"/victim.py "$W"/egress-attack.py "$W"/upstream.py "$W"/tls_hello.py
upstream_netns_install "$W"
ct sh -ec "
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout /run/sbx-attacks/key.pem -out /run/sbx-attacks/cert.pem \
        -subj /CN=api.attack.test -addext 'subjectAltName=DNS:*.attack.test' 2>/dev/null
    $W/upstream-netns.sh up 11.0.0.10 11.0.0.11 11.0.0.12 11.0.0.13 11.0.0.14 11.0.0.15 10.77.0.10 10.77.0.11 \
        192.0.2.30 198.51.100.30 203.0.113.30 2a0b:1100::13 2001:db8::30 2001:2::30
    cat >> /etc/hosts <<'EOF'
11.0.0.10 api.attack.test # sbx-attacks
11.0.0.10 pipe.attack.test # sbx-attacks
11.0.0.10 flood.attack.test # sbx-attacks
11.0.0.14 sni.attack.test # sbx-attacks
11.0.0.15 noproxy.attack.test # sbx-attacks
10.77.0.10 priv.attack.test # sbx-attacks
11.0.0.1 hostlocal.attack.test # sbx-attacks
192.0.2.30 testnet1.attack.test # sbx-attacks
198.51.100.30 testnet2.attack.test # sbx-attacks
203.0.113.30 testnet3.attack.test # sbx-attacks
2001:db8::30 docv6.attack.test # sbx-attacks
2001:2::30 bench6.attack.test # sbx-attacks
11.0.0.11 mixed.attack.test # sbx-attacks
10.77.0.11 mixed.attack.test # sbx-attacks
EOF
    cat /etc/resolv.conf > /etc/resolv.conf.sbx-attacks 2>/dev/null || : > /etc/resolv.conf.sbx-attacks
    [ -L /etc/resolv.conf ] && rm -f /etc/resolv.conf
    printf 'nameserver 11.0.0.1\nsearch evil.test\n' > /etc/resolv.conf
    : > $LOG
    systemd-run -q --unit=sbx-attacks-up ip netns exec upstream python3 $W/upstream.py $LOG \
        /run/sbx-attacks/cert.pem /run/sbx-attacks/key.pem \
        tcp:11.0.0.10:443 tcp:11.0.0.10:22 tcp:11.0.0.11:443 tcp:11.0.0.12:443 tcp:11.0.0.13:443 \
        tcp:11.0.0.14:443 tcp:11.0.0.15:443 tcp:10.77.0.10:443 tcp:10.77.0.11:443 tcp:192.0.2.30:443 \
        tcp:198.51.100.30:443 tcp:203.0.113.30:443 'tcp:[2a0b:1100::13]:443' 'tcp:[2001:db8::30]:443' 'tcp:[2001:2::30]:443' \
        udp:11.0.0.10:53
    systemd-run -q --unit=sbx-attacks-host -E SBX_ATTACK_DNS=nx.attack.test.evil.test=11.0.0.12 \
        python3 $W/upstream.py $LOG /run/sbx-attacks/cert.pem /run/sbx-attacks/key.pem \
        tcp:0.0.0.0:443 'tcp:[::]:443' dns:11.0.0.1:53
    cp $CONF $CONF.sbx-attacks
    printf '[Egress]\nFloor=*.attack.test\nMaxTunnels=3\n' > $CONF
    systemctl restart sandboxd.service"
for u in sbx-attacks-up sbx-attacks-host; do
    journal_has '^listening$' -o cat -u "$u.service" || echo "Bail out! upstream $u did not start"
done
check_output "setup: the upstream answers TLS at 11.0.0.10:443 from the host namespace" '^200$' \
    ct curl -sk -m 10 -o /dev/null -w '%{http_code}' --resolve api.attack.test:443:11.0.0.10 https://api.attack.test/
check_output "setup: sandboxd is active with the attack floor" '^active$' ct systemctl is-active sandboxd.service

# ---------------------------------------------------------------- victims
for class in $CLASSES; do
    cf=/root/sbx-attack-cred-$class
    ct sh -c "umask 077; printf '%s' '${CRED_SECRET[$class]}' > $cf"
    VICTIM[$class]=$(ct sandboxctl create --class "$class" --setenv "TOKEN=${ENV_SECRET[$class]}" \
        --credential "tok:$cf" -- /usr/bin/python3 $W/victim.py 2>&1)
    wait_until 60 ct test -s "$(home_of "${VICTIM[$class]}")/ready"
    if ct sh -c "grep -qF '${ENV_SECRET[$class]}' '$(home_of "${VICTIM[$class]}")/secret' &&
                 grep -qF '${CRED_SECRET[$class]}' '$(home_of "${VICTIM[$class]}")/secret'" 2>/dev/null; then
        VICTIM_OK[$class]=1
        ok "setup: the $class victim ${VICTIM[$class]} runs and holds both secrets in its home"
    else
        not_ok "setup: the $class victim ${VICTIM[$class]} runs and holds both secrets in its home" \
            "(every search for its secrets fails with it) unit: $(unit_prop "sandbox-${VICTIM[$class]}.service" ActiveState)" \
            "$(ct journalctl -q --no-pager -o cat -n 5 -u "sandbox-${VICTIM[$class]}.service" 2>&1)"
    fi
done
vt=${VICTIM[trusted]}
ready_t=$(ct cat "$(home_of "$vt")/ready" 2>/dev/null)
vt_pid=$(unit_prop "sandbox-$vt.service" MainPID)
diag "trusted victim $vt pid $vt_pid: $ready_t"
check_output "setup: the trusted victim holds its secret in /tmp, /dev/shm, SysV shm and an abstract socket" \
    "^$vt_pid /.*/secret /tmp/sbx-victim-secret /dev/shm/sbx-victim-secret shm abstract\$" echo "$ready_t"

# ---------------------------------------------------------------- secrets, seen from outside
for class in $CLASSES; do
    v=${VICTIM[$class]}
    out=$(as_tester sh -c 'cat /run/systemd/transient/* 2>&1')
    atk_if secret-transient-tester "$class" "a secret is in a transient unit file tester can read" no_secret "$class" "$out"
    out=$(as_tester systemctl show --all "sandbox-$v*" 2>&1)
    if printf '%s' "$out" | grep -q "^Id=sandbox-$v"; then
        atk_if secret-systemctl-tester "$class" "systemctl show, as tester, prints a secret" no_secret "$class" "$out"
    else
        atk_not_ok secret-systemctl-tester "$class" "systemctl show did not answer for sandbox-$v: $out"
    fi
    obj=$(ct busctl --system call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
        org.freedesktop.systemd1.Manager GetUnit s "sandbox-$v.service" | sed -n 's/^o "\(.*\)"$/\1/p')
    out=
    for prop in Environment ExecStart ExecStartEx SetCredential LoadCredential; do
        out+=$(as_tester busctl --system get-property org.freedesktop.systemd1 "$obj" \
            org.freedesktop.systemd1.Service "$prop" 2>&1)$'\n'
    done
    atk_if secret-busctl-tester "$class" "a unit property read by tester holds a secret ($obj)" no_secret "$class" "$out"
    out=$(as_tester sh -c 'cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null' | tr '\0' '\n')
    atk_if secret-proc-tester "$class" "tester read a secret from /proc" no_secret "$class" "$out"
    out=$(as_tester ps -eo args 2>&1)
    atk_if secret-ps-tester "$class" "ps shows a secret to tester: $(printf '%s\n' "$out" | grep -F SBXATK | head -c 300)" \
        no_secret "$class" "$out"
done

# ---------------------------------------------------------------- the spec's environment and root
for class in $CLASSES; do
    v=${VICTIM[$class]}
    pids=$(ct ps -e -o pid=,uid=,unit= | awk -v u="sandbox-$v.service" '$3 == u && $2 == 0 {print $1}')
    leaked=
    for pid in $pids; do
        ct cat "/proc/$pid/environ" 2>/dev/null | grep -aqF "${ENV_SECRET[$class]}" && leaked+="$pid($(ct cat "/proc/$pid/comm")) "
    done
    diag "root processes of sandbox-$v.service: ${pids:-none}"
    if [ -n "${VICTIM_OK[$class]:-}" ] && [ -z "$leaked" ]; then
        atk_ok env-root-processes "$class"
    else
        atk_not_ok env-root-processes "$class" "victim running with its secrets: ${VICTIM_OK[$class]:-no}" \
            "root processes holding the TOKEN in their environment: ${leaked:-none}"
    fi
done
for class in $CLASSES; do
    out=$(run --class "$class" --setenv LD_DEBUG=libs --setenv "LD_DEBUG_OUTPUT=/var/tmp/sbx-attack-ld-$class" \
        --setenv GLIBC_TUNABLES=glibc.malloc.check=3 --setenv "TMPDIR=/var/tmp/sbx-attack-ld-$class-tmp" -- /bin/true)
    rc=$?
    files=$(ct sh -c "find / /run /tmp /var/tmp -xdev -name 'sbx-attack-ld-*' -user root 2>/dev/null | sort -u")
    if [ "$rc" = 0 ] && [ -z "$files" ]; then
        atk_ok env-privileged-helper "$class"
    else
        atk_not_ok env-privileged-helper "$class" "exit status $rc: $(printf '%s' "$out" | head -c 200)" "written by root: $(printf '%s\n' "$files" | head -n 5 | tr '\n' ' ')"
    fi
done

# ---------------------------------------------------------------- from inside a sibling
declare -A PROBE=()
# The attacker runs as a worker's command, and once more as a process that
# Worker.Exec started in a running sibling ("CLASS-exec"): the same walls must
# hold it, whoever started it.
EXEC_CLASSES="trusted-exec standard-exec"
for class in $CLASSES; do
    PROBE[$class]=$(run --class "$class" -- /usr/bin/python3 $W/probe.py "$vt_pid" "$SBX_STATE_LINK_ROOT/$vt" "$vt" "$NONCE-$class" \
        "${VICTIM[trusted]},${VICTIM[standard]}")
    diag "probe in $class:" "${PROBE[$class]}"
    exec_host=$(ct timeout 120 sandboxctl create --class "$class" -- /bin/sleep 3600 2>&1)
    PROBE[$class-exec]=$(ct timeout 180 sandboxctl exec "$exec_host" -- /usr/bin/python3 $W/probe.py "$vt_pid" \
        "$SBX_STATE_LINK_ROOT/$vt" "$vt" "$NONCE-$class-exec" "${VICTIM[trusted]},${VICTIM[standard]}" 2>&1)
    diag "probe through Exec in $class ($exec_host):" "${PROBE[$class-exec]}"
    stop_worker "$exec_host"
done
# secret_facts ID CLASS PROBE: that probe's line holds neither victim's secret, and its hits are none.
secret_facts() {
    local id=$1 class=$2 name=$3 f
    f=$(facts_of PROBE "$name" "${PROBE[$class]}")
    if [ -n "$f" ] && no_secret trusted "$f" && no_secret standard "$f" && [[ $f =~ hits=none ]]; then
        atk_ok "$id" "$class"
    else
        atk_not_ok "$id" "$class" "saw: ${f:-no PROBE $name line}"
    fi
}
E='E[A-Z]+'
for class in $CLASSES $EXEC_CLASSES; do
    p=${PROBE[$class]}
    secret_facts secret-transient-sibling "$class" transient-files
    secret_facts secret-bus-sibling "$class" unit-properties
    secret_facts secret-proc-sibling "$class" proc-cmdline-environ
    secret_facts secret-ps-sibling "$class" ps
    atk_facts sibling-home "$class" PROBE sibling-home "^read=(EACCES|ENOENT) list=(EACCES|ENOENT) hits=none$" "$p"
    atk_facts sibling-proc "$class" PROBE sibling-proc "^environ=$E cmdline=$E mem=$E hits=none$" "$p"
    f=$(facts_of PROBE sibling-kill "$p")
    if [[ $f =~ ^errno=(EPERM|ESRCH)$ ]] && [ "$(unit_prop "sandbox-$vt.service" MainPID)" = "$vt_pid" ]; then
        atk_ok sibling-kill "$class"
    else
        atk_not_ok sibling-kill "$class" "saw: ${f:-no line}" "victim MainPID now: $(unit_prop "sandbox-$vt.service" MainPID)"
    fi
    atk_facts sibling-ptrace "$class" PROBE sibling-ptrace "^attach=(EPERM|ESRCH) seize=(EPERM|ESRCH)$" "$p"
    atk_facts sibling-dev-shm "$class" PROBE sibling-dev-shm "^visible=0 read=ENOENT hits=none$" "$p"
    atk_facts sibling-sysv-ipc "$class" PROBE sibling-sysv-shm "^shmget=(ENOENT|ENOSYS|EPERM) listed=0$" "$p"
    atk_facts sibling-abstract-socket "$class" PROBE sibling-abstract-socket "^connect=(ECONNREFUSED|ENOENT|EPERM|EACCES) hits=none$" "$p"
    atk_facts sibling-tmp "$class" PROBE sibling-tmp "^read=ENOENT hits=none$" "$p"
done

# ---------------------------------------------------------------- the host
REFUSED='(ENOENT|EACCES|ECONNREFUSED|EPERM|EAFNOSUPPORT)'
ct journalctl --sync
jexport=$(ct journalctl -b --no-pager -o export 2>/dev/null)
for class in $CLASSES $EXEC_CLASSES; do
    p=${PROBE[$class]}
    f=$(facts_of PROBE journal-socket "$p")
    if [[ $f =~ ^connect=$REFUSED\ send=- ]] && ! grep -aqF "sbx-attack-forged-$NONCE-$class" <<<"$jexport"; then
        atk_ok host-journal-forge "$class"
    else
        atk_not_ok host-journal-forge "$class" "saw: ${f:-no line}" \
            "journal: $(grep -aF -A3 -B3 "sbx-attack-forged-$NONCE-$class" <<<"$jexport" | grep -aE 'SANDBOXD_WORKER_ID|EGRESS_DECISION|_SYSTEMD_UNIT' | tr '\n' ' ')"
    fi
    f=$(facts_of PROBE dev-log "$p")
    if [[ $f =~ ^connect=$REFUSED\ send=- ]] && ! grep -aqF "sbx-attack-syslog-$NONCE-$class" <<<"$jexport"; then
        atk_ok host-syslog-forge "$class"
    else
        atk_not_ok host-syslog-forge "$class" "saw: ${f:-no line}"
    fi
    atk_facts host-journal-stdout "$class" PROBE journal-stdout "^connect=$REFUSED$" "$p"
    atk_facts host-system-bus "$class" PROBE system-bus "^connect=$REFUSED$" "$p"
    atk_facts host-systemd-private "$class" PROBE systemd-private "^connect=$REFUSED$" "$p"
    atk_facts host-credentials-socket "$class" PROBE credentials-socket "^connect=$REFUSED hits=none$" "$p"
    atk_facts host-run-sockets "$class" PROBE run-sockets "^reached=none$" "$p"
    atk_facts host-sandboxd-state "$class" PROBE sandboxd-state "^others_opened=none hits=none " "$p"
    uid_re='[1-9][0-9]*'
    atk_facts host-setuid "$class" PROBE setuid \
        "^runs=su:[1-9][0-9]*,mount:[1-9][0-9]*,passwd:[1-9][0-9]*,newgrp:([1-9][0-9]*|FileNotFoundError) euid_after=$uid_re shadow=(EACCES|ENOENT)$" "$p"
    # gVisor implements user namespaces in its own kernel: one may be made
    # there, yet it must give no power (mounting still fails).
    userns='^errno=(EPERM|ENOSYS|EINVAL|EACCES|ENOSPC)$'
    [ "${class%-exec}" = trusted ] || userns='^errno=(EPERM|ENOSYS|EINVAL|EACCES|ENOSPC|0/mount=(EPERM|EACCES))$'
    atk_facts host-unshare-user "$class" PROBE unshare-user "$userns" "$p"
    atk_facts host-unshare-net "$class" PROBE unshare-net "^errno=(EPERM|ENOSYS|EINVAL|EACCES)$" "$p"
    atk_facts host-mount "$class" PROBE mount "^errno=(EPERM|ENOSYS|EACCES)$" "$p"
    # gVisor's own keyring answers KEYCTL_GET_KEYRING_ID; adding a key is the attack.
    keys='^add_key=(EPERM|ENOSYS|EACCES) keyctl=(EPERM|ENOSYS|EACCES)$'
    [ "${class%-exec}" = trusted ] || keys='^add_key=(EPERM|ENOSYS|EACCES) keyctl='
    atk_facts host-keyctl "$class" PROBE keyctl "$keys" "$p"
    atk_facts host-bpf "$class" PROBE bpf "^errno=(EPERM|ENOSYS|EACCES)$" "$p"
    atk_facts host-perf-event "$class" PROBE perf-event-open "^errno=(EPERM|ENOSYS|EACCES|ENOENT|ENODEV)$" "$p"
    atk_facts host-io-uring "$class" PROBE io-uring-setup "^errno=(EPERM|ENOSYS|EACCES)$" "$p"
    atk_facts host-raw-socket "$class" PROBE raw-socket "^inet=(EPERM|EAFNOSUPPORT|EACCES) inet6=(EPERM|EAFNOSUPPORT|EACCES)$" "$p"
    atk_facts host-packet-socket "$class" PROBE packet-socket "^errno=(EPERM|EAFNOSUPPORT|EACCES)$" "$p"
    atk_facts host-netlink "$class" PROBE netlink "^route=(socket=(EAFNOSUPPORT|EPERM|EACCES)|send=$E|ack=(EPERM|EACCES|EOPNOTSUPP)) " "$p"
done

# ---------------------------------------------------------------- the secrets' other channels
ct journalctl --sync
for class in $CLASSES; do
    root_j=$(ct journalctl -b --no-pager -o export 2>&1)
    tester_j=$(as_tester journalctl -b --no-pager -o export 2>&1)
    if printf '%s' "$root_j" | grep -aqF "${VICTIM[$class]}" && no_secret "$class" "$root_j" && no_secret "$class" "$tester_j"; then
        atk_ok secret-journal "$class"
    else
        atk_not_ok secret-journal "$class" "a secret is in the journal, or the journal does not mention the victim (not read)"
    fi
done
for class in $CLASSES; do
    core_secret=$(secret core)
    ct touch /run/sbx-attacks/core-mark
    out=$(run --class "$class" --setenv "TOKEN=$core_secret" -- /bin/sh -c \
        'basename "$HOME"; ulimit -c unlimited 2>/dev/null; exec /usr/bin/python3 -c "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"')
    rc=$?
    id=$(printf '%s\n' "$out" | head -n1)
    wait_until 30 unit_gone "sandbox-$id.service"
    ct journalctl --sync
    ulog=$(ct journalctl -b --no-pager -o cat -u "sandbox-$id.service" 2>&1)
    cores=$(ct sh -c "find / -xdev \( -path /proc -o -path /sys \) -prune -o \( -name 'core' -o -name 'core.*' -o -name '*.core' \) -newer /run/sbx-attacks/core-mark -print 2>/dev/null
                       find /var/lib/systemd/coredump -type f -newer /run/sbx-attacks/core-mark 2>/dev/null")
    ondisk=$(ct sh -c "grep -rlaF -- '$core_secret' /var /tmp /run /root /home /etc 2>/dev/null | grep -v '^/run/systemd/transient/' | head -n 5")
    if [ "$rc" = 139 ] && ! printf '%s' "$ulog" | grep -Eq 'code=dumped|dumped core' && [ -z "$cores" ] && [ -z "$ondisk" ]; then
        atk_ok secret-coredump "$class"
    else
        atk_not_ok secret-coredump "$class" "exit status $rc (want 139: SIGSEGV)" "core files: ${cores:-none}" \
            "files holding the secret: ${ondisk:-none}" "unit log: $(printf '%s\n' "$ulog" | grep -E 'code=|core' | tail -n 2)"
    fi
done

# ---------------------------------------------------------------- egress
ALLOW="--allow api.attack.test --allow sni.attack.test --allow priv.attack.test --allow hostlocal.attack.test
       --allow testnet1.attack.test --allow testnet2.attack.test --allow testnet3.attack.test
       --allow docv6.attack.test --allow bench6.attack.test --allow mixed.attack.test --allow nx.attack.test --allow pipe.attack.test"
# untouched LISTENER...: the upstreams' log since $mark has no accept on any of them.
untouched() {
    local since l
    since=$(log_since "$mark")
    for l in "$@"; do
        printf '%s\n' "$since" | grep -qF "accept $l " && return 1
    done
    return 0
}
# worker_reason ID HOST REASON: the proxy logged a deny of HOST with REASON for worker ID.
worker_reason() {
    journal -o export SANDBOXD_WORKER_ID="$1" EGRESS_HOST="$2" EGRESS_DECISION=deny | grep -aqx "EGRESS_REASON=$3"
}
# The attack lines of the egress batch ($out) of worker $id in $class, and
# the upstreams' contacts since $mark ($since).
said() { atk_facts "$1" "$class" EGRESS "$2" "$3" "$out"; }
# unreached ID NAME REGEX LISTENER...: the line matches and none of the listeners was contacted.
unreached() {
    local aid=$1 name=$2 re=$3 f
    shift 3
    f=$(facts_of EGRESS "$name" "$out")
    if [ -n "$f" ] && printf '%s\n' "$f" | grep -Eq -- "$re" && untouched "$@"; then
        atk_ok "$aid" "$class"
    else
        atk_not_ok "$aid" "$class" "saw: ${f:-no line EGRESS $name}" "wanted: $re" \
            "contacts of $*: $(printf '%s\n' "$since" | grep -F -e "${1:-none}" -e "${2:-none}" | head -n 3 | tr '\n' ';')"
    fi
}
# tls_closed ID NAME REASON: closed after the 200, the reason logged, no byte reached sni.attack.test.
tls_closed() {
    local f
    f=$(facts_of EGRESS "$2" "$out")
    if [ "$f" = "200 closed" ] && wait_until 15 worker_reason "$id" sni.attack.test "$3" &&
       ! printf '%s\n' "$(log_since "$mark")" | grep -qF "data tcp:11.0.0.14:443 "; then
        atk_ok "$1" "$class"
    else
        atk_not_ok "$1" "$class" "saw: ${f:-no line}" "wanted 200 closed and EGRESS_REASON=$3 for worker $id" \
            "upstream: $(printf '%s\n' "$(log_since "$mark")" | grep -F 11.0.0.14 | head -n 3 | tr '\n' ';')"
    fi
}
NOROUTE='^(ENETUNREACH|EHOSTUNREACH|EACCES|EPERM|EADDRNOTAVAIL)$'
# The reason of a refused destination address: private-address with its
# range today; a host-local or special-purpose range may name itself.
NONGLOBAL='^403 [a-z-]*(private|special|reserved|global|local)'
for class in $CLASSES; do
    mark=$(log_lines)
    # shellcheck disable=SC2086  # ALLOW is a list of options
    out=$(run --class "$class" $ALLOW -- /bin/sh -c "echo \"EGRESS id \$(basename \"\$HOME\")\"; exec /usr/bin/python3 $W/egress-attack.py batch")
    diag "egress batch in $class:" "$out"
    id=$(facts_of EGRESS id "$out")
    since=$(log_since "$mark")
    diag "upstream contacts:" "$since"
    said egress-control control-allowed '^200 tls-ok$'
    unreached egress-direct-v4 direct-v4 "$NOROUTE" tcp:11.0.0.13:443
    unreached egress-direct-v6 direct-v6 "$NOROUTE" 'tcp:[2a0b:1100::13]:443'
    f=$(facts_of EGRESS dns-direct "$out")
    if [[ $f =~ ^(ENETUNREACH|EHOSTUNREACH|EPERM|EACCES),(ENETUNREACH|EHOSTUNREACH|EPERM|EACCES)$ ]] &&
       ! printf '%s\n' "$since" | grep -Eq '^udp udp:11.0.0.10:53 |^dns .* api\.attack\.test$'; then
        atk_ok egress-dns-direct "$class"
    else
        atk_not_ok egress-dns-direct "$class" "saw: ${f:-no line}" "queries: $(printf '%s\n' "$since" | grep -E '^(udp|dns) ' | head -n 3)"
    fi
    unreached egress-no-proxy-env no-proxy-env '^curl-exit=[1-9][0-9]*$' tcp:11.0.0.15:443
    said egress-ip-literal ip-literal '^403 ip-literal$'
    unreached egress-spelled-0x7f.1 spelled-0x7f.1 '^403 ip-literal-obfuscated' tcp:127.0.0.1:443
    unreached egress-spelled-2130706433 spelled-2130706433 '^403 ip-literal-obfuscated' tcp:127.0.0.1:443
    unreached egress-literal-v6-loopback literal-v6-loopback '^403 ip-literal' 'tcp:[::1]:443'
    unreached egress-private-answer private-answer '^403 private-address' tcp:10.77.0.10:443
    unreached egress-hostlocal-answer hostlocal-answer "$NONGLOBAL" tcp:11.0.0.1:443
    unreached egress-special-testnet1 special-testnet1 "$NONGLOBAL" tcp:192.0.2.30:443
    unreached egress-special-testnet2 special-testnet2 "$NONGLOBAL" tcp:198.51.100.30:443
    unreached egress-special-testnet3 special-testnet3 "$NONGLOBAL" tcp:203.0.113.30:443
    unreached egress-special-docv6 special-docv6 "$NONGLOBAL" 'tcp:[2001:db8::30]:443'
    unreached egress-special-bench6 special-bench6 "$NONGLOBAL" 'tcp:[2001:2::30]:443'
    unreached egress-rebind-mixed rebind-mixed '^403 private-address' tcp:11.0.0.11:443 tcp:10.77.0.11:443
    unreached egress-search-list search-list '^502 (name-not-found|resolve-failed)' tcp:11.0.0.12:443
    tls_closed egress-sni-mismatch sni-mismatch sni-mismatch
    tls_closed egress-no-sni no-sni no-sni
    tls_closed egress-ech ech-outer-mismatch ech-outer-sni-mismatch
    unreached egress-other-port other-port '^403 port-not-allowed$' tcp:11.0.0.10:22
    said egress-plain-http plain-http '^403 plain-http$'
    said egress-pipelined pipelined '^403 data-before-tunnel$'
    unreached egress-http10 http10-not-allowed '^4[0-9][0-9]( |$)' tcp:11.0.0.15:443
    f=$(facts_of EGRESS slow-drip "$out")
    if [[ $f =~ ^(closed|answered)-after-([0-9]+)s$ ]] && [ "${BASH_REMATCH[2]}" -le 15 ]; then
        atk_ok egress-slow-drip "$class"
    else
        atk_not_ok egress-slow-drip "$class" "saw: ${f:-no line}"
    fi
    said egress-tunnel-exhaustion tunnel-exhaustion '^held=200,200,200 next=403/too-many-tunnels$'
done

# The journal flood: refusals are logged within a bound, the allowed tunnel always.
for class in $CLASSES; do
    out=$(run --class "$class" --allow api.attack.test -- /bin/sh -c "echo \"EGRESS id \$(basename \"\$HOME\")\"; exec /usr/bin/python3 $W/egress-attack.py flood 400")
    id=$(facts_of EGRESS id "$out")
    wait_until 30 _journal_match '^EGRESS_DECISION=allow$' -o export SANDBOXD_WORKER_ID="$id" EGRESS_DECISION=allow
    allow=$(journal -o export SANDBOXD_WORKER_ID="$id" EGRESS_DECISION=allow | grep -ac '^EGRESS_DECISION=allow$')
    deny=$(journal -o export SANDBOXD_WORKER_ID="$id" EGRESS_DECISION=deny | grep -ac '^EGRESS_DECISION=deny$')
    f="$(facts_of EGRESS flood "$out") $(facts_of EGRESS flood-then-allowed "$out")"
    if [ "$f" = "refused=400 200 tls-ok" ] && [ "$deny" -ge 1 ] && [ "$deny" -le 200 ] && [ "$allow" -ge 1 ]; then
        atk_ok egress-journal-flood "$class"
    else
        atk_not_ok egress-journal-flood "$class" "worker said: $f" "deny entries: $deny (want 1..200), allow entries: $allow"
    fi
done

# ---------------------------------------------------------------- resources
# Forks until refused, records how far it got in $HOME/bomb, then holds the children.
FORK_BOMB='
import os, time
r, w = os.pipe()
n, why = 0, "none"
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        why = str(e.errno)
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    n += 1
home = os.environ["HOME"]
with open(home + "/.bomb", "w") as f:
    f.write("%d %s\n" % (n, why))
os.rename(home + "/.bomb", home + "/bomb")
time.sleep(600)'
host_answers() {
    ct timeout 5 sandboxctl list >/dev/null &&
        ct timeout 5 busctl --system call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.DBus.Peer Ping >/dev/null
}
for class in $CLASSES; do
    id=$(ct sandboxctl create --class "$class" --tasks 32 -- /usr/bin/python3 -c "$FORK_BOMB" 2>&1)
    if wait_until 90 ct test -s "$(home_of "$id")/bomb"; then
        read -r n why < <(ct cat "$(home_of "$id")/bomb")
        if [ "$why" = 11 ] && [ "$n" -lt 32 ] && host_answers; then
            atk_ok res-fork-bomb "$class"
        else
            atk_not_ok res-fork-bomb "$class" "children: $n, fork refused with errno $why (want 11 below 32), host answers: $(host_answers && echo yes || echo no)"
        fi
    else
        atk_not_ok res-fork-bomb "$class" "the bomb did not report within 90 s: $(unit_prop "sandbox-$id.service" ActiveState)"
    fi
    stop_worker "$id"
done

for class in $CLASSES; do
    out=$(run --class "$class" --memory 64M -- /usr/bin/python3 -c '
b = bytearray(200 << 20)
b[::4096] = b"x" * len(b[::4096])
print("allocated")')
    rc=$?
    if [ "$rc" != 0 ] && ! printf '%s' "$out" | grep -q allocated; then
        atk_ok res-memory "$class"
    else
        atk_not_ok res-memory "$class" "exit status $rc" "$out"
    fi
done

for class in $CLASSES; do
    id=$(ct sandboxctl create --class "$class" --cpu 10 -- /bin/sh -c 'while :; do :; done' 2>&1)
    share=$(unit_cpu_share "sandbox-$id.service" 3 2>&1)
    stop_worker "$id"
    if python3 -c "import sys; sys.exit(0 if 0 < float('$share') <= 0.15 else 1)" 2>/dev/null; then
        atk_ok res-cpu "$class"
    else
        atk_not_ok res-cpu "$class" "share of a CPU: $share"
    fi
done

out=$(run --class standard --disk 4M -- /bin/sh -c 'dd if=/dev/zero of="$HOME/big" bs=1M count=16 2>&1; true')
atk_if res-disk standard "dd said: $out" grep -q 'No space left' <<<"$out"

for class in $CLASSES; do
    id=$(ct sandboxctl create --class "$class" -- /bin/sh -c 'exec cat /dev/zero' 2>&1)
    ct timeout 15 sandboxctl attach "$id" >/dev/null 2>&1 &
    reader=$!
    answered=0
    for _ in 1 2 3 4 5; do
        ct timeout 5 sandboxctl list >/dev/null 2>&1 && answered=$((answered + 1))
    done
    dpid=$(unit_prop sandboxd.service MainPID)
    rss=$(ct awk '/^VmRSS:/ {print $2}' "/proc/$dpid/status")
    stop_worker "$id"
    wait "$reader" 2>/dev/null
    if [ "$answered" = 5 ] && [ "${rss:-999999}" -lt 65536 ]; then
        atk_ok res-channel-flood "$class"
    else
        atk_not_ok res-channel-flood "$class" "calls answered within 5 s: $answered of 5" "sandboxd VmRSS: ${rss:-?} kB"
    fi
done

no_trace() {   # UID ID: no process of UID, none naming the worker id
    [ -z "$(ct ps -o pid= -u "$1" 2>/dev/null)" ] && ! ct pgrep -f -- "$2" >/dev/null
}
for class in $CLASSES; do
    out=$(run --class "$class" -- /bin/sh -c 'basename "$HOME"; id -u
        setsid /bin/sh -c "/bin/sleep 6173 & /bin/sleep 6174 &" </dev/null >/dev/null 2>&1; exit 0')
    id=$(printf '%s\n' "$out" | sed -n 1p)
    uid=$(printf '%s\n' "$out" | sed -n 2p)
    if [ -n "$id" ] && [[ $uid =~ ^[0-9]+$ ]] && wait_until 60 unit_gone "sandbox-$id.service" &&
       wait_until 15 no_trace "$uid" "$id" && ! ct pgrep -f 'sleep 617[34]' >/dev/null; then
        atk_ok res-outlive "$class"
    else
        atk_not_ok res-outlive "$class" "worker said: $out" "left: $(ct ps -o pid,uid,args -u "${uid:-0}" 2>&1 | tail -n 3)" \
            "$(ct pgrep -af 'sleep 617[34]')"
    fi
done

for class in $CLASSES; do
    stop_worker "${VICTIM[$class]}"
done
atk_coverage
tap_done
