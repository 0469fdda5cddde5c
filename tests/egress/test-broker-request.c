/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The broker's request path: what reaches the upstream, and every framing
 * trick refused before anything would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-path.h"
#include "broker-request.h"

static char *methods[] = { "GET", "POST", NULL };
static char *paths[] = { "/models", "/chat/", NULL };
static const BrokerRoute route = {
        .host = "api.example.org", .port = 443, .base = "/v1",
        .methods = methods, .paths = paths,
        .inject_name = "Authorization", .inject_value = "Bearer sk-secret",
        .max_request_bytes = 16,
};

static int parse(const char *in, BrokerRequest *req, BrokerRefusal *refusal) {
        return broker_request_parse(&route, (const uint8_t *) in, strlen(in), req, refusal);
}

static void assert_refused(const char *in, int status, const char *reason) {
        BrokerRequest req;
        BrokerRefusal refusal;
        int r = parse(in, &req, &refusal);
        if (r != BROKER_PARSE_REFUSED)
                fail_msg("not refused (%d): %s", r, in);
        assert_int_equal(refusal.status, status);
        assert_string_equal(refusal.reason, reason);
        assert_null(req.upstream);
}

static void assert_upstream(const char *in, const char *want, size_t want_consumed) {
        BrokerRequest req;
        BrokerRefusal refusal;
        int r = parse(in, &req, &refusal);
        if (r != BROKER_PARSE_OK)
                fail_msg("not parsed (%d, %d %s): %s", r, refusal.status, refusal.reason ?: "", in);
        assert_int_equal(req.upstream_size, strlen(want));
        assert_memory_equal(req.upstream, want, strlen(want));
        assert_int_equal(req.consumed, want_consumed);
        broker_request_done(&req);
}

static void test_get_rewritten(void **state) {
        const char *in = "GET /models?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8001\r\nAccept: */*\r\n"
                         "Authorization: Bearer worker-guess\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\n\r\n";
        BrokerRequest req;
        BrokerRefusal refusal;

        assert_upstream(in, "GET /v1/models?x=1 HTTP/1.1\r\nHost: api.example.org\r\nAccept: */*\r\n"
                            "Authorization: Bearer sk-secret\r\n\r\n", strlen(in));
        assert_int_equal(parse(in, &req, &refusal), BROKER_PARSE_OK);
        assert_true(req.keep_alive);
        assert_string_equal(req.method, "GET");
        assert_string_equal(req.path, "/models?x=1");
        broker_request_done(&req);
}

static void test_injected_header_name_case(void **state) {
        assert_upstream("GET /models HTTP/1.1\r\nauthorization: mine\r\nAUTHORIZATION: again\r\n\r\n",
                        "GET /v1/models HTTP/1.1\r\nHost: api.example.org\r\nAuthorization: Bearer sk-secret\r\n\r\n",
                        strlen("GET /models HTTP/1.1\r\nauthorization: mine\r\nAUTHORIZATION: again\r\n\r\n"));
}

static void test_post_bodies(void **state) {
        const char *cl = "POST /chat/x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        const char *chunked = "POST /chat/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
        const char *want = "POST /v1/chat/x HTTP/1.1\r\nHost: api.example.org\r\nAuthorization: Bearer sk-secret\r\n"
                           "Content-Length: 5\r\n\r\nhello";

        assert_upstream(cl, want, strlen(cl));
        /* A chunked body reaches the upstream with one framing: Content-Length. */
        assert_upstream(chunked, want, strlen(chunked));
}

static void test_keep_alive_pipelined(void **state) {
        const char *two = "GET /models HTTP/1.1\r\n\r\nGET /chat/ HTTP/1.1\r\n\r\n";
        BrokerRequest req;
        BrokerRefusal refusal;

        assert_int_equal(parse(two, &req, &refusal), BROKER_PARSE_OK);
        assert_int_equal(req.consumed, strlen("GET /models HTTP/1.1\r\n\r\n"));
        broker_request_done(&req);
        assert_int_equal(parse(two + strlen("GET /models HTTP/1.1\r\n\r\n"), &req, &refusal), BROKER_PARSE_OK);
        assert_string_equal(req.path, "/chat/");
        broker_request_done(&req);
        assert_int_equal(parse("GET /models HTTP/1.0\r\n\r\n", &req, &refusal), BROKER_PARSE_OK);
        assert_false(req.keep_alive);
        broker_request_done(&req);
}

static void test_incomplete(void **state) {
        BrokerRequest req;
        BrokerRefusal refusal;

        assert_int_equal(parse("GET /models HTTP/1.1\r\nAccept: x\r", &req, &refusal), BROKER_PARSE_MORE);
        assert_int_equal(parse("GET /models HTTP/1.1\r\n", &req, &refusal), BROKER_PARSE_MORE);
        assert_int_equal(parse("POST /chat/ HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhe",
                               &req, &refusal), BROKER_PARSE_MORE);
        assert_true(req.expect_continue);
        assert_null(req.upstream);
}

static void test_method_and_path(void **state) {
        assert_refused("DELETE /models HTTP/1.1\r\n\r\n", 405, "method-not-allowed");
        assert_refused("GET /admin HTTP/1.1\r\n\r\n", 403, "path-not-allowed");
        assert_refused("GET /modelsX HTTP/1.1\r\n\r\n", 403, "path-not-allowed");
        assert_refused("GET /chat HTTP/1.1\r\n\r\n", 403, "path-not-allowed");
        assert_refused("GET /models/../admin HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET /models/%2e%2e/admin HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET /models%2fx HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET //evil.example/models HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET http://evil.example/models HTTP/1.1\r\n\r\n", 400, "target-not-a-path");
        assert_refused("CONNECT evil.example:443 HTTP/1.1\r\n\r\n", 405, "method-not-allowed");
}

