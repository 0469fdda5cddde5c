/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress-control.h"
#include "egress-ctl.h"
#include "event-util.h"
#include "util.h"

struct EgressControl {
        Proxy *first;
        ProxyLoops *const *loops;
        sd_event_source *listener;
};

bool egress_control_is_listener(int fd) {
        int type = 0, family = 0;
        socklen_t len = sizeof(type);
        struct sockaddr_storage ss;
        socklen_t slen = sizeof(ss);

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
                return false;
        if (getsockname(fd, (struct sockaddr *) &ss, &slen) < 0)
                return false;
        family = ss.ss_family;
        return family == AF_UNIX;
}

/* One policy per loop, each the loop's own: a rate is split evenly among
 * the loops, since each keeps its own buckets (a proxy started with a rate
 * has one loop and keeps the whole of it). */
static int policies_from_json(const Proxy *first, const char *json, unsigned n, EgressPolicy **policies) {
        for (unsigned i = 0; i < n; i++) {
                int r = egress_policy_from_json(json, &policies[i]);
                if (r < 0)
                        return r;
                /* Another worker's policy would put this proxy's journal
                 * entries under its ID. */
                if (!streq_ptr(policies[i]->worker_id, first->policy->worker_id))
                        return -EINVAL;
                if (n > 1 && policies[i]->rate_bps > 0) {
                        policies[i]->rate_bps = MAX(policies[i]->rate_bps / n, (uint64_t) 1);
                        policies[i]->rate_burst /= n;
                }
        }
        return 0;
}

static int apply_policy(EgressControl *c, const char *json) {
        unsigned n = 1 + proxy_loops_count(*c->loops);
        EgressPolicy *policies[PROXY_LOOPS_MAX] = {};
        char allow[16], rate[24];
        int r;

        r = policies_from_json(c->first, json, n, policies);
        if (r < 0) {
                for (unsigned i = 0; i < n; i++)
                        egress_policy_free(policies[i]);
                return r;
        }
        proxy_loops_set_policy(*c->loops, policies + 1);
        proxy_set_policy(c->first, policies[0]);
        const EgressPolicy *p = c->first->policy;
        snprintf(allow, sizeof(allow), "%zu", p->n_allow);
        snprintf(rate, sizeof(rate), "%" PRIu64, p->rate_bps * n);
        log_struct(LOG_NOTICE, "Egress policy replaced by sandboxd",
                   "SANDBOXD_WORKER_ID", p->worker_id ?: "", "EGRESS_MODE", egress_mode_to_string(p->mode),
                   "EGRESS_ALLOW_RULES", allow, "EGRESS_RATE_BPS", rate, NULL);
        return 0;
}

static void answer(EgressControl *c, int fd, char *buf, size_t len) {
        char reply[128];
        size_t json_at = 0;
        int n = -ENOBUFS;

        switch (egress_ctl_parse_request(buf, len, &json_at)) {
        case EGRESS_CTL_STATS: {
                ProxyShared *s = c->first->shared;
                EgressCounters counters = {
                        .bytes_sent = atomic_load(&s->bytes_sent),
                        .bytes_received = atomic_load(&s->bytes_received),
                        .connections = atomic_load(&s->connections),
                };
                n = egress_ctl_format_stats(&counters, reply, sizeof(reply));
                break;
        }
        case EGRESS_CTL_POLICY:
                buf[len] = 0;
                n = egress_ctl_format_status(apply_policy(c, buf + json_at), reply, sizeof(reply));
                break;
        case EGRESS_CTL_INVALID:
                n = egress_ctl_format_status(-EBADMSG, reply, sizeof(reply));
                break;
        }
        if (n > 0)
                (void) send(fd, reply, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void connection_close(sd_event_source *s) {
        /* Floating, the loop holds the only reference: take one of our own
         * first (making it non-floating drops the loop's), then drop it
         * (the fd goes with it). */
        sd_event_source_ref(s);
        (void) sd_event_source_set_floating(s, false);
        sd_event_source_disable_unref(s);
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressControl *c = userdata;
        char *buf = malloc(EGRESS_CTL_MSG_MAX + 1);
        ssize_t n;

        if (!buf) {
                connection_close(s);
                return 0;
        }
        n = recv(fd, buf, EGRESS_CTL_MSG_MAX, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                free(buf);
                return 0;
        }
        if (n <= 0) {
                free(buf);
                connection_close(s);
                return 0;
        }
        if ((size_t) n > EGRESS_CTL_MSG_MAX) {
                char reply[32];
                int m = egress_ctl_format_status(-EMSGSIZE, reply, sizeof(reply));
                if (m > 0)
                        (void) send(fd, reply, (size_t) m, MSG_NOSIGNAL | MSG_DONTWAIT);
        } else
                answer(c, fd, buf, (size_t) n);
        free(buf);
        return 0;
}

static int on_listener(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressControl *c = userdata;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        sd_event_source *conn;
        int cfd, r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        /* The socket's file lets only root in; should its mode ever be
         * wrong, nobody else is answered all the same. */
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
                log_warning("Refused a control connection from uid %d", len == sizeof(cred) ? (int) cred.uid : -1);
                safe_close(cfd);
                return 0;
        }
        r = sd_event_add_io(c->first->event, &conn, cfd, EPOLLIN, on_connection, c);
        if (r < 0) {
                safe_close(cfd);
                return 0;
        }
        sd_event_source_set_io_fd_own(conn, true);
        (void) event_source_float(conn, "control-connection");
        return 0;
}

int egress_control_new(Proxy *first, ProxyLoops *const *loops, int listen_fd, EgressControl **ret) {
        EgressControl *c;
        int r;

        assert(first);
        assert(loops);
        assert(ret);
        c = calloc(1, sizeof(*c));
        if (!c) {
                safe_close(listen_fd);
                return -ENOMEM;
        }
        c->first = first;
        c->loops = loops;
        r = fd_nonblock(listen_fd, true);
        if (r >= 0)
                r = sd_event_add_io(first->event, &c->listener, listen_fd, EPOLLIN, on_listener, c);
        if (r < 0) {
                safe_close(listen_fd);
                free(c);
                return r;
        }
        sd_event_source_set_io_fd_own(c->listener, true);
        (void) sd_event_source_set_description(c->listener, "control-listener");
        *ret = c;
        return 0;
}

EgressControl *egress_control_free(EgressControl *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->listener);
        free(c);
        return NULL;
}
