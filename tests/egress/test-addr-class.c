/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "addr-class.h"

/* Classifies through struct sockaddr, as the proxy does with resolver answers. */
static const char *classify(const char *text, const EgressCidr *extra, size_t n_extra) {
        struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
        struct sockaddr_in sin = { .sin_family = AF_INET };

        if (inet_pton(AF_INET, text, &sin.sin_addr) == 1)
                return egress_addr_classify((struct sockaddr *) &sin, sizeof(sin), extra, n_extra);
        assert_int_equal(inet_pton(AF_INET6, text, &sin6.sin6_addr), 1);
        return egress_addr_classify((struct sockaddr *) &sin6, sizeof(sin6), extra, n_extra);
}

static void expect(const char *addr, const char *reason) {
        const char *got = classify(addr, NULL, 0);
        if (!reason) {
                if (got)
                        fail_msg("%s: expected public, got \"%s\"", addr, got);
        } else if (!got || strcmp(got, reason) != 0)
                fail_msg("%s: expected \"%s\", got \"%s\"", addr, reason, got ?: "(public)");
}

static void test_ipv4(void **state) {
        expect("127.0.0.1", "loopback 127.0.0.0/8");
        expect("127.255.255.254", "loopback 127.0.0.0/8");
        expect("10.1.2.3", "private 10.0.0.0/8");
        expect("172.16.0.1", "private 172.16.0.0/12");
        expect("172.31.255.255", "private 172.16.0.0/12");
        expect("172.32.0.1", NULL);
        expect("172.15.255.255", NULL);
        expect("192.168.1.1", "private 192.168.0.0/16");
        expect("100.64.0.1", "cgnat 100.64.0.0/10");
        expect("100.127.255.255", "cgnat 100.64.0.0/10");
        expect("100.128.0.1", NULL);
        expect("100.63.255.255", NULL);
        expect("169.254.169.254", "cloud-metadata 169.254.169.254/32");
        expect("169.254.1.1", "link-local 169.254.0.0/16");
        expect("0.0.0.0", "this-network 0.0.0.0/8");
        expect("0.1.2.3", "this-network 0.0.0.0/8");
        expect("198.18.0.1", "benchmarking 198.18.0.0/15");
        expect("198.19.255.255", "benchmarking 198.18.0.0/15");
        expect("198.20.0.1", NULL);
        expect("240.0.0.1", "reserved 240.0.0.0/4");
        expect("224.0.0.1", "multicast 224.0.0.0/4");
        expect("239.255.255.255", "multicast 224.0.0.0/4");
        expect("255.255.255.255", "broadcast 255.255.255.255/32");
        expect("192.0.0.170", "ietf-protocol-assignments 192.0.0.0/24");
        /* 11.0.0.0/8 stands in for "public" in the integration tests. */
        expect("11.0.0.10", NULL);
        expect("8.8.8.8", NULL);
        expect("1.1.1.1", NULL);
}

static void test_ipv6(void **state) {
        expect("::1", "loopback ::1/128");
        expect("::", "unspecified ::/128");
        expect("fc00::1", "unique-local fc00::/7");
        expect("fd12:3456::1", "unique-local fc00::/7");
        expect("fe80::1", "link-local fe80::/10");
        expect("febf::1", "link-local fe80::/10");
        expect("fec0::1", "site-local fec0::/10");
        expect("ff02::1", "multicast ff00::/8");
        expect("64:ff9b::a9fe:a9fe", "nat64 64:ff9b::/96");
        expect("64:ff9b::808:808", "nat64 64:ff9b::/96");
        expect("64:ff9b:1::1", "nat64-local 64:ff9b:1::/48");
        expect("2002:a9fe:a9fe::1", "6to4 2002::/16");
        expect("2001:0:4136:e378::1", "teredo 2001::/32");
        expect("100::1", "discard-only 100::/64");
        expect("2001:4860:4860::8888", NULL);
        expect("2606:4700::1111", NULL);
        expect("2a01:db9::10", NULL);
}

/* Every special-purpose range that is not globally reachable (IANA IPv4 and
 * IPv6 Special-Purpose Address Registries): its first and last address are
 * refused with its name, the addresses just outside it are not. */
