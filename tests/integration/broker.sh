#!/usr/bin/env bash
# Issue 12, the Services spec: every bad service is its own named error that
# creates nothing and never quotes the secret; a valid one is refused
# (IsolationUnavailable) before anything exists, since the proxy has no
# broker path yet; the secret reaches no log, unit or error text.
source "$(dirname "$0")/lib.sh"
tap_init "$@"

E=org.sandboxd1.Error
ct systemctl start sandboxd.service
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

R=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
SECRET=sbx-svc-$R
read -r -a SECRET_AY <<<"$(ay_args "$SECRET")"
# A credential with a newline in it: refused, and the refusal must not quote it.
read -r -a NL_AY <<<"$(ay_args "$SECRET")"
NL_AY[0]=$((NL_AY[0] + 1))
NL_AY+=(10)

units_before=$(sbx_units)
state_before=$(sbx_state_entries)
since=$(ct date '+%Y-%m-%d %H:%M:%S')

nothing_new() {
    local units state
    units=$(sbx_units)
    state=$(sbx_state_entries)
    if [ "$units" = "$units_before" ] && [ "$state" = "$state_before" ]; then
        ok "$1: no new unit, no new home"
    else
        not_ok "$1: no new unit, no new home" "units after: ${units//$'\n'/ }" "homes after: ${state//$'\n'/ }"
    fi
}

# bad NAME ERROR N-SETTINGS SETTINGS...: one service "api" with those settings.
bad() {
    local name=$1 want=$2
    shift 2
    check_error "$name: $want" "$want" root CreateWorker 'a{sv}' 2 Argv as 1 /bin/true \
        Services 'a(sa{sv})' 1 api "$@"
    if [[ $BUS_ERRMSG == *"$SECRET"* ]]; then
        not_ok "$name: the error does not quote the secret" "$BUS_ERRMSG"
    else
        ok "$name: the error does not quote the secret"
    fi
    nothing_new "$name"
}

bad "Url over http"            $E.InvalidService 2 Url s http://api.example.org Credential ay "${SECRET_AY[@]}"
bad "Url an IP literal"        $E.InvalidService 2 Url s https://10.0.0.1 Credential ay "${SECRET_AY[@]}"
bad "Url with user info"       $E.InvalidService 2 Url s https://u:p@api.example.org Credential ay "${SECRET_AY[@]}"
bad "no Credential"            $E.InvalidService 1 Url s https://api.example.org
bad "Credential with a newline" $E.InvalidService 2 Url s https://api.example.org Credential ay "${NL_AY[@]}"
bad "Credential as a string"   $E.WrongType 2 Url s https://api.example.org Credential s "$SECRET"
bad "Header Host"              $E.InvalidService 3 Url s https://api.example.org Credential ay "${SECRET_AY[@]}" \
    Header s 'Host: {}'
bad "Method CONNECT"           $E.InvalidService 3 Url s https://api.example.org Credential ay "${SECRET_AY[@]}" \
    Methods as 1 CONNECT
bad "Path with .."             $E.InvalidService 3 Url s https://api.example.org Credential ay "${SECRET_AY[@]}" \
    Paths as 1 /v1/../admin
bad "MaxRequestBytes 0"        $E.LimitOutOfRange 3 Url s https://api.example.org Credential ay "${SECRET_AY[@]}" \
    MaxRequestBytes t 0
bad "unknown service key"      $E.InvalidService 3 Url s https://api.example.org Credential ay "${SECRET_AY[@]}" \
    Token s x
bad "a valid service (no broker yet)" $E.IsolationUnavailable 4 Url s https://api.example.org \
    Credential ay "${SECRET_AY[@]}" Methods as 2 GET POST Paths as 1 /v1/
check_output "the refusal says why" 'no credential broker' echo "$BUS_ERRMSG"

# sandboxctl: the key comes from a file (tester's, 0600), and the refusal is exit 77.
KEYFILE=/tmp/sbx-api-key-$R
printf '%s\n' "$SECRET" | as_tester sh -c "umask 077; cat >$KEYFILE"
out=$(ct timeout 60 sandboxctl run --service api=https://api.example.org/v1 \
    --service-credential "api:$KEYFILE" --service-method api:GET,POST -- /bin/true 2>&1)
rc=$?
check_eq "sandboxctl run --service: exit 77 (refused)" 77 "$rc"
check_output "sandboxctl run --service: says why" 'no credential broker' echo "$out"
if [[ $out == *"$SECRET"* ]]; then not_ok "sandboxctl's message does not show the secret" "$out"
else ok "sandboxctl's message does not show the secret"; fi
nothing_new "sandboxctl run --service"

# Nothing of the secret anywhere root can read it: the journal, unit files.
if journal --since "$since" | grep -qF -- "$SECRET"; then
    not_ok "the secret is not in the journal"
else
    ok "the secret is not in the journal"
fi
files=$(ct grep -rlsF -- "$SECRET" /run/systemd /etc/systemd /run/sandboxd)
check_eq "the secret is in no unit or state file" "" "$files"
tap_done
