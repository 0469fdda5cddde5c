/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "egress-host.h"

static EgressHostKind kind_of(const char *in, char *out) {
        EgressHostKind k;
        assert_int_equal(egress_host_normalize(in, false, out, EGRESS_HOST_MAX + 1, &k), 0);
        return k;
}

static void test_normalize(void **state) {
        char out[EGRESS_HOST_MAX + 1];

        assert_int_equal(kind_of("API.Example.ORG", out), EGRESS_HOST_NAME);
        assert_string_equal(out, "api.example.org");
        assert_int_equal(kind_of("example.org.", out), EGRESS_HOST_NAME);
        assert_string_equal(out, "example.org");
        assert_int_equal(kind_of("xn--bcher-kva.example", out), EGRESS_HOST_NAME);
        assert_string_equal(out, "xn--bcher-kva.example");
        assert_int_equal(kind_of("a1.3com", out), EGRESS_HOST_NAME);

        /* Only one trailing dot; no empty labels. */
        assert_int_equal(egress_host_normalize("example.org..", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize(".example.org", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("a..b", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize(".", false, out, sizeof(out), NULL), -EINVAL);
        /* Non-ASCII (UTF-8 "bücher") must come as punycode. */
        assert_int_equal(egress_host_normalize("b\xc3\xbc" "cher.example", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("exa mple.org", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("-a.org", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("a-.org", false, out, sizeof(out), NULL), -EINVAL);
        assert_int_equal(egress_host_normalize("a*.org", false, out, sizeof(out), NULL), -EINVAL);

        char label[80];
        memset(label, 'a', 64);
        strcpy(label + 64, ".org");
        assert_int_equal(egress_host_normalize(label, false, out, sizeof(out), NULL), -EINVAL);
        memset(label, 'a', 63);
        strcpy(label + 63, ".org");
        assert_int_equal(egress_host_normalize(label, false, out, sizeof(out), NULL), 0);
}

static void test_ip_spellings(void **state) {
        char out[EGRESS_HOST_MAX + 1];

        assert_int_equal(kind_of("127.0.0.1", out), EGRESS_HOST_IPV4);
        assert_int_equal(kind_of("169.254.169.254", out), EGRESS_HOST_IPV4);
        /* Everything inet_aton() would also read as an address. */
        assert_int_equal(kind_of("0x7f.1", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("0x7f000001", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("0X7F.0.0.1", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("017.0.0.1", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("0177.0.0.01", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("2130706433", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("127.1", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("169.254.43518", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("127.0.0.1.", out), EGRESS_HOST_IPV4);
        assert_int_equal(kind_of("1.2.3.4.5", out), EGRESS_HOST_IPV4_DISGUISED);
        assert_int_equal(kind_of("example.0x10", out), EGRESS_HOST_IPV4_DISGUISED);
        /* A hex-looking label that is not the last one is just a name. */
        assert_int_equal(kind_of("0x7f.example.org", out), EGRESS_HOST_NAME);

        EgressHostKind k;
        assert_int_equal(egress_host_normalize("::FFFF:169.254.169.254", true, out, sizeof(out), &k), 0);
        assert_int_equal(k, EGRESS_HOST_IPV6);
        assert_string_equal(out, "::ffff:169.254.169.254");
        assert_int_equal(egress_host_normalize("not-v6", true, out, sizeof(out), &k), -EINVAL);
}

static EgressPattern pat(const char *s) {
        EgressPattern p;
        assert_int_equal(egress_pattern_parse(s, &p), 0);
        return p;
}

static void test_pattern_parse(void **state) {
        EgressPattern p;
        char buf[300];

        p = pat("*.Example.org");
        assert_true(p.subdomains);
        assert_string_equal(p.domain, "example.org");
        assert_int_equal(p.port, 0);
        p = pat("example.org:8443");
        assert_int_equal(p.port, 8443);
        assert_int_equal(egress_pattern_format(&p, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "example.org:8443");
        p = pat("*");
        assert_true(p.any_host);
        assert_int_equal(egress_pattern_format(&p, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "*");
        p = pat("*.example.org:22");
        assert_int_equal(egress_pattern_format(&p, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "*.example.org:22");

        assert_int_equal(egress_pattern_parse("", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("*example.org", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("a.*.example.org", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("**.example.org", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("example.org:", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("example.org:0", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("example.org:99999", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("10.0.0.1", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("0x7f.1", &p), -EINVAL);
        assert_int_equal(egress_pattern_parse("*.", &p), -EINVAL);
}

static void test_pattern_match(void **state) {
        EgressPattern w = pat("*.example.org");
        EgressPattern e = pat("example.org");
        EgressPattern any = pat("*");

        assert_true(egress_pattern_match_host(&w, "api.example.org"));
        assert_true(egress_pattern_match_host(&w, "a.b.example.org"));
        assert_false(egress_pattern_match_host(&w, "example.org"));
        assert_false(egress_pattern_match_host(&w, "evilexample.org"));
        assert_false(egress_pattern_match_host(&w, "example.org.evil.com"));
        assert_false(egress_pattern_match_host(&w, ".example.org"));
        assert_true(egress_pattern_match_host(&e, "example.org"));
        assert_false(egress_pattern_match_host(&e, "api.example.org"));
        assert_false(egress_pattern_match_host(&e, "evilexample.org"));
        assert_true(egress_pattern_match_host(&any, "anything.test"));

        assert_true(egress_pattern_match(&e, "example.org", 443, EGRESS_DEFAULT_PORT));
        assert_false(egress_pattern_match(&e, "example.org", 22, EGRESS_DEFAULT_PORT));
        assert_true(egress_pattern_match(&e, "example.org", 22, 0));
        EgressPattern p = pat("example.org:8443");
        assert_true(egress_pattern_match(&p, "example.org", 8443, EGRESS_DEFAULT_PORT));
        assert_false(egress_pattern_match(&p, "example.org", 443, EGRESS_DEFAULT_PORT));
        assert_false(egress_pattern_match(&p, "example.org", 443, 0));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_ip_spellings),
                cmocka_unit_test(test_pattern_parse),
                cmocka_unit_test(test_pattern_match),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
