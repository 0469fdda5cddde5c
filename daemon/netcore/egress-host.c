/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "egress-host.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

/* A label that inet_aton() would read as a number: decimal, 0-prefixed
 * octal, or 0x hex (an empty "0x" included). */
static bool label_is_numeric(const char *s, size_t n) {
        if (n >= 2 && s[0] == '0' && s[1] == 'x') {
                for (size_t i = 2; i < n; i++)
                        if (!is_hex(s[i]))
                                return false;
                return true;
        }
        for (size_t i = 0; i < n; i++)
                if (!is_digit(s[i]))
                        return false;
        return n > 0;
}

/* No top-level domain is numeric, so a name whose last label reads as a
 * number is an IPv4 address in some spelling; resolvers would treat it as
 * one. Only the canonical dotted quad counts as plain IPv4. */
static EgressHostKind classify_numeric(const char *host) {
        const char *last = strrchr(host, '.');
        last = last ? last + 1 : host;
        if (!label_is_numeric(last, strlen(last)))
                return EGRESS_HOST_NAME;

        struct in_addr a;
        char canonical[INET_ADDRSTRLEN];
        if (inet_pton(AF_INET, host, &a) == 1 &&
            inet_ntop(AF_INET, &a, canonical, sizeof(canonical)) &&
            strcmp(canonical, host) == 0)
                return EGRESS_HOST_IPV4;
        return EGRESS_HOST_IPV4_DISGUISED;
}

int egress_host_normalize(const char *in, bool bracketed, char *out, size_t out_size, EgressHostKind *ret_kind) {
        size_t n, label_len = 0;

        assert(in);
        assert(out);

        n = strlen(in);
        if (bracketed) {
                struct in6_addr a6;
                if (n == 0 || n >= out_size || inet_pton(AF_INET6, in, &a6) != 1)
                        return -EINVAL;
                inet_ntop(AF_INET6, &a6, out, (socklen_t) out_size);
                if (ret_kind)
                        *ret_kind = EGRESS_HOST_IPV6;
                return 0;
        }
        if (n > 0 && in[n - 1] == '.')
                n--;   /* one trailing dot: the absolute form of the same name */
        if (n == 0 || n > EGRESS_HOST_MAX || n >= out_size)
                return -EINVAL;

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) in[i];
                if (c >= 'A' && c <= 'Z')
                        c = (unsigned char) (c - 'A' + 'a');
                if (c == '.') {
                        if (label_len == 0)
                                return -EINVAL;
                        label_len = 0;
                } else if ((c >= 'a' && c <= 'z') || is_digit((char) c) || c == '-' || c == '_') {
                        if (++label_len > 63)
                                return -EINVAL;
                } else
                        return -EINVAL;   /* non-ASCII included: IDNs must come as xn-- */
                out[i] = (char) c;
        }
        if (label_len == 0)
                return -EINVAL;
        out[n] = 0;

        /* Labels may not start or end with '-' (RFC 952/1123); "xn--" is fine. */
        for (const char *label = out; label; ) {
                const char *dot = strchr(label, '.');
                size_t len = dot ? (size_t) (dot - label) : strlen(label);
                if (label[0] == '-' || label[len - 1] == '-')
                        return -EINVAL;
                label = dot ? dot + 1 : NULL;
        }
        if (ret_kind)
                *ret_kind = classify_numeric(out);
        return 0;
}

static int parse_port_suffix(const char *s, uint16_t *ret) {
        unsigned long v = 0;
        size_t n = strlen(s);
        if (n == 0 || n > 5 || s[0] == '0')
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        return -EINVAL;
                v = v * 10 + (unsigned long) (s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int egress_pattern_parse(const char *s, EgressPattern *ret) {
        EgressPattern p = {};
        char host[EGRESS_HOST_MAX + 2];
        const char *colon;
        size_t host_len;
        EgressHostKind kind;
        int r;

        assert(s);
        assert(ret);

        colon = strrchr(s, ':');
        host_len = colon ? (size_t) (colon - s) : strlen(s);
        if (colon && parse_port_suffix(colon + 1, &p.port) < 0)
                return -EINVAL;
        if (host_len == 0 || host_len >= sizeof(host))
                return -EINVAL;
        memcpy(host, s, host_len);
        host[host_len] = 0;

        if (strcmp(host, "*") == 0) {
                p.any_host = true;
                *ret = p;
                return 0;
        }
        const char *domain = host;
        if (strncmp(host, "*.", 2) == 0) {
                p.subdomains = true;
                domain += 2;
        }
        if (strchr(domain, '*'))
                return -EINVAL;   /* wildcards only as a whole leading label */
        r = egress_host_normalize(domain, false, p.domain, sizeof(p.domain), &kind);
        if (r < 0)
                return r;
        if (kind != EGRESS_HOST_NAME)
                return -EINVAL;
        *ret = p;
        return 0;
}

int egress_pattern_format(const EgressPattern *p, char *buf, size_t size) {
        char port[8] = "";
        int n;

        assert(p);
        if (p->port)
                snprintf(port, sizeof(port), ":%u", p->port);
        n = snprintf(buf, size, "%s%s%s", p->any_host ? "*" : p->subdomains ? "*." : "",
                     p->any_host ? "" : p->domain, port);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}

bool egress_pattern_match_host(const EgressPattern *p, const char *host) {
        size_t hl, dl;

        assert(p);
        assert(host);
        if (p->any_host)
                return true;
        if (!p->subdomains)
                return strcmp(p->domain, host) == 0;
        /* "*.example.org": something, a dot, then exactly the domain. */
        hl = strlen(host);
        dl = strlen(p->domain);
        return hl > dl + 1 && host[hl - dl - 1] == '.' && strcmp(host + hl - dl, p->domain) == 0;
}

bool egress_pattern_match(const EgressPattern *p, const char *host, uint16_t port, uint16_t default_port) {
        if (!egress_pattern_match_host(p, host))
                return false;
        if (p->port)
                return port == p->port;
        return default_port == 0 || port == default_port;
}

bool egress_pattern_within(const EgressPattern *inner, uint16_t inner_default_port, const EgressPattern *outer) {
        uint16_t port = inner->port ?: inner_default_port;
        bool host;

        assert(inner);
        assert(outer);
        if (outer->port && port != outer->port)
                return false;   /* inner with no port and no default names every port */
        if (outer->any_host)
                host = true;
        else if (inner->any_host)
                host = false;
        else if (!inner->subdomains)
                host = egress_pattern_match_host(outer, inner->domain);
        else
                /* "*.a.b" is within "*.b" and "*.a.b"; never within an exact name. */
                host = outer->subdomains && (strcmp(inner->domain, outer->domain) == 0 ||
                                             egress_pattern_match_host(outer, inner->domain));
        return host;
}
