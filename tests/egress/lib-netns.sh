# shellcheck shell=bash disable=SC2034  # HERE and PY are the sourcing script's
# The frame test-proxy.sh and test-broker.sh share: the real sandbox-egress
# in a private user and network namespace that stands for the host, its
# upstreams in a namespace of their own behind a veth (the layout of
# tests/testbed/upstream-netns.sh, which needs ip netns and so root). Sourced
# by the script with its own arguments: SANDBOX_EGRESS_BINARY [--inside].
# Sets BIN, HERE, PY; outside the namespace it re-executes the script inside
# one (exit 77, skip, where unprivileged namespaces are unavailable).
#   upstream_ns_start ADDR...  the upstreams' namespace (UPNS_PID): v0 here
#                              (11.0.0.1/24, 2a01:db9::1/64), v1 there
#                              (11.0.0.2/24, 2a01:db9::2/64), which holds
#                              each IPv4 ADDR, routed to from here
#   upstream_ns CMD...         CMD in the upstreams' namespace
#   ports_listen HOST:PORT...  whether each accepts a TCP connection
#   wait_ready WHAT CMD...     polls CMD for up to 30 s; else "Bail out! WHAT
#                              after 30 s" with the tail of $T/proxy.log, exit 1
BIN=$(readlink -f "${1:?usage: $0 SANDBOX_EGRESS_BINARY}")
HERE=$(dirname "$(readlink -f "$0")")
# The system interpreter: version-manager shims add a second to every call.
PY=$(command -v /usr/bin/python3 || command -v python3)

if [ "${2:-}" != "--inside" ]; then
    command -v python3 >/dev/null && command -v openssl >/dev/null || { echo "python3/openssl missing"; exit 77; }
    unshare -rn true 2>/dev/null || { echo "no user+network namespaces here"; exit 77; }
    exec unshare -rn "$0" "$BIN" --inside
fi

upstream_ns() { nsenter -t "$UPNS_PID" -n "$@"; }

upstream_ns_start() {
    local a
    ip link set lo up
    unshare -n sleep infinity & UPNS_PID=$!
    for _ in $(seq 100); do
        [ "$(readlink /proc/$UPNS_PID/ns/net 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] && break
        sleep 0.05
    done
    ip link add v0 type veth peer name v1 netns "$UPNS_PID"
    ip addr add 11.0.0.1/24 dev v0
    ip -6 addr add 2a01:db9::1/64 dev v0 nodad
    ip link set v0 up
    # shellcheck disable=SC2016  # expanded by that sh, from its arguments
    upstream_ns sh -ec 'ip link set lo up; ip addr add 11.0.0.2/24 dev v1; ip -6 addr add 2a01:db9::2/64 dev v1 nodad
                        for a; do ip addr add "$a/32" dev v1; done
                        ip link set v1 up; ip route add default via 11.0.0.1; ip -6 route add default via 2a01:db9::1' \
        sh "$@"
    for a; do
        ip route add "$a/32" via 11.0.0.2
    done
}

ports_listen() {
    "$PY" - "$@" 2>/dev/null <<'PY'
import socket, sys
for a in sys.argv[1:]:
    host, port = a.rsplit(":", 1)
    socket.create_connection((host, int(port))).close()
PY
}

wait_ready() {
    local what=$1
    shift
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.1
    done
    echo "Bail out! $what after 30 s"
    sed 's/^/# /' "$T/proxy.log" | tail -20
    exit 1
}
