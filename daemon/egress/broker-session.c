/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "broker-response.h"
#include "event-util.h"
#include "broker-session.h"
#include "broker-upstream.h"
#include "egress-refusal.h"
#include "util.h"

/* Beyond the head and the body cap, what chunk lines may add (as
 * broker-request.c counts them) before a request is refused. */
#define SESSION_CHUNK_OVERHEAD (64 * 1024)
#define SESSION_READ_CHUNK (16 * 1024)
#define SESSION_OUT_MAX (BROKER_RESPONSE_HEAD_MAX + SESSION_READ_CHUNK)
/* After a refusal: how long and how much of the rest of a request is
 * read and dropped, so the close does not reset the refusal away. */
#define SESSION_LINGER_USEC (2 * USEC_PER_SEC)
#define SESSION_LINGER_BYTES (4 * 1024 * 1024)

typedef enum SessionState {
        SESSION_READ_REQUEST,
        SESSION_CONNECTING,
        SESSION_SENDING,
        SESSION_RESPONSE,
        SESSION_LINGER,
} SessionState;

struct BrokerSession {
        Broker *broker;
        BrokerService *service;
        BrokerSession *prev, *next;
        SessionState state;
        int fd;
        sd_event_source *io, *timer;
        uint8_t *in;                    /* the worker's bytes not yet taken by a request */
        size_t in_len, in_allocated;
        bool continue_sent;
        BrokerRequest req;
        BrokerConn *conn;
        size_t sent;                    /* of req.upstream */
        bool retried;
        BrokerResponse resp;
        bool conn_reusable;
        bool forwarded;                 /* some of the response reached the worker */
        bool throttled;
        uint8_t out[SESSION_OUT_MAX];
        size_t out_len, out_done;
        uint64_t start_usec;
        uint64_t bytes_in, bytes_out;   /* response bytes to the worker, request bytes upstream */
        size_t lingered;
        char method[16];
        char path[BROKER_TARGET_MAX + EGRESS_SERVICE_PATH_MAX + 1];
};

void broker_session_link(Broker *b, BrokerSession *s) {
        s->next = b->sessions;
        if (b->sessions)
                b->sessions->prev = s;
        b->sessions = s;
        b->n_sessions++;
}

void broker_session_unlink(Broker *b, BrokerSession *s) {
        if (s->prev)
                s->prev->next = s->next;
        else
                b->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        b->n_sessions--;
}

/* The rewritten request counts against the broker's buffer budget while held. */
static void session_request_done(BrokerSession *s) {
        s->broker->buffered -= s->req.upstream_size;
        broker_request_done(&s->req);
}

static void session_set_in(BrokerSession *s, uint8_t *in, size_t allocated) {
        if (s->in)
                erase_and_free(s->in, s->in_allocated);
        s->broker->buffered = s->broker->buffered - s->in_allocated + allocated;
        s->in = in;
        s->in_allocated = allocated;
}

BrokerSession *broker_session_free(BrokerSession *s) {
        if (!s)
                return NULL;
        broker_session_unlink(s->broker, s);
        sd_event_source_disable_unref(s->io);
        sd_event_source_disable_unref(s->timer);
        safe_close(s->fd);
        broker_conn_free(s->conn);
        session_request_done(s);
        session_set_in(s, NULL, 0);
        free(s);
        return NULL;
}

/* ---- logging ---- */

/* What the log may quote of a refused request line: printable ASCII, the
 * rest as '?'. */
static void sanitize(char *out, size_t size, const uint8_t *in, size_t n) {
        size_t i = 0;
        for (; i < n && i + 1 < size; i++)
                out[i] = in[i] > 0x20 && in[i] < 0x7f ? (char) in[i] : '?';
        out[i] = 0;
}

/* Method and target from the first line, for the log of a refusal. */
static void session_note_request_line(BrokerSession *s) {
        const uint8_t *sp = s->in_len > 0 ? memchr(s->in, ' ', MIN(s->in_len, (size_t) 32)) : NULL;
        size_t rest;

        s->method[0] = s->path[0] = 0;
        if (!sp)
                return;
        sanitize(s->method, sizeof(s->method), s->in, (size_t) (sp - s->in));
        rest = s->in_len - (size_t) (sp + 1 - s->in);
        const uint8_t *end = memchr(sp + 1, ' ', MIN(rest, (size_t) BROKER_TARGET_MAX));
        sanitize(s->path, sizeof(s->path), sp + 1, end ? (size_t) (end - sp - 1) : MIN(rest, (size_t) 256));
}

