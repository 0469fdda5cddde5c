/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "broker-response.h"

/* Feeds S whole, then (unless done) the close; returns what the response took, or -1. */
static ssize_t feed(BrokerResponse *r, const char *s, uint64_t cap, bool head) {
        broker_response_init(r, cap, head);
        ssize_t k = broker_response_feed(r, (const uint8_t *) s, strlen(s));
        if (k >= 0 && !r->complete && broker_response_feed(r, NULL, 0) < 0)
                return -1;
        return k;
}

static void test_framings(void **state) {
        BrokerResponse r;
        const char *cl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        const char *chunked = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n";
        const char *closed = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";

        assert_int_equal(feed(&r, cl, 5, false), strlen(cl));
        assert_true(r.complete);
        assert_true(r.keep_alive);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body_bytes, 5);

        assert_int_equal(feed(&r, chunked, 100, false), strlen(chunked));
        assert_true(r.complete && r.keep_alive);
        assert_int_equal(r.status, 201);
        assert_int_equal(r.body_bytes, 8);

        assert_int_equal(feed(&r, closed, 100, false), strlen(closed));
        assert_true(r.complete);
        assert_false(r.keep_alive);   /* the connection ended it: never pooled */

        /* The answer to HEAD has no body whatever its Content-Length says. */
        assert_int_equal(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", 10, true), 41);
        assert_true(r.complete);
        assert_null(r.error);
        /* 204 and 304 have none either. */
        assert_int_equal(feed(&r, "HTTP/1.1 204 No Content\r\n\r\n", 10, false), 27);
        assert_true(r.complete && r.keep_alive);
}

static void test_one_response_per_feed(void **state) {
        BrokerResponse r;
        const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno";

        /* What follows is not this response's: the caller drops the connection. */
        broker_response_init(&r, 100, false);
        assert_int_equal(broker_response_feed(&r, (const uint8_t *) two, strlen(two)), strlen(two) / 2);
        assert_true(r.complete);
        assert_int_equal(broker_response_feed(&r, (const uint8_t *) two, strlen(two)), 0);
}

static void test_split_reads(void **state) {
        const char *s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "a\r\n0123456789\r\n0\r\n\r\n";
        BrokerResponse r;
        size_t done = 0;

        broker_response_init(&r, 10, false);
        while (done < strlen(s)) {
                ssize_t k = broker_response_feed(&r, (const uint8_t *) s + done, 1);
                assert_int_equal(k, 1);
                done++;
        }
        assert_true(r.complete);
        assert_int_equal(r.status, 200);   /* the interim 100 passed, the final status counts */
        assert_int_equal(r.body_bytes, 10);
}

static void test_refusals(void **state) {
        BrokerResponse r;
        static const struct { const char *in; uint64_t cap; const char *error; } cases[] = {
                /* The cap, from the head alone and as the body passes. */
                { "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 10, "response-too-large" },
                { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n01234567890\r\n0\r\n\r\n", 10,
                  "response-too-large" },
                { "HTTP/1.1 200 OK\r\n\r\n01234567890", 10, "response-too-large" },
                /* Framing an upstream and the worker could read two ways. */
                { "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 10,
                  "malformed-response" },
                { "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 10, "malformed-response" },
                { "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", 10, "malformed-response" },
                { "HTTP/1.1 200 OK\r\nX: a\rContent-Length: 0\r\n\r\n", 10, "malformed-response" },
                { "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n", 10, "malformed-response" },
                { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 10, "malformed-response" },
                { "garbage\r\n\r\n", 10, "malformed-response" },
                /* Not a status, and an interim response with a body (found by fuzz-broker-response). */
                { "HTTP/1.1 099 Odd\r\n\r\nbody", 10, "malformed-response" },
                { "HTTP/1.1 103 Early Hints\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 200 OK\r\n\r\n", 10,
                  "malformed-response" },
                { "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", 10,
                  "upgrade-refused" },
                /* The close before the end. */
                { "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 10, "response-truncated" },
                { "HTTP/1.1 200 OK\r\nContent-Le", 10, "response-truncated" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                assert_int_equal(feed(&r, cases[i].in, cases[i].cap, false), -1);
                assert_non_null(r.error);
                assert_string_equal(r.error, cases[i].error);
        }
}

static void test_head_too_large(void **state) {
        static char big[BROKER_RESPONSE_HEAD_MAX + 64];
        BrokerResponse r;

        strcpy(big, "HTTP/1.1 200 OK\r\nX: ");
        memset(big + strlen(big), 'a', sizeof(big) - strlen(big) - 1);
        assert_int_equal(feed(&r, big, 10, false), -1);
        assert_string_equal(r.error, "response-head-too-large");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_framings),
                cmocka_unit_test(test_one_response_per_feed),
                cmocka_unit_test(test_split_reads),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_head_too_large),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
