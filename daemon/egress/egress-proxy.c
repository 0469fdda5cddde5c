/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include "egress-proxy.h"
#include "event-util.h"
#include "egress-trace.h"
#include "egress-tunnel.h"
#include "util.h"

#if EGRESS_TRACE
/* The tracing build times each journal flush (bench/egress/bench.sh). */
static void trace_journal_flush(uint64_t start_ns, unsigned n) {
        trace_span("journal-flush", start_ns, n);
}
#endif

static int proxy_alloc(sd_event *event, EgressPolicy *policy, const char *resolv_conf, const char *hosts_file,
                       Proxy *first, Proxy **ret) {
        Proxy *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->event = sd_event_ref(event);
        r = resolver_new(event, resolv_conf, hosts_file, first ? first->resolver : NULL, &p->resolver);
        if (r >= 0)
                r = host_addr_watch_new(event, &p->host_addrs, &p->host_watch);
        if (r < 0) {
                resolver_free(p->resolver);
                host_addr_set_clear(&p->host_addrs);
                sd_event_unref(p->event);
                free(p);
                return r;
        }
        p->policy = policy;
        journal_batch_init(&p->journal, event);
#if EGRESS_TRACE
        p->journal.flushed = trace_journal_flush;
#endif
        *ret = p;
        return 0;
}

int proxy_new(sd_event *event, EgressPolicy *policy, const char *resolv_conf, const char *hosts_file, Proxy **ret) {
        ProxyShared *shared;
        int r;

        assert(event);
        assert(policy);
        assert(ret);
        shared = calloc(1, sizeof(*shared));
        if (!shared)
                return -ENOMEM;
        r = proxy_alloc(event, policy, resolv_conf, hosts_file, NULL, ret);
        if (r < 0) {
                free(shared);
                return r;
        }
        pthread_mutex_init(&shared->lock, NULL);
        log_limit_init(&shared->refusal_log, policy->refusal_log_burst, policy->refusal_log_window_usec);
        atomic_init(&shared->n_tunnels, 0);
        atomic_init(&shared->bytes_sent, 0);
        atomic_init(&shared->bytes_received, 0);
        atomic_init(&shared->connections, 0);
        (*ret)->shared = shared;
        (*ret)->is_first = true;
        return 0;
}

int proxy_new_sibling(Proxy *first, sd_event *event, const char *resolv_conf, const char *hosts_file, Proxy **ret) {
        assert(first);
        assert(first->is_first);
        assert(ret);
        int r = proxy_alloc(event, first->policy, resolv_conf, hosts_file, first, ret);
        if (r < 0)
                return r;
        (*ret)->shared = first->shared;
        (*ret)->accepted_nodelay = first->accepted_nodelay;
        return 0;
}

/* One entry for the refusals of a window that were not logged one by one.
 * Called with the shared lock held. */
static void proxy_log_refusal_summary(Proxy *p) {
        LogLimit *limit = &p->shared->refusal_log;
        char reasons[1024], count[24], window[24], message[1200];
        uint64_t n = log_limit_take_summary(limit, reasons, sizeof(reasons));
        const char *id = p->policy->worker_id ?: "";

        if (n == 0)
                return;
        snprintf(count, sizeof(count), "%" PRIu64, n);
        snprintf(window, sizeof(window), "%" PRIu64, limit->window_usec);
        snprintf(message, sizeof(message), "egress refusals not logged one by one: %s in %" PRIu64 " s (%s) worker=%s",
                 count, limit->window_usec / USEC_PER_SEC, reasons, id);
        journal_batch_add(&p->journal, LOG_WARNING, message,
                   "SANDBOXD_WORKER_ID", id,
                   "EGRESS_SUPPRESSED", count,
                   "EGRESS_SUPPRESSED_REASONS", reasons,
                   "EGRESS_SUPPRESSED_WINDOW_USEC", window,
                   NULL);
}

/* Any loop's timer may find the window over: the first to run logs the
 * summary, which empties it for the others. */
static int on_summary_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Proxy *p = userdata;
        LogLimit *limit = &p->shared->refusal_log;

        pthread_mutex_lock(&p->shared->lock);
        if (log_limit_summary_due(limit, now_usec(CLOCK_MONOTONIC)))
                proxy_log_refusal_summary(p);
        else if (limit->suppressed > 0)
                (void) event_timer_arm_at(s, log_limit_window_end(limit), TIMER_HOUSEKEEPING);
        pthread_mutex_unlock(&p->shared->lock);
        return 0;
}

bool proxy_refusal_log_admit(Proxy *p, const char *reason) {
        LogLimit *limit = &p->shared->refusal_log;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool admit;

        assert(p);
        pthread_mutex_lock(&p->shared->lock);
        if (log_limit_summary_due(limit, now))
                proxy_log_refusal_summary(p);   /* the timer has not run yet: the window is over all the same */
        admit = log_limit_refusal(limit, reason, now);
        if (!admit && limit->suppressed == 1) {
                /* The first one held back: the summary is due when the window ends. */
                int r = p->summary_timer
                        ? event_timer_arm_at(p->summary_timer, log_limit_window_end(limit), TIMER_HOUSEKEEPING)
                        : event_add_timer_at(p->event, &p->summary_timer, log_limit_window_end(limit),
                                             TIMER_HOUSEKEEPING, on_summary_timer, p, "refusal-summary-timer");
                /* Without the timer the summary comes with the next refusal
                 * after the window, or when the proxy stops. */
                if (r < 0)
                        log_warning_errno(r, "Failed to arm the refusal summary timer: %m");
        }
        pthread_mutex_unlock(&p->shared->lock);
        return admit;
}

