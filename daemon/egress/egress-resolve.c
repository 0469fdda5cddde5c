/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ares.h>
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "egress-resolve.h"
#include "event-util.h"
#include "util.h"

#define RESOLVER_SOCKETS_MAX 16

typedef struct ResolverSocket {
        int fd;
        sd_event_source *source;
} ResolverSocket;

typedef struct SharedCache {
        pthread_mutex_t lock;
        ResolveCache cache;
} SharedCache;

struct Resolver {
        sd_event *event;
        ares_channel channel;
        bool channel_initialized;
        bool env_hosts;
        const char *hosts_path;       /* what c-ares reads for the "f" lookup */
        sd_event_source *timer;
        ResolverSocket sockets[RESOLVER_SOCKETS_MAX];
        /* The answers every loop of the proxy has seen (egress-loops.h): a
         * name is looked up once for all of them. The first resolver owns it. */
        SharedCache *cache;
        bool owns_cache;
        /* The query whose ares_getaddrinfo() call is running: an answer that
         * comes back inside that call was read from the hosts file (DNS
         * answers always wait for a socket). */
        const ResolveQuery *in_getaddrinfo;
};

struct ResolveQuery {
        Resolver *resolver;
        resolve_handler_t handler;
        void *userdata;
        char host[RESOLVE_CACHE_HOST_MAX + 1];
};

static void resolver_rearm_timer(Resolver *r) {
        struct timeval tv, *t;

        t = ares_timeout(r->channel, NULL, &tv);
        if (!t) {
                sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        /* c-ares' next retry or give-up: a connect waits on it. */
        (void) event_timer_arm(r->timer, (uint64_t) t->tv_sec * USEC_PER_SEC + (uint64_t) t->tv_usec, TIMER_WAIT);
}

static int on_resolver_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Resolver *r = userdata;

        ares_process_fd(r->channel,
                        revents & (EPOLLIN | EPOLLHUP | EPOLLERR) ? fd : ARES_SOCKET_BAD,
                        revents & EPOLLOUT ? fd : ARES_SOCKET_BAD);
        resolver_rearm_timer(r);
        return 0;
}

static int on_resolver_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Resolver *r = userdata;

        ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        resolver_rearm_timer(r);
        return 0;
}

/* c-ares tells us which of its sockets to watch for what. */
static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable) {
        Resolver *r = data;
        ResolverSocket *slot = NULL, *free_slot = NULL;
        uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

        for (size_t i = 0; i < RESOLVER_SOCKETS_MAX; i++) {
                if (r->sockets[i].source && r->sockets[i].fd == fd)
                        slot = &r->sockets[i];
                else if (!r->sockets[i].source && !free_slot)
                        free_slot = &r->sockets[i];
        }
        if (!events) {
                if (slot) {
                        slot->source = sd_event_source_disable_unref(slot->source);
                        slot->fd = -1;
                }
                return;
        }
        if (slot) {
                sd_event_source_set_io_events(slot->source, events);
                return;
        }
        if (!free_slot || sd_event_add_io(r->event, &free_slot->source, fd, events, on_resolver_io, r) < 0) {
                /* Unwatched, the query times out through the timer and fails closed. */
                log_warning("Cannot watch resolver socket %d", fd);
                return;
        }
        (void) sd_event_source_set_description(free_slot->source, "resolver-io");
        free_slot->fd = fd;
}

