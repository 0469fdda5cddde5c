/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Classifies resolved addresses (never strings) as public or as one of the
 * ranges a worker must not reach: loopback, private, link-local and cloud
 * metadata, and every IPv6 form that can smuggle an IPv4 address (mapped,
 * compatible, NAT64, 6to4, Teredo). */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct EgressCidr {
        int family;                 /* AF_INET or AF_INET6 */
        union {
                struct in_addr in;
                struct in6_addr in6;
        } addr;
        unsigned prefixlen;
} EgressCidr;

/* "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). Host bits
 * set below the prefix are refused as a likely typo. Returns 0 or -EINVAL. */
int egress_cidr_parse(const char *s, EgressCidr *ret);
int egress_cidr_format(const EgressCidr *c, char *buf, size_t size);
bool egress_cidr_contains_in4(const EgressCidr *c, const struct in_addr *a);
bool egress_cidr_contains_in6(const EgressCidr *c, const struct in6_addr *a);

/* Each returns NULL for a public address, or a static string naming the
 * blocked range ("link-local 169.254.0.0/16", "ipv4-mapped loopback
 * 127.0.0.0/8", "operator-range"). `extra` are the operator's own ranges. */
const char *egress_addr_classify_in4(const struct in_addr *a, const EgressCidr *extra, size_t n_extra);
const char *egress_addr_classify_in6(const struct in6_addr *a, const EgressCidr *extra, size_t n_extra);
/* Anything but AF_INET/AF_INET6, or a short length, is "unsupported-family". */
const char *egress_addr_classify(const struct sockaddr *sa, socklen_t len, const EgressCidr *extra, size_t n_extra);
