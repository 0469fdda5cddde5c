/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addr-class.h"
#include "event-util.h"
#include "broker-upstream.h"
#include "egress-resolve.h"
#include "host-addrs.h"
#include "util.h"

typedef enum ConnState {
        CONN_RESOLVING,
        CONN_CONNECTING,
        CONN_HANDSHAKE,
        CONN_READY,
        CONN_IDLE,
} ConnState;

struct BrokerConn {
        BrokerService *service;
        BrokerConn *next;                /* in the idle pool */
        BrokerConn *opening_prev, *opening_next;
        bool opening;
        ConnState state;
        int fd;
        SSL *ssl;
        sd_event_source *io, *timer;
        ResolveQuery *query;
        ResolvedAddress addrs[RESOLVE_ADDRESSES_MAX];
        size_t n_addrs, next_addr;
        broker_conn_ready_t ready;
        broker_conn_io_t on_io;
        void *userdata;
        bool reused;
        char address[INET6_ADDRSTRLEN];
        char reason[160];
};

int broker_tls_context_new(const char *ca_file, SSL_CTX **ret) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        const char *file;

        if (!ctx)
                return -ENOMEM;
        (void) SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        /* The bundle is read into the store now, not looked up per
         * handshake: after the seccomp filter, and in a unit that may see
         * little of /etc, nothing of the trust decision depends on files. */
        file = ca_file ?: getenv(X509_get_default_cert_file_env()) ?: X509_get_default_cert_file();
        if (SSL_CTX_load_verify_locations(ctx, file, NULL) != 1) {
                unsigned long e = ERR_get_error();
                log_error("Failed to load the broker's trust store %s: %s", file,
                          e ? ERR_reason_error_string(e) ?: "unknown error" : "no certificates");
                ERR_clear_error();
                SSL_CTX_free(ctx);
                return -EINVAL;
        }
        *ret = ctx;
        return 0;
}

SSL *broker_conn_ssl(const BrokerConn *c) { return c->ssl; }
const char *broker_conn_address(const BrokerConn *c) { return c->address; }
bool broker_conn_reused(const BrokerConn *c) { return c->reused; }

static void opening_unlink(BrokerConn *c) {
        if (!c->opening)
                return;
        if (c->opening_prev)
                c->opening_prev->opening_next = c->opening_next;
        else
                c->service->opening = c->opening_next;
        if (c->opening_next)
                c->opening_next->opening_prev = c->opening_prev;
        c->opening_prev = c->opening_next = NULL;
        c->opening = false;
}

BrokerConn *broker_conn_free(BrokerConn *c) {
        if (!c)
                return NULL;
        opening_unlink(c);
        resolve_query_cancel(c->query);
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->ssl)
                SSL_free(c->ssl);
        safe_close(c->fd);
        free(c);
        return NULL;
}

static void conn_fail(BrokerConn *c, int code, const char *reason) {
        broker_conn_ready_t ready = c->ready;
        void *userdata = c->userdata;

        /* The reason outlives the connection: the caller logs it. */
        static char saved[160];
        snprintf(saved, sizeof(saved), "%s", reason);
        broker_conn_free(c);
        ready(NULL, code, saved, userdata);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);

int broker_conn_want(BrokerConn *c, uint32_t events) {
        if (!c->io) {
                if (events == 0)
                        return 0;
                int r = sd_event_add_io(c->service->broker->proxy->event, &c->io, c->fd, events, on_conn_io, c);
                if (r >= 0)
                        (void) sd_event_source_set_description(c->io, "broker-upstream");
                return r;
        }
        if (events == 0)
                return sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
        int r = sd_event_source_set_io_events(c->io, events);
        return r < 0 ? r : sd_event_source_set_enabled(c->io, SD_EVENT_ON);
}

void broker_conn_set_io(BrokerConn *c, broker_conn_io_t io, void *userdata) {
        c->on_io = io;
        c->userdata = userdata;
}

