#!/usr/bin/env bash
# Credential broker benchmark, in one run, without systemd: sandbox-egress
# (seccomp on) with --listen in a private user+network namespace, its TLS
# upstream (tests/egress/broker-upstream.py, certificate from a test CA) in a
# namespace of its own behind a veth, as tests/egress/test-broker.sh sets
# them up. broker-load.c (compiled here) sends the same keep-alive GETs
# directly to the upstream over TLS and through the broker's plain-HTTP
# listener (the upstream connection reused from the broker's pool):
#   latency: one connection, requests one after the other, p50/p99;
#   rate: CONCURRENCY connections at once.
# Added latency = brokered - direct, at each percentile.
#
#   bench.sh SANDBOX_EGRESS_BINARY [JSON_OUT] [--quick]
#
# Prints a table and writes JSON (default bench/results/broker.json). Not a
# test: it asserts nothing, it measures. Goal (issue 12): added p50 < 500 us.
set -eu
HERE=$(dirname "$(readlink -f "$0")")
if [ "${1:-}" != --inside ]; then
    BIN=$(readlink -f "${1:?usage: $0 SANDBOX_EGRESS_BINARY [JSON_OUT] [--quick]}")
    OUT=${2:-$HERE/../results/broker.json}
    QUICK=${3:-}
    [ "$OUT" = --quick ] && { QUICK=--quick; OUT=$HERE/../results/broker.json; }
    mkdir -p "$(dirname "$OUT")"
    OUT=$(readlink -f "$OUT")
    LOAD=$(mktemp -d)
    cc -std=gnu11 -O2 -pthread -o "$LOAD/broker-load" "$HERE/broker-load.c" -lssl -lcrypto
    unshare -rn "$0" --inside "$BIN" "$LOAD/broker-load" "$QUICK" > "$LOAD/out.json"
    python3 - "$LOAD/out.json" "$OUT" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'':30}{'direct TLS':>14}{'brokered':>14}{'added':>14}")
for label, key in (("latency p50 us", "p50_us"), ("latency p99 us", "p99_us")):
    d, b = r["direct"]["latency"][key], r["brokered"]["latency"][key]
    print(f"{label:30}{d:>14.1f}{b:>14.1f}{b - d:>14.1f}")
d, b = r["direct"]["rate"]["requests_per_s"], r["brokered"]["rate"]["requests_per_s"]
print(f"{'requests/s (%d connections)' % r['params']['concurrency']:30}{d:>14.0f}{b:>14.0f}{'':>14}")
r["added_latency_p50_us"] = round(r["brokered"]["latency"]["p50_us"] - r["direct"]["latency"]["p50_us"], 1)
r["added_latency_p99_us"] = round(r["brokered"]["latency"]["p99_us"] - r["direct"]["latency"]["p99_us"], 1)
r["goal_added_p50_us"] = 500
r["goal_met"] = r["added_latency_p50_us"] < 500
print(f"# {r['params']}; goal added p50 < 500 us: {'met' if r['goal_met'] else 'NOT met'}")
json.dump(r, open(sys.argv[2], "w"), indent=2)
print(f"# JSON written to {sys.argv[2]}")
PYEOF
    rm -rf "$LOAD"
    exit 0
fi

# ---------------------------------------------------------------- inside
BIN=$2 LOADER=$3
REQUESTS=5000 RATE_REQUESTS=3000 CONCURRENCY=4
[ "${4:-}" = --quick ] && { REQUESTS=1000; RATE_REQUESTS=500; }
PY=$(command -v /usr/bin/python3 || command -v python3)
T=$(mktemp -d)
PIDS=
trap 'kill $PIDS 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
ip link set lo up
unshare -n sleep infinity & UPNS=$!
PIDS="$PIDS $UPNS"
for i in $(seq 100); do
    [ "$(readlink /proc/$UPNS/ns/net 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.05
done
ip link add v0 type veth peer name v1 netns "$UPNS"
ip addr add 11.0.0.1/24 dev v0
ip link set v0 up
nsenter -t "$UPNS" -n sh -ec 'ip link set lo up; ip addr add 11.0.0.10/24 dev v1; ip link set v1 up'
{
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$T/ca.key" -out "$T/ca.pem" -subj /CN=bench-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
    openssl req -newkey rsa:2048 -nodes -keyout "$T/up.key" -out "$T/up.csr" -subj /CN=api.bench.test
    printf 'subjectAltName=DNS:api.bench.test\n' > "$T/ext"
    openssl x509 -req -in "$T/up.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 -extfile "$T/ext" \
        -out "$T/up.pem"
} 2>/dev/null
echo "11.0.0.10 api.bench.test" > "$T/hosts"
: > "$T/resolv.conf"
mkdir "$T/creds"
printf 'bench-secret' > "$T/creds/broker-BENCH"
cat > "$T/policy.json" <<POLICY
{ "worker_id": "bench", "broker_ca_file": "$T/ca.pem",
  "services": [ { "name": "BENCH", "listen_port": 3129, "host": "api.bench.test", "port": 443, "base": "",
                  "header_name": "Authorization", "header_template": "Bearer {}", "methods": ["GET"], "paths": ["/"],
                  "max_request_bytes": 1048576, "max_response_bytes": 1048576, "rate_bps": 0 } ] }
POLICY
nsenter -t "$UPNS" -n "$PY" "$HERE/../../tests/egress/broker-upstream.py" 0.0.0.0 443 "$T/up.pem" "$T/up.key" /dev/null \
    2>"$T/up.err" &
PIDS="$PIDS $!"
CREDENTIALS_DIRECTORY=$T/creds "$BIN" --policy "$T/policy.json" --hosts-file "$T/hosts" --resolv-conf "$T/resolv.conf" \
    --listen 127.0.0.1:3129 2>/dev/null &
PIDS="$PIDS $!"
for i in $(seq 300); do
    "$PY" -c 'import socket
for a in (("127.0.0.1", 3129), ("11.0.0.10", 443)): socket.create_connection(a).close()' 2>/dev/null && break
    sleep 0.1
done
direct() { "$LOADER" tls 11.0.0.10 443 /bench "$1" "$2" "$T/ca.pem" api.bench.test; }
brokered() { "$LOADER" plain 127.0.0.1 3129 /bench "$1" "$2"; }
# Interleaved, so drift in the machine's load touches both alike.
dl=$(direct 1 "$REQUESTS"); bl=$(brokered 1 "$REQUESTS")
dr=$(direct "$CONCURRENCY" "$RATE_REQUESTS"); br=$(brokered "$CONCURRENCY" "$RATE_REQUESTS")
cat <<JSON
{ "direct": { "latency": $dl, "rate": $dr }, "brokered": { "latency": $bl, "rate": $br },
  "params": { "latency_requests": $REQUESTS, "rate_requests_per_connection": $RATE_REQUESTS,
              "concurrency": $CONCURRENCY, "upstream": "tests/egress/broker-upstream.py over TLS on a veth",
              "cpus": $(nproc), "date": "$(date -u +%FT%TZ)" } }
JSON