static void session_log(BrokerSession *s, int status, const char *reason) {
        const char *id = s->broker->proxy->policy->worker_id ?: "";
        char st[8], in[24], out[24], usec[24], message[1024 + sizeof(s->path)];

        /* Refusals are what a worker can cause without bound. */
        if (reason && !proxy_refusal_log_admit(s->broker->proxy, reason))
                return;
        snprintf(st, sizeof(st), "%d", status);
        snprintf(in, sizeof(in), "%" PRIu64, s->bytes_in);
        snprintf(out, sizeof(out), "%" PRIu64, s->bytes_out);
        snprintf(usec, sizeof(usec), "%" PRIu64, s->start_usec ? now_usec(CLOCK_MONOTONIC) - s->start_usec : 0);
        snprintf(message, sizeof(message), "broker: %s %s %s -> %d (bytes_in=%s bytes_out=%s usec=%s%s%s) worker=%s",
                 s->service->config->name, s->method[0] ? s->method : "-", s->path[0] ? s->path : "-", status, in,
                 out, usec, reason ? " reason=" : "", reason ?: "", id);
        log_struct(reason ? LOG_WARNING : LOG_INFO, message,
                   "SANDBOXD_WORKER_ID", id,
                   "SANDBOXD_SERVICE", s->service->config->name,
                   "SANDBOXD_METHOD", s->method,
                   "SANDBOXD_PATH", s->path,
                   "SANDBOXD_STATUS", st,
                   "SANDBOXD_BYTES_IN", in,
                   "SANDBOXD_BYTES_OUT", out,
                   "SANDBOXD_DURATION_USEC", usec,
                   reason ? "SANDBOXD_REASON" : NULL, reason,
                   NULL);
}

/* ---- plumbing ---- */

