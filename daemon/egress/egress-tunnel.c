/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect-request.h"
#include "event-util.h"
#include "egress-refusal.h"
#include "egress-trace.h"
#include "egress-tunnel.h"
#include "tls-hello.h"
#include "util.h"

#define PUMP_ROUNDS 16          /* chunks per direction per wakeup, for fairness */

typedef enum TunnelState {
        TUNNEL_READ_REQUEST,
        TUNNEL_RESOLVING,
        TUNNEL_CONNECTING,
        TUNNEL_READ_HELLO,
        TUNNEL_SEND_HELLO,
        TUNNEL_FORWARDING,
} TunnelState;

/* One way of the stream: src -> pipe -> dst. */
typedef struct Direction {
        int src, dst;
        int pipe[2];
        size_t pipe_size;   /* capacity: how much one splice() in may take */
        size_t in_pipe;
        bool pipe_grown;    /* grown for bulk: too big to pool for short tunnels */
        bool pipe_grow_tried;
        bool eof;       /* src said EOF */
        bool shut;      /* dst was shut down for writing after the pipe drained */
        uint64_t bytes;
} Direction;

/* What is only needed until the tunnel is established. */
typedef struct Handshake {
        uint8_t request[CONNECT_REQUEST_MAX];
        size_t request_len;
        uint8_t hello_raw[TLS_HELLO_RAW_MAX];
        size_t hello_len, hello_sent;
        size_t hello_parse_at;   /* hello_len at which parsing can progress */
        TlsHello hello;
        ResolvedAddress addrs[RESOLVE_ADDRESSES_MAX];
        size_t n_addrs, next_addr;
} Handshake;

struct Tunnel {
        Proxy *proxy;
        Tunnel *prev, *next;
        TunnelState state;
        int client_fd, upstream_fd;
        sd_event_source *client_io, *upstream_io, *timer;
        Handshake *hs;
        ResolveQuery *query;
        DestBucket *bucket;
        Direction up;     /* client -> upstream: EGRESS_BYTES_OUT */
        Direction down;   /* upstream -> client: EGRESS_BYTES_IN */
        bool throttled;
        bool established;
        uint64_t start_usec;
        char host[EGRESS_HOST_MAX + 1];
        uint16_t port;
        char sni[TLS_SNI_MAX + 1];
        char address[INET6_ADDRSTRLEN + 8];
        const char *report_reason;   /* report mode: the first thing enforce would have refused */
#if EGRESS_TRACE
        TraceMarks trace;
#endif
};

void proxy_tunnel_link(Proxy *p, Tunnel *t) {
        t->next = p->tunnels;
        if (p->tunnels)
                p->tunnels->prev = t;
        p->tunnels = t;
        p->n_tunnels++;
        atomic_fetch_add(&p->shared->n_tunnels, 1);
}

void proxy_tunnel_unlink(Proxy *p, Tunnel *t) {
        if (t->established)
                p->n_established--;
        if (t->prev)
                t->prev->next = t->next;
        else
                p->tunnels = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
        p->n_tunnels--;
        atomic_fetch_sub(&p->shared->n_tunnels, 1);
}

static void direction_init(Direction *d) {
        *d = (Direction) { .src = -1, .dst = -1, .pipe = { -1, -1 } };
}

/* A pipe that our own accounting says is empty goes back to the pool
 * for the next tunnel; anything else is closed. */
static void direction_close(Proxy *p, Direction *d) {
        if (d->pipe[0] >= 0 && d->in_pipe == 0 && !d->pipe_grown)
                pipe_pool_put(&p->pipes, d->pipe, d->pipe_size);
        d->pipe[0] = safe_close(d->pipe[0]);
        d->pipe[1] = safe_close(d->pipe[1]);
}

Tunnel *tunnel_free(Tunnel *t) {
        if (!t)
                return NULL;
#if EGRESS_TRACE
        TRACE_MARK(t->trace, TRACE_CLOSE);
        trace_tunnel(&t->trace);
#endif
        proxy_tunnel_unlink(t->proxy, t);
        resolve_query_cancel(t->query);
        sd_event_source_disable_unref(t->client_io);
        sd_event_source_disable_unref(t->upstream_io);
        sd_event_source_disable_unref(t->timer);
        safe_close(t->client_fd);
        safe_close(t->upstream_fd);
        direction_close(t->proxy, &t->up);
        direction_close(t->proxy, &t->down);
        proxy_release_bucket(t->proxy, t->bucket);
        free(t->hs);
        free(t);
        return NULL;
}

