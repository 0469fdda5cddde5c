#!/usr/bin/env bash
# Inbound gate benchmark, in one run, without systemd: sandbox-gate (its
# seccomp filter on) under systemd-socket-activate on a UNIX socket and a
# loopback port, in front of a small Node handler (load.js serve). load.js
# sends the same keep-alive GETs directly to the handler, through the gate's
# TCP port and through its UNIX socket (a front's way in):
#   latency: one connection, requests one after the other, p50/p99;
#   rate: CONCURRENCY connections at once for SECONDS.
# Added latency = gated - direct, at each percentile. Where nginx is
# installed (Debian's; bench/run.sh runs this in the test bed, which has
# it), the same again through nginx, as docs/endpoints.md puts it in front:
# nginx -> handler beside nginx -> gate's UNIX socket -> handler, both
# upstreams with keep-alive.
#
#   bench.sh SANDBOX_GATE_BINARY [JSON_OUT] [--quick]
#
# Prints a table and writes JSON (default bench/results/gate.json). Not a
# test: it asserts nothing, it measures. Goals (issue 25): added p50 < 300 us,
# requests/s >= 0.8x direct.
set -eu
HERE=$(dirname "$(readlink -f "$0")")
BIN=$(readlink -f "${1:?usage: $0 SANDBOX_GATE_BINARY [JSON_OUT] [--quick]}")
OUT=${2:-$HERE/../results/gate.json}
QUICK=${3:-}
[ "$OUT" = --quick ] && { QUICK=--quick; OUT=$HERE/../results/gate.json; }
N=5000 CONC=16 SECONDS_=10
[ "$QUICK" = --quick ] && N=1000 SECONDS_=3
mkdir -p "$(dirname "$OUT")"
OUT=$(readlink -f "$OUT")
T=$(mktemp -d)
H_PID='' G_PID=''
trap '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")"; kill $H_PID $G_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HPORT=$(port) GPORT=$(port)
TOKEN=bench-token-0123456789abcdef
printf '%s\n' "$TOKEN" > "$T/token"
printf 'worker=bench\nupstream=127.0.0.1:%s\nmax_concurrent=%s\n' "$HPORT" "$((CONC * 2))" > "$T/config"
node "$HERE/load.js" serve "$HPORT" & H_PID=$!
systemd-socket-activate -l "$T/gate.sock" -l "127.0.0.1:$GPORT" "$BIN" --config "$T/config" --token "$T/token" \
    2>/dev/null & G_PID=$!
for _ in $(seq 50); do
    [ -S "$T/gate.sock" ] && python3 -c "import socket; socket.create_connection(('127.0.0.1', $HPORT))" 2>/dev/null && break
    sleep 0.1
done
node "$HERE/load.js" run "127.0.0.1:$HPORT" - "$N" "$CONC" "$SECONDS_" > "$T/direct.json"
node "$HERE/load.js" run "127.0.0.1:$GPORT" "$TOKEN" "$N" "$CONC" "$SECONDS_" > "$T/tcp.json"
node "$HERE/load.js" run "$T/gate.sock" "$TOKEN" "$N" "$CONC" "$SECONDS_" > "$T/unix.json"
if command -v nginx >/dev/null; then
    NDIRECT=$(port) NGATE=$(port)
    # As root, its workers as root too: the gate's socket is in this run's
    # 0700 directory (a host's front is in SocketGroup= instead).
    cat > "$T/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $T/body; proxy_temp_path $T/proxy; fastcgi_temp_path $T/fcgi;
    uwsgi_temp_path $T/uwsgi; scgi_temp_path $T/scgi;
    upstream direct { server 127.0.0.1:$HPORT; keepalive 32; }
    upstream gate { server unix:$T/gate.sock; keepalive 32; }
    server { listen 127.0.0.1:$NDIRECT;
        location / { proxy_pass http://direct; proxy_http_version 1.1; proxy_set_header Connection ""; } }
    server { listen 127.0.0.1:$NGATE;
        location / { proxy_pass http://gate; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
EOF
    nginx -c "$T/nginx.conf" -p "$T"
    node "$HERE/load.js" run "127.0.0.1:$NDIRECT" - "$N" "$CONC" "$SECONDS_" > "$T/nginx-direct.json"
    node "$HERE/load.js" run "127.0.0.1:$NGATE" "$TOKEN" "$N" "$CONC" "$SECONDS_" > "$T/nginx-gate.json"
fi
python3 - "$T" "$OUT" "$N" "$CONC" "$SECONDS_" <<'PYEOF'
import json, os, platform, sys
t, out = sys.argv[1], sys.argv[2]
keys = [k for k in ("direct", "tcp", "unix", "nginx-direct", "nginx-gate") if os.path.exists(os.path.join(t, k + ".json"))]
r = {k: json.load(open(os.path.join(t, k + ".json"))) for k in keys}
head = {"direct": "direct", "tcp": "gate (TCP)", "unix": "gate (UNIX)", "nginx-direct": "nginx", "nginx-gate": "nginx+gate"}
print(f"{'':30}" + "".join(f"{head[k]:>12}" for k in keys))
for label, key in (("latency p50 us", "p50_us"), ("latency p99 us", "p99_us")):
    print(f"{label:30}" + "".join(f"{r[k][key]:>12.1f}" for k in keys))
print(f"{'requests/s (%s connections)' % sys.argv[4]:30}" + "".join(f"{r[k]['requests_per_s']:>12.0f}" for k in keys))
# Each gated way beside the same way without the gate.
for k, base in (("tcp", "direct"), ("unix", "direct"), ("nginx-gate", "nginx-direct")):
    if k not in r:
        continue
    r[k]["added_p50_us"] = round(r[k]["p50_us"] - r[base]["p50_us"], 1)
    r[k]["added_p99_us"] = round(r[k]["p99_us"] - r[base]["p99_us"], 1)
    r[k]["rate_ratio"] = round(r[k]["requests_per_s"] / r[base]["requests_per_s"], 2)
    print(f"{head[k]}: added p50 {r[k]['added_p50_us']} us, p99 {r[k]['added_p99_us']} us, "
          f"{r[k]['rate_ratio']}x the rate of {head[base]}")
if "nginx-gate" not in r:
    print("no nginx here: the way through nginx was not measured")
r["params"] = {"requests": int(sys.argv[3]), "concurrency": int(sys.argv[4]), "seconds": int(sys.argv[5]),
               "handler": "node http, 64-byte answers", "cpus": os.cpu_count(), "machine": platform.machine()}
r["goals"] = {"added_p50_us_max": 300, "rate_ratio_min": 0.8}
json.dump(r, open(out, "w"), indent=1)
print("written:", out)
PYEOF