int resolver_new(sd_event *event, const char *resolv_conf, const char *hosts_file, Resolver *share_cache_with,
                 Resolver **ret) {
        struct ares_options options = {};
        int optmask, r;

        assert(event);
        assert(ret);

        Resolver *res = calloc(1, sizeof(*res));
        if (!res)
                return -ENOMEM;
        res->event = sd_event_ref(event);
        for (size_t i = 0; i < RESOLVER_SOCKETS_MAX; i++)
                res->sockets[i].fd = -1;

        options.sock_state_cb = on_sock_state;
        options.sock_state_cb_data = res;
        options.lookups = (char *) "fb";            /* /etc/hosts, then DNS */
        options.timeout = 2000;
        options.tries = 2;
        /* Exactly the approved name, never "name.<search domain>": a name
         * that fails must not be retried as another host. NOSEARCH is
         * documented for ares_search(); whether every ares_getaddrinfo()
         * path honours it has varied between versions, so the domain list
         * is also set explicitly empty (resolv.conf's "search"/"domain" and
         * $LOCALDOMAIN then cannot fill it), and ndots 1 leaves no "search
         * list first" order to play with. */
        options.flags = ARES_FLAG_NOSEARCH;
        options.domains = NULL;
        options.ndomains = 0;
        options.ndots = 1;
        optmask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
                  ARES_OPT_FLAGS | ARES_OPT_DOMAINS | ARES_OPT_NDOTS;
        if (resolv_conf) {
                options.resolvconf_path = (char *) resolv_conf;
                optmask |= ARES_OPT_RESOLVCONF;
        }
        r = ares_init_options(&res->channel, &options, optmask);
        if (r != ARES_SUCCESS) {
                log_error("Failed to initialize c-ares: %s", ares_strerror(r));
                resolver_free(res);
                return r == ARES_ENOMEM ? -ENOMEM : -EIO;
        }
        res->channel_initialized = true;
        if (hosts_file) {
                if (setenv("CARES_HOSTS", hosts_file, 1) < 0) {
                        resolver_free(res);
                        return -errno;
                }
                res->env_hosts = true;
        }
        res->hosts_path = hosts_file ?: "/etc/hosts";
        if (share_cache_with)
                res->cache = share_cache_with->cache;
        else {
                res->cache = malloc(sizeof(*res->cache));
                if (!res->cache) {
                        resolver_free(res);
                        return -ENOMEM;
                }
                pthread_mutex_init(&res->cache->lock, NULL);
                resolve_cache_init(&res->cache->cache);
                res->owns_cache = true;
        }

        r = event_add_timer(event, &res->timer, USEC_PER_SEC, TIMER_WAIT, on_resolver_timer, res, "resolver-timer");
        if (r < 0) {
                resolver_free(res);
                return r;
        }
        sd_event_source_set_enabled(res->timer, SD_EVENT_OFF);
        *ret = res;
        return 0;
}

Resolver *resolver_free(Resolver *r) {
        if (!r)
                return NULL;
        /* Destroying the channel runs every pending callback with ARES_EDESTRUCTION. */
        if (r->channel_initialized)
                ares_destroy(r->channel);
        for (size_t i = 0; i < RESOLVER_SOCKETS_MAX; i++)
                sd_event_source_disable_unref(r->sockets[i].source);
        sd_event_source_disable_unref(r->timer);
        sd_event_unref(r->event);
        if (r->owns_cache) {
                pthread_mutex_destroy(&r->cache->lock);
                free(r->cache);
        }
        free(r);
        return NULL;
}

