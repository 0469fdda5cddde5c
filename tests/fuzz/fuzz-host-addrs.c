/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <linux/netlink.h>
#include <string.h>

#include "fuzz.h"
#include "host-addrs.h"

/* Input: one rtnetlink datagram as a NETLINK_ROUTE socket would deliver it
 * (the proxy reads them into an aligned buffer). Applied twice: adding and
 * removing are idempotent, so the second pass changes nothing; and every
 * address the set holds is found by a lookup. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static uint8_t buf[64 * 1024] __attribute__((aligned(NLMSG_ALIGNTO)));
        HostAddrSet s = {};

        if (size > sizeof(buf))
                return 0;
        memcpy(buf, data, size);
        int r = host_addr_set_apply_netlink(&s, buf, size);
        assert(r >= -4095 && r <= HOST_ADDR_PARSE_DUMP_INTR);
        size_t n = s.n;
        assert(host_addr_set_apply_netlink(&s, buf, size) == r || r == -ENOMEM);
        assert(s.n == n || r == -ENOMEM);
        for (size_t i = 0; i < s.n; i++) {
                const HostAddress *a = &s.addrs[i];
                if (a->family == AF_INET) {
                        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a->addr.in };
                        assert(host_addr_set_contains(&s, (struct sockaddr *) &sin, sizeof(sin)));
                } else {
                        struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = a->addr.in6 };
                        assert(host_addr_set_contains(&s, (struct sockaddr *) &sin6, sizeof(sin6)));
                }
        }
        host_addr_set_clear(&s);
        return 0;
}
