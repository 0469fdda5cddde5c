/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The control channel's messages (egress-ctl.h) and the floor check that
 * Worker.SetEgress applies (egress_pattern_within(),
 * egress_policy_allow_outside_floor()). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "egress-ctl.h"
#include "egress-host.h"
#include "egress-policy.h"

static void test_path(void **state) {
        char buf[128];
        assert_int_equal(egress_ctl_path("0123456789ab", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/run/sandboxd/egress/0123456789ab.ctl");
        assert_int_equal(egress_ctl_path("../x", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(egress_ctl_path("a/b", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(egress_ctl_path("", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(egress_ctl_path("0123456789ab", buf, 20), -EINVAL);
}

static void test_requests(void **state) {
        size_t at = 0;
        assert_int_equal(egress_ctl_parse_request("stats", 5, NULL), EGRESS_CTL_STATS);
        assert_int_equal(egress_ctl_parse_request("stats\n", 6, NULL), EGRESS_CTL_INVALID);
        assert_int_equal(egress_ctl_parse_request("statsx", 6, NULL), EGRESS_CTL_INVALID);
        assert_int_equal(egress_ctl_parse_request("policy\n{}", 9, &at), EGRESS_CTL_POLICY);
        assert_int_equal(at, 7);
        assert_int_equal(egress_ctl_parse_request("policy\n", 7, &at), EGRESS_CTL_INVALID);
        assert_int_equal(egress_ctl_parse_request("policy {}", 9, &at), EGRESS_CTL_INVALID);
        /* A NUL would cut the JSON short of what was sent. */
        assert_int_equal(egress_ctl_parse_request("policy\n{}\0{", 10, &at), EGRESS_CTL_INVALID);
        assert_int_equal(egress_ctl_parse_request("", 0, &at), EGRESS_CTL_INVALID);
}

static void test_stats_round_trip(void **state) {
        EgressCounters c = { .bytes_sent = 1, .bytes_received = UINT64_MAX, .connections = 42 }, d = {};
        char buf[128];
        int n = egress_ctl_format_stats(&c, buf, sizeof(buf));
        assert_true(n > 0);
        assert_string_equal(buf, "stats 1 18446744073709551615 42");
        assert_int_equal(egress_ctl_parse_stats(buf, (size_t) n, &d), 0);
        assert_memory_equal(&c, &d, sizeof(c));
        assert_int_equal(egress_ctl_format_stats(&c, buf, 10), -ENOBUFS);

        assert_int_equal(egress_ctl_parse_stats("stats 1 2", 9, &d), -EINVAL);
        assert_int_equal(egress_ctl_parse_stats("stats 1 2 3 4", 13, &d), -EINVAL);
        assert_int_equal(egress_ctl_parse_stats("stats 1  2 3", 12, &d), -EINVAL);
        assert_int_equal(egress_ctl_parse_stats("stats -1 2 3", 12, &d), -EINVAL);
        assert_int_equal(egress_ctl_parse_stats("stats 18446744073709551616 2 3", 30, &d), -EINVAL);
        assert_int_equal(egress_ctl_parse_stats("ok", 2, &d), -EINVAL);
}

static void test_status(void **state) {
        char buf[32];
        int n = egress_ctl_format_status(0, buf, sizeof(buf));
        assert_int_equal(egress_ctl_parse_status(buf, (size_t) n), 0);
        n = egress_ctl_format_status(-EINVAL, buf, sizeof(buf));
        assert_string_equal(buf, "error 22");
        assert_int_equal(egress_ctl_parse_status(buf, (size_t) n), -EINVAL);
        assert_int_equal(egress_ctl_parse_status("error 0", 7), -EBADMSG);
        assert_int_equal(egress_ctl_parse_status("error x", 7), -EBADMSG);
        assert_int_equal(egress_ctl_parse_status("okay", 4), -EBADMSG);
        assert_int_equal(egress_ctl_parse_status("", 0), -EBADMSG);
}

static bool within(const char *inner, const char *outer) {
        EgressPattern i, o;
        assert_int_equal(egress_pattern_parse(inner, &i), 0);
        assert_int_equal(egress_pattern_parse(outer, &o), 0);
        return egress_pattern_within(&i, EGRESS_DEFAULT_PORT, &o);
}

static void test_pattern_within(void **state) {
        assert_true(within("a.example.org", "*"));
        assert_true(within("*", "*"));
        assert_true(within("a.example.org", "a.example.org"));
        assert_true(within("a.example.org", "*.example.org"));
        assert_true(within("*.a.example.org", "*.example.org"));
        assert_true(within("*.example.org", "*.example.org"));
        assert_true(within("a.example.org:8443", "*.example.org"));
        /* A rule without a port allows 443 only. */
        assert_true(within("a.example.org", "*.example.org:443"));
        assert_true(within("a.example.org:443", "a.example.org:443"));

        assert_false(within("example.org", "*.example.org"));      /* strict subdomains only */
        assert_false(within("*.example.org", "example.org"));
        assert_false(within("*", "*.example.org"));
        assert_false(within("b.example.net", "*.example.org"));
        assert_false(within("a.example.org:8443", "*.example.org:443"));
        assert_false(within("a.example.org", "*:8443"));
        assert_false(within("badexample.org", "*.example.org"));
}

static void test_policy_outside_floor(void **state) {
        EgressPolicy *p = NULL;
        const EgressPattern *out;
        char buf[300];

        assert_int_equal(egress_policy_new(&p), 0);
        /* The default floor is "*": nothing is outside it. */
        assert_int_equal(egress_policy_add_allow(p, "a.example.org"), 0);
        assert_null(egress_policy_allow_outside_floor(p));
        egress_policy_clear_floor(p);
        assert_int_equal(egress_policy_add_floor(p, "*.example.org"), 0);
        assert_int_equal(egress_policy_add_floor(p, "pypi.org"), 0);
        assert_int_equal(egress_policy_add_allow(p, "pypi.org"), 0);
        assert_null(egress_policy_allow_outside_floor(p));
        assert_int_equal(egress_policy_add_allow(p, "evil.net"), 0);
        out = egress_policy_allow_outside_floor(p);
        assert_non_null(out);
        assert_int_equal(egress_pattern_format(out, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "evil.net");
        egress_policy_free(p);

        /* An empty floor allows nothing: every entry is outside it. */
        assert_int_equal(egress_policy_new(&p), 0);
        egress_policy_clear_floor(p);
        assert_int_equal(egress_policy_add_allow(p, "a.example.org"), 0);
        assert_non_null(egress_policy_allow_outside_floor(p));
        egress_policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path),
                cmocka_unit_test(test_requests),
                cmocka_unit_test(test_stats_round_trip),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_pattern_within),
                cmocka_unit_test(test_policy_outside_floor),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
