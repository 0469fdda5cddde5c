/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr-class.h"

/* Each IPv4 range carries its name three times, so a range found inside an
 * IPv6 address can be reported with how it was smuggled, from static
 * strings. The most specific entries come first. */
typedef struct V4Range {
        uint32_t net;
        unsigned prefixlen;
        const char *name, *mapped_name, *compat_name;
} V4Range;

#define V4(a, b, c, d, len, label, cidr)                                     \
        { ((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d), \
          len, label " " cidr, "ipv4-mapped " label " " cidr, "ipv4-compatible " label " " cidr }

/* The IANA IPv4 and IPv6 Special-Purpose Address Registries
 * (iana-ipv4-special-registry, iana-ipv6-special-registry, RFC 6890 and
 * the RFCs each row cites), as of 2025: every row whose "Globally
 * Reachable" is False, plus the rows that are N/A because the range is
 * deprecated or only carries another address (192.88.99.0/24, 2001::/32,
 * 2002::/16), plus what is not unicast at all (multicast, broadcast) and
 * every IPv6 form that embeds an IPv4 address, so that NAT64 (64:ff9b::/96
 * is globally reachable by the registry, yet reaches whatever IPv4 address
 * it embeds) is no way around the IPv4 rows. */
static const V4Range V4_BLOCKED[] = {
        V4(169, 254, 169, 254, 32, "cloud-metadata", "169.254.169.254/32"),
        V4(255, 255, 255, 255, 32, "broadcast", "255.255.255.255/32"),
        V4(0, 0, 0, 0, 8, "this-network", "0.0.0.0/8"),                        /* RFC 791 */
        V4(10, 0, 0, 0, 8, "private", "10.0.0.0/8"),                           /* RFC 1918 */
        V4(100, 64, 0, 0, 10, "cgnat", "100.64.0.0/10"),                       /* RFC 6598 */
        V4(127, 0, 0, 0, 8, "loopback", "127.0.0.0/8"),                        /* RFC 1122 */
        V4(169, 254, 0, 0, 16, "link-local", "169.254.0.0/16"),                /* RFC 3927 */
        V4(172, 16, 0, 0, 12, "private", "172.16.0.0/12"),                     /* RFC 1918 */
        V4(192, 0, 0, 0, 24, "ietf-protocol-assignments", "192.0.0.0/24"),     /* RFC 6890 */
        V4(192, 0, 2, 0, 24, "documentation", "192.0.2.0/24"),                 /* RFC 5737 TEST-NET-1 */
        V4(192, 88, 99, 0, 24, "6to4-relay-anycast", "192.88.99.0/24"),        /* RFC 7526, deprecated */
        V4(192, 168, 0, 0, 16, "private", "192.168.0.0/16"),                   /* RFC 1918 */
        V4(198, 18, 0, 0, 15, "benchmarking", "198.18.0.0/15"),                /* RFC 2544 */
        V4(198, 51, 100, 0, 24, "documentation", "198.51.100.0/24"),           /* RFC 5737 TEST-NET-2 */
        V4(203, 0, 113, 0, 24, "documentation", "203.0.113.0/24"),             /* RFC 5737 TEST-NET-3 */
        V4(224, 0, 0, 0, 4, "multicast", "224.0.0.0/4"),                       /* RFC 5771 */
        V4(240, 0, 0, 0, 4, "reserved", "240.0.0.0/4"),                        /* RFC 1112 */
};

/* Inside 192.0.0.0/24 the registry marks two anycast addresses globally
 * reachable: 192.0.0.9/32 (Port Control Protocol, RFC 7723) and
 * 192.0.0.10/32 (TURN, RFC 8155). They stay refused: a worker has no use
 * for either through a CONNECT proxy, and a TURN relay would be a way on
 * to anywhere. The IPv6 rows below do the same for the anycast addresses
 * 2001:1::1-3/128. Globally reachable sub-ranges that name real services
 * (AMT, AS112, ORCHIDv2, drone remote ID) are public, as the registry says. */

typedef struct V6Range {
        uint8_t net[16];
        unsigned prefixlen;
        const char *name;
} V6Range;

/* 2001::/23 is "IETF Protocol Assignments", not globally reachable as a
 * whole, with these globally reachable sub-ranges carved out of it. */
static const V6Range V6_PUBLIC_IN_2001_23[] = {
        { { 0x20, 0x01, 0, 0x03 }, 32, "amt 2001:3::/32" },                      /* RFC 7450 */
        { { 0x20, 0x01, 0, 0x04, 0x01, 0x12 }, 48, "as112-v6 2001:4:112::/48" }, /* RFC 7535 */
        { { 0x20, 0x01, 0, 0x20 }, 28, "orchidv2 2001:20::/28" },                /* RFC 7343 */
        { { 0x20, 0x01, 0, 0x30 }, 28, "drone-remote-id 2001:30::/28" },         /* RFC 9374 */
};

/* ::/128, ::1/128, ::ffff:0:0/96 and ::/96 are handled in code: the last two
 * carry an IPv4 address to classify. The most specific entries come first. */
static const V6Range V6_BLOCKED[] = {
        { { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 }, 96, "ipv4-translated ::ffff:0:0:0/96" }, /* RFC 2765 */
        { { 0, 0x64, 0xff, 0x9b }, 96, "nat64 64:ff9b::/96" },                   /* RFC 6052 */
        { { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "nat64-local 64:ff9b:1::/48" },     /* RFC 8215 */
        { { 0x01, 0x00 }, 64, "discard-only 100::/64" },                         /* RFC 6666 */
        { { 0x01, 0x00, 0, 0, 0, 0, 0, 1 }, 64, "dummy-prefix 100:0:0:1::/64" }, /* RFC 9780 */
        { { 0x20, 0x01, 0, 0 }, 32, "teredo 2001::/32" },                        /* RFC 4380 */
        { { 0x20, 0x01, 0, 0x02, 0, 0 }, 48, "benchmarking 2001:2::/48" },       /* RFC 5180 */
        { { 0x20, 0x01, 0, 0x10 }, 28, "orchid 2001:10::/28" },                  /* RFC 4843, deprecated */
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation 2001:db8::/32" },       /* RFC 3849 */
        { { 0x20, 0x01 }, 23, "ietf-protocol-assignments 2001::/23" },           /* RFC 2928 */
        { { 0x20, 0x02 }, 16, "6to4 2002::/16" },                                /* RFC 3056 */
        { { 0x3f, 0xff }, 20, "documentation 3fff::/20" },                       /* RFC 9637 */
        { { 0x5f, 0x00 }, 16, "srv6-sids 5f00::/16" },                           /* RFC 9602 */
        { { 0xfc }, 7, "unique-local fc00::/7" },                                /* RFC 4193 */
        { { 0xfe, 0x80 }, 10, "link-local fe80::/10" },                          /* RFC 4291 */
        { { 0xfe, 0xc0 }, 10, "site-local fec0::/10" },                          /* RFC 3879, deprecated */
        { { 0xff }, 8, "multicast ff00::/8" },                                   /* RFC 4291 */
};

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned prefixlen) {
        unsigned whole = prefixlen / 8, rest = prefixlen % 8;
        if (memcmp(a, net, whole) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t) (0xff << (8 - rest));
        return (a[whole] & mask) == (net[whole] & mask);
}

bool egress_cidr_contains_in4(const EgressCidr *c, const struct in_addr *a) {
        assert(c);
        assert(a);
        return c->family == AF_INET &&
               prefix_match((const uint8_t *) &a->s_addr, (const uint8_t *) &c->addr.in.s_addr, c->prefixlen);
}

bool egress_cidr_contains_in6(const EgressCidr *c, const struct in6_addr *a) {
        assert(c);
        assert(a);
        return c->family == AF_INET6 && prefix_match(a->s6_addr, c->addr.in6.s6_addr, c->prefixlen);
}

int egress_cidr_parse(const char *s, EgressCidr *ret) {
        EgressCidr c = {};
        char buf[INET6_ADDRSTRLEN + 8];
        const char *slash;
        unsigned max;

        assert(s);
        assert(ret);
        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        slash = strchr(s, '/');
        if (slash)
                buf[slash - s] = 0;

        if (inet_pton(AF_INET, buf, &c.addr.in) == 1) {
                c.family = AF_INET;
                max = 32;
        } else if (inet_pton(AF_INET6, buf, &c.addr.in6) == 1) {
                c.family = AF_INET6;
                max = 128;
        } else
                return -EINVAL;

        c.prefixlen = max;
        if (slash) {
                char *end;
                const char *digits = slash + 1;
                if (*digits < '0' || *digits > '9' || strlen(digits) > 3)
                        return -EINVAL;
                unsigned long v = strtoul(digits, &end, 10);
                if (*end || v > max)
                        return -EINVAL;
                c.prefixlen = (unsigned) v;
        }
        /* Host bits below the prefix: "10.1.2.3/8" is more likely a typo than a range. */
        const uint8_t *bytes = c.family == AF_INET ? (const uint8_t *) &c.addr.in.s_addr : c.addr.in6.s6_addr;
        for (unsigned bit = c.prefixlen; bit < max; bit++)
                if (bytes[bit / 8] & (0x80 >> (bit % 8)))
                        return -EINVAL;
        *ret = c;
        return 0;
}

int egress_cidr_format(const EgressCidr *c, char *buf, size_t size) {
        char a[INET6_ADDRSTRLEN];
        int n;

        assert(c);
        if (!inet_ntop(c->family, c->family == AF_INET ? (const void *) &c->addr.in : (const void *) &c->addr.in6,
                       a, sizeof(a)))
                return -errno;
        n = snprintf(buf, size, "%s/%u", a, c->prefixlen);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}

typedef enum Via { VIA_NONE, VIA_MAPPED, VIA_COMPAT } Via;

static const char *classify_in4_via(const struct in_addr *a, Via via, const EgressCidr *extra, size_t n_extra) {
        uint32_t h = ntohl(a->s_addr);

        for (size_t i = 0; i < sizeof(V4_BLOCKED) / sizeof(V4_BLOCKED[0]); i++) {
                const V4Range *r = &V4_BLOCKED[i];
                uint32_t mask = r->prefixlen == 0 ? 0 : UINT32_MAX << (32 - r->prefixlen);
                if ((h & mask) == r->net)
                        return via == VIA_MAPPED ? r->mapped_name : via == VIA_COMPAT ? r->compat_name : r->name;
        }
        for (size_t i = 0; i < n_extra; i++)
                if (egress_cidr_contains_in4(&extra[i], a))
                        return via == VIA_MAPPED ? "ipv4-mapped operator-range" :
                               via == VIA_COMPAT ? "ipv4-compatible operator-range" : "operator-range";
        return NULL;
}

const char *egress_addr_classify_in4(const struct in_addr *a, const EgressCidr *extra, size_t n_extra) {
        assert(a);
        return classify_in4_via(a, VIA_NONE, extra, n_extra);
}

const char *egress_addr_classify_in6(const struct in6_addr *a, const EgressCidr *extra, size_t n_extra) {
        static const uint8_t zero[16] = {};
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        const uint8_t *b;

        assert(a);
        b = a->s6_addr;
        if (memcmp(b, zero, 16) == 0)
                return "unspecified ::/128";
        if (memcmp(b, zero, 15) == 0 && b[15] == 1)
                return "loopback ::1/128";
        if (memcmp(b, mapped, 12) == 0 || memcmp(b, zero, 12) == 0) {
                /* What the kernel would actually dial is the embedded IPv4
                 * address, so that is what gets classified. */
                struct in_addr in;
                memcpy(&in.s_addr, b + 12, 4);
                return classify_in4_via(&in, b[10] == 0xff ? VIA_MAPPED : VIA_COMPAT, extra, n_extra);
        }
        bool carved_out = false;
        for (size_t i = 0; i < sizeof(V6_PUBLIC_IN_2001_23) / sizeof(V6_PUBLIC_IN_2001_23[0]); i++)
                if (prefix_match(b, V6_PUBLIC_IN_2001_23[i].net, V6_PUBLIC_IN_2001_23[i].prefixlen))
                        carved_out = true;
        for (size_t i = 0; i < sizeof(V6_BLOCKED) / sizeof(V6_BLOCKED[0]) && !carved_out; i++)
                if (prefix_match(b, V6_BLOCKED[i].net, V6_BLOCKED[i].prefixlen))
                        return V6_BLOCKED[i].name;
        for (size_t i = 0; i < n_extra; i++)
                if (egress_cidr_contains_in6(&extra[i], a))
                        return "operator-range";
        return NULL;
}

const char *egress_addr_classify(const struct sockaddr *sa, socklen_t len, const EgressCidr *extra, size_t n_extra) {
        if (!sa)
                return "unsupported-family";
        if (sa->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in))
                return egress_addr_classify_in4(&((const struct sockaddr_in *) sa)->sin_addr, extra, n_extra);
        if (sa->sa_family == AF_INET6 && len >= (socklen_t) sizeof(struct sockaddr_in6))
                return egress_addr_classify_in6(&((const struct sockaddr_in6 *) sa)->sin6_addr, extra, n_extra);
        return "unsupported-family";
}
