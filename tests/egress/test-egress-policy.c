/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "egress-policy.h"

#define _cleanup_free_ __attribute__((cleanup(freep)))
static void freep(void *p) { free(*(void **) p); }

static const char *check(const EgressPolicy *p, const char *host, uint16_t port) {
        char out[EGRESS_HOST_MAX + 1];
        return egress_policy_check_host(p, host, false, port, out, sizeof(out));
}

static void test_defaults(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(p->mode, EGRESS_MODE_ENFORCE);
        assert_true(p->require_tls);
        assert_int_equal(p->n_allow, 0);
        assert_int_equal(p->n_floor, 1);
        assert_true(p->floor[0].any_host);
        /* Nothing is allowed until something is. */
        assert_string_equal(check(p, "example.org", 443), "not-in-allow-list");
}

static void test_allow_deny_floor(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_allow(p, "git.example.net:8443"), 0);
        assert_int_equal(egress_policy_add_deny(p, "secret.example.org"), 0);

        assert_null(check(p, "api.example.org", 443));
        assert_null(check(p, "API.Example.Org.", 443));
        assert_string_equal(check(p, "example.org", 443), "not-in-allow-list");
        assert_string_equal(check(p, "evilexample.org", 443), "not-in-allow-list");
        assert_string_equal(check(p, "api.example.org.evil.com", 443), "not-in-allow-list");
        assert_string_equal(check(p, "api.example.org", 22), "port-not-allowed");
        assert_string_equal(check(p, "api.example.org", 80), "port-not-allowed");
        assert_null(check(p, "git.example.net", 8443));
        assert_string_equal(check(p, "git.example.net", 443), "port-not-allowed");
        /* Deny wins over allow, on every port. */
        assert_string_equal(check(p, "secret.example.org", 443), "denied-by-rule");
        assert_string_equal(check(p, "SECRET.example.org.", 443), "denied-by-rule");

        /* The floor bounds the spec: only what both allow passes. */
        egress_policy_clear_floor(p);
        assert_string_equal(check(p, "api.example.org", 443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_null(check(p, "api.example.org", 443));
        assert_string_equal(check(p, "git.example.net", 8443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "git.example.net:9000"), 0);
        assert_string_equal(check(p, "git.example.net", 8443), "outside-operator-floor");
        assert_int_equal(egress_policy_add_floor(p, "git.example.net"), 0);
        assert_null(check(p, "git.example.net", 8443));
}

static void test_literals(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        char out[EGRESS_HOST_MAX + 1];

        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "*"), 0);   /* even with everything allowed */
        assert_string_equal(check(p, "127.0.0.1", 443), "ip-literal");
        assert_string_equal(check(p, "203.0.113.10", 443), "ip-literal");
        assert_string_equal(check(p, "0x7f.1", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "017.0.0.1", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "2130706433", 443), "ip-literal-obfuscated");
        assert_string_equal(check(p, "bad_host!", 443), "invalid-host");
        assert_string_equal(egress_policy_check_host(p, "::ffff:169.254.169.254", true, 443, out, sizeof(out)),
                            "ip-literal");
        assert_null(check(p, "anything.example", 443));
}

static void test_bad_entries(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_add_allow(p, "a*.org"), -EINVAL);
        assert_int_equal(egress_policy_add_allow(p, "10.0.0.1"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "10.0.0.1/8"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/33"), -EINVAL);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/24"), 0);
        assert_int_equal(egress_policy_set_worker_id(p, "a/b"), -EINVAL);
        assert_int_equal(egress_policy_set_worker_id(p, ""), -EINVAL);
        assert_int_equal(egress_policy_set_worker_id(p, "w-1234.abc"), 0);
        assert_int_equal(p->n_allow, 0);
        assert_int_equal(p->n_private_ranges, 1);
}

