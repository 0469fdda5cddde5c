/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "unit-props.h"
#include "worker-metrics.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

void worker_metrics_cgroup(Worker *w, CgroupStats *ret) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char path[256];

        *ret = (CgroupStats) {
                CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN,
                CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN, CGROUP_STAT_UNKNOWN,
        };
        /* Only a unit that runs has a cgroup that is the worker's. */
        if (w->state != WORKER_RUNNING || !w->unit)
                return;
        if (w->cgroup.usec > 0 && now - w->cgroup.usec < WORKER_CGROUP_CACHE_USEC) {
                *ret = w->cgroup.stats;
                return;
        }
        if ((size_t) snprintf(path, sizeof(path), SBX_SLICE "/%s", w->unit) >= sizeof(path))
                return;
        (void) cgroup_stats_read(CGROUP_ROOT, path, ret);
        w->cgroup.stats = *ret;
        w->cgroup.usec = now;
}

int worker_egress_ctl_call(const Worker *w, const char *req, size_t len, int timeout_msec, char *reply,
                           size_t size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int r;

        if (!w->egress.service)
                return -ENOENT;
        if (len > EGRESS_CTL_MSG_MAX)
                return -EMSGSIZE;
        r = egress_ctl_path(w->id, sa.sun_path, sizeof(sa.sun_path));
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* One datagram holds the whole request; the default buffer may not. */
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int) { (int) len + 4096 }, sizeof(int));
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;   /* ENOENT: no listener; EAGAIN: its backlog is full */
        if (send(fd, req, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                return errno == EAGAIN ? -EMSGSIZE : -errno;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        r = poll(&p, 1, timeout_msec);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        n = recv(fd, reply, size - 1, MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ECONNRESET;
        reply[n] = 0;
        return (int) n;
}

bool worker_proxy_running(const Worker *w) {
        /* Where systemd puts a transient service on each layout: v2, the
         * hybrid's unified tree, the legacy name=systemd tree. */
        static const char *const roots[] = {
                CGROUP_ROOT, CGROUP_ROOT "/unified", CGROUP_ROOT "/systemd",
        };
        static const char *const slices[] = { "system.slice", SBX_SLICE };
        char path[512];

        if (!w->egress.service)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(roots); i++)
                for (size_t j = 0; j < ELEMENTSOF(slices); j++) {
                        snprintf(path, sizeof(path), "%s/%s/%s", roots[i], slices[j], w->egress.service);
                        if (access(path, F_OK) == 0)
                                return true;
                }
        return false;
}

void worker_metrics_egress(Worker *w, EgressCounters *ret) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char reply[128];
        int n;

        *ret = w->egress.counters;
        /* A proxy that does not run is not started to be asked: asking
         * connects to its socket, which would activate it. */
        if (!w->egress.service || w->state != WORKER_RUNNING || !worker_proxy_running(w))
                return;
        if (w->egress.counters_usec > 0 && now - w->egress.counters_usec < WORKER_EGRESS_CACHE_USEC)
                return;
        if (w->egress.counters_failed_usec > 0 && now - w->egress.counters_failed_usec < WORKER_EGRESS_RETRY_USEC)
                return;
        n = worker_egress_ctl_call(w, "stats", 5, WORKER_EGRESS_STATS_TIMEOUT_MSEC, reply, sizeof(reply));
        if (n < 0 || egress_ctl_parse_stats(reply, (size_t) n, &w->egress.counters) < 0) {
                w->egress.counters_failed_usec = now;
                return;
        }
        w->egress.counters_usec = now;
        w->egress.counters_failed_usec = 0;
        *ret = w->egress.counters;
}
