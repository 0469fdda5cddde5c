/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "egress-netlink.h"
#include "util.h"

#define DUMP_TIMEOUT_MSEC 5000
/* Room for a burst of address changes; beyond it the kernel says ENOBUFS
 * and the set is dumped again. */
#define NETLINK_RCVBUF (1024 * 1024)

struct HostAddrWatch {
        HostAddrSet *set;
        int fd;
        uint32_t seq;
        sd_event_source *source;
};

static int request_dump(HostAddrWatch *w) {
        struct {
                struct nlmsghdr h;
                struct ifaddrmsg ifa;
        } req = {
                .h = {
                        .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
                        .nlmsg_type = RTM_GETADDR,
                        .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                        .nlmsg_seq = ++w->seq,
                },
                .ifa = { .ifa_family = AF_UNSPEC },
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

        if (sendto(w->fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;
        return 0;
}

/* Reads what is queued. Returns the last HostAddrParse seen, or a negative
 * errno; -EAGAIN when nothing was queued. Only the kernel is listened to:
 * another process could send to our port id. */
static int read_datagrams(HostAddrWatch *w) {
        static uint8_t buf[64 * 1024] __attribute__((aligned(NLMSG_ALIGNTO)));
        int last = -EAGAIN;

        for (;;) {
                struct sockaddr_nl from = {};
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
                struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t n = recvmsg(w->fd, &mh, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? last : -errno;
                }
                if (from.nl_pid != 0 || (mh.msg_flags & MSG_TRUNC))
                        continue;
                int r = host_addr_set_apply_netlink(w->set, buf, (size_t) n);
                if (r < 0)
                        return r;
                if (r == HOST_ADDR_PARSE_DUMP_INTR)
                        return r;
                if (last != HOST_ADDR_PARSE_DUMP_DONE)
                        last = r;
        }
}

/* Changes and dumps only ever add what they report and remove what the
 * kernel says was removed: a missed RTM_DELADDR leaves an address refused
 * that is no longer the host's, which fails closed. */
static int on_netlink(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        HostAddrWatch *w = userdata;
        int r = read_datagrams(w);

        if (r == -ENOBUFS || r == HOST_ADDR_PARSE_DUMP_INTR) {
                /* Changes were lost (or raced the dump): ask for all of them. */
                r = request_dump(w);
                if (r < 0)
                        log_error_errno(r, "Failed to request the host's addresses again: %m");
        } else if (r < 0 && r != -EAGAIN)
                log_error_errno(r, "Failed to read address changes: %m");
        return 0;
}

static int initial_dump(HostAddrWatch *w) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (uint64_t) DUMP_TIMEOUT_MSEC * 1000;
        int r = request_dump(w);

        while (r >= 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
                if (poll(&pfd, 1, (int) ((deadline - now) / 1000) + 1) < 0 && errno != EINTR)
                        return -errno;
                r = read_datagrams(w);
                if (r == HOST_ADDR_PARSE_DUMP_DONE)
                        return 0;
                if (r == -ENOBUFS || r == HOST_ADDR_PARSE_DUMP_INTR)
                        r = request_dump(w);
                else if (r == -EAGAIN || r == HOST_ADDR_PARSE_MORE)
                        r = 0;
        }
        return r;
}

int host_addr_watch_new(sd_event *event, HostAddrSet *set, HostAddrWatch **ret) {
        struct sockaddr_nl local = {
                .nl_family = AF_NETLINK,
                .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
        };
        int r;

        assert(event);
        assert(set);
        assert(ret);
        HostAddrWatch *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->set = set;
        w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (w->fd < 0) {
                r = -errno;
                goto fail;
        }
        (void) setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &(int) { NETLINK_RCVBUF }, sizeof(int));
        if (bind(w->fd, (struct sockaddr *) &local, sizeof(local)) < 0) {
                r = -errno;
                goto fail;
        }
        r = initial_dump(w);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(event, &w->source, w->fd, EPOLLIN, on_netlink, w);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(w->source, "netlink");
        *ret = w;
        return 0;
fail:
        host_addr_watch_free(w);
        return r;
}

HostAddrWatch *host_addr_watch_free(HostAddrWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        safe_close(w->fd);
        free(w);
        return NULL;
}
