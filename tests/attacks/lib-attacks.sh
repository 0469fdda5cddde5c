# shellcheck shell=bash
# The attack suite's table and its TAP helpers (sourced by integration.sh,
# after tests/integration/lib.sh).
#
# ATTACKS holds one attack a line: ID|CLASSES|ACTION|EXPECTED REFUSAL.
# Every check names its attack with atk_name, so the TAP line says what was
# tried, in which class, and what refusal was expected; integration.sh --list
# prints this table (tests/attacks/README.md is generated from it), and the
# last check of a run proves each attack ran in each of its classes.

ATTACKS='
secret-transient-tester|trusted,standard|tester greps /run/systemd/transient/* for the victim'"'"'s Environment TOKEN and credential|neither secret in any file tester can read there
secret-systemctl-tester|trusted,standard|tester runs systemctl show --all on the victim'"'"'s units|neither secret in any property
secret-busctl-tester|trusted,standard|tester reads Environment, ExecStart, ExecStartEx, SetCredential, LoadCredential of the victim unit with busctl get-property|neither secret in any property
secret-proc-tester|trusted,standard|tester reads /proc/*/cmdline and /proc/*/environ of every process|EACCES or no secret
secret-ps-tester|trusted,standard|tester runs ps -eo args|neither secret on any command line
secret-journal|trusted,standard|root and tester search journalctl -o export for the secrets|neither secret in the journal
secret-coredump|trusted,standard|a worker holding a TOKEN crashes with SIGSEGV (ulimit -c unlimited)|killed with status 11, no core dumped, no core file, the secret on no disk
env-root-processes|trusted,standard|look for the victim'"'"'s Environment TOKEN in /proc/PID/environ of every root process of its unit (launcher, runsc)|absent: privileged helpers run with a fixed, clean environment
env-privileged-helper|trusted,standard|a spec Environment of LD_DEBUG=libs, LD_DEBUG_OUTPUT=/var/tmp/sbx-attack-ld-CLASS, GLIBC_TUNABLES, TMPDIR for a worker running /bin/true|no file sbx-attack-ld-* written by root anywhere
secret-transient-sibling|trusted,standard,trusted-exec,standard-exec|a sibling worker reads /run/systemd/transient/*|ENOENT/EACCES or no secret
secret-bus-sibling|trusted,standard,trusted-exec,standard-exec|a sibling worker runs systemctl show and busctl get-property Environment on the victim|no bus (ENOENT/ECONNREFUSED) or no secret
secret-proc-sibling|trusted,standard,trusted-exec,standard-exec|a sibling worker reads /proc/*/cmdline and /proc/*/environ|no secret
secret-ps-sibling|trusted,standard,trusted-exec,standard-exec|a sibling worker runs ps -eo args|no secret
sibling-home|trusted,standard,trusted-exec,standard-exec|read and list the victim worker'"'"'s 0700 home|EACCES or ENOENT, no secret
sibling-proc|trusted,standard,trusted-exec,standard-exec|read /proc/VICTIM/environ, cmdline and mem|ENOENT or EACCES each, no secret
sibling-kill|trusted,standard,trusted-exec,standard-exec|kill -9 the victim worker'"'"'s process|EPERM or ESRCH, the victim still runs
sibling-ptrace|trusted,standard,trusted-exec,standard-exec|PTRACE_ATTACH and PTRACE_SEIZE the victim|EPERM or ESRCH
sibling-dev-shm|trusted,standard,trusted-exec,standard-exec|list and read the victim'"'"'s /dev/shm file|not visible (private /dev/shm)
sibling-sysv-ipc|trusted,standard,trusted-exec,standard-exec|shmget the victim'"'"'s SysV segment, look for it in /proc/sysvipc/shm|ENOENT, not listed (private IPC namespace)
sibling-abstract-socket|trusted,standard,trusted-exec,standard-exec|connect to the victim'"'"'s abstract unix socket @sbx-attack-victim|ECONNREFUSED (private network namespace), no secret
sibling-tmp|trusted,standard,trusted-exec,standard-exec|read the victim'"'"'s /tmp file|ENOENT (private /tmp)
host-journal-forge|trusted,standard,trusted-exec,standard-exec|send a native journal entry with another worker'"'"'s SANDBOXD_WORKER_ID and EGRESS_DECISION=allow to /run/systemd/journal/socket|connect fails (ENOENT/EACCES/ECONNREFUSED), no forged entry in the journal
host-syslog-forge|trusted,standard,trusted-exec,standard-exec|send a syslog line posing as sandboxd to /dev/log|connect fails, no forged entry in the journal
host-journal-stdout|trusted,standard,trusted-exec,standard-exec|connect to /run/systemd/journal/stdout|ENOENT, EACCES or ECONNREFUSED
host-system-bus|trusted,standard,trusted-exec,standard-exec|connect to /run/dbus/system_bus_socket|ENOENT, EACCES or ECONNREFUSED
host-systemd-private|trusted,standard,trusted-exec,standard-exec|connect to /run/systemd/private|ENOENT, EACCES or ECONNREFUSED
host-credentials-socket|trusted,standard,trusted-exec,standard-exec|connect to /run/sandboxd/credentials.sock and read|ENOENT, EACCES or ECONNREFUSED, no secret
host-run-sockets|trusted,standard,trusted-exec,standard-exec|connect to every unix socket found under /run|none connects
host-sandboxd-state|trusted,standard,trusted-exec,standard-exec|walk /var/lib/private, sandboxd'"'"'s state (/var/lib/sandboxd, /run/sandboxd) and /run/credentials, reading every file|nothing of another worker opens (EACCES/ENOENT), no secret
host-setuid|trusted,standard,trusted-exec,standard-exec|run setuid su, mount, passwd, newgrp; read /etc/shadow|all fail, euid unchanged, EACCES on /etc/shadow
host-unshare-user|trusted,standard,trusted-exec,standard-exec|unshare(CLONE_NEWUSER) and mount as its root|EPERM; under gVisor a namespace of its own kernel at most, in which mount still fails EPERM
host-unshare-net|trusted,standard,trusted-exec,standard-exec|unshare(CLONE_NEWNET)|EPERM
host-mount|trusted,standard,trusted-exec,standard-exec|mount(2) a tmpfs on /tmp|EPERM
host-keyctl|trusted,standard,trusted-exec,standard-exec|add_key(2) to the session keyring, keyctl(2)|add_key EPERM, EACCES or ENOSYS (trusted: keyctl too)
host-bpf|trusted,standard,trusted-exec,standard-exec|bpf(BPF_MAP_CREATE)|EPERM or ENOSYS
host-perf-event|trusted,standard,trusted-exec,standard-exec|perf_event_open(2) of a cpu-clock counter|EPERM, EACCES, ENODEV or ENOSYS
host-io-uring|trusted,standard,trusted-exec,standard-exec|io_uring_setup(2)|EPERM or ENOSYS
host-raw-socket|trusted,standard,trusted-exec,standard-exec|socket(AF_INET/AF_INET6, SOCK_RAW)|EPERM or EAFNOSUPPORT
host-packet-socket|trusted,standard,trusted-exec,standard-exec|socket(AF_PACKET, SOCK_RAW)|EPERM or EAFNOSUPPORT
host-netlink|trusted,standard,trusted-exec,standard-exec|RTM_NEWADDR over a NETLINK_ROUTE socket|EPERM/EAFNOSUPPORT, no address added
egress-control|trusted,standard|(control) CONNECT to the allowed host and complete TLS|200 and a TLS answer: the path the attacks go around works
egress-direct-v4|trusted,standard|dial the upstream 11.0.0.13:443 directly|ENETUNREACH, the upstream saw no connection
egress-direct-v6|trusted,standard|dial the upstream [2a0b:1100::13]:443 directly|ENETUNREACH, the upstream saw no connection
egress-dns-direct|trusted,standard|send a DNS query to the resolver and to the upstream'"'"'s port 53 directly|ENETUNREACH, no query arrived
egress-no-proxy-env|trusted,standard|curl with HTTPS_PROXY and every *_proxy variable unset|curl fails, the upstream saw no connection
egress-ip-literal|trusted,standard|CONNECT 11.0.0.10:443|403 ip-literal
egress-spelled-0x7f.1|trusted,standard|CONNECT 0x7f.1:443|403 ip-literal-obfuscated, the host listener saw nothing
egress-spelled-2130706433|trusted,standard|CONNECT 2130706433:443|403 ip-literal-obfuscated, the host listener saw nothing
egress-literal-v6-loopback|trusted,standard|CONNECT [::1]:443|403 ip-literal, the host listener saw nothing
egress-private-answer|trusted,standard|CONNECT an allowed name resolving to 10.77.0.10|403 private-address, the upstream saw nothing
egress-hostlocal-answer|trusted,standard|CONNECT an allowed name resolving to the host'"'"'s own 11.0.0.1 (a service on 0.0.0.0:443)|403 private-address (or a host-local reason), the host service saw nothing at 11.0.0.1
egress-special-testnet1|trusted,standard|CONNECT an allowed name resolving to 192.0.2.30|403 private-address (or a special-purpose reason), the upstream saw nothing
egress-special-testnet2|trusted,standard|CONNECT an allowed name resolving to 198.51.100.30|403 private-address (or a special-purpose reason), the upstream saw nothing
egress-special-testnet3|trusted,standard|CONNECT an allowed name resolving to 203.0.113.30|403 private-address (or a special-purpose reason), the upstream saw nothing
egress-special-docv6|trusted,standard|CONNECT an allowed name resolving to 2001:db8::30|403 private-address (or a special-purpose reason), the upstream saw nothing
egress-special-bench6|trusted,standard|CONNECT an allowed name resolving to 2001:2::30 (IPv6 benchmarking)|403 private-address (or a special-purpose reason), the upstream saw nothing
egress-rebind-mixed|trusted,standard|CONNECT a name answering both 11.0.0.11 and 10.77.0.11 (rebinding)|403 private-address, neither address contacted
egress-search-list|trusted,standard|CONNECT an allowed name that does not exist while the resolver'"'"'s search list would make it nx.attack.test.evil.test|502 name-not-found, the search-list host saw nothing
egress-sni-mismatch|trusted,standard|CONNECT sni.attack.test, then a ClientHello with SNI api.attack.test (domain fronting)|tunnel closed after the 200, reason sni-mismatch, no byte reached the upstream
egress-no-sni|trusted,standard|CONNECT, then a ClientHello without SNI|tunnel closed, reason no-sni, no byte reached the upstream
egress-ech|trusted,standard|CONNECT, then an ECH ClientHello whose outer SNI is another host|tunnel closed, reason ech-outer-sni-mismatch, no byte reached the upstream
egress-other-port|trusted,standard|CONNECT the allowed host on port 22|403 port-not-allowed, port 22 saw nothing
egress-plain-http|trusted,standard|an absolute-form GET http://api.attack.test/|403 plain-http
egress-http10|trusted,standard|an HTTP/1.0 CONNECT to a host outside the allow-list|refused (403 not-in-allow-list once HTTP/1.0 is parsed), the upstream saw nothing
egress-pipelined|trusted,standard|a second CONNECT pipelined behind the first|403 data-before-tunnel
egress-slow-drip|trusted,standard|send the request headers one byte a second|the proxy closes within 15 s (request-timeout)
egress-tunnel-exhaustion|trusted,standard|hold MaxTunnels=3 tunnels open, then ask for one more|403 too-many-tunnels
egress-journal-flood|trusted,standard|400 refused CONNECTs in a row, then one allowed tunnel|at most 200 deny entries in the journal, the allow entry kept
res-fork-bomb|trusted,standard|fork until refused with TasksMax=32 and hold the children|EAGAIN below 32 tasks; sandboxd and systemd still answer
res-memory|trusted,standard|touch 200 MiB with MemoryMax=64M|killed (OOM), "allocated" never printed
res-cpu|trusted,standard|spin with CPUQuotaPercent=10|the unit uses at most 15% of a CPU
res-disk|standard|write 16 MiB into a home with DiskMax=4M|ENOSPC
res-channel-flood|trusted,standard|write /dev/zero to the channel as fast as possible while a client attaches|sandboxd answers every call within 5 s and stays under 64 MiB RSS
res-outlive|trusted,standard|leave setsid, double-forked sleepers behind and exit|no process of the worker'"'"'s UID (or naming its id) is left once the unit is gone
'

declare -A ATK_ACTION=() ATK_EXPECT=() ATK_CLASSES=() ATK_RAN=()
declare -a ATK_IDS=()
# atk_load_table [TABLE]: reads TABLE (default $ATTACKS) into the ATK_*
# tables, replacing what they held: the attack suite's further scripts
# (bus-*, quota-*, loss-*) call it with their own table after sourcing this file.
atk_load_table() {
    local _id _classes _action _expect table=${1-$ATTACKS}
    ATK_IDS=() ATK_ACTION=() ATK_EXPECT=() ATK_CLASSES=() ATK_RAN=()
    while IFS='|' read -r _id _classes _action _expect; do
        [ -n "$_id" ] || continue
        ATK_IDS+=("$_id")
        ATK_CLASSES[$_id]=$_classes
        ATK_ACTION[$_id]=$_action
        ATK_EXPECT[$_id]=$_expect
    done <<<"$table"
}
atk_load_table

atk_list() {
    local id
    echo "| attack | classes | attacker's action | expected refusal (and proof) |"
    echo "|---|---|---|---|"
    for id in "${ATK_IDS[@]}"; do
        printf '| %s | %s | %s | %s |\n' "$id" "${ATK_CLASSES[$id]//,/, }" "${ATK_ACTION[$id]}" "${ATK_EXPECT[$id]}"
    done
}

# The TAP name of attack ID in CLASS.
atk_name() {
    [ -n "${ATK_ACTION[$1]:-}" ] || { echo "BUG: no attack $1 in the table"; return; }
    printf '%s [%s]: %s -> %s' "$1" "$2" "${ATK_ACTION[$1]}" "${ATK_EXPECT[$1]}"
}

atk_ok() { ATK_RAN[$1:$2]=1; ok "$(atk_name "$1" "$2")"; }
atk_not_ok() {
    local id=$1 class=$2
    shift 2
    ATK_RAN[$id:$class]=1
    not_ok "$(atk_name "$id" "$class")" "$@"
}

# atk_result ID CLASS PROBLEM...: ok when no PROBLEM is given (empty ones do not count).
atk_result() {
    local id=$1 class=$2 p
    local -a problems=()
    shift 2
    for p in "$@"; do [ -n "$p" ] && problems+=("$p"); done
    if [ ${#problems[@]} -eq 0 ]; then atk_ok "$id" "$class"; else atk_not_ok "$id" "$class" "${problems[@]}"; fi
}

# atk_if ID CLASS DIAG CMD...: ok when CMD succeeds; DIAG goes with a failure.
atk_if() {
    local id=$1 class=$2 why=$3
    shift 3
    if "$@" >/dev/null 2>&1; then atk_ok "$id" "$class"; else atk_not_ok "$id" "$class" "$why"; fi
}

# The FACTS of line "PREFIX NAME FACTS" in OUTPUT (probe.py and egress-attack.py print them).
facts_of() { printf '%s\n' "$3" | sed -n "s/^$1 $2 //p" | head -n1; }

# atk_facts ID CLASS PREFIX NAME REGEX OUTPUT: ok when the attack's line matches REGEX.
atk_facts() {
    local id=$1 class=$2 prefix=$3 name=$4 re=$5 out=$6 f
    f=$(facts_of "$prefix" "$name" "$out")
    if [ -n "$f" ] && printf '%s\n' "$f" | grep -Eq -- "$re"; then
        atk_ok "$id" "$class"
    else
        atk_not_ok "$id" "$class" "saw: ${f:-no line $prefix $name}" "wanted: $re"
    fi
}

# The last check: every attack of the table ran in every one of its classes.
atk_coverage() {
    local id class missing=()
    for id in "${ATK_IDS[@]}"; do
        for class in ${ATK_CLASSES[$id]//,/ }; do
            [ -n "${ATK_RAN[$id:$class]:-}" ] || missing+=("$id:$class")
        done
    done
    if [ ${#missing[@]} -eq 0 ]; then
        ok "every one of the ${#ATK_IDS[@]} attacks of the table ran in each of its classes"
    else
        not_ok "every attack of the table ran in each of its classes" "never ran: ${missing[*]}"
    fi
}
