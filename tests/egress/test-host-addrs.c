/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "host-addrs.h"

/* A datagram as the kernel sends it: messages back to back, each aligned. */
typedef struct Datagram {
        uint8_t buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
        size_t len;
} Datagram;

static void put_ifaddr(Datagram *d, uint16_t type, uint16_t flags, int family, int ifindex,
                       const char *local, const char *address) {
        struct nlmsghdr *h = (struct nlmsghdr *) (d->buf + d->len);
        struct ifaddrmsg *ifa = NLMSG_DATA(h);
        const char *texts[2] = { local, address };
        const unsigned short types[2] = { IFA_LOCAL, IFA_ADDRESS };

        memset(h, 0, NLMSG_SPACE(sizeof(*ifa)));
        h->nlmsg_type = type;
        h->nlmsg_flags = flags;
        h->nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
        *ifa = (struct ifaddrmsg) { .ifa_family = (unsigned char) family, .ifa_index = (unsigned) ifindex };
        for (int i = 0; i < 2; i++) {
                if (!texts[i])
                        continue;
                struct rtattr *rta = (struct rtattr *) ((uint8_t *) h + NLMSG_ALIGN(h->nlmsg_len));
                size_t n = family == AF_INET ? 4 : 16;
                rta->rta_type = types[i];
                rta->rta_len = (unsigned short) RTA_LENGTH(n);
                assert_int_equal(inet_pton(family, texts[i], RTA_DATA(rta)), 1);
                h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_SPACE(n);
        }
        d->len += NLMSG_ALIGN(h->nlmsg_len);
}

static void put_control(Datagram *d, uint16_t type, uint16_t flags, int error) {
        struct nlmsghdr *h = (struct nlmsghdr *) (d->buf + d->len);
        memset(h, 0, NLMSG_SPACE(sizeof(struct nlmsgerr)));
        h->nlmsg_type = type;
        h->nlmsg_flags = flags;
        h->nlmsg_len = NLMSG_LENGTH(type == NLMSG_ERROR ? sizeof(struct nlmsgerr) : sizeof(int));
        if (type == NLMSG_ERROR)
                ((struct nlmsgerr *) NLMSG_DATA(h))->error = error;
        d->len += NLMSG_ALIGN(h->nlmsg_len);
}

static bool has(const HostAddrSet *s, const char *text) {
        struct sockaddr_in sin = { .sin_family = AF_INET };
        struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
        if (inet_pton(AF_INET, text, &sin.sin_addr) == 1)
                return host_addr_set_contains(s, (struct sockaddr *) &sin, sizeof(sin));
        assert_int_equal(inet_pton(AF_INET6, text, &sin6.sin6_addr), 1);
        return host_addr_set_contains(s, (struct sockaddr *) &sin6, sizeof(sin6));
}

static void test_dump_and_changes(void **state) {
        HostAddrSet s = {};
        Datagram d = {};

        /* The answer to RTM_GETADDR: a veth with 11.0.0.1, a point-to-point
         * link (local and peer), an IPv6 address, then DONE. */
        put_ifaddr(&d, RTM_NEWADDR, NLM_F_MULTI, AF_INET, 2, "11.0.0.1", "11.0.0.1");
        put_ifaddr(&d, RTM_NEWADDR, NLM_F_MULTI, AF_INET, 3, "100.100.1.1", "100.100.1.2");
        put_ifaddr(&d, RTM_NEWADDR, NLM_F_MULTI, AF_INET6, 2, NULL, "2a01:db9::1");
        put_control(&d, NLMSG_DONE, NLM_F_MULTI, 0);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_DUMP_DONE);
        assert_true(has(&s, "11.0.0.1"));
        assert_true(has(&s, "100.100.1.1"));
        assert_true(has(&s, "100.100.1.2"));
        assert_true(has(&s, "2a01:db9::1"));
        assert_false(has(&s, "11.0.0.2"));
        assert_false(has(&s, "11.0.0.10"));
        assert_false(has(&s, "2a01:db9::10"));
        /* The IPv4 address inside an IPv6 spelling is what gets dialled. */
        assert_true(has(&s, "::ffff:11.0.0.1"));
        assert_true(has(&s, "::11.0.0.1"));
        assert_false(has(&s, "::ffff:11.0.0.10"));

        /* A notification: an address appears, one goes. */
        d.len = 0;
        put_ifaddr(&d, RTM_NEWADDR, 0, AF_INET, 4, "198.51.100.7", NULL);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_MORE);
        assert_true(has(&s, "198.51.100.7"));
        d.len = 0;
        put_ifaddr(&d, RTM_DELADDR, 0, AF_INET, 2, "11.0.0.1", "11.0.0.1");
        put_ifaddr(&d, RTM_DELADDR, 0, AF_INET6, 2, NULL, "2a01:db9::1");
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_MORE);
        assert_false(has(&s, "11.0.0.1"));
        assert_false(has(&s, "2a01:db9::1"));
        assert_true(has(&s, "198.51.100.7"));
        host_addr_set_clear(&s);
        assert_false(has(&s, "198.51.100.7"));
}

