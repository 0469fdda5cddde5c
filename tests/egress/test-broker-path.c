/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The broker's path rule (broker-path.h) as the request parser applies it:
 * a table of targets a worker may send to a service whose Paths are "/v1/"
 * and "/models", each either forwarded byte for byte or refused, with the
 * reason. The refused rows are the ways an upstream could be brought to
 * resolve a path outside "/v1/": encoded backslashes, double encoding, dot
 * segments in any spelling, path parameters, encoded delimiters, controls,
 * non-ASCII and malformed escapes, and a query or fragment carrying a path.
 * The allowed rows are the controls: the same shapes that stay inside. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "broker-path.h"
#include "broker-request.h"

static char *methods[] = { "GET", NULL };
static char *paths[] = { "/v1/", "/models", NULL };
/* No base: what the worker sends is what the upstream gets, so "/v1/.."
 * would be the upstream's "/". */
static const BrokerRoute route = {
        .host = "api.example.org", .port = 443, .base = "",
        .methods = methods, .paths = paths,
        .inject_name = "Authorization", .inject_value = "Bearer sk-secret",
        .max_request_bytes = 16,
};

#define PASS 0, NULL
#define BAD 400, "invalid-path"
#define DENIED 403, "path-not-allowed"

static const struct {
        const char *target;
        int status;             /* 0: forwarded */
        const char *reason;
} rows[] = {
        /* Controls: allowed paths still pass. */
        { "/v1/ok", PASS },
        { "/v1/", PASS },
        { "/models", PASS },
        { "/models/gpt-4o", PASS },
        { "/v1/a%20b", PASS },
        { "/v1/%41%7e", PASS },                 /* encoded letters and '~': the same path */
        { "/v1/a%2Bb%2b", PASS },
        { "/v1/a.b/c..d/x...", PASS },          /* dots inside a segment */
        { "/v1/x:y@z!$&'()*+,=-_~", PASS },
        { "/v1/ok?q=1&r=%2F..%5c%25", PASS },    /* a query's escapes are its data */
        { "/v1/ok?a=b;c&d=..&e=/x/y?z", PASS },
        { "/v1/ok?", PASS },
        { "/v1/ok?f[a]={\"b\"}|c^d`e&p=100%", PASS },     /* as WHATWG URL clients send them */

        /* Outside the prefixes, spelled plainly. */
        { "/v2/x", DENIED },
        { "/v1", DENIED },
        { "/modelsX", DENIED },
        { "/v%31/x", DENIED },                  /* compared as sent: an upstream may not decode */

        /* Backslashes: an upstream may take them for '/'. */
        { "/v1/..%5cadmin", BAD },
        { "/v1/..%5Cadmin", BAD },
        { "/v1/..\\admin", BAD },
        { "/v1/%5c..%5cadmin", BAD },
        { "/v1/ok?a\\b", BAD },

        /* Double encoding: an upstream that decodes twice. */
        { "/v1/%252e%252e/admin", BAD },
        { "/v1/..%255cadmin", BAD },
        { "/v1/%25%32%65%25%32%65/admin", BAD },
        { "/v1/%252F", BAD },
        { "/v1/100%25", BAD },

        /* Dot segments, raw, encoded, mixed case, trailing, and what Windows
         * trims to one (trailing dots and spaces). */
        { "/v1/../admin", BAD },
        { "/v1/..", BAD },
        { "/v1/.", BAD },
        { "/v1/./x", BAD },
        { "/v1/%2e%2e/admin", BAD },
        { "/v1/%2E%2e/admin", BAD },
        { "/v1/.%2e/admin", BAD },
        { "/v1/%2e", BAD },
        { "/v1/...", BAD },
        { "/v1/..%20/admin", BAD },
        { "/v1/.%20./admin", BAD },
        { "/v1/%2e%2e%2fadmin", BAD },
        { "/v1%2fadmin", BAD },

        /* Empty segments: "//host" is a network path to some readers. */
        { "/v1//admin", BAD },
        { "//admin", BAD },

        /* Path parameters: servlet containers drop ";..." from a segment,
         * so "..;" is "..". */
        { "/v1/..;/admin", BAD },
        { "/v1/;/admin", BAD },
        { "/v1;/../admin", BAD },
        { "/v1/x;jsessionid=1", BAD },
        { "/v1/..%3b/admin", BAD },

        /* Encoded delimiters: an upstream that decodes before it splits. */
        { "/v1/..%3f/admin", BAD },
        { "/v1/..%3F/admin", BAD },
        { "/v1/..%23/admin", BAD },

        /* Encoded controls and DEL. */
        { "/v1/%00", BAD },
        { "/v1/ok%00.json", BAD },
        { "/v1/%0a", BAD },
        { "/v1/%0D", BAD },
        { "/v1/%1f", BAD },
        { "/v1/%7f", BAD },
        { "/v1/%7F", BAD },

        /* Non-ASCII: overlong UTF-8 for '.' and '/', and any byte over 0x7f,
         * which Unicode normalisation or a best-fit code page may fold into
         * '.', '/' or '\' (U+FF0E, U+FF0F, U+00A5). */
        { "/v1/%c0%ae%c0%ae/admin", BAD },
        { "/v1/..%c0%afadmin", BAD },
        { "/v1/%e0%80%ae%e0%80%ae/admin", BAD },
        { "/v1/%ef%bc%8e%ef%bc%8e%ef%bc%8fadmin", BAD },
        { "/v1/caf%C3%A9", BAD },
        { "/v1/%ff", BAD },

        /* Malformed escapes. */
        { "/v1/%", BAD },
        { "/v1/%4", BAD },
        { "/v1/%zz", BAD },
        { "/v1/%u002e%u002e/admin", BAD },
        { "/v1/%%32%65", BAD },

        /* A query or fragment carrying a path, for an upstream that
         * resolves the whole target. */
        { "/v1/ok?/../../admin", BAD },
        { "/v1/ok?x=1/../admin", BAD },
        { "/v1/ok?..", BAD },
        { "/v1/ok?" "?/..", BAD },        /* split: "??/" is a trigraph */
        { "/v1/ok#/../../admin", BAD },
        { "/v1/ok?x#y", BAD },
};

