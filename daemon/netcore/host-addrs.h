/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The host's own addresses, as the proxy must refuse them: the proxy runs
 * in the host's network namespace, so a worker that could name one of them
 * would reach whatever listens on the host (a service on 0.0.0.0, through
 * the host's public address). Kept current from rtnetlink messages
 * (RTM_NEWADDR, RTM_DELADDR), which this parses; the socket is the
 * program's (egress-netlink.c). Pure: no I/O, no global state. */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct HostAddress {
        int family;      /* AF_INET or AF_INET6 */
        int ifindex;     /* the same address on two links is two entries */
        union {
                struct in_addr in;
                struct in6_addr in6;
        } addr;
} HostAddress;

typedef struct HostAddrSet {
        HostAddress *addrs;
        size_t n, allocated;
} HostAddrSet;

void host_addr_set_clear(HostAddrSet *s);
/* Adding what is there already and removing what is not are no-ops. */
int host_addr_set_add(HostAddrSet *s, int family, int ifindex, const void *addr);
void host_addr_set_remove(HostAddrSet *s, int family, int ifindex, const void *addr);
/* True if sa is one of the host's addresses, also when it is spelled as an
 * IPv4-mapped or IPv4-compatible IPv6 address (the kernel dials the IPv4
 * address inside). */
bool host_addr_set_contains(const HostAddrSet *s, const struct sockaddr *sa, socklen_t len);

typedef enum HostAddrParse {
        HOST_ADDR_PARSE_MORE = 0,        /* applied; more to come */
        HOST_ADDR_PARSE_DUMP_DONE = 1,   /* NLMSG_DONE of a dump was in this datagram */
        HOST_ADDR_PARSE_DUMP_INTR = 2,   /* the dump was interrupted by a change: dump again */
} HostAddrParse;

/* Applies every RTM_NEWADDR and RTM_DELADDR in one datagram read from a
 * NETLINK_ROUTE socket. Returns a HostAddrParse, or -EBADMSG for a
 * truncated message, -ENOMEM, or the negative error of an NLMSG_ERROR. */
int host_addr_set_apply_netlink(HostAddrSet *s, const void *buf, size_t len);
