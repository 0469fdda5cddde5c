#!/bin/bash
# testbed: long
# The attack suite, section endpoint (issue 25): a worker serving HTTP behind
# its gate, sandbox-gate, with a Python http.server handler in a trusted and
# a gVisor (standard) worker. Real clients over the gate's UNIX socket (curl
# --unix-socket, Python's http.client) and its loopback port (urllib, Node's
# http), and the attacks: no token, a wrong one, request smuggling, an
# oversize body, a handler that answers too much, a slow drip, another user
# and a sibling at the endpoint, the handler looking for the gate's token,
# the endpoint after its worker. Every refusal is checked against the
# handler's own record of what reached it, beside a control that passes.
#
#   endpoint.sh LEADER_PID STAGE_DIR     (tests/run-all.sh runs it)
#   endpoint.sh --list                   prints the table for README.md
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
source "$HERE/lib-attacks.sh"

ENDPOINT_ATTACKS='
endpoint-no-token|trusted,standard|a request without Authorization, and one with a wrong bearer token, over the UNIX socket and the TCP port|401 each; the handler recorded nothing
endpoint-smuggle|trusted,standard|Content-Length with Transfer-Encoding, two Content-Lengths, a bare LF, an obs-fold line (with the right token)|400 each; the handler recorded nothing
endpoint-oversize-request|trusted,standard|a 1 MiB + 1 body, by Content-Length and chunked|413 each; the handler recorded nothing (control: 1 MiB passes)
endpoint-oversize-response|trusted,standard|the handler answers 2 MiB, by Content-Length and chunked|502 with no byte of it (control: 1 MiB arrives whole)
endpoint-slow-drip|trusted|a caller sends half a head and waits|408 after the head timeout (10 s); the handler recorded nothing
endpoint-other-user|trusted,standard|tester (not in the socket group) connects to the UNIX socket|EACCES
endpoint-sibling|trusted,standard|a sibling worker connects to the endpoint'"'"'s UNIX socket and to its TCP port|ENOENT on the socket, the port refused in its own namespace
endpoint-handler-token|trusted,standard|the handler reads every /proc/*/environ and cmdline, its credentials, the endpoints directory, and connects to its own gate'"'"'s socket|the token nowhere, the directory and socket absent (ENOENT)
endpoint-handler-exec|trusted,standard|the handler copies /bin/true into its home and /tmp and runs it|PermissionError in both (NoExec)
endpoint-token-leak|trusted,standard|tester and root search the transient unit files, the gate units'"'"' properties and the journal for the token|absent everywhere
endpoint-after-stop|trusted,standard|a request to the endpoint after its worker was stopped, directly and through nginx and Caddy|no socket file, the connection fails; the TCP port refuses; nginx and Caddy answer 503 "no such endpoint", never another worker
'
atk_load_table "$ENDPOINT_ATTACKS"
if [ "${1:-}" = --list ]; then
    atk_list | sed '1s/^| attack |/| attack (endpoint.sh) |/'
    exit 0
fi
tap_init "$@"
check "tests/attacks/README.md's endpoint table is what --list prints" \
    diff <(bash "$0" --list) <(sed -n '/^| attack (endpoint.sh) |/,/^$/p' "$HERE/README.md" | sed '/^$/d')

SRC=$(cd "$HERE/../.." && pwd)
W=/etc/sbx-endpoint             # readable by workers of every class
CONF=/etc/sandboxd/sandboxd.conf
PORT_FIRST=20100
TOKEN=sbx-endpoint-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
WRONG=sbx-endpoint-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
MiB=$((1 << 20))

cleanup() {
    ct sh -c "sandboxctl list --no-legend 2>/dev/null | awk '{print \$1}' | xargs -r -n1 sandboxctl stop
              [ -f $CONF.sbx-endpoint ] && mv $CONF.sbx-endpoint $CONF; rm -rf $W; systemctl restart sandboxd" \
        >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct mkdir -p "$W"
cat "$SRC/tests/gate/handler.py" > "/proc/$CT_PID/root$W/handler.py"
printf '%s\n' "$TOKEN" > "/proc/$CT_PID/root$W/token"
ct chmod 0600 "$W/token"
ct sh -c "cp -a $CONF $CONF.sbx-endpoint 2>/dev/null || : > $CONF.sbx-endpoint
          printf '[Endpoints]\nPortRange=$PORT_FIRST-$((PORT_FIRST + 9))\n' > $CONF
          systemctl restart sandboxd"
wait_until 60 ct systemctl is-active -q sandboxd
sbx_settled

# A worker of CLASS serving handler.py on port 8080 behind its gate; its id.
serve() {
    ct sandboxctl create --class "$1" --publish 8080 --publish-token-file "$W/token" -- \
        /bin/sh -c "exec python3 $W/handler.py 8080 \"\$HOME/seen\" 0.0.0.0" 2>&1
}
sock_of() { echo "/run/sandboxd-endpoints/$1.sock"; }
seen() { sbx_home_cat "$1" seen | wc -l; }
# Worker ID's handler answers 200 through its gate, at PATH (default /hello).
# A function wait_until calls itself: ct is one of this script's functions,
# which a "sh -c" never sees.
gate_answers() {
    [ "$(ct curl -s -o /dev/null -w '%{http_code}' --unix-socket "$(sock_of "$1")" \
        -H "Authorization: Bearer $TOKEN" "http://w${2:-/hello}")" = 200 ]
}
# curl over the gate's UNIX socket: prints the status code; the body goes to $W/body.
ucurl() {
    local id=$1
    shift
    ct curl -s -m 20 -o "$W/body" -w '%{http_code}' --unix-socket "$(sock_of "$id")" "$@"
}
raw() {   # ID BYTES (escapes as in printf %b): the status line the gate answers with
    ct python3 - "$(sock_of "$1")" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
print(s.recv(200).decode("latin-1").split("\r\n")[0])
PY
}
A="Authorization: Bearer $TOKEN\\r\\n"
# Python that connects to worker ID's UNIX socket and to loopback PORT and
# prints "unix|tcp connected|EXCEPTION" for each.
try_connect() {
    printf '%s\n' "import socket" \
        "for what, fam, addr in (('unix', socket.AF_UNIX, '$(sock_of "$1")'), ('tcp', socket.AF_INET, ('127.0.0.1', $2))):" \
        "    try:" \
        "        s = socket.socket(fam); s.settimeout(5); s.connect(addr); print(what, 'connected')" \
        "    except OSError as e:" \
        "        print(what, e.__class__.__name__)"
}

declare -A ID=() TCP=()
for class in trusted standard; do
    id=$(serve "$class")
    if ! grep -Eq '^[0-9a-f]{12}$' <<<"$id"; then
        not_ok "$class: a worker with --publish is created" "$id"
        continue
    fi
    ID[$class]=$id
    ok "$class: a worker with --publish is created ($id)"
    wait_until 60 gate_answers "$id"
    check_eq "$class: the handler answers through the gate (curl --unix-socket)" 200 \
        "$(ucurl "$id" -H "Authorization: Bearer $TOKEN" http://w/hello)"
    check_eq "$class: ... its answer" hello "$(ct cat "$W/body")"
    listen=$(unit_prop "sandbox-$id-gate.socket" Listen)
    diag "$class: gate socket listens on: $listen"
    TCP[$class]=$(grep -Eo '127\.0\.0\.1:[0-9]+' <<<"$listen")
    check_match "$class: the gate also listens on a port of PortRange" "127\.0\.0\.1:201[0-9][0-9]" "${TCP[$class]}"
    check_output "$class: the socket is 0660 root:www-data" '^660 root www-data$' \
        ct stat -c '%a %U %G' "$(sock_of "$id")"
done
check_output "/run/sandboxd-endpoints is 2750 root:www-data (setgid: a sleeping worker's socket gets the group)" '^2750 root www-data$' \
    ct stat -c '%a %U %G' /run/sandboxd-endpoints
check_fails "the two workers' ports differ" test "${TCP[trusted]:-x}" = "${TCP[standard]:-x}"

for class in trusted standard; do
    id=${ID[$class]:-}
    [ -n "$id" ] || continue
    # ---- real clients ----
    check_output "$class: Python's http.client, two requests on one connection over the UNIX socket" '^200 200$' \
        ct python3 - "$(sock_of "$id")" "$TOKEN" <<'PY'
import http.client, socket, sys
class U(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])
c = U("w", timeout=10); codes = []
for _ in range(2):
    c.request("GET", "/hello", headers={"Authorization": "Bearer " + sys.argv[2]})
    r = c.getresponse(); r.read(); codes.append(str(r.status))
print(" ".join(codes))
PY
    check_output "$class: Python's urllib over the TCP port" '^200 hello$' ct python3 - "${TCP[$class]}" "$TOKEN" <<'PY'
import sys, urllib.request
req = urllib.request.Request(f"http://{sys.argv[1]}/hello", headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(req, timeout=10) as r:
    print(r.status, r.read().decode().strip())
PY
    check_output "$class: Node's http over the TCP port" '^200 hello$' ct node -e '
const [host, port] = process.argv[1].split(":");
require("http").get({ host, port, path: "/hello", headers: { Authorization: "Bearer " + process.argv[2] } }, r => {
  let b = ""; r.on("data", d => b += d); r.on("end", () => console.log(r.statusCode, b.trim()));
});' "${TCP[$class]}" "$TOKEN"
    ct curl -s -m 20 -o "$W/body" --unix-socket "$(sock_of "$id")" -H "Authorization: Bearer $TOKEN" \
        -H 'X-Forwarded-For: 203.0.113.7' http://w/echo
    check_output "$class: the front's X-Forwarded-For reaches the handler" 'X-Forwarded-For: 203.0.113.7' ct cat "$W/body"
    check_fails "$class: the handler never sees the token" ct grep -q "$TOKEN" "$W/body"

    # ---- the token ----
    n=$(seen "$id")
    problems=()
    [ "$(ucurl "$id" http://w/hello)" = 401 ] || problems+=("no token: not 401")
    [ "$(ucurl "$id" -H "Authorization: Bearer $WRONG" http://w/hello)" = 401 ] || problems+=("wrong token: not 401")
    [ "$(ct curl -s -o /dev/null -w '%{http_code}' "http://${TCP[$class]}/hello")" = 401 ] ||
        problems+=("no token over TCP: not 401")
    [ "$(seen "$id")" = "$n" ] || problems+=("the handler recorded $(($(seen "$id") - n)) requests")
    atk_result endpoint-no-token "$class" "${problems[@]}"

    # ---- smuggling ----
    n=$(seen "$id")
    problems=()
    for req in "POST /echo HTTP/1.1\\r\\nHost: w\\r\\n${A}Content-Length: 4\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n" \
               "POST /echo HTTP/1.1\\r\\nHost: w\\r\\n${A}Content-Length: 1\\r\\nContent-Length: 2\\r\\n\\r\\nxx" \
               "GET /hello HTTP/1.1\\nHost: w\\r\\n${A}\\r\\n" \
               "GET /hello HTTP/1.1\\r\\nHost: w\\r\\n${A}X: a\\r\\n b\\r\\n\\r\\n"; do
        line=$(raw "$id" "$req")
        [[ $line == *" 400 "* ]] || problems+=("answered '$line' to: $req")
    done
    [ "$(seen "$id")" = "$n" ] || problems+=("the handler recorded $(($(seen "$id") - n)) requests")
    atk_result endpoint-smuggle "$class" "${problems[@]}"
    check_match "$class: the same request framed once (control): 200" '.* 200 .*' \
        "$(raw "$id" "POST /echo HTTP/1.1\\r\\nHost: w\\r\\n${A}Content-Length: 4\\r\\nConnection: close\\r\\n\\r\\nabcd")"

    # ---- bodies ----
    ct sh -c "head -c $MiB /dev/zero > $W/1m; head -c $((MiB + 1)) /dev/zero > $W/1m1"
    n=$(seen "$id")
    problems=()
    c=$(ucurl "$id" -H "Authorization: Bearer $TOKEN" --data-binary @"$W/1m1" http://w/hello)
    [ "$c" = 413 ] || problems+=("1 MiB + 1: $c")
    c=$(ucurl "$id" -H "Authorization: Bearer $TOKEN" -H 'Transfer-Encoding: chunked' --data-binary @"$W/1m1" http://w/hello)
    [ "$c" = 413 ] || problems+=("1 MiB + 1 chunked: $c")
    [ "$(seen "$id")" = "$n" ] || problems+=("the handler recorded $(($(seen "$id") - n)) requests")
    atk_result endpoint-oversize-request "$class" "${problems[@]}"
    check_eq "$class: a 1 MiB body (control): 200" 200 \
        "$(ucurl "$id" -H "Authorization: Bearer $TOKEN" --data-binary @"$W/1m" http://w/hello)"
    problems=()
    c=$(ucurl "$id" -H "Authorization: Bearer $TOKEN" "http://w/big?n=$((2 * MiB))")
    [ "$c" = 502 ] || problems+=("2 MiB: $c")
    [ "$(ct stat -c %s "$W/body")" -lt 200 ] || problems+=("2 MiB: $(ct stat -c %s "$W/body") bytes arrived")
    c=$(ucurl "$id" -H "Authorization: Bearer $TOKEN" "http://w/chunked?n=$((2 * MiB))")
    [ "$c" = 502 ] || problems+=("2 MiB chunked: $c")
    atk_result endpoint-oversize-response "$class" "${problems[@]}"
    check_eq "$class: a 1 MiB response (control): 200" 200 \
        "$(ucurl "$id" -H "Authorization: Bearer $TOKEN" "http://w/big?n=$MiB")"
    check_eq "$class: ... whole" "$MiB" "$(ct stat -c %s "$W/body")"

    # ---- who may connect ----
    out=$(as_tester python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$(sock_of "$id")')" 2>&1)
    atk_if endpoint-other-user "$class" "$out" grep -q PermissionError <<<"$out"
    out=$(ct timeout 120 sandboxctl run --class "$class" -- python3 -c "$(try_connect "$id" "${TCP[$class]#*:}")" 2>&1)
    diag "$class sibling: $out"
    if grep -q '^unix FileNotFoundError' <<<"$out" && grep -Eq '^tcp (ConnectionRefusedError|OSError|TimeoutError)' <<<"$out"; then
        atk_ok endpoint-sibling "$class"
    else
        atk_not_ok endpoint-sibling "$class" "$out"
    fi

    # ---- the handler looks for the token ----
    ucurl "$id" -H "Authorization: Bearer $TOKEN" http://w/probe >/dev/null
    probe=$(ct cat "$W/body")
    diag "$class probe: $(grep -E '^(endpoints|connect|exec) ' <<<"$probe" | tr '\n' ';')"
    problems=()
    grep -q "$TOKEN" <<<"$probe" && problems+=("the token is in what the handler read")
    grep -q '^endpoints FileNotFoundError' <<<"$probe" || problems+=("$(grep '^endpoints' <<<"$probe")")
    grep -q '^connect .* connected' <<<"$probe" && problems+=("the handler connected to a gate socket")
    [ -n "$probe" ] || problems+=("no probe output")
    atk_result endpoint-handler-token "$class" "${problems[@]}"
    if [ -n "$probe" ] && ! grep -q '^exec .* ran' <<<"$probe" && [ "$(grep -c '^exec .*PermissionError' <<<"$probe")" = 2 ]; then
        atk_ok endpoint-handler-exec "$class"
    else
        atk_not_ok endpoint-handler-exec "$class" "$(grep '^exec' <<<"$probe")"
    fi

    # ---- where the token must not be ----
    problems=()
    as_tester sh -c "cat /run/systemd/transient/* 2>/dev/null" | grep -q "$TOKEN" && problems+=("tester: transient units")
    ct sh -c "cat /run/systemd/transient/* 2>/dev/null" | grep -q "$TOKEN" && problems+=("root: transient units")
    for u in "sandbox-$id-gate.socket" "sandbox-$id-gate.service" "sandbox-$id.service"; do
        as_tester systemctl show --all "$u" 2>/dev/null | grep -q "$TOKEN" && problems+=("properties of $u")
    done
    ct journalctl -o export --no-pager 2>/dev/null | grep -aq "$TOKEN" && problems+=("the journal")
    atk_result endpoint-token-leak "$class" "${problems[@]}"

    # ---- the gate's walls, its log, the listing ----
    check_exposure "$class: systemd-analyze security of the gate" "sandbox-$id-gate.service" 1.5
    check_output "$class: the gate runs as a dynamic user of its own" '^yes$' unit_prop "sandbox-$id-gate.service" DynamicUser
    check_output "$class: one journal entry per request, with the worker's id" "gate: GET /hello -> 200" \
        ct journalctl -o cat --no-pager SANDBOXD_WORKER_ID="$id" SANDBOXD_STATUS=200
    check_output "$class: sandboxctl endpoints lists it, serving, without a name" "^$id +- +$(sock_of "$id") 127\.0\.0\.1:[0-9]+ +serving +[0-9]+" \
        ct sandboxctl endpoints --no-legend
done

# ---- the fronts: each drives the same requests through itself ----
# fcurl PORT LABEL CURL-ARGS...: a request to the front on PORT for Host
# LABEL.workers.example.org; prints the status code, the body in $W/body.
fcurl() { ct curl -s -m 20 -o "$W/body" -w '%{http_code}' -H "Host: $2.workers.example.org" "${@:3}"; }
# through_front NAME PORT: the trusted and the gVisor worker by id, through it.
through_front() {
    local front=$1 port=$2 class id n
    for class in trusted standard; do
        id=${ID[$class]:-}
        [ -n "$id" ] || continue
        n=$(seen "$id")
        check_eq "$class: $front -> gate -> handler with the token: 200" 200 \
            "$(fcurl "$port" "$id" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/hello")"
        check_eq "$class: $front: ... the request reached that worker's handler" "$((n + 1))" "$(seen "$id")"
        check_eq "$class: $front: no token, the gate's 401" 401 "$(fcurl "$port" "$id" "http://127.0.0.1:$port/hello")"
        fcurl "$port" "$id" -H "Authorization: Bearer $TOKEN" -H 'X-Forwarded-For: 6.6.6.6' \
            "http://127.0.0.1:$port/echo" >/dev/null
        check_output "$class: $front: the handler gets $front's X-Forwarded-For, not the caller's" \
            '^X-Forwarded-For: 127\.0\.0\.1$' ct grep -i '^X-Forwarded-For' "$W/body"
        check_eq "$class: $front: a 2 MiB response, the gate's 502" 502 \
            "$(fcurl "$port" "$id" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/big?n=$((2 * MiB))")"
        n=$(seen "$id")
        check_eq "$class: $front: a 1 MiB + 1 body: 413" 413 \
            "$(fcurl "$port" "$id" -H "Authorization: Bearer $TOKEN" --data-binary @"$W/1m1" "http://127.0.0.1:$port/hello")"
        check_eq "$class: $front: ... the handler saw nothing" "$n" "$(seen "$id")"
        check_eq "$class: $front: a 1 MiB body (control): 200" 200 \
            "$(fcurl "$port" "$id" -H "Authorization: Bearer $TOKEN" --data-binary @"$W/1m" "http://127.0.0.1:$port/hello")"
    done
}
# named NAME: a trusted worker serving handler.py with --publish-name NAME; its id (or the error).
named() {
    ct sandboxctl create --class trusted --publish 8080 --publish-token-file "$W/token" --publish-name "$1" -- \
        /bin/sh -c "exec python3 $W/handler.py 8080 \"\$HOME/seen\" 0.0.0.0" 2>&1
}

# ---- Debian's nginx in front, with docs/endpoints.md's configuration ----
# Its workers run as www-data, the default SocketGroup=: the socket's group
# is what lets them in. ab (apache2-utils) is the load client.
NGINX_PORT=8081
if ct sh -c 'command -v nginx' >/dev/null 2>&1; then
    sed -n '/<!-- nginx-begin -->/,/<!-- nginx-end -->/p' "$SRC/docs/endpoints.md" | sed '1,2d;$d' | sed '$d' |
        sed -e "s|listen 80;|listen 127.0.0.1:$NGINX_PORT;|" > "/proc/$CT_PID/root/etc/nginx/conf.d/sandboxd-endpoints.conf"
    check "nginx takes docs/endpoints.md's configuration" ct nginx -t -q
    ct systemctl restart nginx
    ncurl() { fcurl "$NGINX_PORT" "$@"; }
    through_front nginx "$NGINX_PORT"
    for class in trusted standard; do
        id=${ID[$class]:-}
        [ -n "$id" ] || continue
        check_output "$class: ab through nginx: 300 requests, 4 at a time, none failed" \
            '^Failed requests: +0$' ct sh -c "ab -q -n 300 -c 4 -H 'Host: $id.workers.example.org' \
                -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$NGINX_PORT/hello | grep -E '^(Complete|Failed) requests'"
    done

    # ---- EndpointName: a second name of the socket, first come, released with its worker ----
    by_name() { ncurl "$1" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$NGINX_PORT/hello"; }
    first=$(named my-app)
    check_match "EndpointName: a worker with --publish-name my-app is created" '^[0-9a-f]{12}$' "$first"
    check_eq "EndpointName: its EndpointName property" 's "my-app"' \
        "$(ct busctl --system get-property org.sandboxd1 "/org/sandboxd1/worker/$first" org.sandboxd1.Worker EndpointName)"
    check_eq "EndpointName: /run/sandboxd-endpoints/my-app.sock links to the id's socket" "$first.sock" \
        "$(ct readlink /run/sandboxd-endpoints/my-app.sock)"
    check_output "EndpointName: sandboxctl endpoints shows the name beside the id" "^$first +my-app +$(sock_of "$first")" \
        ct sandboxctl endpoints --no-legend
    check_output "EndpointName: ... and --json carries it" "\"name\": *\"my-app\"" ct sandboxctl endpoints --json
    wait_until 60 gate_answers "$first"
    before=$(seen "$first")
    check_eq "EndpointName: nginx maps my-app.workers.example.org to that worker: 200" 200 "$(by_name my-app)"
    check_eq "EndpointName: ... and the request reached that worker's handler" "$((before + 1))" "$(seen "$first")"
    check_eq "EndpointName: ... with the token still required: 401" 401 \
        "$(ncurl my-app "http://127.0.0.1:$NGINX_PORT/hello")"
    check_eq "EndpointName: a name nobody holds: nginx's 503, never another worker" 503 "$(by_name nobody-here)"
    check_output "EndpointName: a second worker asking for my-app is refused (EndpointNameTaken)" \
        'EndpointNameTaken' expect_fail named my-app
    check_output "EndpointName: control: a free name is accepted" '^[0-9a-f]{12}$' named other-app
    check_output "EndpointName: a name that is no host label is refused (InvalidEndpoint)" 'InvalidEndpoint' \
        expect_fail named ../etc
    check_output "EndpointName: www-data (the front's group) cannot plant a name in the directory" \
        'Permission denied' expect_fail ct runuser -u www-data -- ln -s "$first.sock" /run/sandboxd-endpoints/planted.sock
    check_output "EndpointName: nor can a worker" 'No such file|Permission denied|Read-only' \
        expect_fail ct sandboxctl run --class trusted -- /bin/ln -s x /run/sandboxd-endpoints/planted.sock
    ct systemctl restart sandboxd
    wait_until 60 ct systemctl is-active -q sandboxd
    sbx_settled
    check_output "EndpointName: after a restart of sandboxd the name is still held" 'EndpointNameTaken' expect_fail named my-app
    ct sandboxctl stop "$first" >/dev/null 2>&1
    wait_until 30 unit_gone "sandbox-$first-gate.socket"
    check "EndpointName: the link goes with its worker" ct test ! -L /run/sandboxd-endpoints/my-app.sock
    second=$(named my-app)
    check_match "EndpointName: released, the name is taken by a new worker" '^[0-9a-f]{12}$' "$second"
    wait_until 60 gate_answers "$second"
    before=$(seen "$second")
    check_eq "EndpointName: my-app.workers.example.org now reaches the new worker: 200" 200 "$(by_name my-app)"
    check_eq "EndpointName: ... its handler, not the old one's" "$((before + 1))" "$(seen "$second")"
    ct sandboxctl stop "$second" >/dev/null 2>&1
else
    skip "no nginx in the test bed (tests/testbed/mkrootfs.sh): the front is tried by tests/gate/test-gate.sh only"
fi

# ---- Debian's Caddy in front, with docs/endpoints.md's Caddyfile ----
# As its packaged caddy.service runs it (user caddy), with caddy added to
# www-data as the docs say; bound to loopback and a port of the test's.
CADDY_PORT=8082
CADDY=
if ct sh -c 'command -v caddy' >/dev/null 2>&1; then
    CADDY=yes
    sed -n '/<!-- caddy-begin -->/,/<!-- caddy-end -->/p' "$SRC/docs/endpoints.md" | sed '1,2d;$d' | sed '$d' |
        sed -e "s|^http://\*\.workers\.example\.org {\$|http://*.workers.example.org:$CADDY_PORT {\n\tbind 127.0.0.1|" \
        > "/proc/$CT_PID/root/etc/caddy/Caddyfile"
    check_output "the test binds Caddy to its port (the site line is as the test expects)" "^http://.*:$CADDY_PORT \{" \
        ct head -1 /etc/caddy/Caddyfile
    check "caddy takes docs/endpoints.md's Caddyfile" ct caddy validate --adapter caddyfile --config /etc/caddy/Caddyfile
    ct usermod -aG www-data caddy
    # Caddy's admin endpoint listens on localhost:2019, which Go resolves from
    # /etc/hosts only: Debian's installer writes that file, debootstrap's
    # minbase (the test bed) does not. The container's root is an overlay.
    ct sh -c '[ -e /etc/hosts ] || printf "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n" > /etc/hosts'
    check "caddy.service starts with it" ct systemctl restart caddy
    ccurl() { fcurl "$CADDY_PORT" "$@"; }
    through_front Caddy "$CADDY_PORT"
    cid=$(named caddy-app)
    check_match "Caddy: a worker named caddy-app is created" '^[0-9a-f]{12}$' "$cid"
    wait_until 60 gate_answers "$cid" /hello
    n=$(seen "$cid")
    check_eq "Caddy maps caddy-app.workers.example.org to that worker: 200" 200 \
        "$(ccurl caddy-app -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$CADDY_PORT/hello")"
    check_eq "Caddy: ... and the request reached that worker's handler" "$((n + 1))" "$(seen "$cid")"
    check_eq "Caddy: a name nobody holds: 503, never another worker" 503 \
        "$(ccurl nobody-here -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$CADDY_PORT/hello")"
    check_output "Caddy: ... which says so" '^no such endpoint$' ct cat "$W/body"
    check_eq "Caddy: a label that is no name (Bad_Label): 404" 404 \
        "$(ccurl Bad_Label -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$CADDY_PORT/hello")"
    ct sandboxctl stop "$cid" >/dev/null 2>&1
    wait_until 30 unit_gone "sandbox-$cid-gate.socket"
    check_eq "Caddy: the name's worker stopped: 503" 503 \
        "$(ccurl caddy-app -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$CADDY_PORT/hello")"
else
    skip "no caddy in the test bed (tests/testbed/mkrootfs.sh)"
fi

# ---- a small Node server as the handler ----
for class in trusted standard; do
    nid=$(ct sandboxctl create --class "$class" --publish 8090 --publish-token-file "$W/token" -- node -e \
        'require("http").createServer((q, r) => r.end("node " + q.method + " " + q.url)).listen(8090)' 2>&1)
    if ! grep -Eq '^[0-9a-f]{12}$' <<<"$nid"; then
        not_ok "$class: a Node handler behind the gate" "$nid"
        continue
    fi
    wait_until 60 gate_answers "$nid" /x
    check_eq "$class: a Node handler behind the gate answers" "node PUT /x?y=1" \
        "$(ct curl -s -m 20 --unix-socket "$(sock_of "$nid")" -X PUT -H "Authorization: Bearer $TOKEN" 'http://w/x?y=1')"
    check_eq "$class: ... and refuses without the token" 401 "$(ucurl "$nid" http://w/x)"
    ct sandboxctl stop "$nid" >/dev/null 2>&1
done

# ---- a slow drip (the head timeout is 10 s) ----
if [ -n "${ID[trusted]:-}" ]; then
    id=${ID[trusted]}
    n=$(seen "$id")
    line=$(ct timeout 30 python3 -c "
import socket, time
s = socket.socket(socket.AF_UNIX); s.settimeout(25); s.connect('$(sock_of "$id")')
s.sendall(b'GET /hello HTTP/1.1\r\nHost: w\r\n'); t = time.time()
print(s.recv(200).decode('latin-1').split('\r\n')[0], round(time.time() - t))")
    if [[ $line == *" 408 "* ]] && [ "$(seen "$id")" = "$n" ]; then
        atk_ok endpoint-slow-drip trusted
    else
        atk_not_ok endpoint-slow-drip trusted "answer: $line" "handler recorded: $(($(seen "$id") - n))"
    fi
fi

# ---- a restart of sandboxd is not the endpoint's end ----
if [ -n "${ID[trusted]:-}" ]; then
    id=${ID[trusted]}
    ct systemctl restart sandboxd
    wait_until 60 ct systemctl is-active -q sandboxd
    sbx_settled
    # The gate starts afresh on the next connection and loads its settings
    # and token from the restarted sandboxd (the token kept in the fd store).
    ct systemctl stop "sandbox-$id-gate.service"
    check_eq "after a restart of sandboxd, a gate started afresh still serves with the token" 200 \
        "$(ucurl "$id" -H "Authorization: Bearer $TOKEN" http://w/hello)"
    check_eq "... and still refuses without it" 401 "$(ucurl "$id" http://w/hello)"
fi

# ---- the endpoint goes with its worker ----
for class in trusted standard; do
    id=${ID[$class]:-}
    [ -n "$id" ] || continue
    ct sandboxctl stop "$id" >/dev/null 2>&1
    wait_until 60 unit_gone "sandbox-$id.service"
    wait_until 30 unit_gone "sandbox-$id-gate.socket"
    out=$(ct python3 -c "$(try_connect "$id" "${TCP[$class]#*:}")" 2>&1)
    nginx_gone=
    if ct sh -c 'command -v nginx' >/dev/null 2>&1; then
        nginx_gone=$(ct curl -s -m 20 -o "$W/body" -w '%{http_code}' -H "Host: $id.workers.example.org" \
            "http://127.0.0.1:$NGINX_PORT/hello")
        ct grep -q 'no such endpoint' "$W/body" && nginx_gone="$nginx_gone no such endpoint"
        diag "$class: nginx after the worker's stop: $nginx_gone"
    fi
    caddy_gone=
    if [ -n "$CADDY" ]; then
        caddy_gone=$(ct curl -s -m 20 -o "$W/body" -w '%{http_code}' -H "Host: $id.workers.example.org" \
            "http://127.0.0.1:$CADDY_PORT/hello")
        ct grep -q 'no such endpoint' "$W/body" && caddy_gone="$caddy_gone no such endpoint"
        diag "$class: Caddy after the worker's stop: $caddy_gone"
    fi
    if grep -q '^unix FileNotFoundError' <<<"$out" && grep -q '^tcp ConnectionRefusedError' <<<"$out" &&
        { [ -z "$nginx_gone" ] || [ "$nginx_gone" = "503 no such endpoint" ]; } &&
        { [ -z "$caddy_gone" ] || [ "$caddy_gone" = "503 no such endpoint" ]; }; then
        atk_ok endpoint-after-stop "$class"
    else
        atk_not_ok endpoint-after-stop "$class" "$out"
    fi
done

# ---- what the spec may not ask ----
check_output "an Endpoint without a token is refused (InvalidEndpoint)" 'InvalidEndpoint.*TokenCredential' \
    expect_fail ct sandboxctl create --class trusted --publish 8080 -- /bin/true
check_output "Public=true is refused where it is not allowed" 'InvalidEndpoint.*AllowPublic' \
    expect_fail ct sandboxctl create --class trusted --publish 8080 --publish-public -- /bin/true
check_output "the egress proxy's port is refused as an endpoint" "InvalidEndpoint.*egress proxy" \
    expect_fail ct sandboxctl create --class trusted --publish 3128 --publish-token-file "$W/token" -- /bin/true
check_output "a response cap above the operator's is refused" 'InvalidEndpoint.*MaxResponseBytes' \
    expect_fail ct sandboxctl create --class trusted --publish 8080 --publish-token-file "$W/token" --publish-max-response 1G -- /bin/true

atk_coverage
tap_done