static void test_json_roundtrip(void **state) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL, *q = NULL;
        char path[] = "/tmp/test-egress-policy-XXXXXX";
        _cleanup_free_ char *a = NULL, *b = NULL;
        struct stat st;
        int fd;

        assert_int_equal(egress_policy_new(&p), 0);
        assert_int_equal(egress_policy_set_worker_id(p, "w1"), 0);
        p->mode = EGRESS_MODE_REPORT;
        p->require_tls = false;
        p->rate_bps = 200000;
        p->rate_burst = 50000;
        p->max_tunnels = 7;
        p->hello_timeout_usec = 1500000;
        assert_int_equal(p->refusal_log_burst, 20);
        assert_int_equal(p->refusal_log_window_usec, 10000000);
        p->refusal_log_burst = 1000;
        p->refusal_log_window_usec = 2000000;
        assert_int_equal(egress_policy_add_allow(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_allow(p, "example.net:8443"), 0);
        assert_int_equal(egress_policy_add_deny(p, "bad.example.org"), 0);
        egress_policy_clear_floor(p);
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_private_range(p, "192.0.2.0/24"), 0);
        assert_int_equal(egress_policy_add_private_range(p, "2001:db8::/32"), 0);

        fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(egress_policy_to_json_file(p, path), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(egress_policy_from_json_file(path, &q), 0);
        unlink(path);

        assert_string_equal(q->worker_id, "w1");
        assert_int_equal(q->mode, EGRESS_MODE_REPORT);
        assert_false(q->require_tls);
        assert_int_equal(q->rate_bps, 200000);
        assert_int_equal(q->rate_burst, 50000);
        assert_int_equal(q->max_tunnels, 7);
        assert_int_equal(q->hello_timeout_usec, 1500000);
        assert_int_equal(q->refusal_log_burst, 1000);
        assert_int_equal(q->refusal_log_window_usec, 2000000);
        assert_int_equal(q->n_allow, 2);
        assert_int_equal(q->n_deny, 1);
        assert_int_equal(q->n_floor, 1);
        assert_int_equal(q->n_private_ranges, 2);
        assert_int_equal(egress_policy_to_json(p, &a), 0);
        assert_int_equal(egress_policy_to_json(q, &b), 0);
        assert_string_equal(a, b);
}

static void test_json_refusals(void **state) {
        EgressPolicy *p = NULL;
        static const char *const bad[] = {
                "",
                "[]",
                "{\"allow\": \"example.org\"}",
                "{\"allow\": [1]}",
                "{\"allow\": [\"a*.org\"]}",
                "{\"unknown\": 1}",
                "{\"mode\": \"permissive\"}",
                "{\"require_tls\": 1}",
                "{\"rate_bps\": -1}",
                "{\"rate_bps\": \"100\"}",
                "{\"max_tunnels\": 0}",
                "{\"hello_timeout_ms\": 0}",
                "{\"refusal_log_burst\": -1}",
                "{\"refusal_log_burst\": 1000001}",
                "{\"refusal_log_window_ms\": 0}",
                "{\"private_ranges\": [\"10.0.0.0/99\"]}",
                "{\"worker_id\": \"../x\"}",
                "{} trailing",
                "{\"allow\": [",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_not_equal(egress_policy_from_json(bad[i], &p), 0);
                assert_null(p);
        }
        /* An empty floor is kept empty: the operator allows nothing. */
        assert_int_equal(egress_policy_from_json("{\"allow\": [\"a.org\"], \"floor\": []}", &p), 0);
        assert_int_equal(p->n_floor, 0);
        assert_string_equal(check(p, "a.org", 443), "outside-operator-floor");
        egress_policy_free(p);
        /* A missing floor is the default "*". */
        assert_int_equal(egress_policy_from_json("{\"allow\": [\"a.org\"]}", &p), 0);
        assert_null(check(p, "a.org", 443));
        egress_policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_allow_deny_floor),
                cmocka_unit_test(test_literals),
                cmocka_unit_test(test_bad_entries),
                cmocka_unit_test(test_json_roundtrip),
                cmocka_unit_test(test_json_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
