#!/usr/bin/env bash
# sandboxctl mcp against the real daemon, driven by the official MCP client
# (@modelcontextprotocol/sdk from npm, pinned by tests/mcp/package-lock.json,
# run by the test bed's own Node): over stdio (StdioClientTransport) and
# Streamable HTTP (StreamableHTTPClientTransport) on a UNIX socket and on
# loopback TCP. As tester without a polkit grant every tool that makes a
# worker is a tool error naming the action; with one, the tools are listed
# with schemas Ajv compiles, python3 prints 42 in a fresh gVisor worker, a
# worker asked for as trusted is not trusted, a cancelled call stops its
# worker, and the server acts on no worker a model did not start. The
# walls: another UID (root included) is refused on the UNIX socket, a
# missing or wrong bearer token on TCP; each beside its control.
#
# The SDK's node_modules are installed once per lockfile with `npm ci` on
# the host (or in the test bed rootfs when the host has no npm) into the
# test bed cache, so later runs need no network.
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${SANDBOXD_TESTBED_CACHE:-/var/cache/sandboxd-testbed}
D=/opt/sbx-mcp                  # the client, inside the container
RULES=/etc/polkit-1/rules.d/60-sbx-mcp.rules
SOCK=/home/tester/mcp.sock
TOKEN=/home/tester/mcp.token
PORT=8765
SERVER_ARGS="--allow,*.example.org,--max-workers,3,--runtime,5min"

# node_modules for DIR's lockfile (tests/mcp, tests/mcp/conformance), in the
# cache: an `npm ci` only when missing.
npm_modules() {
    local src=$SRC/$1 key dir tmp rootfs
    key=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
    dir=$CACHE/mcp-node-$key
    if [ ! -f "$dir/.complete" ]; then
        tmp=$(mktemp -d "$CACHE/mcp-node.XXXXXX") || return 1
        cp "$src/package.json" "$src/package-lock.json" "$tmp/"
        if command -v npm >/dev/null; then
            (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error) >&2 || { rm -rf "$tmp"; return 1; }
        else
            rootfs=${TESTBED_ROOTFS:-$("$SRC/tests/testbed/mkrootfs.sh")}
            mkdir -p "$rootfs/mnt/sbx-npm"
            mount --bind "$tmp" "$rootfs/mnt/sbx-npm" || { rm -rf "$tmp"; return 1; }
            chroot "$rootfs" sh -c 'cd /mnt/sbx-npm && npm ci --no-audit --no-fund --loglevel=error' >&2
            local rc=$?
            umount "$rootfs/mnt/sbx-npm"
            [ $rc = 0 ] || { rm -rf "$tmp"; return 1; }
        fi
        touch "$tmp/.complete"
        rm -rf "$dir"
        mv "$tmp" "$dir"
    fi
    echo "$dir"
}

MODULES=$(npm_modules tests/mcp) || { echo "Bail out! npm ci of tests/mcp/package-lock.json failed (no registry and no cached copy in $CACHE)"; exit 1; }
ct mkdir -p "$D"
cp -a "$MODULES/node_modules" "/proc/$CT_PID/root$D/"
cp "$SRC/tests/mcp/client.mjs" "$SRC/tests/mcp/package.json" "/proc/$CT_PID/root$D/"
ct chmod -R a+rX "$D"

