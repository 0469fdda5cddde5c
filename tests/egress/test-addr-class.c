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
        /* TEST-NET-3 stands in for "public" in the integration tests. */
        expect("203.0.113.10", NULL);
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
        expect("2001:db8::1", NULL);
}

static void test_embedded_ipv4(void **state) {
        expect("::ffff:169.254.169.254", "ipv4-mapped cloud-metadata 169.254.169.254/32");
        expect("::ffff:127.0.0.1", "ipv4-mapped loopback 127.0.0.0/8");
        expect("::ffff:10.0.0.1", "ipv4-mapped private 10.0.0.0/8");
        expect("::ffff:0.0.0.0", "ipv4-mapped this-network 0.0.0.0/8");
        expect("::ffff:203.0.113.10", NULL);
        expect("::127.0.0.1", "ipv4-compatible loopback 127.0.0.0/8");
        expect("::169.254.169.254", "ipv4-compatible cloud-metadata 169.254.169.254/32");
        expect("::10.0.0.1", "ipv4-compatible private 10.0.0.0/8");
        expect("::0.0.0.2", "ipv4-compatible this-network 0.0.0.0/8");
        expect("::203.0.113.10", NULL);
        expect("::ffff:0:a9fe:a9fe", "ipv4-translated ::ffff:0:0:0/96");
}

static void test_operator_ranges(void **state) {
        EgressCidr extra[2];
        char buf[64];

        assert_int_equal(egress_cidr_parse("203.0.113.128/25", &extra[0]), 0);
        assert_int_equal(egress_cidr_parse("2001:db8:1::/48", &extra[1]), 0);
        assert_null(classify("203.0.113.10", extra, 2));
        assert_string_equal(classify("203.0.113.200", extra, 2), "operator-range");
        assert_string_equal(classify("::ffff:203.0.113.200", extra, 2), "ipv4-mapped operator-range");
        assert_string_equal(classify("2001:db8:1::5", extra, 2), "operator-range");
        assert_null(classify("2001:db8:2::5", extra, 2));

        assert_int_equal(egress_cidr_format(&extra[1], buf, sizeof(buf)), 0);
        assert_string_equal(buf, "2001:db8:1::/48");
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
                cmocka_unit_test(test_embedded_ipv4),
                cmocka_unit_test(test_operator_ranges),
                cmocka_unit_test(test_odd_sockaddrs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
