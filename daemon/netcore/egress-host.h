/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Host names as the policy sees them, and the patterns that match them.
 * A host is normalised once (lowercase, one trailing dot removed, ASCII
 * only: internationalised names must arrive as punycode "xn--" labels) and
 * every comparison after that is a plain byte comparison. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_HOST_MAX 253
#define EGRESS_DEFAULT_PORT 443

typedef enum EgressHostKind {
        EGRESS_HOST_NAME,          /* a DNS name */
        EGRESS_HOST_IPV4,          /* a canonical dotted quad */
        EGRESS_HOST_IPV6,          /* an IPv6 literal (bracketed in CONNECT) */
        EGRESS_HOST_IPV4_DISGUISED /* 0x7f.1, 017.0.0.1, 2130706433, 127.1: what inet_aton would take */
} EgressHostKind;

/* Normalises `in` into out (at least EGRESS_HOST_MAX + 1 bytes). Returns 0 and
 * the kind, or -EINVAL for what is not a host name (empty labels, bad
 * characters, non-ASCII, labels over 63 bytes, over 253 bytes). IP
 * literals are reported as such, not refused: refusing is policy. */
int egress_host_normalize(const char *in, bool bracketed, char *out, size_t out_size, EgressHostKind *ret_kind);

/* An allow, deny or floor entry: "example.org", "*.example.org",
 * "example.org:8443", "*" (any host; with a port, only that port). */
typedef struct EgressPattern {
        char domain[EGRESS_HOST_MAX + 1];   /* normalised; empty for "*" */
        bool any_host;                      /* "*" */
        bool subdomains;                    /* "*.domain": strict subdomains only */
        uint16_t port;                      /* 0: none named */
} EgressPattern;

/* Returns 0 or -EINVAL. A pattern naming an IP address is refused: the
 * proxy never connects to literals, so such a rule would only mislead. */
int egress_pattern_parse(const char *s, EgressPattern *ret);

/* Writes the pattern back in the syntax egress_pattern_parse() takes. */
int egress_pattern_format(const EgressPattern *p, char *buf, size_t size);

/* Does the normalised host match, ignoring ports? */
bool egress_pattern_match_host(const EgressPattern *p, const char *host);

/* Host and port: a pattern without a port matches only default_port, or
 * any port when default_port is 0 (deny rules and the operator floor). */
bool egress_pattern_match(const EgressPattern *p, const char *host, uint16_t port, uint16_t default_port);

/* Whether every destination INNER matches (a pattern without a port meaning
 * INNER_DEFAULT_PORT, or every port when that is 0) is matched by OUTER too
 * (a port-less OUTER bounds the host only): an allow-list entry inside an
 * operator floor entry. */
bool egress_pattern_within(const EgressPattern *inner, uint16_t inner_default_port, const EgressPattern *outer);