cleanup() {
    [ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null
    ct sh -c "systemctl stop sbx-mcp-unix sbx-mcp-tcp 2>/dev/null; rm -f $RULES
              for id in \$(sandboxctl list --no-legend 2>/dev/null | awk '{print \$1}'); do sandboxctl stop \$id; done" \
        >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

# mcp TRANSPORT ACTION ARGS...: the SDK client as tester; OUT is its output.
mcp() { OUT=$(as_tester node "$D/client.mjs" "$@" 2>&1); }
STDIO="stdio:sandboxctl,mcp,$SERVER_ARGS"
# json FIELD: a field of OUT's structuredContent (python3: the test bed has no jq).
json() { printf '%s' "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); v=r.get("structuredContent",{}).get(sys.argv[1]); print(v if not isinstance(v,str) else v)' "$1"; }

# --- no polkit grant: tool errors naming the action ----------------------
mcp "$STDIO" call create_worker '{}'
check_match "without a grant: create_worker is a tool error naming org.sandboxd1.create-worker" \
    '.*org\.freedesktop\.DBus\.Error\.AccessDenied.*org\.sandboxd1\.create-worker.*"isError":true.*' "$OUT"
mcp "$STDIO" call run_command '{"command":"echo hi"}'
check_match "without a grant: run_command is a tool error naming the action, no worker started" \
    '.*org\.sandboxd1\.create-worker.*"isError":true.*' "$OUT"
check_eq "without a grant: tester has no worker" "" "$(as_tester sandboxctl list --no-legend)"

ct sh -c "cat >$RULES" <<'JS'
polkit.addRule(function(action, subject) {
    if (subject.user == "tester" && action.id == "org.sandboxd1.create-worker")
        return polkit.Result.YES;
});
JS

# --- stdio -----------------------------------------------------------------
mcp "$STDIO" version
check_match "stdio: initialize settles on the SDK's own revision, 2025-11-25" '.*version 2025-11-25.*' "$OUT"
mcp "$STDIO" tools
check_match "stdio: tools/list shows the seven tools the bus serves" '.*tools create_worker,list_workers,resume_worker,run_command,stop_worker,suspend_worker,worker_logs.*' "$OUT"
check_match "stdio: every inputSchema compiles under Ajv strict and refuses unknown arguments" '.*schemas-ok 7.*' "$OUT"

# The Inspector's CLI mode, another official client: the tool names its
# tools/list prints, sorted. (Its build reads its own package.json relative
# to the working directory: run it from its build/.)
inspector_tools() {
    ct runuser -u tester -- sh -c "cd $D/node_modules/@modelcontextprotocol/inspector-cli/build &&
        node cli.js --cli sandboxctl mcp --method tools/list" 2>&1 | python3 -c '
import json, sys
text = sys.stdin.read()
doc = json.loads(text[text.index("\n{") + 1:] if not text.startswith("{") else text)
print(" ".join(sorted(t["name"] for t in doc["tools"])))' 2>&1
}
# The tools over Worker.Exec and the file methods are offered only once one
# of the model's workers shows them (below, the same client sees all eleven).
check_eq "inspector-cli: with none of the model's workers alive, tools/list lists the seven that need none" \
    "create_worker list_workers resume_worker run_command stop_worker suspend_worker worker_logs" "$(inspector_tools)"

mcp "$STDIO" call run_command '{"command":["python3","-c","print(6*7)"]}'
check_match "stdio: run_command runs python3 -c 'print(6*7)' in a fresh worker and gets 42" \
    '.*"exit_code":0.*"output":"42\\n".*"isError":false.*' "$OUT"
check_eq "stdio: that worker was untrusted (Origin=llm-generated's floor)" untrusted "$(json class)"
mcp "$STDIO" call run_command '{"command":"echo out; echo err >&2; exit 3"}'
check_match "stdio: a shell string runs through /bin/sh -c; a non-zero exit is a result with its code" \
    '.*"exit_code":3.*"isError":false.*' "$OUT"
# One stream: the worker's channel relays stderr as stdout, not ordered with it.
check_match "stdio: stdout and stderr both come back" '(out err|err out) *' "$(json output | tr '\n' ' ')"
mcp "$STDIO" call run_command '{"command":"head -c 200000 /dev/zero | tr \"\\\\0\" x"}'
check_match "stdio: 200000 bytes of output are cut to 64K with a notice" \
    '.*"output_bytes":200000.*"output_omitted_bytes":134464.*' "$OUT"
check_match "stdio: the notice says what was omitted" '.*134464 bytes of output omitted.*' "$OUT"

# The tools over Worker.Exec and the file methods (issue 24) are offered
# only where a worker's introspection shows those methods.
# A session that starts with none of tester's model workers alive.
mcp "$STDIO" grow '{}'
GROW_OUT=$OUT
GROWN=$(sed -n 's/^worker //p' <<<"$OUT")
if ct busctl --system introspect org.sandboxd1 "/org/sandboxd1/worker/$GROWN" org.sandboxd1.Worker | grep -q '^\.Exec '; then
    OUT=$GROW_OUT
    check_match "exec: a session that starts with no worker lists no exec or file tool" '.*before 7.*' "$OUT"
    check_match "exec: create_worker shows the daemon's Exec: list_changed is sent on stdio" '.*changed yes.*' "$OUT"
    check_match "exec: ... and the list then holds exec and the file tools" \
        '.*after create_worker,exec,list_files,list_workers,read_file,resume_worker,run_command,stop_worker,suspend_worker,worker_logs,write_file.*' "$OUT"
    mcp "$STDIO" tools
    check_match "exec: all eleven schemas compile under Ajv strict" '.*schemas-ok 11.*' "$OUT"
    check_eq "inspector-cli: with a model's worker alive, tools/list lists all eleven tools" \
        "create_worker exec list_files list_workers read_file resume_worker run_command stop_worker suspend_worker worker_logs write_file" \
        "$(inspector_tools)"
    mcp "$STDIO" call run_command "{\"worker_id\":\"$GROWN\",\"command\":[\"python3\",\"-c\",\"print(6*7)\"]}"
    check_match "exec: run_command with a worker_id runs python3 in that worker and gets 42" \
        '.*"exit_code":0.*"stdout":"42\\n".*"isError":false.*' "$OUT"
    mcp "$STDIO" call write_file "{\"worker_id\":\"$GROWN\",\"path\":\"hello.py\",\"content\":\"print('hi from a file')\\n\"}"
    check_match "files: write_file writes into the worker's home" '.*Wrote 24 bytes.*"isError":false.*' "$OUT"
    mcp "$STDIO" call read_file "{\"worker_id\":\"$GROWN\",\"path\":\"hello.py\"}"
    check_match "files: read_file reads it back" ".*print\\('hi from a file'\\).*\"isError\":false.*" "$OUT"
    mcp "$STDIO" call list_files "{\"worker_id\":\"$GROWN\"}"
    check_match "files: list_files shows it" '.*"name":"hello.py".*"size":24.*' "$OUT"
    mcp "$STDIO" call exec "{\"worker_id\":\"$GROWN\",\"argv\":[\"python3\",\"hello.py\"]}"
    check_match "exec: the written file runs" '.*"exit_code":0.*"stdout":"hi from a file\\n".*' "$OUT"
    mcp "$STDIO" call exec "{\"worker_id\":\"$GROWN\",\"argv\":[\"cat\"],\"stdin\":\"fed in\"}"
    check_match "exec: stdin reaches the process" '.*"stdout":"fed in".*' "$OUT"
    mcp "$STDIO" call read_file "{\"worker_id\":\"$GROWN\",\"path\":\"../../../etc/shadow\"}"
    check_match "files: a path out of the home is the daemon's refusal" '.*PathOutsideHome.*"isError":true.*' "$OUT"
    mcp "$STDIO" call stop_worker "{\"worker_id\":\"$GROWN\"}"
else
    check_match "exec: this daemon has no Worker.Exec: create_worker sends no list_changed" '.*changed no.*' "$GROW_OUT"
    mcp "$STDIO" tools
    check_match "exec: this daemon has no Worker.Exec: with a worker alive the tools are still the seven" \
        '.*tools create_worker,list_workers,resume_worker,run_command,stop_worker,suspend_worker,worker_logs.*' "$OUT"
    mcp "$STDIO" call exec '{}'
    check_match "exec: ... and a call of exec is an unknown tool" '.*error: .*Unknown tool: exec.*' "$OUT"
    mcp "$STDIO" call stop_worker "{\"worker_id\":\"$GROWN\"}"
fi

mcp "$STDIO" call create_worker '{"class":"trusted"}'
WID=$(json worker_id)
check_match "stdio: create_worker asking for trusted says it was raised" '.*raised to untrusted.*' "$OUT"
check_eq "stdio: ... and the worker is not trusted (its Class property)" untrusted "$(sbx_prop "$WID" Class)"
check_eq "stdio: ... its Origin is llm-generated" llm-generated "$(sbx_prop "$WID" Origin)"
check_eq "stdio: ... the daemon was never asked for trusted (RequestedClass)" untrusted "$(sbx_prop "$WID" RequestedClass)"

mcp "$STDIO" call create_worker '{"allow":["evil.org"]}'
check_match "stdio: egress beyond the server's --allow is refused" '.*AccessDenied.*evil\.org.*"isError":true.*' "$OUT"
mcp "$STDIO" call run_command '{"command":"true","allow":["pypi.example.org"]}'
check_match "stdio: control: egress inside --allow is accepted" '.*"exit_code":0.*"isError":false.*' "$OUT"
mcp "$STDIO" call create_worker '{"memory":"2G"}'
check_match "stdio: memory above the server's ceiling is refused" '.*memory.*"isError":true.*' "$OUT"

OWN=$(as_tester sandboxctl create -- sleep 600)
mcp "$STDIO" call list_workers '{}'
check_match "stdio: list_workers shows the model's worker" ".*$WID.*" "$OUT"
check_fails "stdio: ... and not tester's own (first-party) worker" grep -q "$OWN" <<<"$OUT"
mcp "$STDIO" call stop_worker "{\"worker_id\":\"$OWN\"}"
check_match "stdio: stop_worker refuses a worker a model did not start" '.*NoSuchWorker.*"isError":true.*' "$OUT"
check_eq "stdio: ... which keeps running" running "$(sbx_prop "$OWN" State)"
mcp "$STDIO" call worker_logs "{\"worker_id\":\"$WID\"}"
check_match "stdio: worker_logs reads the model's worker's log" '.*"isError":false.*' "$OUT"
mcp "$STDIO" call stop_worker "{\"worker_id\":\"$WID\"}"
check_match "stdio: control: stop_worker stops the model's own worker" '.*is stopping.*"isError":false.*' "$OUT"
wait_until 30 sh -c "[ \"\$(nsenter -t $CT_PID -a busctl --system get-property org.sandboxd1 /org/sandboxd1/worker/$WID org.sandboxd1.Worker State 2>/dev/null)\" != 's \"running\"' ]"
ct sandboxctl stop "$OWN" >/dev/null

# A cancelled call (the SDK's AbortSignal sends notifications/cancelled) stops its worker.
as_tester node --input-type=module -e "
import { Client } from '$D/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '$D/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';
const c = new Client({ name: 't', version: '1' });
await c.connect(new StdioClientTransport({ command: 'sandboxctl', args: ['mcp'] }));
const a = new AbortController();
setTimeout(() => a.abort(), 4000);
try { await c.callTool({ name: 'run_command', arguments: { command: 'sleep 120' } }, undefined, { signal: a.signal }); }
catch (e) { console.log('aborted:', e.message); }
await new Promise((r) => setTimeout(r, 3000));
await c.close();
" >"$TAP_TMP/abort.out" 2>&1
check_output "cancel: the SDK's abort of run_command ends the call" 'aborted' cat "$TAP_TMP/abort.out"
wait_until 30 sh -c "[ -z \"\$(nsenter -t $CT_PID -a runuser -u tester -- sandboxctl list --no-legend)\" ]"
check_eq "cancel: ... and the worker it started is stopped, long before its sleep ends" "" \
    "$(as_tester sandboxctl list --no-legend)"

# --- Streamable HTTP on a UNIX socket --------------------------------------
ct systemd-run -q --unit=sbx-mcp-unix -p User=tester sandboxctl mcp --listen "$SOCK" --max-workers 3
wait_until 10 ct test -S "$SOCK"
check_eq "unix: the socket is the owner's alone (0600 tester)" "600 tester" "$(ct stat -c '%a %U' "$SOCK")"
mcp "unix:$SOCK" version
check_match "unix: control: the owner's SDK client connects and negotiates 2025-11-25" '.*version 2025-11-25.*' "$OUT"
mcp "unix:$SOCK" call run_command '{"command":["python3","-c","print(6*7)"]}'
check_match "unix: run_command over Streamable HTTP gets 42" '.*"exit_code":0.*"output":"42\\n".*' "$OUT"
OUT=$(ct node "$D/client.mjs" "unix:$SOCK" version 2>&1) && rc=0 || rc=$?
check_match "unix: root, whom file modes do not stop, is refused by the peer-credential check" \
    '1 .*(Forbidden|EPIPE|ECONNRESET|socket hang up).*' "$rc $OUT"
check_output "unix: ... which the server logged" 'Refused a connection from another user' \
    ct journalctl -q --no-pager -u sbx-mcp-unix
ct useradd -M -u 1501 other 2>/dev/null || true
OUT=$(ct runuser -u other -- node "$D/client.mjs" "unix:$SOCK" version 2>&1) && rc=0 || rc=$?
check_match "unix: another plain user cannot even connect" '1 .*(EACCES|denied).*' "$rc $OUT"
ct systemctl stop sbx-mcp-unix
check_fails "unix: a stopped server leaves no socket behind" ct test -e "$SOCK"

# --- Streamable HTTP on loopback TCP with a bearer token -------------------
as_tester sh -c "umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > $TOKEN"
ct systemd-run -q --unit=sbx-mcp-tcp -p User=tester sandboxctl mcp --listen "127.0.0.1:$PORT" --token-file "$TOKEN"
wait_until 10 ct bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"
mcp "http:http://127.0.0.1:$PORT/mcp@$TOKEN" tools
check_match "tcp: control: with the token, the SDK client lists the tools" '.*schemas-ok 7.*' "$OUT"
mcp "http:http://127.0.0.1:$PORT/mcp@$TOKEN" call run_command '{"command":["python3","-c","print(6*7)"]}'
check_match "tcp: with the token, run_command gets 42" '.*"exit_code":0.*"output":"42\\n".*' "$OUT"
mcp "http:http://127.0.0.1:$PORT/mcp" version && rc=0 || rc=$?
check_match "tcp: without a token the SDK client is refused (401)" '1 .*Unauthorized: a bearer token is required.*' "$rc $OUT"
as_tester sh -c "umask 077; echo wrong-token-0123456789 > /tmp/wrong.token"
mcp "http:http://127.0.0.1:$PORT/mcp@/tmp/wrong.token" version && rc=0 || rc=$?
check_match "tcp: with a wrong token the SDK client is refused (401)" '1 .*Unauthorized: a bearer token is required.*' "$rc $OUT"
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
check_output "tcp: an Origin that is not loopback is refused even with the token (DNS rebinding)" '^403$' \
    as_tester sh -c "curl -s -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer \$(cat $TOKEN)\" \
        -H 'Origin: http://evil.example' -H 'Content-Type: application/json' -d '$INIT' http://127.0.0.1:$PORT/mcp"
check_output "tcp: control: the same request from a loopback Origin is answered with 2024-11-05" '2024-11-05' \
    as_tester sh -c "curl -s -H \"Authorization: Bearer \$(cat $TOKEN)\" -H 'Origin: http://127.0.0.1:$PORT' \
        -H 'Content-Type: application/json' -d '$INIT' http://127.0.0.1:$PORT/mcp"

# --- the official conformance suite, over loopback TCP ---------------------
# @modelcontextprotocol/conformance, with the Node 22 it needs (Debian 12's is
# 18), both from npm and pinned by tests/mcp/conformance/package-lock.json. It
# is only an HTTP client, so it runs from the cache on the host, in the
# container's network namespace (nothing of it copied in). It dials a URL and
# cannot add a header: auth-proxy.mjs adds the bearer token. Scenarios the
# server cannot pass (the reference server's own tools, resources, prompts;
# docs/mcp.md says why) are in expected-failures.yml, each with its reason;
# any other failure, or an entry that passes now, is a failed check.
CONF_PORT=8766
BASELINE=$SRC/tests/mcp/conformance/expected-failures.yml
if CONF=$(npm_modules tests/mcp/conformance); then
    NODE22=$CONF/node_modules/.bin/node
    in_netns() { nsenter -t "$CT_PID" -n "$@"; }
    # nsenter itself, not the function: $! is then the proxy (nsenter execs
    # it), where a function in the background is a subshell whose kill
    # left the proxy running after the test.
    nsenter -t "$CT_PID" -n "$NODE22" "$SRC/tests/mcp/conformance/auth-proxy.mjs" "$CONF_PORT" "$PORT" \
        "/proc/$CT_PID/root$TOKEN" >"$TAP_TMP/auth-proxy.out" 2>&1 &
    PROXY_PID=$!
    wait_until 30 grep -q listening "$TAP_TMP/auth-proxy.out"
    started=$SECONDS
    # A bound for a hung scenario only; a run takes well under a minute.
    in_netns timeout 600 "$NODE22" "$CONF/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
        --url "http://127.0.0.1:$CONF_PORT/mcp" --expected-failures "$BASELINE" -o "$TAP_TMP/conformance" \
        >"$TAP_TMP/conformance.out" 2>&1 && conf_rc=0 || conf_rc=$?
    diag "conformance: the suite took $((SECONDS - started)) s"
    kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null; PROXY_PID=
    check_fails "conformance: the token proxy, which answered, is gone once the suite is done" \
        pgrep -f "auth-proxy.mjs $CONF_PORT $PORT /proc/$CT_PID/"
    planned=$(sed -n 's/^Running [a-z]* suite (\([0-9]*\) scenarios).*/\1/p' "$TAP_TMP/conformance.out")
    "$NODE22" "$SRC/tests/mcp/conformance/results.mjs" "$CONF/node_modules" "$TAP_TMP/conformance" "$BASELINE" \
        >"$TAP_TMP/conformance.tsv" 2>"$TAP_TMP/results.err" ||
        echo "error	results.mjs	-	$(tr '\n' ' ' <"$TAP_TMP/results.err")" >>"$TAP_TMP/conformance.tsv"
    ran=$(grep -cE '^(pass|fail|xfail|stale)	' "$TAP_TMP/conformance.tsv")
    # Not vacuous: the suite planned scenarios, and each left its result.
    CHECK_DIAG=$(tail -n 20 "$TAP_TMP/conformance.out") \
        check "conformance: the suite ran its ${planned:-0} server scenarios, each with a result ($ran)" \
        test "${planned:-0}" -gt 0 -a "$ran" = "${planned:-0}"
    while IFS=$'\t' read -r kind scenario reason detail; do
        case $kind in
        pass) ok "conformance: $scenario passes" ;;
        fail) not_ok "conformance: $scenario passes" "$detail" ;;
        xfail) ok "conformance: $scenario # expected failure: $reason"; diag "${detail:0:300}" ;;
        stale) not_ok "conformance: $scenario # expected failure: $reason" \
            "it passes now: remove it from tests/mcp/conformance/expected-failures.yml" ;;
        unrun) not_ok "conformance: the baseline's $scenario is a scenario of the suite" "the suite ran no such scenario" ;;
        noreason) not_ok "conformance: the baseline's $scenario says why it fails" "add a '# reason' to its line" ;;
        *) not_ok "conformance: the results can be read" "$kind $scenario $reason $detail" ;;
        esac
    done <"$TAP_TMP/conformance.tsv"
    CHECK_DIAG=$(tail -n 20 "$TAP_TMP/conformance.out") \
        check "conformance: the suite's own baseline check agrees (exit 0)" test "$conf_rc" = 0
else
    not_ok "conformance: npm ci of tests/mcp/conformance/package-lock.json" "no registry and no cached copy in $CACHE"
fi
ct systemctl stop sbx-mcp-tcp

check_output "root: sandboxctl mcp refuses to run as root (exit 77)" 'does not run as root' \
    sh -c "nsenter -t $CT_PID -a sandboxctl mcp </dev/null 2>&1; test \$? = 77"

tap_done