static const char *verify_reason(BrokerConn *c) {
        long v = SSL_get_verify_result(c->ssl);

        if (v == X509_V_OK)
                return "tls-handshake-failed";
        if (v == X509_V_ERR_HOSTNAME_MISMATCH)
                return "tls-hostname-mismatch";
        snprintf(c->reason, sizeof(c->reason), "tls-certificate-untrusted %s", X509_verify_cert_error_string(v));
        return c->reason;
}

static void conn_handshake(BrokerConn *c) {
        int r = SSL_connect(c->ssl);

        if (r == 1) {
                opening_unlink(c);
                c->state = CONN_READY;
                sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
                (void) broker_conn_want(c, 0);
                c->ready(c, 0, NULL, c->userdata);
                return;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                if (broker_conn_want(c, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT) < 0)
                        conn_fail(c, 502, "tls-handshake-failed");
                return;
        }
        const char *reason = verify_reason(c);
        ERR_clear_error();
        conn_fail(c, 502, reason);
}

static void conn_start_tls(BrokerConn *c) {
        const char *host = c->service->config->host;

        c->ssl = SSL_new(c->service->broker->tls);
        if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_set_tlsext_host_name(c->ssl, host) != 1 ||
            SSL_set1_host(c->ssl, host) != 1) {
                ERR_clear_error();
                conn_fail(c, 502, "tls-setup-failed");
                return;
        }
        /* A name only: an upstream certificate for an IP address never matches. */
        X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(c->ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        c->state = CONN_HANDSHAKE;
        conn_handshake(c);
}

static void format_address(const ResolvedAddress *a, char *buf, size_t size) {
        const void *addr = a->sa.ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) &a->sa)->sin_addr
                                                      : (const void *) &((const struct sockaddr_in6 *) &a->sa)->sin6_addr;
        if (!inet_ntop(a->sa.ss_family, addr, buf, (socklen_t) size))
                snprintf(buf, size, "?");
}

static void conn_connect_next(BrokerConn *c) {
        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
        while (c->next_addr < c->n_addrs) {
                const ResolvedAddress *a = &c->addrs[c->next_addr++];
                format_address(a, c->address, sizeof(c->address));
                c->fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
                if (c->fd < 0)
                        continue;
                (void) setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
                if (connect(c->fd, (const struct sockaddr *) &a->sa, a->len) < 0 && errno != EINPROGRESS) {
                        c->fd = safe_close(c->fd);
                        continue;
                }
                c->state = CONN_CONNECTING;
                if (broker_conn_want(c, EPOLLOUT) < 0) {
                        c->fd = safe_close(c->fd);
                        continue;
                }
                return;
        }
        conn_fail(c, 502, "connect-failed");
}

static void conn_check_connect(BrokerConn *c) {
        int err = 0;
        socklen_t len = sizeof(err);

        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err != 0) {
                conn_connect_next(c);
                return;
        }
        conn_start_tls(c);
}

static void on_resolved(int status, const ResolvedAddress *addrs, size_t n_addrs, void *userdata) {
        BrokerConn *c = userdata;
        const Proxy *p = c->service->broker->proxy;

        c->query = NULL;
        if (status < 0) {
                conn_fail(c, 502, status == -ENOENT ? "name-not-found" :
                                  status == -ETIMEDOUT ? "resolve-timeout" : "resolve-failed");
                return;
        }
        /* As for CONNECT: one private or host-local answer refuses the name. */
        for (size_t i = 0; i < n_addrs; i++) {
                const char *range = egress_addr_classify((const struct sockaddr *) &addrs[i].sa, addrs[i].len,
                                                         p->policy->private_ranges, p->policy->n_private_ranges);
                format_address(&addrs[i], c->address, sizeof(c->address));
                if (range) {
                        snprintf(c->reason, sizeof(c->reason), "private-address %s", range);
                        conn_fail(c, 403, c->reason);
                        return;
                }
                if (host_addr_set_contains(&p->host_addrs, (const struct sockaddr *) &addrs[i].sa, addrs[i].len)) {
                        conn_fail(c, 403, "host-local");
                        return;
                }
        }
        memcpy(c->addrs, addrs, n_addrs * sizeof(addrs[0]));
        c->n_addrs = n_addrs;
        conn_connect_next(c);
}

