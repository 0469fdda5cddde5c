#!/usr/bin/env bash
# The credential broker of the real sandbox-egress binary (seccomp filter
# on), run with --listen in a private user and network namespace: the TLS
# upstream lives in a namespace of its own behind a veth on 11.0.0.10, an
# ordinary unicast address, so the classifier's refusal of loopback and
# private ranges stays in force (no test-only switch in the proxy). The
# upstream's certificate is signed by a test CA given as broker_ca_file.
# Exit 77 (skip) where unprivileged namespaces are unavailable.
#   test-broker.sh SANDBOX_EGRESS_BINARY
set -u
# shellcheck source=tests/egress/lib-netns.sh
. "$(dirname "$(readlink -f "$0")")/lib-netns.sh"
# shellcheck source=tests/lib/tap.sh
. "$HERE/../lib/tap.sh"

T=$(mktemp -d)
PROXY_PID= UP_PID= BAD_PID= UPNS_PID= ACT_PID= SCOPED_PID=
cleanup() {
    # shellcheck disable=SC2086
    kill $PROXY_PID $UP_PID $BAD_PID $UPNS_PID $ACT_PID $SCOPED_PID 2>/dev/null
    wait 2>/dev/null
    [ -n "${KEEP_T:-}" ] && cp "$T/proxy.log" "$KEEP_T"
    rm -rf "$T"
}
trap cleanup EXIT

upstream_ns_start 11.0.0.10

# A test CA, the upstream's certificate from it, and a self-signed one it does not vouch for.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$T/ca.key" -out "$T/ca.pem" -subj /CN=broker-test-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$T/up.key" -out "$T/up.csr" -subj /CN=api.broker.test 2>/dev/null
printf 'subjectAltName=DNS:api.broker.test\n' > "$T/ext"
openssl x509 -req -in "$T/up.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 -extfile "$T/ext" \
    -out "$T/up.pem" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$T/bad.key" -out "$T/bad.pem" \
    -subj /CN=untrusted.broker.test -addext "subjectAltName=DNS:untrusted.broker.test" 2>/dev/null
cat > "$T/hosts" <<'HOSTS'
11.0.0.10 api.broker.test
11.0.0.10 wrong.broker.test
11.0.0.10 untrusted.broker.test
11.0.0.10 denied.broker.test
10.1.2.3 private.broker.test
11.0.0.1 local.broker.test
HOSTS
: > "$T/resolv.conf"
SECRET=s3cr3t-gh-7f2a9c
mkdir -m 0700 "$T/creds"
printf '%s\n' "$SECRET" > "$T/creds/broker-GITHUB"
for s in WRONG UNTRUSTED PRIVATE LOCAL LIMITED DENIED RATED SCOPED ACT; do printf 'key-%s' "$s" > "$T/creds/broker-$s"; done
svc() {   # NAME PORT HOST UPSTREAM_PORT [METHODS] [PATHS] [HEADER] [TEMPLATE]
    printf '{"name":"%s","listen_port":%s,"host":"%s","port":%s,"base":"/v1","header_name":"%s",
             "header_template":"%s","methods":%s,"paths":%s,"max_request_bytes":1048576,
             "max_response_bytes":1048576,"rate_bps":0}' "$1" "$2" "$3" "$4" "${7:-Authorization}" \
        "${8:-Bearer {\}}" "${5:-[\"GET\",\"POST\",\"HEAD\"]}" "${6:-[\"/\"]}"
}
cat > "$T/policy.json" <<POLICY
{ "worker_id": "broker-unit", "allow": [], "deny": ["denied.broker.test"], "request_timeout_ms": 3000,
  "refusal_log_burst": 100000, "broker_ca_file": "$T/ca.pem",
  "services": [ $(svc GITHUB 3129 api.broker.test 443), $(svc WRONG 3130 wrong.broker.test 443),
                $(svc UNTRUSTED 3131 untrusted.broker.test 8443), $(svc PRIVATE 3132 private.broker.test 443),
                $(svc LOCAL 3133 local.broker.test 443),
                $(svc LIMITED 3134 api.broker.test 443 '["GET"]' '["/allowed"]' X-Api-Key '{}'),
                $(svc DENIED 3135 denied.broker.test 443),
                $(svc RATED 3136 api.broker.test 443 | sed 's/"rate_bps":0/"rate_bps":200000/') ] }
