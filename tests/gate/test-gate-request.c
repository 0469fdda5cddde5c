/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gate's request path (broker-request.c with the gate's route): the
 * token before anything else, in every refusal the handler gets nothing;
 * and beside each refusal the same request that passes. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-request.h"
#include "gate-config.h"

static char *root[] = { "/", NULL };
static const uint8_t token[] = "t0k3n-abc";

static BrokerRoute gate_route(bool front) {
        return (BrokerRoute) {
                .host = "127.0.0.1", .port = 8080, .base = "", .paths = root,
                .max_request_bytes = 16,
                .require_token = token, .require_token_size = sizeof(token) - 1,
                .any_method = true, .keep_host = true, .keep_forwarded = front,
        };
}

static int parse_with(const BrokerRoute *route, const char *in, BrokerRequest *req, BrokerRefusal *refusal) {
        return broker_request_parse(route, (const uint8_t *) in, strlen(in), req, refusal);
}

static void assert_refused(bool front, const char *in, int status, const char *reason) {
        BrokerRoute route = gate_route(front);
        BrokerRequest req;
        BrokerRefusal refusal;
        int r = parse_with(&route, in, &req, &refusal);
        if (r != BROKER_PARSE_REFUSED)
                fail_msg("not refused (%d): %s", r, in);
        assert_int_equal(refusal.status, status);
        assert_string_equal(refusal.reason, reason);
        assert_null(req.upstream);
}

static void assert_upstream(bool front, const char *in, const char *want) {
        BrokerRoute route = gate_route(front);
        BrokerRequest req;
        BrokerRefusal refusal;
        int r = parse_with(&route, in, &req, &refusal);
        if (r != BROKER_PARSE_OK)
                fail_msg("not parsed (%d, %d %s): %s", r, refusal.status, refusal.reason ?: "", in);
        if (req.upstream_size != strlen(want) || memcmp(req.upstream, want, strlen(want)) != 0)
                fail_msg("upstream differs:\n%.*s\nwanted:\n%s", (int) req.upstream_size, req.upstream, want);
        assert_int_equal(req.consumed, strlen(in));
        broker_request_done(&req);
}

#define AUTH "Authorization: Bearer t0k3n-abc\r\n"

static void test_token_passes_and_is_stripped(void **state) {
        assert_upstream(false, "GET /x?q=1 HTTP/1.1\r\nHost: w1.example\r\n" AUTH "Accept: */*\r\n\r\n",
                        "GET /x?q=1 HTTP/1.1\r\nHost: w1.example\r\nAccept: */*\r\n\r\n");
        /* The scheme's case does not matter (RFC 9110 11.1). */
        assert_upstream(false, "GET / HTTP/1.1\r\nHost: a\r\nauthorization: bearer t0k3n-abc\r\n\r\n",
                        "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
}

static void test_token_missing_or_wrong(void **state) {
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 401, "missing-token");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic dDB\r\n\r\n", 401, "missing-token");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \r\n\r\n", 401, "missing-token");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t0k3n-abd\r\n\r\n", 401, "wrong-token");
        /* A prefix or an extension of the token is not the token. */
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t0k3n-ab\r\n\r\n", 401, "wrong-token");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t0k3n-abcd\r\n\r\n", 401, "wrong-token");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\n" AUTH "Authorization: Bearer x\r\n\r\n", 401,
                       "ambiguous-token");
}

/* Without the token, a caller learns nothing of the gate's other rules. */
static void test_token_checked_first(void **state) {
        assert_refused(false, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999\r\n\r\n", 401, "missing-token");
        assert_refused(false, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                       401, "missing-token");
        /* With the token, the same requests meet the framing rules. */
        assert_refused(false, "POST / HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 99999\r\n\r\n", 413,
                       "request-too-large");
        assert_refused(false, "POST / HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                       400, "ambiguous-framing");
}

static void test_smuggling_refused(void **state) {
        assert_refused(false, "POST / HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                       400, "ambiguous-framing");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\n" AUTH "X: a\rb\r\n\r\n", 400, "bare-cr");
        /* A second Authorization folded into another header's value is no token. */
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nX: Authorization: Bearer t0k3n-abc\r\n\r\n", 401,
                       "missing-token");
        assert_refused(false, "GET / HTTP/1.1\nHost: a\r\n" AUTH "\r\n", 400, "bare-lf");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\n" AUTH "X: a\r\n b\r\n\r\n", 400, "obs-fold");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n" AUTH "\r\n", 400, "duplicate-host");
        assert_refused(false, "GET http://other/ HTTP/1.1\r\nHost: a\r\n" AUTH "\r\n", 400, "target-not-a-path");
        assert_refused(false, "GET / HTTP/1.1\r\nHost: a\r\n" AUTH "Upgrade: websocket\r\n\r\n", 501, "upgrade-refused");
        /* The control: the same shape, framed once. */
        assert_upstream(false, "POST /p HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 1\r\n\r\nx",
                        "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx");
}

static void test_body_cap(void **state) {
        /* 16 bytes pass, 17 are refused; chunked the same. */
        assert_upstream(false, "PUT /f HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 16\r\n\r\n0123456789abcdef",
                        "PUT /f HTTP/1.1\r\nHost: a\r\nContent-Length: 16\r\n\r\n0123456789abcdef");
        assert_refused(false, "PUT /f HTTP/1.1\r\nHost: a\r\n" AUTH "Content-Length: 17\r\n\r\n", 413,
                       "request-too-large");
        assert_refused(false, "PUT /f HTTP/1.1\r\nHost: a\r\n" AUTH "Transfer-Encoding: chunked\r\n\r\n11\r\n"
                              "0123456789abcdefg\r\n0\r\n\r\n", 413, "request-too-large");
}