/* ---- logging ---- */

static const char *worker_id(const Tunnel *t) {
        return t->proxy->policy->worker_id ?: "";
}

static void tunnel_log_decision(Tunnel *t, const char *decision, const char *reason) {
        char port[8], message[1024];
        int prio = streq(decision, "allow") ? LOG_INFO : streq(decision, "report") ? LOG_NOTICE : LOG_WARNING;

        /* Refusals are what a worker can cause without bound; allow and
         * report decisions (and close entries) are always logged. */
        if (streq(decision, "deny") && !proxy_refusal_log_admit(t->proxy, reason))
                return;

        snprintf(port, sizeof(port), "%u", t->port);
        snprintf(message, sizeof(message), "egress %s %s:%s reason=%s sni=%s address=%s worker=%s",
                 decision, t->host[0] ? t->host : "-", port, reason ?: "-", t->sni[0] ? t->sni : "-",
                 t->address[0] ? t->address : "-", worker_id(t));
        journal_batch_add(&t->proxy->journal, prio, message,
                   "SANDBOXD_WORKER_ID", worker_id(t),
                   "EGRESS_HOST", t->host,
                   "EGRESS_PORT", port,
                   "EGRESS_SNI", t->sni,
                   "EGRESS_ADDRESS", t->address,
                   "EGRESS_DECISION", decision,
                   "EGRESS_REASON", reason ?: "",
                   NULL);
}

static void tunnel_log_close(Tunnel *t) {
        char port[8], in[24], out[24], usec[24], message[1024];

        snprintf(port, sizeof(port), "%u", t->port);
        snprintf(in, sizeof(in), "%" PRIu64, t->down.bytes);
        snprintf(out, sizeof(out), "%" PRIu64, t->up.bytes);
        snprintf(usec, sizeof(usec), "%" PRIu64, now_usec(CLOCK_MONOTONIC) - t->start_usec);
        snprintf(message, sizeof(message), "egress close %s:%s address=%s bytes_in=%s bytes_out=%s usec=%s worker=%s",
                 t->host, port, t->address, in, out, usec, worker_id(t));
        journal_batch_add(&t->proxy->journal, LOG_INFO, message,
                   "SANDBOXD_WORKER_ID", worker_id(t),
                   "EGRESS_HOST", t->host,
                   "EGRESS_PORT", port,
                   "EGRESS_SNI", t->sni,
                   "EGRESS_ADDRESS", t->address,
                   "EGRESS_BYTES_IN", in,
                   "EGRESS_BYTES_OUT", out,
                   "EGRESS_DURATION_USEC", usec,
                   NULL);
}

void tunnel_end_at_shutdown(Tunnel *t) {
        if (t->established)
                tunnel_log_close(t);
        tunnel_free(t);
}

/* ---- refusing ---- */