static void client_want(BrokerSession *s, uint32_t events) {
        if (events == 0) {
                sd_event_source_set_enabled(s->io, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_io_events(s->io, events);
        sd_event_source_set_enabled(s->io, SD_EVENT_ON);
}

/* As the tunnel's: one timer for timeouts (TIMER_WAIT) and for throttle
 * waits (TIMER_PACE, on time). */
static void timer_arm(BrokerSession *s, uint64_t usec) {
        (void) event_timer_arm(s->timer, usec, TIMER_WAIT);
}

static void session_read_request(BrokerSession *s);
static void session_process(BrokerSession *s);
static void session_send(BrokerSession *s);
static void session_response(BrokerSession *s);

/* Sends a refusal, logs it, and closes after a short linger that reads
 * and drops what the worker is still sending: closing with unread bytes
 * would reset the connection and could take the answer with it. */
static void session_refuse(BrokerSession *s, int code, const char *reason) {
        char buf[1024];
        size_t n = egress_broker_refusal_format(buf, sizeof(buf), code, s->service->config->name, reason);

        session_log(s, code, reason);
        s->conn = broker_conn_free(s->conn);
        session_request_done(s);
        if (n > 0)
                (void) send(s->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) shutdown(s->fd, SHUT_WR);
        s->state = SESSION_LINGER;
        s->throttled = false;
        client_want(s, EPOLLIN);
        timer_arm(s, SESSION_LINGER_USEC);
}

static void session_linger(BrokerSession *s) {
        uint8_t buf[16384];
        for (;;) {
                ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0 || (s->lingered += (size_t) n) > SESSION_LINGER_BYTES) {
                        broker_session_free(s);
                        return;
                }
        }
}

static bool session_throttle(BrokerSession *s, uint64_t *ret_avail) {
        TokenBucket *b = &s->service->bucket;
        uint64_t now;

        if (b->rate == 0) {
                *ret_avail = UINT64_MAX;
                return false;
        }
        now = now_usec(CLOCK_MONOTONIC);
        *ret_avail = token_bucket_available(b, now);
        if (*ret_avail > 0)
                return false;
        s->throttled = true;
        if (s->conn)
                (void) broker_conn_want(s->conn, 0);
        client_want(s, 0);
        (void) event_timer_arm(s->timer, token_bucket_wake_usec(b, now), TIMER_PACE);
        return true;
}

/* ---- the request ---- */

static void session_next_request(BrokerSession *s) {
        size_t consumed = s->req.consumed;

        session_request_done(s);
        memmove(s->in, s->in + consumed, s->in_len - consumed);
        explicit_bzero(s->in + s->in_len - consumed, consumed);
        s->in_len -= consumed;
        /* A keep-alive connection does not hold on to a large body's buffer. */
        if (s->in_allocated > 4 * SESSION_READ_CHUNK && s->in_len <= SESSION_READ_CHUNK) {
                uint8_t *small = malloc(SESSION_READ_CHUNK);
                if (small) {
                        memcpy(small, s->in, s->in_len);
                        session_set_in(s, small, SESSION_READ_CHUNK);
                }
        }
        s->continue_sent = false;
        s->retried = false;
        s->forwarded = false;
        s->out_len = s->out_done = 0;
        s->bytes_in = s->bytes_out = 0;
        s->state = SESSION_READ_REQUEST;
        client_want(s, EPOLLIN);
        if (s->in_len > 0) {
                session_process(s);   /* a pipelined request is already here */
                return;
        }
        timer_arm(s, BROKER_CLIENT_IDLE_USEC);
}

static void on_conn_io(BrokerConn *c, void *userdata) {
        BrokerSession *s = userdata;

        if (s->state == SESSION_SENDING)
                session_send(s);
        else if (s->state == SESSION_RESPONSE)
                session_response(s);
}

static void on_conn_ready(BrokerConn *c, int code, const char *reason, void *userdata) {
        BrokerSession *s = userdata;

        if (code != 0) {
                session_refuse(s, code, reason);
                return;
        }
        s->conn = c;
        broker_conn_set_io(c, on_conn_io, s);
        s->state = SESSION_SENDING;
        s->sent = 0;
        session_send(s);
}

static void session_get_upstream(BrokerSession *s) {
        BrokerConn *c = broker_conn_take_idle(s->service);

        s->state = SESSION_CONNECTING;
        sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
        if (c) {
                on_conn_ready(c, 0, NULL, s);
                return;
        }
        int r = broker_conn_open(s->service, s->broker->proxy->policy->connect_timeout_usec, on_conn_ready, s);
        if (r < 0)
                session_refuse(s, 502, "connect-failed");
}

/* A pooled connection the upstream closed meanwhile fails before any
 * answer: the request, held whole, goes once more on a fresh one. */
static bool session_retry(BrokerSession *s) {
        if (!s->conn || !broker_conn_reused(s->conn) || s->retried || s->forwarded || s->resp.head_bytes > 0)
                return false;
        s->retried = true;
        s->conn = broker_conn_free(s->conn);
        s->bytes_out = 0;
        session_get_upstream(s);
        return true;
}

static void session_process(BrokerSession *s) {
        BrokerRefusal refusal;
        int r;

        s->start_usec = s->start_usec ?: now_usec(CLOCK_MONOTONIC);
        r = broker_request_parse(&s->service->route, s->in, s->in_len, &s->req, &refusal);
        if (r == BROKER_PARSE_MORE) {
                if (s->req.expect_continue && !s->continue_sent) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        (void) send(s->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                        s->continue_sent = true;
                }
                timer_arm(s, s->broker->proxy->policy->request_timeout_usec);
                return;
        }
        if (r < 0 || r == BROKER_PARSE_REFUSED) {
                session_note_request_line(s);
                session_refuse(s, r < 0 ? 500 : refusal.status, r < 0 ? "out-of-memory" : refusal.reason);
                return;
        }
        s->broker->buffered += s->req.upstream_size;
        snprintf(s->method, sizeof(s->method), "%s", s->req.method);
        snprintf(s->path, sizeof(s->path), "%s%s", s->service->config->base, s->req.path);
        client_want(s, 0);
        const char *reason = broker_service_check_floor(s->service);
        if (reason) {
                session_refuse(s, 403, reason);
                return;
        }
        session_get_upstream(s);
}

static void session_read_request(BrokerSession *s) {
        const EgressService *c = s->service->config;
        size_t limit = BROKER_HEAD_MAX + c->max_request_bytes + SESSION_CHUNK_OVERHEAD + 1;

        /* A request's duration counts from its first byte. */
        s->start_usec = s->start_usec ?: now_usec(CLOCK_MONOTONIC);

        for (;;) {
                if (s->in_len == s->in_allocated) {
                        if (s->in_allocated >= limit)
                                break;   /* the parser refuses what is this long */
                        size_t bigger = MIN(MAX(s->in_allocated * 2, (size_t) SESSION_READ_CHUNK), limit);
                        if (s->broker->buffered - s->in_allocated + bigger > s->broker->buffer_budget) {
                                session_note_request_line(s);
                                session_refuse(s, 503, "proxy-busy");
                                return;
                        }
                        /* Copied, not realloc()ed: no stale copy of a body in freed memory. */
                        uint8_t *b = malloc(bigger);
                        if (!b) {
                                session_refuse(s, 500, "out-of-memory");
                                return;
                        }
                        if (s->in_len)
                                memcpy(b, s->in, s->in_len);
                        session_set_in(s, b, bigger);
                }
                ssize_t n = recv(s->fd, s->in + s->in_len, s->in_allocated - s->in_len, 0);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        broker_session_free(s);
                        return;
                }
                if (n == 0) {
                        /* Closed between requests, or in the middle of one: no request to answer. */
                        broker_session_free(s);
                        return;
                }
                s->in_len += (size_t) n;
                if ((size_t) n < SESSION_READ_CHUNK)
                        break;
        }
        if (s->in_len > 0)
                session_process(s);
}