Proxy *proxy_free(Proxy *p) {
        if (!p)
                return NULL;
        while (p->tunnels)
                tunnel_end_at_shutdown(p->tunnels);
        /* What a window held back is still reported when the proxy stops. */
        pthread_mutex_lock(&p->shared->lock);
        proxy_log_refusal_summary(p);
        pthread_mutex_unlock(&p->shared->lock);
        journal_batch_done(&p->journal);
        trace_flush();
        sd_event_source_disable_unref(p->summary_timer);
        for (size_t i = 0; i < p->n_listeners; i++)
                sd_event_source_disable_unref(p->listeners[i]);
        free(p->listeners);
        resolver_free(p->resolver);
        host_addr_watch_free(p->host_watch);
        host_addr_set_clear(&p->host_addrs);
        pipe_pool_clear(&p->pipes);
        while (p->buckets) {
                DestBucket *b = p->buckets;
                p->buckets = b->next;
                free(b);
        }
        if (p->is_first || p->owns_policy)
                egress_policy_free(p->policy);
        egress_policy_free(p->initial_policy);
        if (p->is_first) {
                pthread_mutex_destroy(&p->shared->lock);
                free(p->shared);
        }
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

static int on_listener(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Proxy *p = userdata;

        /* One connection per wakeup: the listener is level-triggered, so
         * another one queued brings the loop back at once, and one that
         * came alone (the usual case) costs no accept4() that says EAGAIN. */
        int cfd;
        do
                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        while (cfd < 0 && errno == ECONNABORTED);
        if (cfd < 0) {
                /* EMFILE and friends: stop for now, the loop will call again. */
                if (errno != EAGAIN && errno != EINTR)
                        log_warning_errno(errno, "accept() failed: %m");
                return 0;
        }
        if (p->dispatch && p->dispatch(p->dispatch_userdata, cfd))
                return 0;
        int r = tunnel_start(p, cfd);
        if (r < 0)
                log_warning_errno(r, "Failed to start tunnel: %m");
        return 0;
}

int proxy_add_listener(Proxy *p, int fd) {
        sd_event_source **a, *s = NULL;
        int r;

        assert(p);
        assert(fd >= 0);
        r = fd_nonblock(fd, true);
        if (r < 0)
                goto fail;
        a = reallocarray(p->listeners, p->n_listeners + 1, sizeof(*a));
        if (!a) {
                r = -ENOMEM;
                goto fail;
        }
        p->listeners = a;
        r = sd_event_add_io(p->event, &s, fd, EPOLLIN, on_listener, p);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(s, "connect-listener");
        sd_event_source_set_io_fd_own(s, true);
        /* Set once here rather than on every accepted socket, which inherits it. */
        bool nodelay = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int)) >= 0;
        p->accepted_nodelay = (p->n_listeners == 0 || p->accepted_nodelay) && nodelay;
        p->listeners[p->n_listeners++] = s;
        return 0;
fail:
        safe_close(fd);
        return r;
}

/* Idle buckets that have refilled completely are indistinguishable from new ones. */
static void proxy_gc_buckets(Proxy *p, uint64_t now) {
        for (DestBucket **b = &p->buckets; *b; ) {
                DestBucket *d = *b;
                if (d->users == 0 && token_bucket_available(&d->bucket, now) >= d->bucket.burst) {
                        *b = d->next;
                        free(d);
                        p->n_buckets--;
                } else
                        b = &d->next;
        }
}

DestBucket *proxy_acquire_bucket(Proxy *p, const char *host) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        assert(p);
        if (p->policy->rate_bps == 0)
                return NULL;
        for (DestBucket *b = p->buckets; b; b = b->next)
                if (streq(b->host, host)) {
                        b->users++;
                        return b;
                }
        proxy_gc_buckets(p, now);
        DestBucket *b = calloc(1, sizeof(*b));
        if (!b)
                return NULL;
        snprintf(b->host, sizeof(b->host), "%s", host);
        token_bucket_init(&b->bucket, p->policy->rate_bps, p->policy->rate_burst, now);
        b->users = 1;
        b->next = p->buckets;
        p->buckets = b;
        p->n_buckets++;
        return b;
}

void proxy_release_bucket(Proxy *p, DestBucket *b) {
        if (!b)
                return;
        assert(b->users > 0);
        b->users--;
        if (p->n_buckets > PROXY_BUCKETS_MAX)
                proxy_gc_buckets(p, now_usec(CLOCK_MONOTONIC));
}

void proxy_set_policy(Proxy *p, EgressPolicy *policy) {
        EgressPolicy *old = p->policy;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        assert(p);
        assert(policy);
        p->policy = policy;
        if (p->owns_policy)
                egress_policy_free(old);
        else if (p->is_first)
                p->initial_policy = old;
        /* A sibling's first policy was the first loop's: that one frees it. */
        p->owns_policy = true;
        /* Buckets start over at the new rate; with no rate the tunnels let go of them. */
        if (policy->rate_bps > 0)
                for (DestBucket *b = p->buckets; b; b = b->next)
                        token_bucket_init(&b->bucket, policy->rate_bps, policy->rate_burst, now);
        for (Tunnel *t = p->tunnels, *next; t; t = next) {
                next = tunnel_next(t);
                tunnel_policy_changed(t);
        }
        proxy_gc_buckets(p, now);
}