typedef struct RangeCase {
        const char *first, *last, *before, *after, *reason;
} RangeCase;

static void expect_range(const RangeCase *c) {
        expect(c->first, c->reason);
        expect(c->last, c->reason);
        if (c->before)
                expect(c->before, NULL);
        if (c->after)
                expect(c->after, NULL);
}

static void test_special_purpose_ipv4(void **state) {
        static const RangeCase cases[] = {
                { "0.0.0.0", "0.255.255.255", NULL, "1.0.0.0", "this-network 0.0.0.0/8" },
                { "10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0", "private 10.0.0.0/8" },
                { "100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0", "cgnat 100.64.0.0/10" },
                { "127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0", "loopback 127.0.0.0/8" },
                { "169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0", "link-local 169.254.0.0/16" },
                { "172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0", "private 172.16.0.0/12" },
                { "192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0", "ietf-protocol-assignments 192.0.0.0/24" },
                { "192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0", "documentation 192.0.2.0/24" },
                { "192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0", "6to4-relay-anycast 192.88.99.0/24" },
                { "192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0", "private 192.168.0.0/16" },
                { "198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0", "benchmarking 198.18.0.0/15" },
                { "198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0", "documentation 198.51.100.0/24" },
                { "203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0", "documentation 203.0.113.0/24" },
                { "224.0.0.0", "239.255.255.255", "223.255.255.255", NULL, "multicast 224.0.0.0/4" },
                { "240.0.0.0", "255.255.255.254", NULL, NULL, "reserved 240.0.0.0/4" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                expect_range(&cases[i]);
        /* The registry's globally reachable anycast addresses inside
         * 192.0.0.0/24 stay refused (PCP, TURN); the AS112 and AMT rows
         * outside it are public. */
        expect("192.0.0.9", "ietf-protocol-assignments 192.0.0.0/24");
        expect("192.0.0.10", "ietf-protocol-assignments 192.0.0.0/24");
        expect("192.31.196.1", NULL);
        expect("192.52.193.1", NULL);
        expect("192.175.48.1", NULL);
}

static void test_special_purpose_ipv6(void **state) {
        static const RangeCase cases[] = {
                { "64:ff9b::", "64:ff9b::ffff:ffff", "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "64:ff9b:0:0:0:1::",
                  "nat64 64:ff9b::/96" },
                { "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:0:ffff:ffff:ffff:ffff:ffff", "64:ff9b:2::",
                  "nat64-local 64:ff9b:1::/48" },
                { "100::", "100::ffff:ffff:ffff:ffff", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL,
                  "discard-only 100::/64" },
                { "100:0:0:1::", "100:0:0:1:ffff:ffff:ffff:ffff", NULL, "100:0:0:2::", "dummy-prefix 100:0:0:1::/64" },
                { "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL,
                  "teredo 2001::/32" },
                { "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", NULL, NULL, "benchmarking 2001:2::/48" },
                { "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", NULL, NULL, "orchid 2001:10::/28" },
                { "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
                  "2001:db9::", "documentation 2001:db8::/32" },
                { "2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:dff:ffff:ffff:ffff:ffff:ffff:ffff",
                  "2003::", "6to4 2002::/16" },
                { "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                  "3fff:1000::", "documentation 3fff::/20" },
                { "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                  "5f01::", "srv6-sids 5f00::/16" },
                { "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                  "fe00::", "unique-local fc00::/7" },
                { "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                  NULL, "link-local fe80::/10" },
                { "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL, NULL, "site-local fec0::/10" },
                { "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL, NULL, "multicast ff00::/8" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                expect_range(&cases[i]);
        /* 2001::/23, IETF Protocol Assignments: refused as a whole, ends included ... */
        expect("2001:1::1", "ietf-protocol-assignments 2001::/23");   /* PCP anycast */
        expect("2001:1::3", "ietf-protocol-assignments 2001::/23");
        expect("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "ietf-protocol-assignments 2001::/23");
        expect("2001:200::", NULL);
        expect("2001:2:1::", "ietf-protocol-assignments 2001::/23");   /* just past 2001:2::/48 */
        expect("2001:f:ffff:ffff:ffff:ffff:ffff:ffff", "ietf-protocol-assignments 2001::/23");
        expect("2001:40::", "ietf-protocol-assignments 2001::/23");
        /* ... but for the sub-ranges the registry calls globally reachable. */
        expect("2001:3::", NULL);
        expect("2001:3:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
        expect("2001:4:112::", NULL);
        expect("2001:4:112:ffff:ffff:ffff:ffff:ffff", NULL);
        expect("2001:4:113::", "ietf-protocol-assignments 2001::/23");
        expect("2001:20::", NULL);
        expect("2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
        expect("2001:30::", NULL);
        expect("2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", NULL);
        /* Unspecified and loopback are exact addresses. */
        expect("::2", "ipv4-compatible this-network 0.0.0.0/8");
        expect("2620:4f:8000::1", NULL);   /* AS112 direct delegation: public */
}

static void test_embedded_ipv4(void **state) {
        expect("::ffff:169.254.169.254", "ipv4-mapped cloud-metadata 169.254.169.254/32");
        expect("::ffff:127.0.0.1", "ipv4-mapped loopback 127.0.0.0/8");
        expect("::ffff:10.0.0.1", "ipv4-mapped private 10.0.0.0/8");
        expect("::ffff:0.0.0.0", "ipv4-mapped this-network 0.0.0.0/8");
        expect("::ffff:11.0.0.10", NULL);
        expect("::127.0.0.1", "ipv4-compatible loopback 127.0.0.0/8");
        expect("::169.254.169.254", "ipv4-compatible cloud-metadata 169.254.169.254/32");
        expect("::10.0.0.1", "ipv4-compatible private 10.0.0.0/8");
        expect("::0.0.0.2", "ipv4-compatible this-network 0.0.0.0/8");
        expect("::11.0.0.10", NULL);
        expect("::ffff:0:a9fe:a9fe", "ipv4-translated ::ffff:0:0:0/96");
}

static void test_operator_ranges(void **state) {
        EgressCidr extra[2];
        char buf[64];

        assert_int_equal(egress_cidr_parse("11.0.0.128/25", &extra[0]), 0);
        assert_int_equal(egress_cidr_parse("2a01:db9:1::/48", &extra[1]), 0);
        assert_null(classify("11.0.0.10", extra, 2));
        assert_string_equal(classify("11.0.0.200", extra, 2), "operator-range");
        assert_string_equal(classify("::ffff:11.0.0.200", extra, 2), "ipv4-mapped operator-range");
        assert_string_equal(classify("2a01:db9:1::5", extra, 2), "operator-range");
        assert_null(classify("2a01:db9:2::5", extra, 2));

        assert_int_equal(egress_cidr_format(&extra[1], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "2a01:db9:1::/48");
        assert_int_equal(egress_cidr_parse("192.0.2.7", &extra[0]), 0);
        assert_int_equal(extra[0].prefixlen, 32);
        assert_int_equal(egress_cidr_parse("0.0.0.0/0", &extra[0]), 0);
        assert_string_equal(classify("8.8.8.8", extra, 1), "operator-range");

        assert_int_equal(egress_cidr_parse("10.0.0.1/8", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("10.0.0.0/", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("10.0.0.0/-1", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("10.0.0.0/8x", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("::/129", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("example.org/8", &extra[0]), -EINVAL);
        assert_int_equal(egress_cidr_parse("0x7f.1", &extra[0]), -EINVAL);
}

static void test_odd_sockaddrs(void **state) {
        struct sockaddr_in sin = { .sin_family = AF_INET };
        struct sockaddr_un { sa_family_t f; char p[10]; } un = { .f = AF_UNIX };

        assert_string_equal(egress_addr_classify((struct sockaddr *) &un, sizeof(un), NULL, 0), "unsupported-family");
        assert_string_equal(egress_addr_classify((struct sockaddr *) &sin, 4, NULL, 0), "unsupported-family");
        assert_string_equal(egress_addr_classify(NULL, 0, NULL, 0), "unsupported-family");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ipv4),
                cmocka_unit_test(test_ipv6),
                cmocka_unit_test(test_special_purpose_ipv4),
                cmocka_unit_test(test_special_purpose_ipv6),
                cmocka_unit_test(test_embedded_ipv4),
                cmocka_unit_test(test_operator_ranges),
                cmocka_unit_test(test_odd_sockaddrs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