static void pool_remove(BrokerConn *c);

static int on_conn_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        BrokerConn *c = userdata;

        if (c->state == CONN_IDLE) {
                /* Idle too long: the upstream would close it soon anyway. */
                pool_remove(c);
                broker_conn_free(c);
                return 0;
        }
        conn_fail(c, 504, c->state == CONN_RESOLVING ? "resolve-timeout" :
                          c->state == CONN_CONNECTING ? "connect-timeout" : "tls-handshake-timeout");
        return 0;
}

static void pool_remove(BrokerConn *c) {
        BrokerService *svc = c->service;
        for (BrokerConn **i = &svc->idle; *i; i = &(*i)->next)
                if (*i == c) {
                        *i = c->next;
                        c->next = NULL;
                        svc->n_idle--;
                        return;
                }
}

/* An idle connection that becomes readable is either the upstream closing
 * it or TLS housekeeping (a session ticket): anything else is unexpected
 * data that must not be taken for the next response. */
static void conn_idle_readable(BrokerConn *c) {
        uint8_t scratch[512];
        int n = SSL_read(c->ssl, scratch, sizeof(scratch));
        if (n <= 0 && SSL_get_error(c->ssl, n) == SSL_ERROR_WANT_READ)
                return;
        ERR_clear_error();
        pool_remove(c);
        broker_conn_free(c);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        BrokerConn *c = userdata;

        switch (c->state) {
        case CONN_CONNECTING:
                conn_check_connect(c);
                break;
        case CONN_HANDSHAKE:
                conn_handshake(c);
                break;
        case CONN_IDLE:
                conn_idle_readable(c);
                break;
        case CONN_READY:
                if (c->on_io)
                        c->on_io(c, c->userdata);
                break;
        case CONN_RESOLVING:
                break;
        }
        return 0;
}

int broker_conn_open(BrokerService *s, uint64_t timeout_usec, broker_conn_ready_t ready, void *userdata) {
        Proxy *p = s->broker->proxy;
        BrokerConn *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->service = s;
        c->fd = -1;
        c->ready = ready;
        c->userdata = userdata;
        c->state = CONN_RESOLVING;
        c->opening = true;
        c->opening_next = s->opening;
        if (s->opening)
                s->opening->opening_prev = c;
        s->opening = c;
        r = event_add_timer(p->event, &c->timer, timeout_usec, TIMER_WAIT, on_conn_timer, c, "broker-upstream-timer");
        if (r < 0) {
                broker_conn_free(c);
                return r;
        }
        /* The handler may run before this returns (hosts file). */
        r = resolver_resolve(p->resolver, s->config->host, s->config->port, on_resolved, c, &c->query);
        if (r < 0) {
                conn_fail(c, 502, "resolve-failed");
                return 0;
        }
        return 0;
}

BrokerConn *broker_conn_take_idle(BrokerService *s) {
        BrokerConn *c = s->idle;

        if (!c)
                return NULL;
        s->idle = c->next;
        c->next = NULL;
        s->n_idle--;
        c->state = CONN_READY;
        c->reused = true;
        (void) broker_conn_want(c, 0);
        sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        return c;
}

void broker_conn_release(BrokerConn *c, bool reusable) {
        BrokerService *s;

        if (!c)
                return;
        s = c->service;
        if (!reusable || s->n_idle >= BROKER_POOL_MAX || c->state != CONN_READY || SSL_pending(c->ssl) > 0 ||
            broker_conn_want(c, EPOLLIN) < 0 ||
            event_timer_arm(c->timer, BROKER_POOL_IDLE_USEC, TIMER_HOUSEKEEPING) < 0) {
                broker_conn_free(c);
                return;
        }
        c->state = CONN_IDLE;
        c->on_io = NULL;
        c->userdata = NULL;
        c->next = s->idle;
        s->idle = c;
        s->n_idle++;
}

void broker_conn_free_opening(BrokerService *s) {
        while (s->opening)
                broker_conn_free(s->opening);
}