/* Every row is tried and every wrong one named before the test fails. */
static void test_targets(void **state) {
        size_t wrong = 0;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char in[256], want[256];
                BrokerRequest req;
                BrokerRefusal refusal;
                int r;

                snprintf(in, sizeof(in), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", rows[i].target);
                snprintf(want, sizeof(want), "GET %s HTTP/1.1\r\n", rows[i].target);
                r = broker_request_parse(&route, (const uint8_t *) in, strlen(in), &req, &refusal);
                if (r == BROKER_PARSE_OK) {
                        if (rows[i].status != 0 || strncmp(req.upstream, want, strlen(want)) != 0) {
                                print_message("%s: forwarded as %.*s, want %d %s\n", rows[i].target,
                                              (int) strcspn(req.upstream, "\r"), req.upstream, rows[i].status,
                                              rows[i].reason ?: "forwarded");
                                wrong++;
                        }
                        broker_request_done(&req);
                } else if (r != BROKER_PARSE_REFUSED || rows[i].status != refusal.status ||
                           strcmp(refusal.reason, rows[i].reason) != 0) {
                        print_message("%s: %d %s, want %d %s\n", rows[i].target, refusal.status,
                                      refusal.reason ?: "(not refused)", rows[i].status,
                                      rows[i].reason ?: "forwarded");
                        wrong++;
                }
        }
        assert_int_equal(wrong, 0);
}

/* sandboxd checks a spec's Paths and a service's base with the same rule,
 * so a prefix it accepts is one the proxy can match. */
static void test_prefixes(void **state) {
        size_t wrong = 0;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const char *t = rows[i].target;
                if (strpbrk(t, "?#") || broker_path_is_valid(t, strlen(t)) == (rows[i].status != 400))
                        continue;
                print_message("%s: broker_path_is_valid() is %s\n", t, rows[i].status == 400 ? "true" : "false");
                wrong++;
        }
        assert_int_equal(wrong, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_targets),
                cmocka_unit_test(test_prefixes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
