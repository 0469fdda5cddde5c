#!/usr/bin/env bash
# Endpoints (issue 25, item 4): a request counts as activity. A trusted
# worker serving Python's http.server behind its gate, asked through the
# gate's UNIX socket every second for two and a half of its idle timeouts,
# still runs, and its LastActivityUSec says why (nothing but the gate's
# requests ever touched it: no client attached, the handler writes nothing);
# the control, the same worker left without requests, is reaped as idle; and
# once its requests stop, the asked one is reaped as idle too.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
W=/etc/sbx-endpoint-idle        # readable by the workers
IDLE_S=10
TOKEN=sbx-idle-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')

cleanup() {
    ct sh -c "for id in ${BUSY:-} ${LEFT:-}; do sandboxctl stop \$id; done; rm -rf $W" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service
sbx_monitor_start || not_ok "busctl monitor records the Manager's signals"
ct mkdir -p "$W"
cat "$SRC/tests/gate/handler.py" > "/proc/$CT_PID/root$W/handler.py"
printf '%s\n' "$TOKEN" > "/proc/$CT_PID/root$W/token"
ct chmod 0600 "$W/token"

sock_of() { echo "/run/sandboxd-endpoints/$1.sock"; }
# One request through ID's gate; prints the status code.
ask() {
    ct curl -s -m 20 -o /dev/null -w '%{http_code}' --unix-socket "$(sock_of "$1")" \
        -H "Authorization: Bearer $TOKEN" http://w/hello
}
answers() { [ "$(ask "$1")" = 200 ]; }
# A caller without the token: the gate refuses it (401) before the handler.
ask_untokened() {
    ct curl -s -m 20 -o /dev/null -w '%{http_code}' --unix-socket "$(sock_of "$1")" http://w/hello
}
# A trusted worker serving handler.py on 8080 behind its gate, idle after IDLE_S.
serve() {
    ct sandboxctl create --class trusted --idle "${IDLE_S}s" --publish 8080 --publish-token-file "$W/token" -- \
        /bin/sh -c "exec python3 $W/handler.py 8080 \"\$HOME/seen\" 0.0.0.0" 2>&1
}

BUSY=$(serve)
LEFT=$(serve)
for id in "$BUSY" "$LEFT"; do
    if ! grep -Eq '^[0-9a-f]{12}$' <<<"$id"; then
        not_ok "a trusted worker with --publish and --idle ${IDLE_S}s is created" "$id"
        tap_done
    fi
done
ok "two trusted workers with --publish and --idle ${IDLE_S}s are created ($BUSY, $LEFT)"
# Both answer through their gates (a handler may take a moment to listen;
# the asked one is asked again until the control answers too, which then
# gets no other request).
both_answer() { answers "$BUSY" && answers "$LEFT"; }
check "both handlers answer through their gates" wait_until 60 both_answer

# A request a second for two and a half idle timeouts (not a speed check:
# a slow request only makes the gaps longer, which the idle timeout bounds).
start=$(date +%s)
asked=0 answered=0 refused=0 gone=0
while [ $(($(date +%s) - start)) -lt $((IDLE_S * 5 / 2)) ]; do
    asked=$((asked + 1))
    [ "$(ask "$BUSY")" = 200 ] && answered=$((answered + 1))
    # The attack: a caller without the token keeps knocking on the control's
    # endpoint; what the gate refused must not keep a worker from its reaper.
    case $(ask_untokened "$LEFT") in
    401) refused=$((refused + 1)) ;;
    000) gone=$((gone + 1)) ;;      # reaped, its socket gone with it
    esac
    sleep 1
done
left_after=$(state_of "$LEFT")
check_eq "every request to the asked worker was answered ($asked)" "$asked" "$answered"
check_eq "every request without the token to the control was refused 401 until it went ($refused + $gone)" \
    "$asked" "$((refused + gone))"
check "... and some reached it while it ran ($refused)" test "$refused" -ge 3
check_fails "the control, asked only without the token, no longer runs after $((IDLE_S * 5 / 2)) s (was: ${left_after:-gone})" \
    test "$left_after" = running
check_eq "the asked worker still runs after $((IDLE_S * 5 / 2)) s of requests (idle timeout ${IDLE_S} s)" running \
    "$(state_of "$BUSY")"
# Why: its idle clock moved with the requests. No client ever attached and
# the handler writes nothing, so only the gate's served count moved it.
created=$(sbx_prop "$BUSY" CreatedUSec)
last=$(sbx_prop "$BUSY" LastActivityUSec)
if [[ $created =~ ^[0-9]+$ && $last =~ ^[0-9]+$ ]] && [ "$last" -gt $((created + IDLE_S * 1000000)) ]; then
    ok "the asked worker's LastActivityUSec is more than an idle timeout after its creation (the requests)"
else
    not_ok "the asked worker's LastActivityUSec is more than an idle timeout after its creation (the requests)" \
        "CreatedUSec=$created LastActivityUSec=$last"
fi
diag "$(ct sandboxctl endpoints 2>&1)"
check_fails "the journal has no idle stop of the asked worker" \
    _journal_match "Worker idle for too long" "SANDBOXD_WORKER_ID=$BUSY"

# The control: the same worker, asked only without the token, went at its
# idle timeout.
expect_removed "the control, asked only without the token, is reaped as idle" "$LEFT" idle 30
check "the journal says the control was stopped as idle" \
    journal_has "Worker idle for too long, stopping it" "SANDBOXD_WORKER_ID=$LEFT"

# Requests stop: the gate running on, and its kept connections, are no activity.
expect_removed "the asked worker, once its requests stopped" "$BUSY" idle $((IDLE_S * 4))
check "the journal says the asked worker was stopped as idle" \
    journal_has "Worker idle for too long, stopping it" "SANDBOXD_WORKER_ID=$BUSY"
BUSY='' LEFT=''

tap_done
