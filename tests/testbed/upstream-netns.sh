#!/bin/sh
# Test upstreams that are not the host's own (testbed.md, "Upstream servers
# that are not the host's own"), for every test that needs them: a network
# namespace "upstream" behind a veth, v0 on the host side (11.0.0.1/24,
# 2a01:db9::1/64: host-local addresses the proxy must refuse) and v1 inside
# (11.0.0.2/24, 2a01:db9::2/64). Each ADDR, IPv4 or IPv6, is added on v1 and
# routed to through it, so any unicast address can stand in for a server,
# public or one the proxy must refuse. Run inside the test bed, as root.
#   upstream-netns.sh up ADDR...   |   upstream-netns.sh down
set -eu
case ${1:-} in
up)
    shift
    sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 2>/dev/null || true
    ip netns add upstream
    ip link add v0 type veth peer name v1 netns upstream
    ip netns exec upstream sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 2>/dev/null || true
    ip addr add 11.0.0.1/24 dev v0
    ip -6 addr add 2a01:db9::1/64 dev v0 nodad
    ip link set v0 up
    ip -n upstream link set lo up
    ip -n upstream addr add 11.0.0.2/24 dev v1
    ip -n upstream -6 addr add 2a01:db9::2/64 dev v1 nodad
    ip -n upstream link set v1 up
    ip -n upstream route add default via 11.0.0.1
    ip -n upstream -6 route add default via 2a01:db9::1
    for a; do
        case $a in
        *:*) ip -n upstream -6 addr add "$a/128" dev v1 nodad
             ip -6 route add "$a/128" via 2a01:db9::2 ;;
        *)   ip -n upstream addr add "$a/32" dev v1
             ip route add "$a/32" via 11.0.0.2 ;;
        esac
    done
    ;;
down)
    ip link del v0 2>/dev/null || true
    ip netns del upstream 2>/dev/null || true
    ;;
*)
    echo "usage: upstream-netns.sh up ADDR... | down" >&2
    exit 2
    ;;
esac
