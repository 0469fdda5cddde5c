/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <stdlib.h>
#include <sys/eventfd.h>

#include "egress-loops.h"
#include "egress-tunnel.h"
#include "event-util.h"
#include "util.h"

#define HANDOFF_MAX 64   /* connections waiting for one loop; past that the first serves them */

typedef struct Loop {
        pthread_t thread;
        bool started;
        sd_event *event;
        Proxy *proxy;
        int stop_fd;          /* written by the first loop's thread to end this one */
        int handoff_fd;       /* eventfd: connections wait in handoff[] */
        pthread_mutex_t lock; /* ready, handoff */
        pthread_cond_t cond;
        bool ready;
        int handoff[HANDOFF_MAX];
        unsigned n_handoff;
        int policy_fd;        /* eventfd: a new policy waits in new_policy */
        EgressPolicy *new_policy;   /* under lock; NULL once this loop took it */
} Loop;

struct ProxyLoops {
        Proxy *first;
        Loop loops[PROXY_LOOPS_MAX - 1];
        unsigned n;
        unsigned next;        /* round robin over the loops */
};

unsigned proxy_loops_wanted(const Proxy *first) {
        cpu_set_t set;
        int cpus;

        assert(first);
        if (first->policy->rate_bps > 0)
                return 1;
        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return 1;
        cpus = CPU_COUNT(&set);
        return (unsigned) MAX(1, MIN(cpus, PROXY_LOOPS_MAX));
}

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_handoff(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        int fds[HANDOFF_MAX];
        eventfd_t value;
        unsigned n;

        (void) eventfd_read(fd, &value);
        pthread_mutex_lock(&l->lock);
        n = l->n_handoff;
        memcpy(fds, l->handoff, n * sizeof(int));
        l->n_handoff = 0;
        pthread_mutex_unlock(&l->lock);
        for (unsigned i = 0; i < n; i++) {
                int r = tunnel_start(l->proxy, fds[i]);
                if (r < 0)
                        log_warning_errno(r, "Failed to start tunnel: %m");
        }
        return 0;
}

/* Runs on the loop's own thread: only it reads its Proxy's policy. */
static int on_policy(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        EgressPolicy *policy;
        eventfd_t value;

        (void) eventfd_read(fd, &value);
        pthread_mutex_lock(&l->lock);
        policy = l->new_policy;
        pthread_mutex_unlock(&l->lock);
        if (policy)
                proxy_set_policy(l->proxy, policy);
        pthread_mutex_lock(&l->lock);
        l->new_policy = NULL;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
        return 0;
}

/* The first loop accepts every connection and keeps it unless it is busy
 * with a handshake already: one client at a time (the latency path) never
 * crosses threads, many at once are spread over the loops. The loops do
 * not watch the listeners themselves: each connection would wake all of
 * them (sd-event cannot pass EPOLLEXCLUSIVE), costing every loop but one a
 * wakeup and an accept4() that says EAGAIN. */
static bool loops_dispatch(void *userdata, int fd) {
        ProxyLoops *loops = userdata;
        Proxy *first = loops->first;

        if (first->n_tunnels == first->n_established || loops->n == 0)
                return false;
        Loop *l = &loops->loops[loops->next++ % loops->n];
        bool queued = false;
        pthread_mutex_lock(&l->lock);
        if (l->n_handoff < HANDOFF_MAX) {
                l->handoff[l->n_handoff++] = fd;
                queued = true;
        }
        pthread_mutex_unlock(&l->lock);
        /* An eventfd counter far from its maximum always takes a 1; the
         * loop reads the queue whenever it wakes. */
        if (queued)
                (void) eventfd_write(l->handoff_fd, 1);
        return queued;
}

static void *loop_thread(void *userdata) {
        Loop *l = userdata;

        /* The thread's own start-up system calls (rseq, set_robust_list)
         * are behind it now: the filter may come. */
        pthread_mutex_lock(&l->lock);
        l->ready = true;
        pthread_cond_signal(&l->cond);
        pthread_mutex_unlock(&l->lock);
        int r = sd_event_loop(l->event);
        if (r < 0)
                log_error_errno(r, "Event loop of a second thread failed: %m");
        /* Freed here, on its own thread: the close entries of its tunnels go
         * out through its own journal batch. */
        l->proxy = proxy_free(l->proxy);
        return NULL;
}

