#!/usr/bin/env bash
# Issue 12, the credential broker end to end. Every bad service is its own
# named error that creates nothing and never quotes the secret. A valid one
# runs: a TLS upstream signed by a test CA (trusted through the operator's
# Egress:BrokerCAFile) in a network namespace of its own receives the
# injected header from curl, Python's urllib and Node's fetch in a trusted
# and a gVisor worker, which call http://127.0.0.1:<port> (the gVisor one
# http://10.255.255.1:<port>, on its veth) from
# SANDBOX_SERVICE_<NAME>_URL; a worker-sent Authorization never arrives; a
# service whose name resolves to a private address is refused; git clones
# over smart HTTP from a forge that demands the credential. The secret is
# nowhere the worker can read (environment, credentials, files, a dump of its
# own memory, the broker's answers, journalctl), nowhere a sibling worker or
# an unprivileged user can (unit files and properties of every sandbox unit,
# bus objects, /run/sandboxd), and in no unit, state file or journal entry.
# A restart of sandboxd keeps the broker working: the proxy, killed after the
# restart, reloads its secret from the new daemon (from the fd store).
source "$(dirname "$0")/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
E=org.sandboxd1.Error
W=/etc/sbx-broker-it            # readable by workers: CA, helper scripts
P=/root/sbx-broker-it           # root's alone: the upstream's key and its log of headers
CONF=/etc/sandboxd/sandboxd.conf
UP=11.0.0.12
HOST=api.broker-it.test
PRIV=private.broker-it.test

