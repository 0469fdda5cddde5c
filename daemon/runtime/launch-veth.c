/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch-veth.h"
#include "util.h"
#include "worker-veth.h"

/* One rtnetlink request: a header, its family struct, attributes. */
typedef struct NlMsg {
        union {
                struct nlmsghdr hdr;
                char buf[1024];
        };
        struct rtattr *nest[4];
        size_t n_nest;
        bool overflow;
} NlMsg;

static void *nl_tail(NlMsg *m) {
        return m->buf + NLMSG_ALIGN(m->hdr.nlmsg_len);
}

static void nl_init(NlMsg *m, uint16_t type, uint16_t flags, const void *body, size_t body_len) {
        memset(m, 0, sizeof(*m));
        m->hdr.nlmsg_type = type;
        m->hdr.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        m->hdr.nlmsg_len = (uint32_t) NLMSG_LENGTH(body_len);
        memcpy(NLMSG_DATA(&m->hdr), body, body_len);
}

static void nl_put(NlMsg *m, uint16_t type, const void *data, size_t len) {
        size_t at = NLMSG_ALIGN(m->hdr.nlmsg_len);

        if (at + RTA_SPACE(len) > sizeof(m->buf)) {
                m->overflow = true;
                return;
        }
        struct rtattr *a = nl_tail(m);
        a->rta_type = type;
        a->rta_len = (unsigned short) RTA_LENGTH(len);
        if (len > 0)
                memcpy(RTA_DATA(a), data, len);
        m->hdr.nlmsg_len = (uint32_t) (at + RTA_ALIGN(a->rta_len));
}

static void nl_put_string(NlMsg *m, uint16_t type, const char *s) {
        nl_put(m, type, s, strlen(s) + 1);
}

static void nl_begin(NlMsg *m, uint16_t type) {
        if (m->n_nest >= ELEMENTSOF(m->nest)) {
                m->overflow = true;
                return;
        }
        m->nest[m->n_nest++] = nl_tail(m);
        nl_put(m, type, NULL, 0);
}

/* The peer's struct ifinfomsg sits inside VETH_INFO_PEER, before its attributes. */
static void nl_put_raw(NlMsg *m, const void *data, size_t len) {
        size_t at = NLMSG_ALIGN(m->hdr.nlmsg_len);

        if (at + NLMSG_ALIGN(len) > sizeof(m->buf)) {
                m->overflow = true;
                return;
        }
        memcpy(m->buf + at, data, len);
        m->hdr.nlmsg_len = (uint32_t) (at + NLMSG_ALIGN(len));
}

static void nl_end(NlMsg *m) {
        if (m->n_nest == 0 || m->overflow)
                return;
        struct rtattr *a = m->nest[--m->n_nest];
        a->rta_len = (unsigned short) ((char *) nl_tail(m) - (char *) a);
}

/* Sends M on FD and reads the kernel's acknowledgement: 0 or its -errno.
 * One request is in flight at a time, so the acknowledgement is the next
 * NLMSG_ERROR with its sequence number. */
static int nl_call(int fd, NlMsg *m, uint32_t seq) {
        char reply[4096];
        ssize_t n;

        if (m->overflow)
                return -ENOBUFS;
        m->hdr.nlmsg_seq = seq;
        if (send(fd, m->buf, m->hdr.nlmsg_len, 0) < 0)
                return -errno;
        for (;;) {
                n = recv(fd, reply, sizeof(reply), 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *) reply; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        if (h->nlmsg_seq != m->hdr.nlmsg_seq || h->nlmsg_type != NLMSG_ERROR)
                                continue;
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                return -EBADMSG;
                        return ((struct nlmsgerr *) NLMSG_DATA(h))->error;
                }
        }
}

static int nl_open(void) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

/* IFLA_AF_SPEC { AF_INET6 { IFLA_INET6_ADDR_GEN_MODE = NONE } }: the link
 * gets no IPv6 link-local address, so nothing on it answers over IPv6. */
static void put_no_ipv6(NlMsg *m) {
        uint8_t mode = IN6_ADDR_GEN_MODE_NONE;

        nl_begin(m, IFLA_AF_SPEC);
        nl_begin(m, AF_INET6);
        nl_put(m, IFLA_INET6_ADDR_GEN_MODE, &mode, sizeof(mode));
        nl_end(m);
        nl_end(m);
}