/* ---- upstream ---- */

static void session_send(BrokerSession *s) {
        SSL *ssl = broker_conn_ssl(s->conn);

        while (s->sent < s->req.upstream_size) {
                uint64_t avail;
                if (session_throttle(s, &avail))
                        return;
                size_t want = (size_t) MIN((uint64_t) (s->req.upstream_size - s->sent), MIN(avail, (uint64_t) INT32_MAX));
                int n = SSL_write(ssl, s->req.upstream + s->sent, (int) want);
                if (n > 0) {
                        s->sent += (size_t) n;
                        s->bytes_out += (uint64_t) n;
                        if (s->service->bucket.rate)
                                token_bucket_consume(&s->service->bucket, (uint64_t) n);
                        continue;
                }
                int e = SSL_get_error(ssl, n);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                        if (broker_conn_want(s->conn, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT) < 0)
                                session_refuse(s, 502, "upstream-error");
                        else
                                timer_arm(s, BROKER_RESPONSE_IDLE_USEC);
                        return;
                }
                ERR_clear_error();
                if (!session_retry(s))
                        session_refuse(s, 502, "upstream-write-failed");
                return;
        }
        s->state = SESSION_RESPONSE;
        s->conn_reusable = true;
        broker_response_init(&s->resp, s->service->config->max_response_bytes, streq(s->req.method, "HEAD"));
        timer_arm(s, BROKER_RESPONSE_IDLE_USEC);
        session_response(s);
}

/* The request is answered (or the answer cut): log it, and either take the
 * next request or close. */
static void session_done(BrokerSession *s, bool keep) {
        session_log(s, s->resp.status, NULL);
        broker_conn_release(TAKE_PTR(s->conn), s->conn_reusable && s->resp.keep_alive);
        s->start_usec = 0;
        if (!keep || !s->req.keep_alive || !s->resp.keep_alive) {
                broker_session_free(s);
                return;
        }
        session_next_request(s);
}

/* An upstream failure: a refusal while the worker has seen nothing of the
 * response, else only a cut. */
static void session_response_failed(BrokerSession *s, int code, const char *reason) {
        if (!s->forwarded) {
                session_refuse(s, code, reason);
                return;
        }
        session_log(s, s->resp.status, reason);
        broker_session_free(s);
}

/* Writes what is held for the worker. Returns 1 when all is out, 0 when
 * the socket is full (EPOLLOUT is wanted), -1 when the session is gone. */
static int session_flush(BrokerSession *s) {
        while (s->out_done < s->out_len) {
                ssize_t n = send(s->fd, s->out + s->out_done, s->out_len - s->out_done, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                client_want(s, EPOLLOUT);
                                (void) broker_conn_want(s->conn, 0);
                                return 0;
                        }
                        s->conn_reusable = false;
                        session_log(s, s->resp.status, "client-closed");
                        broker_session_free(s);
                        return -1;
                }
                s->forwarded = true;
                s->out_done += (size_t) n;
                s->bytes_in += (uint64_t) n;
        }
        s->out_len = s->out_done = 0;
        client_want(s, 0);
        return 1;
}