static void test_hop_by_hop_and_forwarded(void **state) {
        const char *in = "DELETE /r HTTP/1.1\r\nHost: a\r\n" AUTH "Connection: keep-alive, X-Secret\r\n"
                         "Keep-Alive: 5\r\nTE: trailers\r\nProxy-Authorization: p\r\nX-Forwarded-For: 1.2.3.4\r\n"
                         "X-Forwarded-Proto: https\r\nForwarded: for=1.2.3.4\r\nX-Real-IP: 1.2.3.4\r\nX-App: 1\r\n\r\n";
        /* Any method reaches the handler; over TCP the forwarding headers are the caller's own word: dropped. */
        assert_upstream(false, in, "DELETE /r HTTP/1.1\r\nHost: a\r\nX-App: 1\r\n\r\n");
        /* From the front on the UNIX socket they go on. */
        assert_upstream(true, in, "DELETE /r HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.2.3.4\r\n"
                                  "X-Forwarded-Proto: https\r\nForwarded: for=1.2.3.4\r\nX-Real-IP: 1.2.3.4\r\nX-App: 1\r\n\r\n");
        /* No Host: the handler's own address. */
        assert_upstream(false, "GET / HTTP/1.1\r\n" AUTH "\r\n", "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
}

static void test_public_route(void **state) {
        BrokerRoute route = gate_route(true);
        BrokerRequest req;
        BrokerRefusal refusal;

        route.require_token = NULL;
        route.require_token_size = 0;
        assert_int_equal(parse_with(&route, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer mine\r\n\r\n", &req,
                                    &refusal), BROKER_PARSE_OK);
        /* The caller's own Authorization is not the handler's business either. */
        assert_null(strstr(req.upstream, "Authorization"));
        broker_request_done(&req);
}

static void test_config_round_trip(void **state) {
        GateConfig c, back;
        char *text;
        unsigned bad;

        gate_config_init(&c);
        snprintf(c.worker_id, sizeof(c.worker_id), "w-1");
        snprintf(c.upstream_host, sizeof(c.upstream_host), "10.255.255.2");
        c.upstream_port = 8000;
        c.max_concurrent = 3;
        c.public = true;
        assert_int_equal(gate_config_format(&c, &text), 0);
        assert_int_equal(gate_config_parse(text, strlen(text), &back, &bad), 0);
        assert_memory_equal(&c, &back, sizeof(c));
        free(text);
        assert_int_equal(gate_config_parse("worker=w\nupstream=127.0.0.1:1\nbogus=1\n", 38, &back, &bad), -EINVAL);
        assert_int_equal(bad, 3);
        assert_int_equal(gate_config_parse("worker=w\nupstream=localhost:1\n", 30, &back, &bad), -EINVAL);
        assert_int_equal(gate_config_parse("worker=w\n", 9, &back, &bad), -EINVAL);
        assert_int_equal(gate_config_parse("worker=w\nupstream=127.0.0.1:80\n", 31, &back, &bad), 0);
        assert_int_equal(back.max_request_bytes, GATE_BODY_DEFAULT);
}

/* The gate's STATUS= read back as sandboxd does: the served and open
 * counts of the text the gate sends (and of the older one without "open="),
 * and nothing from any other text. */
static void test_status_parse(void **state) {
        char text[96];
        GateStatus st = { .served = 5, .open = 5 };

        snprintf(text, sizeof(text), GATE_STATUS_FORMAT, (uint64_t) 42, (uint64_t) 7, 3u);
        assert_int_equal(gate_status_parse(text, &st), 0);
        assert_int_equal(st.served, 42);
        assert_int_equal(st.open, 3);
        snprintf(text, sizeof(text), GATE_STATUS_FORMAT, UINT64_MAX, (uint64_t) 0, UINT_MAX);
        assert_int_equal(gate_status_parse(text, &st), 0);
        assert_true(st.served == UINT64_MAX);
        assert_true(st.open == UINT_MAX);
        assert_int_equal(gate_status_parse("served=9 refused=1", &st), 0);
        assert_int_equal(st.served, 9);
        assert_int_equal(st.open, 0);
        static const char *const bad[] = {
                "", "served=", "served=1", "served=1 refused=", "served=-1 refused=0", "served= 1 refused=0",
                "served=1  refused=0", "served=1 refused=0 ", "served=1x refused=0", "refused=0 served=1",
                "served=18446744073709551616 refused=0", "Served=1 refused=0", "ready",
                "served=1 refused=0 open=", "served=1 refused=0 open=-1", "served=1 refused=0 open=1 ",
                "served=1 refused=0 open=4294967296", "served=1 refused=0 busy=1", "served=1 refused=0 open=1 x=2",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (gate_status_parse(bad[i], &st) != -EINVAL)
                        fail_msg("taken as a status: \"%s\"", bad[i]);
        assert_int_equal(gate_status_parse(NULL, &st), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_token_passes_and_is_stripped),
                cmocka_unit_test(test_token_missing_or_wrong),
                cmocka_unit_test(test_token_checked_first),
                cmocka_unit_test(test_smuggling_refused),
                cmocka_unit_test(test_body_cap),
                cmocka_unit_test(test_hop_by_hop_and_forwarded),
                cmocka_unit_test(test_public_route),
                cmocka_unit_test(test_config_round_trip),
                cmocka_unit_test(test_status_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
