/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "egress-refusal.h"

/* Formats a refusal and returns its body, checking the head: the status,
 * the reason header, and a Content-Length that is the body's. */
static const char *body_of(char *buf, size_t size, int code, const char *host, unsigned port, const char *reason,
                           const char *status_line) {
        size_t n = egress_refusal_format(buf, size, code, host, (uint16_t) port, reason);
        char *end, *cl;

        assert_true(n > 0);
        assert_int_equal(n, strlen(buf));
        assert_true(strncmp(buf, status_line, strlen(status_line)) == 0);
        end = strstr(buf, "\r\n\r\n");
        assert_non_null(end);
        cl = strstr(buf, "\r\nContent-Length: ");
        assert_non_null(cl);
        assert_true(cl < end);
        assert_int_equal(strtoul(cl + strlen("\r\nContent-Length: "), NULL, 10), strlen(end + 4));
        assert_non_null(strstr(buf, "\r\nContent-Type: text/plain"));
        return end + 4;
}

static void test_refused_connect(void **state) {
        char buf[1024];
        const char *body = body_of(buf, sizeof(buf), 403, "denied.example", 443, "not-in-allow-list",
                                   "HTTP/1.1 403 Forbidden\r\n");
        assert_string_equal(body, "sandbox-egress: refused CONNECT to denied.example:443: not-in-allow-list\n");
        assert_non_null(strstr(buf, "\r\nX-Sandbox-Egress-Reason: not-in-allow-list\r\n"));
}

static void test_reason_with_range(void **state) {
        char buf[1024];
        const char *body = body_of(buf, sizeof(buf), 403, "internal.example", 443, "private-address private 10.0.0.0/8",
                                   "HTTP/1.1 403 Forbidden\r\n");
        assert_string_equal(body,
                            "sandbox-egress: refused CONNECT to internal.example:443: private-address private 10.0.0.0/8\n");
}

/* No host yet (the request did not parse): the reason alone. */
static void test_no_host(void **state) {
        char buf[1024];
        const char *body = body_of(buf, sizeof(buf), 403, "", 0, "plain-http", "HTTP/1.1 403 Forbidden\r\n");
        assert_string_equal(body, "sandbox-egress: refused the request: plain-http\n");
        body = body_of(buf, sizeof(buf), 408, NULL, 0, "request-timeout", "HTTP/1.1 408 Request Timeout\r\n");
        assert_string_equal(body, "sandbox-egress: could not serve the request: request-timeout\n");
}

static void test_upstream_fault(void **state) {
        char buf[1024];
        const char *body = body_of(buf, sizeof(buf), 502, "gone.example", 8443, "name-not-found",
                                   "HTTP/1.1 502 Bad Gateway\r\n");
        assert_string_equal(body, "sandbox-egress: could not complete CONNECT to gone.example:8443: name-not-found\n");
        body = body_of(buf, sizeof(buf), 504, "slow.example", 443, "connect-timeout", "HTTP/1.1 504 Gateway Timeout\r\n");
        assert_string_equal(body, "sandbox-egress: could not complete CONNECT to slow.example:443: connect-timeout\n");
}

static void test_ipv6_host_bracketed(void **state) {
        char buf[1024];
        const char *body = body_of(buf, sizeof(buf), 403, "::1", 443, "ip-literal", "HTTP/1.1 403 Forbidden\r\n");
        assert_string_equal(body, "sandbox-egress: refused CONNECT to [::1]:443: ip-literal\n");
}

/* What the client sent never comes back as it was: no header or line it
 * could inject, no markup, and no more than a name's length of it. */
static void test_hostile_host(void **state) {
        char buf[1024], longhost[2000];
        const char *body = body_of(buf, sizeof(buf), 403, "evil\r\nX-Injected: 1\r\n\r\n<script>\xc3\xa9", 443,
                                   "invalid-host", "HTTP/1.1 403 Forbidden\r\n");
        assert_string_equal(body, "sandbox-egress: refused CONNECT to evil??X-Injected:?1?????script???:443: invalid-host\n");
        assert_null(strstr(buf, "\r\nX-Injected"));

        memset(longhost, 'a', sizeof(longhost) - 1);
        longhost[sizeof(longhost) - 1] = 0;
        body = body_of(buf, sizeof(buf), 403, longhost, 443, "invalid-host", "HTTP/1.1 403 Forbidden\r\n");
        assert_int_equal(strlen(body), strlen("sandbox-egress: refused CONNECT to :443: invalid-host\n") +
                                       EGRESS_REFUSAL_HOST_MAX);
        body = body_of(buf, sizeof(buf), 403, "x.example", 443, "bad\r\nreason", "HTTP/1.1 403 Forbidden\r\n");
        assert_non_null(strstr(buf, "\r\nX-Sandbox-Egress-Reason: bad??reason\r\n"));
}

static void test_small_buffer(void **state) {
        char buf[64];
        assert_int_equal(egress_refusal_format(buf, sizeof(buf), 403, "denied.example", 443, "not-in-allow-list"), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refused_connect),
                cmocka_unit_test(test_reason_with_range),
                cmocka_unit_test(test_no_host),
                cmocka_unit_test(test_upstream_fault),
                cmocka_unit_test(test_ipv6_host_bracketed),
                cmocka_unit_test(test_hostile_host),
                cmocka_unit_test(test_small_buffer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
