#!/bin/sh
# The sandbox-walls binary's contract, without a unit: "check" exits 125 and
# names the namespace when one of its own is the one given (as PID 1's would
# be), 0 when none is, 2 on a bad command line; "probe" prints the lines the
# daemon parses (daemon/walls.h).
WALLS=${1:?usage: test-walls-cli.sh PATH-TO-sandbox-walls}
. "$(dirname "$0")/../common/cli-check.sh"
# This shell's namespaces are the checker's: given as "PID 1's", they are shared.
net=$(stat -L -c %d:%i /proc/self/ns/net) ipc=$(stat -L -c %d:%i /proc/self/ns/ipc) mnt=$(stat -L -c %d:%i /proc/self/ns/mnt)
out=$("$WALLS" check --id=w1 --net="$net" --ipc=0:1 --mnt=0:2 2>&1); rc=$?
check "check: a shared network namespace refuses (125) and names it" 125 \
    "Refusing to start worker w1: the network namespace is PID 1's \\(net=$net\\)" "$rc" "$out"
out=$("$WALLS" check --id=w1 --net=0:1 --ipc="$ipc" --mnt="$mnt" 2>&1); rc=$?
check "check: shared IPC and mount namespaces are both named" 125 "the IPC and mount namespaces are PID 1's" "$rc" "$out"
out=$("$WALLS" check --id=w1 --net=0:1 --ipc=0:2 --mnt=0:3 2>&1); rc=$?
check "check: none shared passes silently" 0 '^$' "$rc" "$out"
out=$("$WALLS" check --id=w1 --net=nonsense 2>&1); rc=$?
check "check: a malformed identity is a usage error" 2 "bad argument '--net=nonsense'" "$rc" "$out"
out=$("$WALLS" check --id=w1 --net=0:1 --net=0:2 2>&1); rc=$?
check "check: a repeated namespace is a usage error" 2 "bad argument" "$rc" "$out"
out=$("$WALLS" check --id=w1 2>&1); rc=$?
check "check: nothing to check against is a usage error, not a pass" 2 "nothing to check against" "$rc" "$out"
out=$("$WALLS" probe 2>&1); rc=$?
check "probe: its own identities" 0 "^unit net=$net ipc=$ipc mnt=$mnt\$" "$rc" "$out"
check "probe: an ip-firewall verdict line" 0 '^ip-firewall (ok|unavailable) .+' "$rc" "$out"
out=$("$WALLS" frobnicate 2>&1); rc=$?
check "unknown verb" 2 'Usage:' "$rc" "$out"
cli_check_done