static void test_same_address_on_two_links(void **state) {
        HostAddrSet s = {};
        struct in_addr a;

        assert_int_equal(inet_pton(AF_INET, "11.0.0.1", &a), 1);
        assert_int_equal(host_addr_set_add(&s, AF_INET, 2, &a), 0);
        assert_int_equal(host_addr_set_add(&s, AF_INET, 2, &a), 0);
        assert_int_equal(host_addr_set_add(&s, AF_INET, 5, &a), 0);
        assert_int_equal(s.n, 2);
        host_addr_set_remove(&s, AF_INET, 2, &a);
        assert_true(has(&s, "11.0.0.1"));   /* still on link 5 */
        host_addr_set_remove(&s, AF_INET, 5, &a);
        assert_false(has(&s, "11.0.0.1"));
        host_addr_set_remove(&s, AF_INET, 5, &a);   /* not there: nothing happens */
        assert_int_equal(host_addr_set_add(&s, AF_UNIX, 1, &a), -EAFNOSUPPORT);
        host_addr_set_clear(&s);
}

static void test_growth(void **state) {
        HostAddrSet s = {};
        for (uint32_t i = 0; i < 1000; i++) {
                struct in_addr a = { .s_addr = htonl(0x0b000000 + i) };
                assert_int_equal(host_addr_set_add(&s, AF_INET, 1, &a), 0);
        }
        assert_int_equal(s.n, 1000);
        assert_true(has(&s, "11.0.3.231"));
        assert_false(has(&s, "11.0.3.232"));
        host_addr_set_clear(&s);
}

static void test_bad_datagrams(void **state) {
        HostAddrSet s = {};
        Datagram d = {};

        /* A dump the kernel says was interrupted by a change must be redone. */
        put_ifaddr(&d, RTM_NEWADDR, NLM_F_MULTI | NLM_F_DUMP_INTR, AF_INET, 2, "11.0.0.1", NULL);
        put_control(&d, NLMSG_DONE, NLM_F_MULTI | NLM_F_DUMP_INTR, 0);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_DUMP_INTR);
        assert_true(has(&s, "11.0.0.1"));   /* what it did see is kept: fail closed */

        d.len = 0;
        put_control(&d, NLMSG_ERROR, 0, -EPERM);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), -EPERM);
        d.len = 0;
        put_control(&d, NLMSG_ERROR, 0, -16777216);   /* not an errno (found by fuzz-host-addrs) */
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), -EBADMSG);
        d.len = 0;
        put_control(&d, NLMSG_ERROR, 0, 5);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), -EBADMSG);
        d.len = 0;
        put_control(&d, NLMSG_ERROR, 0, 0);   /* an ACK */
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_MORE);

        /* Truncated: the header claims more than the datagram holds. */
        d.len = 0;
        put_ifaddr(&d, RTM_NEWADDR, 0, AF_INET, 2, "11.0.0.9", NULL);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len - 4), -EBADMSG);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, 7), -EBADMSG);
        /* An attribute whose size is not an address of the family. */
        d.len = 0;
        put_ifaddr(&d, RTM_NEWADDR, 0, AF_INET6, 2, NULL, "2a01:db9::9");
        ((struct ifaddrmsg *) NLMSG_DATA((struct nlmsghdr *) d.buf))->ifa_family = AF_INET;
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), -EBADMSG);
        /* Other families and message types are skipped. */
        d.len = 0;
        put_ifaddr(&d, RTM_NEWADDR, 0, AF_INET, 2, "11.0.0.8", NULL);
        ((struct ifaddrmsg *) NLMSG_DATA((struct nlmsghdr *) d.buf))->ifa_family = AF_PACKET;
        put_ifaddr(&d, RTM_NEWLINK, 0, AF_INET, 2, "11.0.0.7", NULL);
        assert_int_equal(host_addr_set_apply_netlink(&s, d.buf, d.len), HOST_ADDR_PARSE_MORE);
        assert_false(has(&s, "11.0.0.8"));
        assert_false(has(&s, "11.0.0.7"));
        assert_int_equal(host_addr_set_apply_netlink(&s, NULL, 0), HOST_ADDR_PARSE_MORE);
        host_addr_set_clear(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dump_and_changes),
                cmocka_unit_test(test_same_address_on_two_links),
                cmocka_unit_test(test_growth),
                cmocka_unit_test(test_bad_datagrams),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