static void session_response(BrokerSession *s) {
        SSL *ssl = broker_conn_ssl(s->conn);

        for (;;) {
                /* The head is held until it is whole: a refusal can still replace it. */
                if (s->resp.head_done && s->out_len > 0) {
                        int r = session_flush(s);
                        if (r <= 0)
                                return;
                }
                if (s->resp.complete) {
                        session_done(s, true);
                        return;
                }
                uint64_t avail;
                if (session_throttle(s, &avail))
                        return;
                size_t room = sizeof(s->out) - s->out_len;
                if (room == 0) {
                        session_response_failed(s, 502, "response-head-too-large");   /* interim heads piling up */
                        return;
                }
                size_t want = (size_t) MIN((uint64_t) MIN(room, (size_t) SESSION_READ_CHUNK), avail);
                int n = SSL_read(ssl, s->out + s->out_len, (int) want);
                if (n > 0) {
                        if (s->service->bucket.rate)
                                token_bucket_consume(&s->service->bucket, (uint64_t) n);
                        ssize_t k = broker_response_feed(&s->resp, s->out + s->out_len, (size_t) n);
                        if (k < 0) {
                                session_response_failed(s, 502, s->resp.error);
                                return;
                        }
                        if (k < n)
                                s->conn_reusable = false;   /* bytes past the response: not the next one's */
                        s->out_len += (size_t) k;
                        timer_arm(s, BROKER_RESPONSE_IDLE_USEC);
                        continue;
                }
                int e = SSL_get_error(ssl, n);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                        if (broker_conn_want(s->conn, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT) < 0)
                                session_response_failed(s, 502, "upstream-error");
                        return;
                }
                ERR_clear_error();
                s->conn_reusable = false;
                if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) {
                        if (broker_response_feed(&s->resp, NULL, 0) == 0 && s->resp.complete)
                                continue;   /* a body delimited by the close */
                        if (session_retry(s))
                                return;
                        session_response_failed(s, 502, s->resp.head_bytes ? "response-truncated" : "upstream-closed");
                        return;
                }
                session_response_failed(s, 502, "upstream-error");
                return;
        }
}

/* ---- events ---- */

static int on_client_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        BrokerSession *s = userdata;

        switch (s->state) {
        case SESSION_READ_REQUEST:
                session_read_request(s);
                break;
        case SESSION_RESPONSE:
                session_response(s);   /* writable again */
                break;
        case SESSION_LINGER:
                session_linger(s);
                break;
        default:
                client_want(s, 0);
        }
        return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        BrokerSession *s = userdata;

        if (s->throttled) {
                s->throttled = false;
                if (s->state == SESSION_SENDING)
                        session_send(s);
                else if (s->state == SESSION_RESPONSE)
                        session_response(s);
                return 0;
        }
        switch (s->state) {
        case SESSION_READ_REQUEST:
                if (s->in_len == 0)
                        broker_session_free(s);   /* an idle keep-alive connection */
                else {
                        session_note_request_line(s);
                        session_refuse(s, 408, "request-timeout");
                }
                break;
        case SESSION_SENDING:
        case SESSION_RESPONSE:
                session_response_failed(s, 504, "upstream-timeout");
                break;
        case SESSION_LINGER:
                broker_session_free(s);
                break;
        case SESSION_CONNECTING:
                break;   /* the connection has its own timeout */
        }
        return 0;
}

int broker_session_start(BrokerService *service, int fd) {
        Broker *b = service->broker;
        BrokerSession *s = calloc(1, sizeof(*s));
        int r;

        if (!s) {
                safe_close(fd);
                return -ENOMEM;
        }
        s->broker = b;
        s->service = service;
        s->fd = fd;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        broker_session_link(b, s);
        r = sd_event_add_io(b->proxy->event, &s->io, fd, EPOLLIN, on_client_io, s);
        if (r >= 0)
                r = event_add_timer(b->proxy->event, &s->timer, b->proxy->policy->request_timeout_usec, TIMER_WAIT,
                                    on_timer, s, "broker-session-timer");
        if (r < 0) {
                broker_session_free(s);
                return r;
        }
        (void) sd_event_source_set_description(s->io, "broker-session");
        if (b->n_sessions > b->proxy->policy->max_tunnels) {
                s->start_usec = now_usec(CLOCK_MONOTONIC);
                session_refuse(s, 503, "too-many-connections");
        }
        return 0;
}
