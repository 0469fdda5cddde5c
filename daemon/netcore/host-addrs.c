/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host-addrs.h"

static size_t addr_size(int family) {
        return family == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
}

static bool entry_is(const HostAddress *e, int family, int ifindex, const void *addr) {
        return e->family == family && e->ifindex == ifindex && memcmp(&e->addr, addr, addr_size(family)) == 0;
}

void host_addr_set_clear(HostAddrSet *s) {
        assert(s);
        free(s->addrs);
        *s = (HostAddrSet) {};
}

int host_addr_set_add(HostAddrSet *s, int family, int ifindex, const void *addr) {
        assert(s);
        assert(addr);
        if (family != AF_INET && family != AF_INET6)
                return -EAFNOSUPPORT;
        for (size_t i = 0; i < s->n; i++)
                if (entry_is(&s->addrs[i], family, ifindex, addr))
                        return 0;
        if (s->n == s->allocated) {
                size_t m = s->allocated ? s->allocated * 2 : 16;
                HostAddress *a = reallocarray(s->addrs, m, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                s->addrs = a;
                s->allocated = m;
        }
        HostAddress *e = &s->addrs[s->n++];
        *e = (HostAddress) { .family = family, .ifindex = ifindex };
        memcpy(&e->addr, addr, addr_size(family));
        return 0;
}

void host_addr_set_remove(HostAddrSet *s, int family, int ifindex, const void *addr) {
        assert(s);
        assert(addr);
        for (size_t i = 0; i < s->n; i++)
                if (entry_is(&s->addrs[i], family, ifindex, addr)) {
                        s->addrs[i] = s->addrs[--s->n];
                        return;
                }
}

static bool contains(const HostAddrSet *s, int family, const void *addr) {
        for (size_t i = 0; i < s->n; i++)
                if (s->addrs[i].family == family && memcmp(&s->addrs[i].addr, addr, addr_size(family)) == 0)
                        return true;
        return false;
}

bool host_addr_set_contains(const HostAddrSet *s, const struct sockaddr *sa, socklen_t len) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const uint8_t compat[12] = {};

        assert(s);
        if (!sa)
                return false;
        if (sa->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in))
                return contains(s, AF_INET, &((const struct sockaddr_in *) sa)->sin_addr);
        if (sa->sa_family != AF_INET6 || len < (socklen_t) sizeof(struct sockaddr_in6))
                return false;
        const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (contains(s, AF_INET6, a))
                return true;
        if (memcmp(a->s6_addr, mapped, 12) == 0 || memcmp(a->s6_addr, compat, 12) == 0)
                return contains(s, AF_INET, a->s6_addr + 12);
        return false;
}

/* One RTM_NEWADDR/RTM_DELADDR. IFA_LOCAL is the local address where the
 * link has a peer (IFA_ADDRESS is then the peer's); both are taken, as
 * refusing a point-to-point peer as well fails closed. */
static int apply_ifaddr(HostAddrSet *s, const struct nlmsghdr *h) {
        const struct ifaddrmsg *ifa = NLMSG_DATA(h);
        int len;

        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
                return -EBADMSG;
        if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
                return 0;
        len = (int) (h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifa)));
        for (const struct rtattr *rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
                if (rta->rta_type != IFA_LOCAL && rta->rta_type != IFA_ADDRESS)
                        continue;
                if (RTA_PAYLOAD(rta) != addr_size(ifa->ifa_family))
                        return -EBADMSG;
                if (h->nlmsg_type == RTM_NEWADDR) {
                        int r = host_addr_set_add(s, ifa->ifa_family, (int) ifa->ifa_index, RTA_DATA(rta));
                        if (r < 0)
                                return r;
                } else
                        host_addr_set_remove(s, ifa->ifa_family, (int) ifa->ifa_index, RTA_DATA(rta));
        }
        return 0;
}

int host_addr_set_apply_netlink(HostAddrSet *s, const void *buf, size_t len) {
        int result = HOST_ADDR_PARSE_MORE;
        /* Signed, as the NLMSG_* macros expect: an over-long last message
         * must make the remainder negative, not wrap it around. */
        int left;

        assert(s);
        assert(buf || len == 0);
        if (len > INT32_MAX)
                return -EBADMSG;
        left = (int) len;
        for (const struct nlmsghdr *h = buf; left > 0; h = NLMSG_NEXT(h, left)) {
                /* NLMSG_OK(), spelled out without its signed/unsigned comparison. */
                if ((size_t) left < sizeof(struct nlmsghdr) || h->nlmsg_len < sizeof(struct nlmsghdr) ||
                    h->nlmsg_len > (size_t) left)
                        return -EBADMSG;
                if (h->nlmsg_flags & NLM_F_DUMP_INTR)
                        result = HOST_ADDR_PARSE_DUMP_INTR;
                switch (h->nlmsg_type) {
                case NLMSG_DONE:
                        return result == HOST_ADDR_PARSE_DUMP_INTR ? result : HOST_ADDR_PARSE_DUMP_DONE;
                case NLMSG_ERROR: {
                        const struct nlmsgerr *e = NLMSG_DATA(h);
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
                                return -EBADMSG;
                        /* The kernel sends 0 (an ACK) or a negative errno; anything else is garbage. */
                        if (e->error > 0 || e->error < -4095)
                                return -EBADMSG;
                        if (e->error < 0)
                                return e->error;
                        break;
                }
                case RTM_NEWADDR:
                case RTM_DELADDR: {
                        int r = apply_ifaddr(s, h);
                        if (r < 0)
                                return r;
                        break;
                }
                default:
                        break;
                }
        }
        return result;
}