cleanup() {
    ct sh -c "systemctl stop sbx-broker-it-up 2>/dev/null; $W/upstream-netns.sh down
              sed -i '/# sbx-broker-it$/d' /etc/hosts
              [ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $W $P; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

R=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
SECRET=sbx-brk-$R
# What the workers get to look for it with (probe.sh decodes it in a pipe).
ENC=$(printf '%s' "$SECRET" | tr 'a-z0-9' 'n-za-m5-90-4')
read -r -a SECRET_AY <<<"$(ay_args "$SECRET")"
# A credential with a newline in it: refused, and the refusal must not quote it.
read -r -a NL_AY <<<"$(ay_args "$SECRET")"
NL_AY[0]=$((NL_AY[0] + 1))
NL_AY+=(10)

# ---- the upstream, the test CA, the configuration ---------------------------
ct mkdir -p "$W" "$P"
ct chmod 700 "$P"
for f in probe.sh sibling.sh memdump.py node-fetch.js; do
    cat "$SRC/tests/integration/broker/$f" > "/proc/$CT_PID/root$W/$f"
done
cat "$SRC/tests/egress/broker-upstream.py" > "/proc/$CT_PID/root$P/upstream.py"
upstream_netns_install "$W"
ct sh -ec "
    $W/upstream-netns.sh up $UP
    echo '$UP $HOST # sbx-broker-it' >> /etc/hosts
    echo '10.1.2.3 $PRIV # sbx-broker-it' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout $P/ca.key -out $W/ca.pem -subj /CN=sbx-broker-it-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout $P/up.key -out $P/up.csr -subj /CN=$HOST 2>/dev/null
    printf 'subjectAltName=DNS:$HOST\n' > $P/ext
    openssl x509 -req -in $P/up.csr -CA $W/ca.pem -CAkey $P/ca.key -CAcreateserial -days 2 -extfile $P/ext \
        -out $P/up.pem 2>/dev/null
    chmod -R a+rX $W
    mkdir $P/git
    git init -q --bare $P/git/repo.git
    git init -q $P/src; echo git-$R > $P/src/README
    git -C $P/src add README
    git -C $P/src -c user.name=t -c user.email=t@t commit -qm fixture
    git -C $P/src push -q $P/git/repo.git HEAD:refs/heads/main
    git -C $P/git/repo.git symbolic-ref HEAD refs/heads/main
    echo 'Bearer $SECRET' > $P/git-auth
    systemd-run -q --unit=sbx-broker-it-up ip netns exec upstream python3 $P/upstream.py $UP 443 $P/up.pem $P/up.key \
        $P/up.log $P/git $P/git-auth
    cp $CONF $CONF.orig
    printf '[Egress]\nFloor=*.broker-it.test\nBrokerCAFile=$W/ca.pem\n' > $CONF
    systemctl restart sandboxd"
wait_until 20 ct curl -sS -m 5 -o /dev/null --cacert "$W/ca.pem" --resolve "$HOST:443:$UP" "https://$HOST/setup"
check_output "setup: the upstream answers TLS with the test CA's certificate at $UP:443" '^ok$' \
    ct curl -sS -m 5 --cacert "$W/ca.pem" --resolve "$HOST:443:$UP" "https://$HOST/setup"
check_fails "setup: the system trust store does not vouch for it" \
    ct curl -sS -m 5 -o /dev/null --resolve "$HOST:443:$UP" "https://$HOST/setup"
check_output "sandboxd.service is active" '^active$' ct systemctl is-active sandboxd.service

# The Authorization values the upstream received for PATH, one a line.
up_auth() { upstream_auth "$P/up.log" "$1"; }

# sandboxd's restart above runs its probes and refills the warm pool.
sbx_settled
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

# ---- a worker of each class calls the broker --------------------------------
home_file() { sbx_home_cat "$1" "$2"; }
home_hdr() { home_file "$1" "$2" | tr -d '\r'; }
result() { home_file "$1" results | sed -n "s/^$2=//p"; }

declare -A WORKER
for class in trusted standard; do
    if sbx_create 4 Argv as 4 /bin/sh "$W/probe.sh" "$ENC" "$class" Class s "$class" MemoryMax t $((1024 << 20)) \
        Services 'a(sa{sv})' 2 \
            GITHUB 3 Url s "https://$HOST/v1/" Credential ay "${SECRET_AY[@]}" Methods as 2 GET POST \
            PRIV 2 Url s "https://$PRIV" Credential ay "${SECRET_AY[@]}"; then
        ok "$class: CreateWorker with Services succeeds"
    else
        not_ok "$class: CreateWorker with Services succeeds" "$BUS_ERROR $BUS_ERRMSG"
        continue
    fi
    id=$WID
    WORKER[$class]=$id
    if ! wait_until 240 ct test -e "$(sbx_home "$id")/done"; then
        not_ok "$class: the probe finished" "$(home_file "$id" results)"
        continue
    fi
    diag "$class results: $(home_file "$id" results | tr '\n' ' ')"
    env_w=$(home_file "$id" env.txt)
    # A gVisor worker reaches the proxy's listeners on its veth (worker-veth.h).
    svc_host='127\.0\.0\.1'
    [ "$class" = standard ] && svc_host='10\.255\.255\.1'
    check_output "$class: the worker finds GITHUB's base URL in SANDBOX_SERVICE_GITHUB_URL" \
        "^SANDBOX_SERVICE_GITHUB_URL=http://$svc_host:3129\$" printf '%s\n' "$env_w"
    check_output "$class: ... and PRIV's, on the next port" "^SANDBOX_SERVICE_PRIV_URL=http://$svc_host:3130\$" \
        printf '%s\n' "$env_w"
    check_fails "$class: no proxy variables for a worker without egress" grep -qi '^https_proxy=' <<<"$env_w"

    for client in curl python node; do
        check_eq "$class: $client reaches the service through the broker" "0 ok" \
            "$(result "$id" "$client-rc") $(home_file "$id" "$client.out" | tr -d '\n')"
        check_eq "$class: the upstream got $client's request with the injected credential, not the worker's" \
            "Bearer $SECRET" "$(up_auth "/v1/$class/$client")"
    done
    check_output "$class: a method the service does not allow is 405 with the broker's reason" \
        '^X-Sandbox-Egress-Reason: method-not-allowed' home_hdr "$id" refused.hdr
    check_eq "$class: ... and never reached the upstream" "" "$(up_auth "/v1/$class/delete")"
    check_output "$class: a service whose name resolves to a private address is refused (403 private-address)" \
        '^X-Sandbox-Egress-Reason: private-address' home_hdr "$id" private.hdr
    check_output "$class: the worker dumped its own memory after a brokered request" '^[1-9][0-9]{5,}$' \
        home_file "$id" memdump.out

    # Everything the worker recorded: its environment, /proc/self/environ,
    # $CREDENTIALS_DIRECTORY, journalctl, its memory, the broker's answers
    # and refusal bodies. Root searches the home for the secret itself.
    check_eq "$class: nothing the worker could read or was sent holds the secret" "" \
        "$(ct grep -rlaF -- "$SECRET" "$(sbx_home "$id")")"
    found=$(home_file "$id" found.txt)
    control=$(home_file "$id" control)
    check_output "$class: the worker's grep over what it can read found its control string" \
        "^$SBX_STATE_LINK_ROOT/$id/control:$control\$|^$SBX_STATE_ROOT/$id/control:$control\$" printf '%s\n' "$found"
    check_eq "$class: ... and nothing else: the secret is nowhere the worker can read" "" \
        "$(grep -v ":$control\$" <<<"$found")"
done
check_eq "no request the worker made through its own Authorization reached the upstream" "" \
    "$(ct grep -F worker-forged "$P/up.log")"

# ---- what others see -------------------------------------------------------
T=${WORKER[trusted]:-}
if [ -n "$T" ]; then
    cred=/run/credentials/sandbox-$T-egress.service/broker-GITHUB
    check_eq "the proxy's credential holds the secret (what the next checks look for)" "$SECRET" \
        "$(ct cat "$cred" 2>/dev/null | tr -d '\n')"
    check_fails "an unprivileged user cannot read the proxy's credential" as_tester cat "$cred"
    check_fails "an unprivileged user cannot list /run/sandboxd" as_tester ls /run/sandboxd
    for unit in "sandbox-$T.service" "sandbox-$T-egress.socket" "sandbox-$T-egress.service"; do
        objpath=/org/freedesktop/systemd1/unit/$(sed 's/-/_2d/g; s/\./_2e/g' <<<"$unit")
        check "tester reads $unit's unit file and properties (so the next check means something)" \
            sh -c "nsenter -t $CT_PID -a runuser -u tester -- systemctl cat '$unit' >/dev/null &&
                   nsenter -t $CT_PID -a runuser -u tester -- busctl --system introspect org.freedesktop.systemd1 '$objpath' >/dev/null"
        out=$(as_tester systemctl cat "$unit" 2>&1; as_tester systemctl show --all "$unit" 2>&1
              as_tester busctl --system introspect org.freedesktop.systemd1 "$objpath" 2>&1)
        if grep -qF -- "$SECRET" <<<"$out"; then
            not_ok "the secret is not in $unit (systemctl cat, show --all, busctl introspect, as tester)"
        else
            ok "the secret is not in $unit (systemctl cat, show --all, busctl introspect, as tester)"
        fi
    done
    check_output "the proxy unit loads the secret by reference to sandboxd's socket" \
        "^LoadCredential=broker-GITHUB:/run/sandboxd/credentials.sock\$" ct systemctl cat "sandbox-$T-egress.service"
    out=$(as_tester busctl --system introspect org.sandboxd1 "/org/sandboxd1/worker/$T" 2>&1
          ct busctl --system introspect org.sandboxd1 "/org/sandboxd1/worker/$T" 2>&1)
    check_fails "the secret is in no property of the Worker object (as tester and as root)" grep -qF -- "$SECRET" <<<"$out"

    # A sibling worker looks wherever it can.
    if sbx_create 2 Argv as 4 /bin/sh "$W/sibling.sh" "$ENC" "$T" Class s trusted; then
        sib=$WID
        if wait_until 120 ct test -e "$(sbx_home "$sib")/done"; then
            check_eq "a sibling cannot read the proxy's credential by path" "1" "$(result "$sib" cred-rc)"
            check_eq "a sibling has no broker listener in its namespace (curl exit 7)" "7" "$(result "$sib" listener-rc)"
            found=$(home_file "$sib" found.txt)
            control=$(home_file "$sib" control)
            check_output "the sibling's grep found its control string" ":$control\$" printf '%s\n' "$found"
            check_eq "... and not the other worker's secret" "" "$(grep -v ":$control\$" <<<"$found")"
        else
            not_ok "the sibling's search finished"
        fi
        sbx_call StopWorker s "$sib" >/dev/null
    else
        not_ok "a sibling worker runs" "$BUS_ERROR $BUS_ERRMSG"
    fi
fi

files=$(ct grep -rlsF -- "$SECRET" /run/systemd /etc/systemd /run/sandboxd /var/lib/sandboxd /var/lib/private/sandboxd)
check_eq "the secret is in no unit, state or worker file" "" "$files"
check "every brokered request is a journal entry" journal_has "broker: GITHUB GET /v1/trusted/curl -> 200" \
    --since "$since" SANDBOXD_SERVICE=GITHUB
check "a refusal's entry carries its reason" journal_has "SANDBOXD_REASON=method-not-allowed" \
    --since "$since" -o verbose SANDBOXD_SERVICE=GITHUB

# ---- sandboxctl ------------------------------------------------------------
KEYFILE=/tmp/sbx-api-key-$R
printf '%s\n' "$SECRET" | as_tester sh -c "umask 077; cat >$KEYFILE"
# shellcheck disable=SC2016  # the worker's shell expands it
out=$(ct timeout 120 sandboxctl run --class trusted --service api=https://$HOST/v1 \
    --service-credential "api:$KEYFILE" --service-method api:GET,POST -- \
    /bin/sh -c 'curl -sS -m 30 "$SANDBOX_SERVICE_API_URL/hello/sandboxctl"' 2>&1)
rc=$?
check_eq "sandboxctl run --service: the worker gets the service's answer" "0 ok" "$rc $out"
check_eq "sandboxctl run --service: the upstream got the key file's secret, its newline dropped" \
    "Bearer $SECRET" "$(up_auth /v1/hello/sandboxctl)"

# ---- git over smart HTTP: the forge refuses a clone without the credential ----
check_output "git: the forge answers 401 to a clone without the credential" '^401$' \
    ct curl -sS -m 10 -o /dev/null -w '%{http_code}' --cacert "$W/ca.pem" --resolve "$HOST:443:$UP" \
        "https://$HOST/git/repo.git/info/refs?service=git-upload-pack"
for class in trusted standard; do
    # shellcheck disable=SC2016  # the worker's shell expands them
    out=$(ct timeout 180 sandboxctl run --class "$class" --service git=https://$HOST/git \
        --service-credential "git:$KEYFILE" --service-method git:GET,POST -- /bin/sh -c \
        'git clone -q "$SANDBOX_SERVICE_GIT_URL/repo.git" "$HOME/repo" && cat "$HOME/repo/README" &&
         git -C "$HOME/repo" config --list --show-origin | grep -ci authorization' 2>&1)
    check_eq "$class: git clone through the broker gets the repository, with no credential in git's config" \
        "git-$R 0" "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
done
check_eq "git: the clones' POSTs to git-upload-pack reached the forge with the injected credential" "Bearer $SECRET" \
    "$(up_auth /git/repo.git/git-upload-pack | sort -u)"

# ---- a restart of sandboxd --------------------------------------------------
_restarted() {
    local pid
    pid=$(unit_prop sandboxd.service MainPID)
    [ "$(ct systemctl is-active sandboxd.service)" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$1" ]
}
if [ -n "$T" ]; then
    proxy=sandbox-$T-egress.service
    old_pid=$(unit_prop sandboxd.service MainPID)
    check "systemctl restart sandboxd" ct systemctl restart sandboxd.service
    check "sandboxd runs as a new process" wait_until 30 _restarted "$old_pid"
    check_output "the worker with services was re-adopted" '^running$' sbx_prop "$T" State
    # The proxy reads its secrets when it starts: killed now, it is started
    # again by the next connection and must get them from the new daemon.
    check "the proxy is killed after the restart" ct systemctl kill --signal=KILL "$proxy"
    check "... and is gone" wait_until 20 sh -c "[ \"\$(nsenter -t $CT_PID -a systemctl show -P ActiveState '$proxy')\" != active ]"
    ct touch "$(sbx_home "$T")/go-after"
    if wait_until 60 ct test -e "$(sbx_home "$T")/res-after"; then
        check_eq "after the restart the restarted proxy brokers again" "ok200" \
            "$(home_file "$T" res-after | tr -d '\n')"
    else
        not_ok "after the restart the worker's request was answered"
    fi
    check_eq "... with the secret the new daemon served from the fd store" "Bearer $SECRET" "$(up_auth /v1/restart/after)"
    check_output "the proxy runs again" '^active$' unit_prop "$proxy" ActiveState
fi

for class in trusted standard; do
    id=${WORKER[$class]:-}
    [ -n "$id" ] && sbx_call StopWorker s "$id" >/dev/null
done
for class in trusted standard; do
    id=${WORKER[$class]:-}
    [ -n "$id" ] && check "$class: the worker and its proxy are gone after StopWorker" \
        wait_until 30 sh -c "! nsenter -t $CT_PID -a systemctl is-active -q sandbox-$id.service sandbox-$id-egress.service"
done
if journal --since "$since" | grep -qF -- "$SECRET"; then
    not_ok "the secret is not in the journal"
else
    ok "the secret is not in the journal"
fi
tap_done