POLICY
nsenter -t "$UPNS_PID" -n "$PY" "$HERE/broker-upstream.py" 0.0.0.0 443 "$T/up.pem" "$T/up.key" "$T/up.log" 2>"$T/up.err" & UP_PID=$!
nsenter -t "$UPNS_PID" -n "$PY" "$HERE/broker-upstream.py" 0.0.0.0 8443 "$T/bad.pem" "$T/bad.key" "$T/bad.log" 2>"$T/bad.err" & BAD_PID=$!
listen=()
for p in 3129 3130 3131 3132 3133 3134 3135 3136; do listen+=(--listen "127.0.0.1:$p"); done
CREDENTIALS_DIRECTORY=$T/creds "$BIN" --policy "$T/policy.json" --hosts-file "$T/hosts" --resolv-conf "$T/resolv.conf" \
    "${listen[@]}" 2>"$T/proxy.log" & PROXY_PID=$!
# A second proxy (--listen takes at most 8): SCOPED has no base, so the
# upstream gets the worker's path as sent, and the one prefix /v1/.
cat > "$T/policy-scoped.json" <<POLICY
{ "worker_id": "scoped", "broker_ca_file": "$T/ca.pem",
  "services": [ $(svc SCOPED 3137 api.broker.test 443 '["GET"]' '["/v1/"]' | sed 's|"base":"/v1"|"base":""|') ] }
POLICY
CREDENTIALS_DIRECTORY=$T/creds "$BIN" --policy "$T/policy-scoped.json" --hosts-file "$T/hosts" \
    --resolv-conf "$T/resolv.conf" --listen 127.0.0.1:3137 2>"$T/scoped.log" & SCOPED_PID=$!
wait_ready "the proxy or the upstreams are not up" ports_listen 127.0.0.1:3129 127.0.0.1:3135 127.0.0.1:3137 \
    11.0.0.10:443 11.0.0.10:8443
: > "$T/up.log"

# The answer to raw bytes (a Python bytes literal) on a service port: "STATUS REASON".
raw() {   # PORT BYTES_LITERAL
    "$PY" - "$@" <<'RAW'
import ast, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(ast.literal_eval(sys.argv[2]))
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except socket.timeout:
    pass
head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
reason = [h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("x-sandbox-egress-reason:")]
print(head[0].split(" ")[1] if head[0] else "-", reason[0] if reason else "-")
RAW
}
requests() { wc -l < "$T/up.log"; }
last() {   # FIELD: of the upstream's last request
    tail -n 1 "$T/up.log" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
last_header() {   # NAME: every value the upstream's last request had for it, one per line
    tail -n 1 "$T/up.log" | "$PY" -c 'import json, sys
for k, v in json.load(sys.stdin)["headers"]:
    if k.lower() == sys.argv[1].lower(): print(v)' "$1"
}
is() { [ "$1" = "$2" ] || { echo "# got '$1', wanted '$2'"; return 1; }; }
starts() { case $1 in "$2"*) return 0;; esac; echo "# got '$1', wanted '$2...'"; return 1; }
URL=http://127.0.0.1:3129

# --- the credential ---
got=$(curl -s -o "$T/body" -w '%{http_code}' "$URL/hello?q=1")
check "curl GET reaches the upstream under the base path" is "$got $(last path)" "200 /v1/hello?q=1"
check "... with the injected credential" is "$(last_header Authorization)" "Bearer $SECRET"
check "... and the upstream's Host" is "$(last_header Host)" "api.broker.test"
got=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer worker-own' -H 'authorization: x' \
      -H 'Proxy-Authorization: y' "$URL/mine")
check "a worker's Authorization is replaced, never forwarded" \
    is "$got $(last_header Authorization | tr '\n' ' ')$(last_header Proxy-Authorization)" "200 Bearer $SECRET "
before=$(requests)
got=$(raw 3134 'b"GET /allowed/x HTTP/1.1\r\nHost: x\r\nX-Api-Key: worker\r\nConnection: close\r\n\r\n"')
check "a custom header (X-Api-Key) is injected in place of the worker's" \
    is "$got $(last_header X-Api-Key) $(last_header Authorization)" "200 - key-LIMITED "

# --- refused before the upstream ---
before=$(requests)
check "a method not allowed is 405" is "$(raw 3134 'b"POST /allowed HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"')" \
    "405 method-not-allowed"