static void loop_clear(Loop *l) {
        /* Handed over after the loop's last look: never started, no decision to log. */
        for (unsigned i = 0; i < l->n_handoff; i++)
                safe_close(l->handoff[i]);
        l->n_handoff = 0;
        l->handoff_fd = safe_close(l->handoff_fd);
        l->policy_fd = safe_close(l->policy_fd);
        egress_policy_free(l->new_policy);
        l->new_policy = NULL;
        proxy_free(l->proxy);
        l->proxy = NULL;
        l->event = sd_event_unref(l->event);
        l->stop_fd = safe_close(l->stop_fd);
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
}

/* Everything but the thread, so that no thread runs while another loop's
 * resolver is set up (c-ares reads the environment; setenv() is not safe
 * beside a running getenv()). */
static int loop_prepare(Loop *l, Proxy *first, const char *resolv_conf, const char *hosts_file) {
        sd_event_source *s;
        int r;

        *l = (Loop) { .stop_fd = -1, .handoff_fd = -1, .policy_fd = -1 };
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->cond, NULL);
        r = sd_event_new(&l->event);
        if (r < 0)
                return r;
        r = proxy_new_sibling(first, l->event, resolv_conf, hosts_file, &l->proxy);
        if (r < 0)
                return r;
        l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        l->handoff_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        l->policy_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->stop_fd < 0 || l->handoff_fd < 0 || l->policy_fd < 0)
                return -errno;
        r = sd_event_add_io(l->event, &s, l->stop_fd, EPOLLIN, on_stop, NULL);
        if (r < 0)
                return r;
        (void) event_source_float(s, "loop-stop");
        r = sd_event_add_io(l->event, &s, l->handoff_fd, EPOLLIN, on_handoff, l);
        if (r < 0)
                return r;
        (void) event_source_float(s, "loop-handoff");
        r = sd_event_add_io(l->event, &s, l->policy_fd, EPOLLIN, on_policy, l);
        if (r < 0)
                return r;
        (void) event_source_float(s, "loop-policy");
        return 0;
}

static int loop_start(Loop *l) {
        sigset_t all, saved;
        int r;

        /* Signals are the first loop's (its signalfd): none may land here. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = -pthread_create(&l->thread, NULL, loop_thread, l);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0)
                return r;
        l->started = true;
        pthread_mutex_lock(&l->lock);
        while (!l->ready)
                pthread_cond_wait(&l->cond, &l->lock);
        pthread_mutex_unlock(&l->lock);
        return 0;
}

int proxy_loops_start(Proxy *first, unsigned n, const char *resolv_conf, const char *hosts_file, ProxyLoops **ret) {
        ProxyLoops *loops;
        int r = 0;

        assert(first);
        assert(ret);
        loops = calloc(1, sizeof(*loops));
        if (!loops)
                return -ENOMEM;
        loops->first = first;
        for (unsigned i = 1; r >= 0 && i < MIN(n, (unsigned) PROXY_LOOPS_MAX); i++)
                r = loop_prepare(&loops->loops[loops->n++], first, resolv_conf, hosts_file);
        for (unsigned i = 0; r >= 0 && i < loops->n; i++)
                r = loop_start(&loops->loops[i]);
        if (r < 0) {
                proxy_loops_stop(loops);
                return r;
        }
        first->dispatch = loops_dispatch;
        first->dispatch_userdata = loops;
        *ret = loops;
        return 0;
}

unsigned proxy_loops_count(const ProxyLoops *loops) {
        return loops ? loops->n : 0;
}

ProxyLoops *proxy_loops_stop(ProxyLoops *loops) {
        if (!loops)
                return NULL;
        loops->first->dispatch = NULL;
        for (unsigned i = 0; i < loops->n; i++) {
                Loop *l = &loops->loops[i];
                /* An eventfd counter far from its maximum always takes a 1. */
                if (l->started && eventfd_write(l->stop_fd, 1) >= 0)
                        pthread_join(l->thread, NULL);
                loop_clear(l);
        }
        free(loops);
        return NULL;
}

void proxy_loops_set_policy(ProxyLoops *loops, EgressPolicy **policies) {
        if (!loops)
                return;
        for (unsigned i = 0; i < loops->n; i++) {
                Loop *l = &loops->loops[i];
                pthread_mutex_lock(&l->lock);
                l->new_policy = policies[i];
                policies[i] = NULL;
                pthread_mutex_unlock(&l->lock);
                (void) eventfd_write(l->policy_fd, 1);
        }
        /* Each loop drops its pointer to the first loop's policy before that
         * one may go: the loops never wait on the first, so this ends. */
        for (unsigned i = 0; i < loops->n; i++) {
                Loop *l = &loops->loops[i];
                pthread_mutex_lock(&l->lock);
                while (l->new_policy)
                        pthread_cond_wait(&l->cond, &l->lock);
                pthread_mutex_unlock(&l->lock);
        }
}
