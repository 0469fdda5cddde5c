/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "egress-refusal.h"

const char *egress_status_text(int code) {
        switch (code) {
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        default:  return "Bad Gateway";
        }
}

static bool display_char(char c, bool reason) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr(reason ? "-_.:/ " : "-_.:", c);
}

/* Copies at most MAX bytes of S, each either a display character or '?'. */
static void sanitize(char *out, size_t max, const char *s, bool reason) {
        size_t i = 0;

        for (; s && s[i] && i < max; i++)
                out[i] = display_char(s[i], reason) ? s[i] : '?';
        out[i] = 0;
}

size_t egress_refusal_format(char *buf, size_t size, int code, const char *host, uint16_t port, const char *reason) {
        char h[EGRESS_REFUSAL_HOST_MAX + 1], r[128], body[512];
        bool v6;
        int n, k;

        sanitize(h, EGRESS_REFUSAL_HOST_MAX, host, false);
        sanitize(r, sizeof(r) - 1, reason ?: "-", true);
        /* An IPv6 literal is written as the request wrote it, in brackets. */
        v6 = strchr(h, ':') && strspn(h, "0123456789abcdefABCDEF:.") == strlen(h);
        if (!h[0])
                n = snprintf(body, sizeof(body), "sandbox-egress: %s the request: %s\n",
                             code == 403 ? "refused" : "could not serve", r);
        else
                n = snprintf(body, sizeof(body), "sandbox-egress: %s CONNECT to %s%s%s:%" PRIu16 ": %s\n",
                             code == 403 ? "refused" : "could not complete", v6 ? "[" : "", h, v6 ? "]" : "",
                             port, r);
        if (n < 0 || (size_t) n >= sizeof(body))
                return 0;
        k = snprintf(buf, size,
                     "HTTP/1.1 %d %s\r\nX-Sandbox-Egress-Reason: %s\r\nContent-Type: text/plain; charset=us-ascii\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                     code, egress_status_text(code), r, n, body);
        return k < 0 || (size_t) k >= size ? 0 : (size_t) k;
}

size_t egress_broker_refusal_format(char *buf, size_t size, int code, const char *service, const char *reason) {
        char svc[64], r[128], body[256];
        int n, k;

        sanitize(svc, sizeof(svc) - 1, service, false);
        sanitize(r, sizeof(r) - 1, reason ?: "-", true);
        n = snprintf(body, sizeof(body), "sandbox-egress broker: %s the request to service %s: %s\n",
                     code < 500 ? "refused" : "could not complete", svc, r);
        if (n < 0 || (size_t) n >= sizeof(body))
                return 0;
        k = snprintf(buf, size,
                     "HTTP/1.1 %d %s\r\nX-Sandbox-Egress-Reason: %s\r\nContent-Type: text/plain; charset=us-ascii\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                     code, egress_status_text(code), r, n, body);
        return k < 0 || (size_t) k >= size ? 0 : (size_t) k;
}