static int ares_status_to_errno(int status) {
        switch (status) {
        case ARES_ENOTFOUND:
        case ARES_ENODATA:
        case ARES_ENONAME:
                return -ENOENT;
        case ARES_ETIMEOUT:
                return -ETIMEDOUT;
        case ARES_ENOMEM:
                return -ENOMEM;
        case ARES_ECANCELLED:
        case ARES_EDESTRUCTION:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

/* How long an answer may be kept: its smallest TTL (a CNAME's included),
 * or, read from the hosts file, as long as the file stays as it is. */
static uint64_t answer_ttl_usec(const Resolver *r, const ResolveQuery *q, const struct ares_addrinfo *result) {
        int ttl = INT32_MAX;

        if (r->in_getaddrinfo == q)
                return RESOLVE_CACHE_TTL_MAX_USEC;
        for (const struct ares_addrinfo_node *node = result->nodes; node; node = node->ai_next)
                ttl = MIN(ttl, node->ai_ttl);
        for (const struct ares_addrinfo_cname *c = result->cnames; c; c = c->next)
                ttl = MIN(ttl, c->ttl);
        return ttl > 0 ? (uint64_t) ttl * USEC_PER_SEC : 0;
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *result) {
        ResolveQuery *q = arg;
        ResolvedAddress addrs[RESOLVE_ADDRESSES_MAX];
        size_t n = 0;

        if (status == ARES_SUCCESS && result) {
                for (struct ares_addrinfo_node *node = result->nodes; node && n < RESOLVE_ADDRESSES_MAX;
                     node = node->ai_next) {
                        if (node->ai_addrlen > sizeof(addrs[n].sa))
                                continue;
                        memset(&addrs[n], 0, sizeof(addrs[n]));
                        memcpy(&addrs[n].sa, node->ai_addr, node->ai_addrlen);
                        addrs[n].len = node->ai_addrlen;
                        n++;
                }
                /* Kept even when the tunnel that asked has gone meanwhile. */
                uint64_t ttl = answer_ttl_usec(q->resolver, q, result);
                pthread_mutex_lock(&q->resolver->cache->lock);
                resolve_cache_store(&q->resolver->cache->cache, q->host, addrs, n, ttl, now_usec(CLOCK_MONOTONIC));
                pthread_mutex_unlock(&q->resolver->cache->lock);
        }
        if (q->handler) {
                int err = status == ARES_SUCCESS ? (n > 0 ? 0 : -ENOENT) : ares_status_to_errno(status);
                q->handler(err, addrs, n, q->userdata);
        }
        if (result)
                ares_freeaddrinfo(result);
        free(q);
}

static void hosts_file_id(const char *path, ResolveFileId *id) {
        struct stat st;

        *id = (ResolveFileId) {};
        if (stat(path, &st) < 0)
                return;   /* absent (or unreadable, and then c-ares cannot read it either) */
        *id = (ResolveFileId) {
                .dev = st.st_dev, .ino = st.st_ino, .size = (uint64_t) st.st_size,
                .mtime_nsec = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                .ctime_nsec = (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
        };
}

/* One stat() of the hosts file instead of reading and parsing it (or a DNS
 * round trip); the handler runs here if the answer is still cached. */
static bool resolver_answer_from_cache(Resolver *r, const char *host, uint16_t port, resolve_handler_t handler,
                                       void *userdata) {
        ResolvedAddress addrs[RESOLVE_ADDRESSES_MAX];
        ResolveFileId id;

        size_t n = 0;

        hosts_file_id(r->hosts_path, &id);
        pthread_mutex_lock(&r->cache->lock);
        resolve_cache_check_hosts_file(&r->cache->cache, &id);
        const ResolveCacheEntry *e = resolve_cache_lookup(&r->cache->cache, host, now_usec(CLOCK_MONOTONIC));
        if (e) {
                n = e->n_addrs;
                memcpy(addrs, e->addrs, n * sizeof(addrs[0]));
        }
        pthread_mutex_unlock(&r->cache->lock);
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (addrs[i].sa.ss_family == AF_INET)
                        ((struct sockaddr_in *) &addrs[i].sa)->sin_port = htons(port);
                else
                        ((struct sockaddr_in6 *) &addrs[i].sa)->sin6_port = htons(port);
        }
        handler(0, addrs, n, userdata);
        return true;
}

int resolver_resolve(Resolver *r, const char *host, uint16_t port, resolve_handler_t handler, void *userdata,
                     ResolveQuery **ret) {
        struct ares_addrinfo_hints hints = {
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
                .ai_protocol = IPPROTO_TCP,
                /* No RFC 6724 sorting: c-ares would probe each address with a
                 * UDP connect() to find a source address. Every address is
                 * checked anyway. */
                .ai_flags = ARES_AI_NOSORT | ARES_AI_NUMERICSERV,
        };
        char service[8];

        assert(r);
        assert(host);
        assert(handler);

        /* Cleared first: a cached answer runs the handler here, and *ret may
         * live in what the handler frees. */
        if (ret)
                *ret = NULL;
        if (resolver_answer_from_cache(r, host, port, handler, userdata))
                return 0;
        ResolveQuery *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (ResolveQuery) { .resolver = r, .handler = handler, .userdata = userdata };
        snprintf(q->host, sizeof(q->host), "%s", host);
        snprintf(service, sizeof(service), "%u", port);
        if (r->env_hosts)
                hints.ai_flags |= ARES_AI_ENVHOSTS;
        if (ret)
                *ret = q;
        /* May call on_addrinfo synchronously (hosts file, literals): the
         * caller must be ready for the handler before this returns. */
        r->in_getaddrinfo = q;
        ares_getaddrinfo(r->channel, host, service, &hints, on_addrinfo, q);
        r->in_getaddrinfo = NULL;
        resolver_rearm_timer(r);
        return 0;
}

void resolve_query_cancel(ResolveQuery *q) {
        if (q)
                q->handler = NULL;
}