static void send_best_effort(int fd, const char *s) {
        /* A refusal is a few hundred bytes into an empty socket buffer; if even
         * that does not fit, the client gets a plain close. */
        (void) send(fd, s, strlen(s), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void send_status(Tunnel *t, int code, const char *reason) {
        char buf[1024];
        if (egress_refusal_format(buf, sizeof(buf), code, t->host, t->port, reason) > 0)
                send_best_effort(t->client_fd, buf);
}

/* Refuses and ends the tunnel. Before the 200 the client gets a status
 * line with the reason; after it (ClientHello checks) only a close,
 * because the client is already speaking TLS. */
static void tunnel_deny(Tunnel *t, int code, const char *reason) {
        if (!t->established && t->state < TUNNEL_READ_HELLO)
                send_status(t, code, reason);
        tunnel_log_decision(t, "deny", reason);
        tunnel_free(t);
}

/* A policy refusal: fatal in enforce mode; in report mode remembered and
 * logged when the tunnel is established. Returns true if the caller must stop. */
static bool tunnel_policy_refuse(Tunnel *t, const char *reason) {
        if (t->proxy->policy->mode == EGRESS_MODE_REPORT) {
                if (!t->report_reason)
                        t->report_reason = reason;
                return false;
        }
        tunnel_deny(t, 403, reason);
        return true;
}

Tunnel *tunnel_next(const Tunnel *t) {
        return t->next;
}

void tunnel_policy_changed(Tunnel *t) {
        const EgressPolicy *p = t->proxy->policy;
        char host[EGRESS_HOST_MAX + 1];

        /* Before the request is parsed there is no host: the new list decides it. */
        if (t->state != TUNNEL_READ_REQUEST && t->host[0]) {
                const char *reason = egress_policy_check_host(p, t->host, false, t->port, host, sizeof(host));
                if (reason && p->mode == EGRESS_MODE_ENFORCE) {
                        if (!t->established) {
                                tunnel_deny(t, 403, reason);
                                return;
                        }
                        /* Never held back by the refusal bound: the operator must
                         * see every tunnel a policy change cut. */
                        tunnel_log_decision(t, "revoke", reason);
                        tunnel_log_close(t);
                        tunnel_free(t);
                        return;
                }
        }
        if (t->state == TUNNEL_FORWARDING) {
                proxy_release_bucket(t->proxy, t->bucket);
                t->bucket = proxy_acquire_bucket(t->proxy, t->host);
                if (p->rate_bps > 0 && !t->bucket) {
                        /* never unthrottled when a rate is set */
                        tunnel_log_close(t);
                        tunnel_free(t);
                }
        }
}

/* ---- event plumbing ---- */

static int on_client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_upstream_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void io_set(sd_event_source *s, uint32_t events) {
        if (!s)
                return;
        if (events == 0) {
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_io_events(s, events);
        sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* The upstream's source is created on first need: a connect that completes
 * at once (a near upstream) never needs the EPOLLOUT watch for it. */
static int upstream_io_set(Tunnel *t, uint32_t events) {
        if (t->upstream_io) {
                io_set(t->upstream_io, events);
                return 0;
        }
        if (events == 0)
                return 0;
        int r = sd_event_add_io(t->proxy->event, &t->upstream_io, t->upstream_fd, events, on_upstream_io, t);
        if (r >= 0)
                (void) sd_event_source_set_description(t->upstream_io, "tunnel-upstream");
        return r;
}

/* The one timer serves timeouts (TIMER_WAIT) and throttle waits
 * (TIMER_PACE, on time), so each arming says which it is. */
static int timer_arm(Tunnel *t, uint64_t usec_from_now, TimerKind kind) {
        return event_timer_arm(t->timer, usec_from_now, kind);
}

static void timer_disarm(Tunnel *t) {
        sd_event_source_set_enabled(t->timer, SD_EVENT_OFF);
}

/* ---- forwarding ---- */

static bool direction_wants_read(const Tunnel *t, const Direction *d) {
        return !d->eof && d->in_pipe == 0 && !t->throttled;
}

static int tunnel_update_events(Tunnel *t) {
        io_set(t->client_io, (direction_wants_read(t, &t->up) ? EPOLLIN : 0) | (t->down.in_pipe > 0 ? EPOLLOUT : 0));
        return upstream_io_set(t, (direction_wants_read(t, &t->down) ? EPOLLIN : 0) | (t->up.in_pipe > 0 ? EPOLLOUT : 0));
}

static void tunnel_throttle(Tunnel *t, uint64_t now) {
        t->throttled = true;
        if (timer_arm(t, token_bucket_wake_usec(&t->bucket->bucket, now), TIMER_PACE) < 0)
                t->throttled = false;   /* no timer, no pause: better than a stall */
}

/* A direction that fills its pipe in one splice() is a bulk transfer:
 * a bigger pipe moves the same bytes in fewer, larger system calls. Tried
 * once; at the per-user pipe quota the kernel says no and the pipe stays. */
static void direction_grow_pipe(Direction *d) {
        d->pipe_grow_tried = true;
        int size = fcntl(d->pipe[1], F_SETPIPE_SZ, PROXY_PIPE_SIZE_BULK);
        if (size > 0 && (size_t) size > d->pipe_size) {
                d->pipe_size = (size_t) size;
                d->pipe_grown = true;
        }
}

/* Passes d's EOF on. When the other way is done already, the tunnel is
 * closed right after this, and close() sends the same FIN: both sockets
 * have seen EOF, so neither has unread data that would turn it into a
 * reset. That saves a shutdown() per tunnel. */
static void direction_finish(Tunnel *t, Direction *d) {
        const Direction *other = d == &t->up ? &t->down : &t->up;

        if (!other->shut)
                (void) shutdown(d->dst, SHUT_WR);
        d->shut = true;
}

/* Moves what it can from d->src to d->dst. Returns 0 or a negative errno
 * that ends the tunnel. */
static int direction_pump(Tunnel *t, Direction *d) {
        for (unsigned round = 0; round < PUMP_ROUNDS; round++) {
                ssize_t n;

                if (d->in_pipe > 0) {
                        n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                        if (n < 0)
                                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                        d->in_pipe -= (size_t) n;
                        continue;
                }
                if (d->eof) {
                        if (!d->shut)
                                direction_finish(t, d);
                        return 0;
                }
                if (t->throttled)
                        return 0;

                size_t want = d->pipe_size;
                uint64_t now = 0;
                if (t->bucket) {
                        now = now_usec(CLOCK_MONOTONIC);
                        uint64_t avail = token_bucket_available(&t->bucket->bucket, now);
                        if (avail == 0) {
                                tunnel_throttle(t, now);
                                return 0;
                        }
                        want = MIN(want, (size_t) MIN(avail, (uint64_t) d->pipe_size));
                }
                n = splice(d->src, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                if (n == 0) {
                        d->eof = true;
                        continue;
                }
                if (t->bucket)
                        token_bucket_consume(&t->bucket->bucket, (uint64_t) n);
                if (d == &t->down)
                        TRACE_MARK_ONCE(t->trace, TRACE_FIRST_DOWN);
                d->bytes += (uint64_t) n;
                atomic_fetch_add_explicit(d == &t->up ? &t->proxy->shared->bytes_sent
                                                      : &t->proxy->shared->bytes_received,
                                          (uint64_t) n, memory_order_relaxed);
                d->in_pipe += (size_t) n;
                if (d->in_pipe >= d->pipe_size && !d->pipe_grow_tried)
                        direction_grow_pipe(d);
        }
        /* EOF seen in the last round with nothing left to write: no event
         * will bring us back here, so pass it on now or the peer waits forever. */
        if (d->eof && d->in_pipe == 0 && !d->shut)
                direction_finish(t, d);
        return 0;
}

/* Pumps the directions an event concerns (both when called without one),
 * so a wakeup does not cost a splice() that can only say EAGAIN. */
static void tunnel_forward(Tunnel *t, bool up, bool down) {
        int r = up ? direction_pump(t, &t->up) : 0;
        if (r >= 0 && down)
                r = direction_pump(t, &t->down);
        if (r >= 0 && !(t->up.shut && t->down.shut))
                r = tunnel_update_events(t);
        if (r < 0 || (t->up.shut && t->down.shut)) {
                tunnel_log_close(t);
                tunnel_free(t);
        }
}

static int tunnel_start_forwarding(Tunnel *t) {
        int r = pipe_pool_take(&t->proxy->pipes, t->up.pipe, &t->up.pipe_size);
        if (r >= 0)
                r = pipe_pool_take(&t->proxy->pipes, t->down.pipe, &t->down.pipe_size);
        if (r < 0)
                return r;
        t->up.src = t->down.dst = t->client_fd;
        t->up.dst = t->down.src = t->upstream_fd;
        t->bucket = proxy_acquire_bucket(t->proxy, t->host);
        if (t->proxy->policy->rate_bps > 0 && !t->bucket)
                return -ENOMEM;   /* never run unthrottled when a rate is set */
        if (t->bucket && t->hs)
                token_bucket_consume(&t->bucket->bucket, t->hs->hello_len);
        t->state = TUNNEL_FORWARDING;
        TRACE_MARK(t->trace, TRACE_FORWARD);
        free(t->hs);
        t->hs = NULL;
        timer_disarm(t);
        /* No pump yet: the hello has just left, so both sockets are almost
         * always empty and two splice() calls would only say EAGAIN. The
         * watches are level-triggered and report whatever is there. */
        return tunnel_update_events(t);
}

/* ---- handshake ---- */

static void tunnel_established(Tunnel *t) {
        t->established = true;
        t->proxy->n_established++;
        atomic_fetch_add_explicit(&t->proxy->shared->connections, 1, memory_order_relaxed);
        if (t->report_reason)
                tunnel_log_decision(t, "report", t->report_reason);
        else
                tunnel_log_decision(t, "allow", NULL);
}

/* Writes the ClientHello (and anything the client sent with it) upstream. */
static void tunnel_send_hello(Tunnel *t) {
        Handshake *hs = t->hs;

        t->state = TUNNEL_SEND_HELLO;
        while (hs->hello_sent < hs->hello_len) {
                ssize_t n = send(t->upstream_fd, hs->hello_raw + hs->hello_sent, hs->hello_len - hs->hello_sent,
                                 MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN && upstream_io_set(t, EPOLLOUT) >= 0) {
                                io_set(t->client_io, 0);
                                return;
                        }
                        tunnel_established(t);
                        tunnel_log_close(t);
                        tunnel_free(t);
                        return;
                }
                hs->hello_sent += (size_t) n;
        }
        /* Logged after the hello is on its way: the journal write is not
         * in the path of the upstream's first answer. */
        tunnel_established(t);
        t->up.bytes += hs->hello_len;
        int r = tunnel_start_forwarding(t);
        if (r < 0) {
                log_error_errno(r, "Failed to set up forwarding for %s: %m", t->host);
                tunnel_log_close(t);
                tunnel_free(t);
        }
}

static const char *check_hello(Tunnel *t, TlsHelloResult result) {
        const TlsHello *h = &t->hs->hello;
        char sni[EGRESS_HOST_MAX + 1];
        EgressHostKind kind;

        switch (result) {
        case TLS_HELLO_NO_SNI:
                return "no-sni";
        case TLS_HELLO_NOT_TLS:
                return "not-tls";
        case TLS_HELLO_TOO_LARGE:
        case TLS_HELLO_MALFORMED:
                return tls_hello_result_to_string(result);
        case TLS_HELLO_OK:
        case TLS_HELLO_ECH:
                break;
        case TLS_HELLO_NEED_MORE:
                assert(false);
        }
        if (!h->has_sni)
                return result == TLS_HELLO_ECH ? "ech-without-outer-sni" : "no-sni";
        snprintf(t->sni, sizeof(t->sni), "%s", h->sni);
        if (egress_host_normalize(h->sni, false, sni, sizeof(sni), &kind) < 0)
                return "invalid-sni";
        if (kind != EGRESS_HOST_NAME)
                return "sni-ip-literal";
        /* With ECH the real name is encrypted; what we can hold the client
         * to is the outer (public) name, which must be the CONNECT host. */
        if (!streq(sni, t->host))
                return result == TLS_HELLO_ECH ? "ech-outer-sni-mismatch" : "sni-mismatch";
        return NULL;
}

static void tunnel_process_hello(Tunnel *t) {
        Handshake *hs = t->hs;
        TlsHelloResult result = tls_hello_parse(hs->hello_raw, hs->hello_len, &hs->hello);

        if (result == TLS_HELLO_NEED_MORE) {
                if (hs->hello_len >= sizeof(hs->hello_raw))
                        result = TLS_HELLO_TOO_LARGE;
                else {
                        hs->hello_parse_at = tls_hello_bytes_wanted(hs->hello_raw, hs->hello_len);
                        io_set(t->client_io, EPOLLIN);
                        return;
                }
        }
        const char *reason = check_hello(t, result);
        TRACE_MARK(t->trace, TRACE_HELLO);
        if (reason && tunnel_policy_refuse(t, reason))
                return;
        tunnel_send_hello(t);
}

static void tunnel_read_hello(Tunnel *t) {
        Handshake *hs = t->hs;
        ssize_t n = recv(t->client_fd, hs->hello_raw + hs->hello_len, sizeof(hs->hello_raw) - hs->hello_len, 0);

        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                tunnel_deny(t, 403, "client-error");
                return;
        }
        if (n == 0) {
                tunnel_deny(t, 403, "client-closed-before-hello");
                return;
        }
        hs->hello_len += (size_t) n;
        /* Likewise: parse again only once the record being received is complete. */
        if (hs->hello_len >= hs->hello_parse_at || hs->hello_len == sizeof(hs->hello_raw))
                tunnel_process_hello(t);
}

static void tunnel_connected(Tunnel *t) {
        static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

        if (send(t->client_fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL) != (ssize_t) (sizeof(ok) - 1)) {
                tunnel_deny(t, 502, "client-error");
                return;
        }
        TRACE_MARK(t->trace, TRACE_OK_SENT);
        if (!t->proxy->policy->require_tls) {
                /* Without require-TLS any protocol may follow; forward at once. */
                tunnel_send_hello(t);
                return;
        }
        t->state = TUNNEL_READ_HELLO;
        timer_arm(t, t->proxy->policy->hello_timeout_usec, TIMER_WAIT);
        if (t->hs->hello_len > 0)
                tunnel_process_hello(t);   /* the client sent it along with the CONNECT */
        else
                io_set(t->client_io, EPOLLIN);
}

static void tunnel_connect_next(Tunnel *t);

static bool socket_established(int fd) {
        struct tcp_info info;
        socklen_t len = sizeof(info);

        return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && len > 0 &&
               info.tcpi_state == TCP_ESTABLISHED;
}

static void tunnel_check_connect(Tunnel *t) {
        int err = 0;
        socklen_t len = sizeof(err);

        if (getsockopt(t->upstream_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err == 0) {
                TRACE_MARK(t->trace, TRACE_CONNECTED);
                io_set(t->upstream_io, 0);
                tunnel_connected(t);
                return;
        }
        log_debug("connect to %s failed: %s", t->address, strerror(err));
        tunnel_connect_next(t);
}

static void format_address(const ResolvedAddress *a, char *buf, size_t size) {
        const void *addr = a->sa.ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) &a->sa)->sin_addr
                                                      : (const void *) &((const struct sockaddr_in6 *) &a->sa)->sin6_addr;
        if (!inet_ntop(a->sa.ss_family, addr, buf, (socklen_t) size))
                snprintf(buf, size, "?");
}

/* Connects to the next checked address; every one was classified before
 * the first attempt, and nothing but these sockaddrs is ever dialled. */
static void tunnel_connect_next(Tunnel *t) {
        Handshake *hs = t->hs;

        t->upstream_io = sd_event_source_disable_unref(t->upstream_io);
        t->upstream_fd = safe_close(t->upstream_fd);
        while (hs->next_addr < hs->n_addrs) {
                const ResolvedAddress *a = &hs->addrs[hs->next_addr++];
                format_address(a, t->address, sizeof(t->address));
                t->upstream_fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
                if (t->upstream_fd < 0)
                        continue;
                /* Relayed segments are already sized by the endpoints; Nagle would only add delay. */
                (void) setsockopt(t->upstream_fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
                if (connect(t->upstream_fd, (const struct sockaddr *) &a->sa, a->len) < 0 && errno != EINPROGRESS) {
                        t->upstream_fd = safe_close(t->upstream_fd);
                        continue;
                }
                t->state = TUNNEL_CONNECTING;
                /* A near upstream has usually answered before connect()
                 * returns (the SYN-ACK is processed as connect() releases
                 * the socket): finishing now saves an event-loop round
                 * trip, and the socket's state says so in one system call
                 * where a zero-timeout poll() and SO_ERROR took two. */
                if (socket_established(t->upstream_fd)) {
                        TRACE_MARK(t->trace, TRACE_CONNECTED);
                        tunnel_connected(t);
                        return;
                }
                if (upstream_io_set(t, EPOLLOUT) < 0) {
                        t->upstream_fd = safe_close(t->upstream_fd);
                        continue;
                }
                return;
        }
        tunnel_deny(t, 502, "connect-failed");
}

static void on_resolved(int status, const ResolvedAddress *addrs, size_t n_addrs, void *userdata) {
        Tunnel *t = userdata;
        const EgressPolicy *p = t->proxy->policy;

        t->query = NULL;
        if (status < 0) {
                tunnel_deny(t, 502, status == -ENOENT ? "name-not-found" :
                                    status == -ETIMEDOUT ? "resolve-timeout" : "resolve-failed");
                return;
        }
        /* Every answer is classified, and one private answer refuses the
         * name: a name that mixes public and private addresses is how DNS
         * rebinding is set up, and failing closed costs nothing legitimate.
         * This holds in report mode too: private ranges are not allow-list
         * policy but the wall around the host. */
        for (size_t i = 0; i < n_addrs; i++) {
                const char *range = egress_addr_classify((const struct sockaddr *) &addrs[i].sa, addrs[i].len,
                                                         p->private_ranges, p->n_private_ranges);
                if (range) {
                        static _Thread_local char reason[160];   /* used before the loop's next decision */
                        format_address(&addrs[i], t->address, sizeof(t->address));
                        snprintf(reason, sizeof(reason), "private-address %s", range);
                        tunnel_deny(t, 403, reason);
                        return;
                }
                /* The proxy runs in the host's namespace: an address of the
                 * host's own would reach whatever listens there. */
                if (host_addr_set_contains(&t->proxy->host_addrs, (const struct sockaddr *) &addrs[i].sa,
                                           addrs[i].len)) {
                        format_address(&addrs[i], t->address, sizeof(t->address));
                        tunnel_deny(t, 403, "host-local");
                        return;
                }
        }
        TRACE_MARK(t->trace, TRACE_RESOLVED);
        memcpy(t->hs->addrs, addrs, n_addrs * sizeof(addrs[0]));
        t->hs->n_addrs = n_addrs;
        t->hs->next_addr = 0;
        tunnel_connect_next(t);
}

static void tunnel_process_request(Tunnel *t) {
        Handshake *hs = t->hs;
        ConnectRequest req;
        ConnectParseResult pr = connect_request_parse(hs->request, hs->request_len, &req);

        if (pr == CONNECT_PARSE_NEED_MORE) {
                if (hs->request_len >= sizeof(hs->request))
                        tunnel_deny(t, 403, connect_parse_result_to_string(CONNECT_PARSE_TOO_LONG));
                return;
        }
        if (pr != CONNECT_PARSE_OK) {
                /* Not even report mode can forward what is not a CONNECT. */
                tunnel_deny(t, 403, connect_parse_result_to_string(pr));
                return;
        }
        t->port = req.port;
        const char *reason = egress_policy_check_host(t->proxy->policy, req.host, req.host_is_bracketed, req.port,
                                                      t->host, sizeof(t->host));
        if (reason && streq(reason, "invalid-host")) {
                snprintf(t->host, sizeof(t->host), "%s", req.host);
                tunnel_deny(t, 403, reason);
                return;
        }
        if (reason && tunnel_policy_refuse(t, reason))
                return;

        /* Bytes after the request are the start of the ClientHello. */
        hs->hello_len = hs->request_len - req.request_size;
        memcpy(hs->hello_raw, hs->request + req.request_size, hs->hello_len);

        /* The client's watch stays as it is: a near upstream is usually
         * resolved and connected before this returns, and turning the watch
         * off and on again would cost two epoll_ctl() calls. A client that
         * sends more meanwhile wakes on_client_io once, which turns it off. */
        t->state = TUNNEL_RESOLVING;
        TRACE_MARK(t->trace, TRACE_REQUEST);
        timer_arm(t, t->proxy->policy->connect_timeout_usec, TIMER_WAIT);
        /* The handler may run before this returns (hosts file). */
        int r = resolver_resolve(t->proxy->resolver, t->host, t->port, on_resolved, t, &t->query);
        if (r < 0)
                tunnel_deny(t, 502, "resolve-failed");
}

static void tunnel_read_request(Tunnel *t) {
        Handshake *hs = t->hs;
        ssize_t n = recv(t->client_fd, hs->request + hs->request_len, sizeof(hs->request) - hs->request_len, 0);

        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        tunnel_free(t);   /* the client went away: no decision to log */
                return;
        }
        if (n == 0) {
                tunnel_free(t);
                return;
        }
        hs->request_len += (size_t) n;
        /* Reparsing costs the whole buffer; a client dribbling one byte at a
         * time would make that quadratic. Nothing new can be decided until a
         * line ends, except refusing early garbage and a full buffer. */
        if (memchr(hs->request + hs->request_len - n, '\n', (size_t) n) || hs->request_len <= 16 ||
            hs->request_len == sizeof(hs->request))
                tunnel_process_request(t);
}

static int on_client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Tunnel *t = userdata;

        switch (t->state) {
        case TUNNEL_READ_REQUEST:
                tunnel_read_request(t);
                break;
        case TUNNEL_READ_HELLO:
                tunnel_read_hello(t);
                break;
        case TUNNEL_FORWARDING:
                /* Readable feeds client->upstream; writable drains upstream->client. */
                tunnel_forward(t, revents & (EPOLLIN | EPOLLHUP | EPOLLERR),
                               revents & (EPOLLOUT | EPOLLHUP | EPOLLERR));
                break;
        default:
                io_set(s, 0);
        }
        return 0;
}

static int on_upstream_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Tunnel *t = userdata;

        switch (t->state) {
        case TUNNEL_CONNECTING:
                tunnel_check_connect(t);
                break;
        case TUNNEL_SEND_HELLO:
                tunnel_send_hello(t);
                break;
        case TUNNEL_FORWARDING:
                tunnel_forward(t, revents & (EPOLLOUT | EPOLLHUP | EPOLLERR),
                               revents & (EPOLLIN | EPOLLHUP | EPOLLERR));
                break;
        default:
                io_set(s, 0);
        }
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Tunnel *t = userdata;

        switch (t->state) {
        case TUNNEL_READ_REQUEST:
                tunnel_deny(t, 408, "request-timeout");
                break;
        case TUNNEL_RESOLVING:
        case TUNNEL_CONNECTING:
                tunnel_deny(t, 504, t->state == TUNNEL_RESOLVING ? "resolve-timeout" : "connect-timeout");
                break;
        case TUNNEL_READ_HELLO:
                if (!tunnel_policy_refuse(t, "client-hello-timeout"))
                        tunnel_send_hello(t);
                break;
        case TUNNEL_SEND_HELLO:
                break;
        case TUNNEL_FORWARDING:
                t->throttled = false;
                tunnel_forward(t, true, true);
                break;
        }
        return 0;
}