/* Creates IFNAME here with its peer PEER_IFNAME in the namespace PEER_NS_FD. */
static int veth_create(int nl, const char *ifname, const char *peer_ifname, int peer_ns_fd) {
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
        uint32_t ns_fd = (uint32_t) peer_ns_fd;
        NlMsg m;

        nl_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
        nl_put_string(&m, IFLA_IFNAME, ifname);
        nl_begin(&m, IFLA_LINKINFO);
        nl_put_string(&m, IFLA_INFO_KIND, "veth");
        nl_begin(&m, IFLA_INFO_DATA);
        nl_begin(&m, VETH_INFO_PEER);
        nl_put_raw(&m, &ifi, sizeof(ifi));
        nl_put_string(&m, IFLA_IFNAME, peer_ifname);
        nl_put(&m, IFLA_NET_NS_FD, &ns_fd, sizeof(ns_fd));
        nl_end(&m);
        nl_end(&m);
        nl_end(&m);
        return nl_call(nl, &m, 1);
}

/* Gives link IFNAME of the namespace NL is in ADDR/SBX_VETH_PREFIX, no IPv6
 * address, and brings it up. */
static int link_configure(int nl, const char *ifname, const char *addr) {
        struct in_addr a;
        unsigned idx = if_nametoindex(ifname);
        NlMsg m;
        int r;

        if (idx == 0)
                return -errno;
        if (inet_pton(AF_INET, addr, &a) != 1)
                return -EINVAL;

        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = (int) idx };
        nl_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
        put_no_ipv6(&m);
        r = nl_call(nl, &m, 2);
        /* EAFNOSUPPORT: the kernel has no IPv6 for this link at all. */
        if (r < 0 && r != -EAFNOSUPPORT)
                return r;

        struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = SBX_VETH_PREFIX, .ifa_index = idx };
        nl_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
        nl_put(&m, IFA_LOCAL, &a, sizeof(a));
        nl_put(&m, IFA_ADDRESS, &a, sizeof(a));
        r = nl_call(nl, &m, 3);
        if (r < 0)
                return r;

        ifi.ifi_flags = IFF_UP;
        ifi.ifi_change = IFF_UP;
        nl_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
        return nl_call(nl, &m, 4);
}

int launch_veth_setup(const char *id) {
        _cleanup_close_ int unit_ns = -EBADF, sandbox_ns = -EBADF, unit_nl = -EBADF, sandbox_nl = -EBADF;
        int r;

        /* A netlink socket stays in the namespace it was made in: this one
         * configures the unit's end after the move. */
        unit_nl = nl_open();
        if (unit_nl < 0)
                return log_error_errno(unit_nl, "Worker %s: failed to open rtnetlink: %m", id);
        unit_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (unit_ns < 0)
                return log_error_errno(errno, "Worker %s: failed to open the unit's network namespace: %m", id);
        if (unshare(CLONE_NEWNET) < 0)
                return log_error_errno(errno, "Worker %s: failed to make the sandbox's network namespace: %m", id);
        sandbox_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (sandbox_ns < 0)
                return log_error_errno(errno, "Worker %s: failed to open the sandbox's network namespace: %m", id);
        sandbox_nl = nl_open();
        if (sandbox_nl < 0)
                return log_error_errno(sandbox_nl, "Worker %s: failed to open rtnetlink: %m", id);
        r = veth_create(sandbox_nl, SBX_VETH_SANDBOX_IFNAME, SBX_VETH_PROXY_IFNAME, unit_ns);
        if (r < 0)
                return log_error_errno(r, "Worker %s: failed to create the sandbox's veth pair: %m", id);
        r = link_configure(sandbox_nl, SBX_VETH_SANDBOX_IFNAME, SBX_VETH_SANDBOX_ADDR);
        if (r < 0)
                return log_error_errno(r, "Worker %s: failed to configure the sandbox's end of the veth: %m", id);
        /* if_nametoindex() asks the namespace the caller is in. */
        if (setns(unit_ns, CLONE_NEWNET) < 0)
                return log_error_errno(errno, "Worker %s: failed to return to the unit's network namespace: %m", id);
        r = link_configure(unit_nl, SBX_VETH_PROXY_IFNAME, SBX_VETH_PROXY_ADDR);
        if (r < 0)
                return log_error_errno(r, "Worker %s: failed to configure the proxy's end of the veth: %m", id);
        /* runsc gives the sandbox the namespace it is started in. */
        if (setns(sandbox_ns, CLONE_NEWNET) < 0)
                return log_error_errno(errno, "Worker %s: failed to enter the sandbox's network namespace: %m", id);
        return 0;
}

int launch_veth_hide_rootns_test(void) {
        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        if (mount("none", "/proc/sys/net/core", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,mode=0555") < 0)
                return -errno;
        return 0;
}
