#!/usr/bin/env bash
# The sandbox-walls binary's contract, without a unit: "probe" prints the
# lines the daemon parses (daemon/shared/walls.h); anything else is 2 and the usage.
WALLS=${1:?usage: test-walls-cli.sh PATH-TO-sandbox-walls}
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
net=$(stat -L -c %d:%i /proc/self/ns/net) ipc=$(stat -L -c %d:%i /proc/self/ns/ipc) mnt=$(stat -L -c %d:%i /proc/self/ns/mnt)
# A worker's own check is sandbox-exec --check now (tests/exec/test-exec-cli.sh).
out=$("$WALLS" check --id=w1 --net="$net" 2>&1); rc=$?
check_exit "check is no verb of it any more" 2 'Usage:' "$rc" "$out"
out=$("$WALLS" probe 2>&1); rc=$?
check_exit "probe: its own identities" 0 "^unit net=$net ipc=$ipc mnt=$mnt\$" "$rc" "$out"
check_exit "probe: an ip-firewall verdict line" 0 '^ip-firewall (ok|unavailable) .+' "$rc" "$out"
out=$("$WALLS" frobnicate 2>&1); rc=$?
check_exit "unknown verb" 2 'Usage:' "$rc" "$out"
tap_done
