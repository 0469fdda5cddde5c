#!/usr/bin/env bash
# A stop the bus refuses is asked again. The bus daemon caps the replies one
# connection may await (max_replies_per_connection, 128 by default); many
# stops at once pass it, and a StopUnit it refuses never reaches systemd: the
# worker stayed "stopping" with its unit running (4 of 300 in the density
# benchmark). Here the cap is 4 and 16 StopWorker calls come while systemd
# answers nothing, so 12 of sandboxd's StopUnit calls are refused: every
# worker must still end, and nothing of them may be left.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

CLIENT=/usr/lib/sandboxd-tests/sbx-channel
N=16
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
sbx_settled

ids=()
for _ in $(seq $N); do
    sbx_create 2 Argv as 2 /bin/sleep infinity Class s trusted && ids+=("$WID")
done
check_eq "$N trusted workers run" "$N" "${#ids[@]}"
# A mark in the journal; read from it with --cursor (journalctl 252's
# --after-cursor skips the first matching entry).
ct sh -c "echo stop-retry-mark | systemd-cat -t sbx-stop-retry-mark"
journal_has stop-retry-mark -t sbx-stop-retry-mark
cursor=$(ct journalctl -q -n1 --show-cursor -o cat -t sbx-stop-retry-mark | sed -n 's/^-- cursor: //p')

ct sh -c 'printf "<busconfig>\n  <limit name=\"max_replies_per_connection\">4</limit>\n</busconfig>\n" \
    > /etc/dbus-1/system-local.conf'
check "the bus daemon reloads with a cap of 4 awaited replies per connection" ct systemctl reload dbus.service

# PID 1 stopped (from the host: SIGSTOP reaches a namespace's init from
# outside), so none of sandboxd's StopUnit calls is answered and the bus
# refuses all but the first 4; each client's StopWorker is answered at once
# (sandboxd does not wait for systemd), and each client stays within the cap.
kill -STOP "$CT_PID"
accepted=0
for i in 0 4 8 12; do
    ct timeout 60 "$CLIENT" stop-burst "${ids[@]:$i:4}" > /dev/null && accepted=$((accepted + 1))
done
refused() { ct journalctl --no-pager -q --cursor="$cursor" -o cat -u sandboxd.service |
                grep -q -e "did not take the stop" -e "Failed to stop a worker unit"; }
wait_until 30 refused
kill -CONT "$CT_PID"
check_eq "every client's StopWorker calls were answered without an error" 4 "$accepted"
check "the bus refused sandboxd's StopUnit calls beyond the cap" refused

all_gone() {
    [ -z "$(ct sandboxctl list --no-legend 2>/dev/null)" ] && [ -z "$(sbx_units)" ]
}
if wait_until 120 all_gone; then
    ok "all $N workers ended and their units are gone"
else
    not_ok "all $N workers ended and their units are gone" "workers: $(ct sandboxctl list --no-legend | tr '\n' ';')" \
        "units: $(sbx_units | tr '\n' ' ')"
fi
retries=$(ct journalctl --no-pager -q --cursor="$cursor" SANDBOXD_EVENT=stop-retry -o cat | wc -l)
if [ "$retries" -gt 0 ]; then
    ok "the bus refused some StopUnit calls and sandboxd asked again ($retries times)"
else
    not_ok "the bus refused some StopUnit calls and sandboxd asked again" \
        "no stop-retry in the journal: the cap did not bite, so the check above proves nothing"
fi
left=()
for id in "${ids[@]}"; do home_absent "$id" || left+=("$id"); done
if [ ${#left[@]} -eq 0 ]; then ok "no home is left"; else not_ok "no home is left" "homes of: ${left[*]}"; fi

ct sh -c 'rm -f /etc/dbus-1/system-local.conf && systemctl reload dbus.service'
tap_done