/* Only the counters need a value: every buffer is read only as far as it
 * was filled, and tls_hello_parse() sets the fields of the TlsHello it
 * fills. calloc() cleared all of its 43 KB for every tunnel, which showed in
 * the proxy's profile (memset, 1.5% of its samples in the rate test). */
static Handshake *handshake_new(void) {
        Handshake *hs = malloc(sizeof(*hs));

        if (!hs)
                return NULL;
        hs->request_len = hs->hello_len = hs->hello_sent = hs->hello_parse_at = 0;
        hs->n_addrs = hs->next_addr = 0;
        return hs;
}

int tunnel_start(Proxy *p, int client_fd) {
        Tunnel *t;
        int r;

        assert(p);
        t = calloc(1, sizeof(*t));
        if (!t) {
                safe_close(client_fd);
                return -ENOMEM;
        }
        t->proxy = p;
        t->client_fd = client_fd;
        if (!p->accepted_nodelay)
                (void) setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        t->upstream_fd = -1;
        t->start_usec = now_usec(CLOCK_MONOTONIC);
        TRACE_MARK(t->trace, TRACE_ACCEPT);
        direction_init(&t->up);
        direction_init(&t->down);
        proxy_tunnel_link(p, t);

        if (atomic_load(&p->shared->n_tunnels) > p->policy->max_tunnels) {
                tunnel_deny(t, 403, "too-many-tunnels");
                return 0;
        }
        t->hs = handshake_new();
        if (!t->hs) {
                tunnel_free(t);
                return -ENOMEM;
        }
        r = sd_event_add_io(p->event, &t->client_io, client_fd, EPOLLIN, on_client_io, t);
        if (r >= 0)
                r = event_add_timer(p->event, &t->timer, p->policy->request_timeout_usec, TIMER_WAIT, on_timer, t,
                                    "tunnel-timer");
        if (r < 0) {
                tunnel_free(t);
                return r;
        }
        (void) sd_event_source_set_description(t->client_io, "tunnel-client");
        /* A client writes its CONNECT right after connect(): by the time
         * the proxy has accepted, it has usually arrived, and reading it now
         * saves a trip through the event loop. EAGAIN leaves it to the watch. */
        tunnel_read_request(t);
        return 0;
}
