/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "connect-request.h"

static ConnectParseResult parse(const char *s, ConnectRequest *req) {
        return connect_request_parse((const uint8_t *) s, strlen(s), req);
}

static void test_simple(void **state) {
        ConnectRequest req;
        const char *s = "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\nUser-Agent: curl/7.88\r\n\r\n";
        assert_int_equal(parse(s, &req), CONNECT_PARSE_OK);
        assert_string_equal(req.host, "example.org");
        assert_int_equal(req.port, 443);
        assert_false(req.host_is_bracketed);
        assert_int_equal(req.request_size, strlen(s));
}

static void test_no_headers(void **state) {
        ConnectRequest req;
        assert_int_equal(parse("CONNECT a.b:8443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_OK);
        assert_int_equal(req.port, 8443);
}

static void test_ipv6(void **state) {
        ConnectRequest req;
        assert_int_equal(parse("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_OK);
        assert_string_equal(req.host, "2001:db8::1");
        assert_true(req.host_is_bracketed);
        assert_int_equal(parse("CONNECT [::ffff:169.254.169.254]:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_OK);
        assert_string_equal(req.host, "::ffff:169.254.169.254");
        assert_int_equal(parse("CONNECT [2001:db8::1:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT [2001:db8::g]:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT []:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
}

static void test_incremental(void **state) {
        const char *s = "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n";
        ConnectRequest req;
        size_t n = strlen(s);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(connect_request_parse((const uint8_t *) s, i, &req), CONNECT_PARSE_NEED_MORE);
        assert_int_equal(connect_request_parse((const uint8_t *) s, n, &req), CONNECT_PARSE_OK);
}

static void test_plain_http(void **state) {
        ConnectRequest req;
        assert_int_equal(parse("GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n", &req),
                         CONNECT_PARSE_NOT_CONNECT);
        assert_int_equal(parse("POST / HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_NOT_CONNECT);
        /* Refused before the line is even complete. */
        assert_int_equal(parse("GET ", &req), CONNECT_PARSE_NOT_CONNECT);
        assert_int_equal(parse("CONNECT http://example.org:443/ HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_NOT_CONNECT);
}

static void test_garbage(void **state) {
        ConnectRequest req;
        static const uint8_t tls[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01 };
        assert_int_equal(connect_request_parse(tls, sizeof(tls), &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("connect example.org:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT  example.org:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org: HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:0 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:0443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:65536 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:+443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT exa mple.org:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT user@example.org:443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT :443 HTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        /* Bare LF and CR: the start of request smuggling. */
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\n\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\nA: b\rc\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\nNoColon\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\n: empty\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\n folded\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1\r\nA: \x01\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
}

/* The request forms real clients send, byte for byte (issue 14). */
static void test_client_forms(void **state) {
        static const char *const forms[] = {
                /* Python 3.11 http.client (urllib, pip): HTTP/1.0, no Host */
                "CONNECT example.org:443 HTTP/1.0\r\n\r\n",
                /* ... with the headers urllib3 and set_tunnel() may add */
                "CONNECT example.org:443 HTTP/1.0\r\nUser-Agent: pip/23.0.1\r\n"
                "Proxy-Authorization: Basic dTpw\r\n\r\n",
                /* OpenSSL s_client -proxy */
                "CONNECT example.org:443 HTTP/1.0\r\nProxy-Connection: Keep-Alive\r\n\r\n",
                /* curl */
                "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\nUser-Agent: curl/7.88.1\r\n"
                "Proxy-Connection: Keep-Alive\r\n\r\n",
                /* wget, Node's agents: Host only, or nothing */
                "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n",
                "CONNECT example.org:443 HTTP/1.1\r\n\r\n",
                /* a Host that names something else is ignored: the request line decides */
                "CONNECT example.org:443 HTTP/1.0\r\nHost: other.example:80\r\nConnection: close\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                ConnectRequest req;
                assert_int_equal(parse(forms[i], &req), CONNECT_PARSE_OK);
                assert_string_equal(req.host, "example.org");
                assert_int_equal(req.port, 443);
                assert_int_equal(req.request_size, strlen(forms[i]));
        }
        /* HTTP/1.0 is no door to what 1.1 refuses. */
        ConnectRequest req;
        assert_int_equal(parse("GET http://example.org/ HTTP/1.0\r\n\r\n", &req), CONNECT_PARSE_NOT_CONNECT);
        assert_int_equal(parse("CONNECT http://example.org:443/ HTTP/1.0\r\n\r\n", &req), CONNECT_PARSE_NOT_CONNECT);
        assert_int_equal(parse("CONNECT a.org:443 HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n", &req),
                         CONNECT_PARSE_EXTRA_DATA);
        assert_int_equal(parse("CONNECT a.org:443 HTTP/1.0\r\n folded\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT a.org:443 HTTP/1.0\n\n", &req), CONNECT_PARSE_MALFORMED);
        const char *s = "CONNECT example.org:443 HTTP/1.0\r\n\r\n";
        for (size_t i = 0; i < strlen(s); i++)
                assert_int_equal(connect_request_parse((const uint8_t *) s, i, &req), CONNECT_PARSE_NEED_MORE);
}

static void test_version(void **state) {
        ConnectRequest req;
        assert_int_equal(parse("CONNECT example.org:443 HTTP/0.9\r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.2\r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.10\r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.0 \r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/\r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/2\r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 HTTP/1.1 \r\n\r\n", &req), CONNECT_PARSE_BAD_VERSION);
        assert_int_equal(parse("CONNECT example.org:443 XTTP/1.1\r\n\r\n", &req), CONNECT_PARSE_MALFORMED);
}

static void test_second_request(void **state) {
        ConnectRequest req;
        const char *two = "CONNECT a.org:443 HTTP/1.1\r\n\r\nCONNECT b.org:443 HTTP/1.1\r\n\r\n";
        assert_int_equal(parse(two, &req), CONNECT_PARSE_EXTRA_DATA);
        assert_int_equal(parse("CONNECT a.org:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n", &req), CONNECT_PARSE_EXTRA_DATA);
        /* Optimistic TLS right behind the request is fine. */
        assert_int_equal(parse("CONNECT a.org:443 HTTP/1.1\r\n\r\n\x16\x03\x01", &req), CONNECT_PARSE_OK);
        assert_int_equal(req.request_size, strlen("CONNECT a.org:443 HTTP/1.1\r\n\r\n"));
}

static void test_caps(void **state) {
        ConnectRequest req;
        char buf[CONNECT_REQUEST_MAX * 2];
        char host[300];

        memset(host, 'a', 254);
        host[254] = 0;
        snprintf(buf, sizeof(buf), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_TOO_LONG);
        host[253] = 0;
        snprintf(buf, sizeof(buf), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_OK);

        /* An endless request line. */
        memset(buf, 0, sizeof(buf));
        memcpy(buf, "CONNECT ", 8);
        memset(buf + 8, 'a', CONNECT_LINE_MAX + 10);
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_TOO_LONG);

        /* One endless header line. */
        memset(buf, 0, sizeof(buf));
        strcpy(buf, "CONNECT a.org:443 HTTP/1.1\r\nX-Long: ");
        memset(buf + strlen(buf), 'x', CONNECT_LINE_MAX + 10);
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_TOO_LONG);

        /* Too many headers. */
        memset(buf, 0, sizeof(buf));
        strcpy(buf, "CONNECT a.org:443 HTTP/1.1\r\n");
        for (int i = 0; i <= CONNECT_HEADERS_MAX; i++)
                strcat(buf, "A: b\r\n");
        strcat(buf, "\r\n");
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_TOO_LONG);

        /* Many headers of legal length that add up past the whole-request cap. */
        memset(buf, 0, sizeof(buf));
        strcpy(buf, "CONNECT a.org:443 HTTP/1.1\r\n");
        for (int i = 0; i < 12; i++) {
                size_t at = strlen(buf);
                memcpy(buf + at, "X: ", 3);
                memset(buf + at + 3, 'v', 900);
                memcpy(buf + at + 903, "\r\n", 3);
        }
        assert_int_equal(parse(buf, &req), CONNECT_PARSE_TOO_LONG);
}

static void test_strings(void **state) {
        assert_string_equal(connect_parse_result_to_string(CONNECT_PARSE_NOT_CONNECT), "plain-http");
        assert_string_equal(connect_parse_result_to_string(CONNECT_PARSE_EXTRA_DATA), "data-before-tunnel");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_simple),
                cmocka_unit_test(test_no_headers),
                cmocka_unit_test(test_ipv6),
                cmocka_unit_test(test_incremental),
                cmocka_unit_test(test_plain_http),
                cmocka_unit_test(test_garbage),
                cmocka_unit_test(test_client_forms),
                cmocka_unit_test(test_version),
                cmocka_unit_test(test_second_request),
                cmocka_unit_test(test_caps),
                cmocka_unit_test(test_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