check "a path not allowed is 403" is "$(raw 3134 'b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n"')" "403 path-not-allowed"
check "DELETE is 405 (curl)" is "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$URL/x")" 405
head -c 1048577 /dev/zero > "$T/big-body"
got=$(curl -s -o "$T/body" -w '%{http_code}' --data-binary @"$T/big-body" "$URL/upload")
check "a 1 MiB + 1 request body is 413 (curl)" is "$got $(grep -c request-too-large "$T/body")" "413 1"
got=$("$PY" - <<'PYEOF'
import http.client
c = http.client.HTTPConnection("127.0.0.1", 3129, timeout=20)
def body():
    for i in range(17):
        yield b"y" * 65536
c.request("POST", "/chunked-upload", body=body(), encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
r = c.getresponse()
print(r.status, r.getheader("X-Sandbox-Egress-Reason"))
PYEOF
)
check "a chunked body over 1 MiB is 413" is "$got" "413 request-too-large"
check "CL+TE is refused" is "$(raw 3129 'b"POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"')" \
    "400 ambiguous-framing"
check "a bad chunk size is refused" is "$(raw 3129 'b"POST /s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n"')" \
    "400 invalid-chunk-size"
check "an overflowing chunk size is refused" \
    is "$(raw 3129 'b"POST /s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nab\r\n0\r\n\r\n"')" \
    "400 invalid-chunk-size"
check "two Content-Lengths are refused" \
    is "$(raw 3129 'b"POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"')" "400 ambiguous-framing"
got=$(raw 3129 'b"GET /a%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "header injection through an encoded path is refused" is "${got%% *}" 400
got=$(raw 3129 'b"GET /a\rX-Injected: 1 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "header injection through a bare CR in the path is refused" is "$got" "400 bare-cr"
check "a dot segment is refused" is "$(raw 3129 'b"GET /a/../../admin HTTP/1.1\r\nHost: x\r\n\r\n"')" "400 invalid-path"
check "nothing refused reached the upstream" is "$(requests)" "$before"

# --- the path rule (broker-path.h): nothing resolves outside the prefix ---
# SCOPED (the second proxy) forwards paths as sent under the prefix /v1/.
# The upstream logs where the most lenient server would route each request
# (broker-upstream.py's "resolved": decoded twice, '\' as '/', path
# parameters dropped, dot segments removed). Named as in
# tests/attacks/README.md.
scoped() {   # TARGET (inside a Python bytes literal): "STATUS REASON"
    raw 3137 "b\"GET $1 HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n\""
}
check "control: /v1/ok reaches the upstream, resolved inside /v1/" \
    is "$(scoped /v1/ok) $(last path) $(last resolved)" "200 - /v1/ok /v1/ok"
check "control: an encoded space and a query's escapes pass as sent" \
    is "$(scoped '/v1/a%20b?q=100%25') $(last path) $(last resolved)" "200 - /v1/a%20b?q=100%25 /v1/a b"
before=$(requests)
while read -r id target; do
    check "$id: GET $target -> 400 invalid-path" is "$(scoped "$target")" "400 invalid-path"
done <<'ATTACKS'
broker-encoded-backslash /v1/..%5cadmin
broker-encoded-backslash /v1/..%5Cadmin
broker-raw-backslash /v1/..\\admin
broker-double-encoding /v1/%252e%252e/admin
broker-double-encoding /v1/..%255cadmin
broker-dot-segments /v1/%2e%2E/admin
broker-dot-segments /v1/..
broker-path-parameter /v1/..;/admin
broker-encoded-delimiter /v1/..%3f/admin
broker-overlong-utf8 /v1/%c0%ae%c0%ae/admin
broker-encoded-control /v1/ok%00/admin
broker-query-path /v1/ok?/../../admin
broker-fragment /v1/ok#/../../admin
ATTACKS
check "none of them reached the upstream" is "$(requests)" "$before"
check "the upstream never resolved a path outside the prefix or the base" "$PY" -c 'import json, sys
bad = [r["path"] for r in map(json.loads, open(sys.argv[1])) if not (r["resolved"] + "/").startswith("/v1/")]
print("# resolved outside /v1/:", bad) if bad else None
sys.exit(bool(bad))' "$T/up.log"

# The request bytes all connections hold together are bounded (16 MiB here):
# past it a request is 503, not the proxy ended by its MemoryMax.
got=$("$PY" - <<'PYEOF'
import socket
socks, busy = [], 0
for i in range(24):
    s = socket.create_connection(("127.0.0.1", 3129), timeout=20)
    try:
        s.sendall(b"POST /held HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + b"h" * 1048000)
    except OSError:
        pass
    socks.append(s)
for s in socks:
    s.settimeout(0.5)
    try:
        busy += b"X-Sandbox-Egress-Reason: proxy-busy" in s.recv(4096)
    except OSError:
        pass
    s.close()
print("busy" if 0 < busy < 24 else "busy=%d" % busy)
PYEOF
)
check "request bytes held at once are bounded (503 proxy-busy)" is "$got" busy
head -c 1048576 /dev/zero > "$T/mib-body"
got=$(curl -s -o /dev/null -w '%{http_code}' --retry 5 --retry-all-errors --data-binary @"$T/mib-body" "$URL/after-busy")
check "... and released when those connections end: a 1 MiB body passes" is "$got $(last body)" "200 1048576"
check "nothing of the held requests reached the upstream" sh -c "! grep -q '/v1/held' '$T/up.log'"

# --- the upstream's certificate and address ---
got=$(raw 3131 'b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"')
check "an untrusted certificate is 502 with the reason" starts "$got" "502 tls-certificate-untrusted self-signed"
check "... and the untrusted upstream saw no request" is "$(cat "$T/bad.log" 2>/dev/null | wc -l)" 0
check "a wrong host name is 502 with the reason" is "$(raw 3130 'b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"')" \
    "502 tls-hostname-mismatch"
got=$(raw 3132 'b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"')
check "a service on a private address is refused" starts "$got" "403 private-address private 10.0.0.0/8"
check "a service on the host's own address is refused" is "$(raw 3133 'b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"')" \
    "403 host-local"
check "a service the operator denies is refused" is "$(raw 3135 'b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"')" \
    "403 denied-by-rule"
curl -s -D "$T/hdr" -o "$T/body" "$URL/../x" >/dev/null; curl -s -o "$T/body2" http://127.0.0.1:3131/x
check "refusal bodies name the reason and never the secret" \
    sh -c "grep -q 'tls-certificate-untrusted' '$T/body2' && ! grep -q '$SECRET' '$T/body' '$T/body2'"

# --- responses ---
got=$(curl -s -o "$T/body" -w '%{http_code} %{size_download}' "$URL/big/1048576")
check "a response of exactly the cap passes" is "$got" "200 1048576"
got=$(curl -s -o "$T/body" -w '%{http_code}' "$URL/big/1048577")
check "a response over the cap (Content-Length) is 502" is "$got $(grep -c response-too-large "$T/body")" "502 1"
curl -s -o /dev/null "$URL/chunked/2000000"
rc=$?
check "a chunked response over the cap is cut (curl sees a short transfer)" is "$rc" 18
got=$(curl -s -o "$T/body" -w '%{http_code} %{size_download}' "$URL/chunked/300000")
check "a chunked response arrives whole" is "$got" "200 300000"
got=$(curl -s -o "$T/body" -w '%{http_code} %{size_download}' "$URL/close/70000")
check "a response delimited by the close arrives whole" is "$got" "200 70000"
got=$(curl -s -I -o /dev/null -w '%{http_code}' "$URL/big/5000")
check "HEAD: no body expected" is "$got $(last method)" "200 HEAD"

# --- keep-alive and chunked both ways ---
got=$("$PY" - <<'PYEOF'
import http.client, json
c = http.client.HTTPConnection("127.0.0.1", 3129, timeout=20)
out = []
for i in range(3):
    c.request("GET", "/chunked/20000" if i == 1 else "/k%d" % i)
    r = c.getresponse()
    out.append("%d:%d" % (r.status, len(r.read())))
c.request("POST", "/chunked-in", body=iter([b"a" * 1000, b"b" * 2345]), encode_chunked=True,
          headers={"Transfer-Encoding": "chunked"})
r = c.getresponse()
out.append("%d:%d" % (r.status, len(r.read())))
print(" ".join(out), c.sock is not None)
PYEOF
)
check "four requests on one keep-alive connection, chunked responses among them" \
    is "$got" "200:2 200:20000 200:2 200:2 True"
check "a chunked request body reaches the upstream de-chunked with its length" \
    is "$(last body) $(last te)" "3345 None"
peers=$(tail -n 4 "$T/up.log" | "$PY" -c 'import json, sys; print(len({json.loads(l)["peer"] for l in sys.stdin}))')
check "... over one reused upstream connection" is "$peers" 1
got=$(curl -s -o "$T/body" -w '%{http_code}' -H 'Expect: 100-continue' --data-binary 'hello=1' "$URL/form")
check "Expect: 100-continue (curl) gets the body through" is "$got $(last body)" "200 7"

# --- clients ---
got=$("$PY" -c 'import urllib.request, os
r = urllib.request.urlopen("http://127.0.0.1:3129/urllib", timeout=20)
print(r.status, r.read().decode())')
check "Python urllib works" is "$got $(last_header Authorization)" "200 ok Bearer $SECRET"
got=$("$PY" -c 'import urllib.request, urllib.error
try:
    urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:3129/x", method="DELETE"), timeout=20)
except urllib.error.HTTPError as e:
    print(e.code, e.headers["X-Sandbox-Egress-Reason"])')
check "... and sees a refusal's reason" is "$got" "405 method-not-allowed"
if command -v node >/dev/null; then
    got=$(node -e 'fetch("http://127.0.0.1:3129/node", { method: "POST", body: "x".repeat(5000) })
          .then(async r => { console.log(r.status, (await r.text()).length);
                 const q = await fetch("http://127.0.0.1:3129/chunked/50000"); console.log(q.status, (await q.text()).length); })
          .catch(e => console.log("error", e.cause || e))' 2>&1 | tr '\n' ' ')
    check "Node's fetch works (POST, then a chunked response)" is "$got" "200 2 200 50000 "
else
    skip "no node"
fi

# --- rate ---
# 300000 bytes at 200000 B/s with a quarter second of burst: at least 1.25 s.
# Only a lower bound: a loaded machine can make it slower, never faster.
got=$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' http://127.0.0.1:3136/big/300000)
check "a service's rate_bps throttles its responses" \
    "$PY" -c 'import sys; c, n, t = sys.argv[1].split(); sys.exit(not (c == "200" and n == "300000" and float(t) >= 1.0))' "$got"

# --- socket activation: listeners told apart by port ---
if command -v systemd-socket-activate >/dev/null; then
    cat > "$T/policy-act.json" <<POLICY
{ "worker_id": "act", "broker_ca_file": "$T/ca.pem", "services": [ $(svc ACT 3140 api.broker.test 443) ] }
POLICY
    CREDENTIALS_DIRECTORY=$T/creds systemd-socket-activate -l 127.0.0.1:3128 -l 127.0.0.1:3140 \
        -E CREDENTIALS_DIRECTORY "$BIN" --policy "$T/policy-act.json" --hosts-file "$T/hosts" \
        --resolv-conf "$T/resolv.conf" 2>"$T/act.log" & ACT_PID=$!
    got=$(curl -s --retry 20 --retry-connrefused --retry-delay 1 -o /dev/null -w '%{http_code}' http://127.0.0.1:3140/act)
    check "an activated socket on a service's port is that service's listener" \
        is "$got $(last path) $(last_header Authorization)" "200 /v1/act Bearer key-ACT"
    got=$(curl -s -o /dev/null -w '%{http_connect}' --proxy http://127.0.0.1:3128 https://api.broker.test/)
    check "... and the one on 3128 still the CONNECT proxy (403: its allow-list is empty)" is "$got" 403
    kill "$ACT_PID" 2>/dev/null; wait "$ACT_PID" 2>/dev/null
    CREDENTIALS_DIRECTORY=$T/creds systemd-socket-activate -l 127.0.0.1:3141 -E CREDENTIALS_DIRECTORY \
        "$BIN" --policy "$T/policy-act.json" --hosts-file "$T/hosts" --resolv-conf "$T/resolv.conf" \
        2>"$T/act2.log" & ACT_PID=$!
    got=$(curl -s --retry 20 --retry-connrefused --retry-delay 1 -o /dev/null -w '%{http_connect}' \
        --proxy http://127.0.0.1:3141 https://api.broker.test/)
    check "an activated socket on any other port is a CONNECT listener (403: its allow-list is empty)" \
        is "$got" 403
    kill "$ACT_PID" 2>/dev/null; wait "$ACT_PID" 2>/dev/null
else
    skip "no systemd-socket-activate"
fi

# --- the journal entry ---
check "one entry per request, with status and reason" \
    sh -c "grep -q 'broker: GITHUB GET /v1/hello?q=1 -> 200 (bytes_in=' '$T/proxy.log' &&
           grep -q 'broker: LIMITED POST /allowed -> 405 .*reason=method-not-allowed' '$T/proxy.log' &&
           grep -q 'broker: UNTRUSTED GET /v1/x -> 502 .*reason=tls-certificate-untrusted' '$T/proxy.log'"
check "the secret is not in the proxy's log" sh -c "! grep -q '$SECRET' '$T/proxy.log'"

kill -TERM "$SCOPED_PID"
wait "$SCOPED_PID"
status=$?
kill -TERM "$PROXY_PID"
wait "$PROXY_PID"
status="$status $?"
check "proxies exit cleanly on SIGTERM, sanitizer- and seccomp-clean" \
    sh -c "[ '$status' = '0 0' ] && ! grep -Eq 'runtime error|Sanitizer|Bad system call' '$T/proxy.log' '$T/scoped.log'"
PROXY_PID= SCOPED_PID=
if tap_failed; then sed 's/^/# /' "$T/proxy.log" | tail -30; fi
tap_done