static void test_smuggling(void **state) {
        assert_refused("POST /chat/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                       400, "ambiguous-framing");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
                       400, "ambiguous-framing");
        /* libhttp-parser refuses a second Content-Length itself, equal or not. */
        assert_refused("POST /chat/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
                       400, "ambiguous-framing");
        assert_refused("POST /chat/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                       400, "ambiguous-framing");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                       501, "unsupported-transfer-encoding");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                       400, "invalid-chunk-size");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
                       400, "invalid-chunk-size");
        /* Found by fuzz-broker-request: a name with a space before the colon
         * passed as another header and reached the upstream beside ours. */
        assert_refused("POST /chat/ HTTP/1.1\r\nContent-Length :1\r\n\r\na", 400, "invalid-header-name");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400,
                       "invalid-header-name");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n", 400,
                       "malformed-request");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encodingx: 3\r\nContent-Length: 1\r\n\r\na", 400,
                       "ambiguous-framing");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encodingx: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                       400, "ambiguous-framing");
        assert_refused("POST /chat/ HTTP/1.1\r\nContent-Length2: 3\r\n\r\n", 400, "ambiguous-framing");
        assert_refused("GET /models HTTP/1.1\nHost: x\r\n\r\n", 400, "bare-lf");
        assert_refused("GET /models HTTP/1.1\r\nX: a\rHost: x\r\n\r\n", 400, "bare-cr");
        assert_refused("GET /models HTTP/1.1\r\nX: a\r\n Authorization: y\r\n\r\n", 400, "obs-fold");
        assert_refused("GET /models HTTP/1.1\r\nX: a\x01\r\n\r\n", 400, "control-character");
        /* A path carrying a second request line. */
        assert_refused("GET /models%0d%0aX:y HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET /models%00 HTTP/1.1\r\n\r\n", 400, "invalid-path");
        assert_refused("GET /models X HTTP/1.1\r\n\r\n", 400, "malformed-request");
        assert_refused("GET /models\r\nX: y HTTP/1.1\r\n\r\n", 505, "http-version-not-supported");
        assert_refused("GET /models HTTP/2.0\r\n\r\n", 505, "http-version-not-supported");
        assert_refused("GET /models HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
                       501, "upgrade-refused");
}

static void test_body_cap(void **state) {
        char body17[64];

        snprintf(body17, sizeof(body17), "POST /chat/ HTTP/1.1\r\nContent-Length: 17\r\n\r\n");
        /* Refused from the header alone: the upstream is never asked. */
        assert_refused(body17, 413, "request-too-large");
        assert_refused("POST /chat/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n0123456789abcdefg\r\n0\r\n\r\n",
                       413, "request-too-large");
        assert_upstream("POST /chat/ HTTP/1.1\r\nContent-Length: 16\r\n\r\n0123456789abcdef",
                        "POST /v1/chat/ HTTP/1.1\r\nHost: api.example.org\r\nAuthorization: Bearer sk-secret\r\n"
                        "Content-Length: 16\r\n\r\n0123456789abcdef",
                        strlen("POST /chat/ HTTP/1.1\r\nContent-Length: 16\r\n\r\n0123456789abcdef"));
}

static void test_head_cap(void **state) {
        size_t n = BROKER_HEAD_MAX + 16;
        char *big = malloc(n + 1);
        BrokerRequest req;
        BrokerRefusal refusal;

        memcpy(big, "GET /models HTTP/1.1\r\nX: ", 25);
        memset(big + 25, 'a', n - 25);
        big[n] = 0;
        assert_int_equal(broker_request_parse(&route, (uint8_t *) big, n, &req, &refusal), BROKER_PARSE_REFUSED);
        assert_int_equal(refusal.status, 431);
        free(big);
}

static void test_paths(void **state) {
        assert_true(broker_path_is_valid("/", 1));
        assert_true(broker_path_is_valid("/v1/", 4));
        assert_false(broker_path_is_valid("/a/./b", 6));
        assert_false(broker_path_is_valid("/a/..", 5));
        assert_false(broker_path_is_valid("/a%2Eb", 6));
        assert_false(broker_path_is_valid("/a%", 3));
        assert_true(broker_path_allowed("/models", 7, "/models"));
        assert_true(broker_path_allowed("/models/1", 9, "/models"));
        assert_false(broker_path_allowed("/modelsX", 8, "/models"));
        assert_true(broker_path_allowed("/chat/x", 7, "/chat/"));
        assert_false(broker_path_allowed("/chat", 5, "/chat/"));
        assert_true(broker_path_allowed("/anything", 9, "/"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_rewritten),
                cmocka_unit_test(test_injected_header_name_case),
                cmocka_unit_test(test_post_bodies),
                cmocka_unit_test(test_keep_alive_pipelined),
                cmocka_unit_test(test_incomplete),
                cmocka_unit_test(test_method_and_path),
                cmocka_unit_test(test_smuggling),
                cmocka_unit_test(test_body_cap),
                cmocka_unit_test(test_head_cap),
                cmocka_unit_test(test_paths),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
