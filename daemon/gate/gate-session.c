/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "broker-response.h"
#include "gate-session.h"
#include "util.h"

#define READ_CHUNK (16 * 1024)
/* Beyond a head and a body's cap, what chunk lines may add. */
#define CHUNK_OVERHEAD (64 * 1024)
/* After a refusal: how long and how much of the rest of a request is read
 * and dropped, so the close does not reset the answer away. */
#define LINGER_USEC (2 * USEC_PER_SEC)
#define LINGER_BYTES (4 * 1024 * 1024)

typedef enum SessionState {
        SESSION_READ,
        SESSION_CONNECTING,
        SESSION_WAITING,                /* for the handler to listen (HANDLER_GRACE_USEC) */
        SESSION_SENDING,
        SESSION_RESPONSE,
        SESSION_WRITING,
        SESSION_LINGER,
} SessionState;

struct GateSession {
        Gate *gate;
        GateSession *prev, *next;
        SessionState state;
        bool front;                     /* came in on the UNIX socket */
        int fd;
        sd_event_source *io, *timer;
        uint8_t *in;                    /* the caller's bytes not yet taken by a request */
        size_t in_len, in_allocated;
        bool continue_sent, head_seen;
        BrokerRequest req;
        int up_fd;                      /* the handler; kept across requests when both sides allow */
        sd_event_source *up_io;
        bool up_reused, retried, at_handler;
        size_t sent;
        BrokerResponse resp;
        uint8_t *out;                   /* the handler's response, held whole */
        size_t out_len, out_allocated, out_done;
        bool up_reusable;
        unsigned answered;              /* requests this connection had answered */
        uint64_t start_usec;
        uint64_t handler_deadline;      /* the request's timeout at the handler */
        uint64_t bytes_in, bytes_out;   /* request bytes to the handler, response bytes to the caller */
        size_t lingered;
        char method[16];
        char path[BROKER_TARGET_MAX + 1];
};

static void session_link(Gate *g, GateSession *s) {
        s->next = g->sessions;
        if (g->sessions)
                g->sessions->prev = s;
        g->sessions = s;
        g->n_sessions++;
}

static void session_unlink(Gate *g, GateSession *s) {
        if (s->prev)
                s->prev->next = s->next;
        else
                g->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        g->n_sessions--;
}

static void leave_handler(GateSession *s) {
        if (s->at_handler) {
                s->gate->at_handler--;
                s->at_handler = false;
                gate_note_status(s->gate);
        }
}

static void up_close(GateSession *s) {
        s->up_io = sd_event_source_disable_unref(s->up_io);
        s->up_fd = safe_close(s->up_fd);
}

/* Buffers are copied to grow, never realloc()ed (no stale copy of a body
 * in freed memory), and counted against the gate's budget. */
static int buffer_grow(GateSession *s, uint8_t **buf, size_t *allocated, size_t used, size_t bigger) {
        uint8_t *b;

        if (s->gate->buffered - *allocated + bigger > s->gate->config.buffer_budget)
                return -ENOBUFS;
        b = malloc(bigger);
        if (!b)
                return -ENOMEM;
        if (used)
                memcpy(b, *buf, used);
        if (*buf)
                erase_and_free(*buf, *allocated);
        s->gate->buffered = s->gate->buffered - *allocated + bigger;
        *buf = b;
        *allocated = bigger;
        return 0;
}

static void buffer_free(GateSession *s, uint8_t **buf, size_t *allocated) {
        if (*buf)
                erase_and_free(*buf, *allocated);
        s->gate->buffered -= *allocated;
        *buf = NULL;
        *allocated = 0;
}

static void out_free(GateSession *s) {
        if (s->out)
                buffer_free(s, &s->out, &s->out_allocated);
        s->out = NULL;
        s->out_len = s->out_allocated = s->out_done = 0;
}

GateSession *gate_session_free(GateSession *s) {
        if (!s)
                return NULL;
        leave_handler(s);
        session_unlink(s->gate, s);
        sd_event_source_disable_unref(s->io);
        sd_event_source_disable_unref(s->timer);
        safe_close(s->fd);
        up_close(s);
        broker_request_done(&s->req);
        buffer_free(s, &s->in, &s->in_allocated);
        out_free(s);
        Gate *g = s->gate;
        free(s);
        gate_session_gone(g);
        return NULL;
}

/* ---- logging ---- */

/* What the log may quote of a request line: printable ASCII, the rest as
 * '?'; the path without its query, which may carry what a caller meant to
 * keep to itself. */
static void sanitize(char *out, size_t size, const uint8_t *in, size_t n) {
        size_t i = 0;
        for (; i < n && i + 1 < size && in[i] != '?'; i++)
                out[i] = in[i] > 0x20 && in[i] < 0x7f ? (char) in[i] : '?';
        out[i] = 0;
}

static void note_request_line(GateSession *s) {
        const uint8_t *sp = s->in_len > 0 ? memchr(s->in, ' ', MIN(s->in_len, (size_t) 16)) : NULL;
        size_t rest;

        s->method[0] = s->path[0] = 0;
        if (!sp)
                return;
        sanitize(s->method, sizeof(s->method), s->in, (size_t) (sp - s->in));
        rest = s->in_len - (size_t) (sp + 1 - s->in);
        const uint8_t *end = memchr(sp + 1, ' ', MIN(rest, (size_t) BROKER_TARGET_MAX));
        sanitize(s->path, sizeof(s->path), sp + 1, end ? (size_t) (end - sp - 1) : MIN(rest, (size_t) 256));
}

static void session_log(GateSession *s, int status, const char *reason) {
        gate_log_request(s->gate, s->front, s->method, s->path, status, s->bytes_in, s->bytes_out,
                         s->start_usec ? now_usec(CLOCK_MONOTONIC) - s->start_usec : 0, reason);
}

/* ---- plumbing ---- */

static void client_want(GateSession *s, uint32_t events) {
        if (events == 0) {
                sd_event_source_set_enabled(s->io, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_io_events(s->io, events);
        sd_event_source_set_enabled(s->io, SD_EVENT_ON);
}

static void up_want(GateSession *s, uint32_t events) {
        if (!s->up_io)
                return;
        if (events == 0) {
                sd_event_source_set_enabled(s->up_io, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_io_events(s->up_io, events);
        sd_event_source_set_enabled(s->up_io, SD_EVENT_ON);
}

/* An absolute deadline: a request's timeouts count from its first byte,
 * however the caller drips it. */
static void timer_at(GateSession *s, uint64_t usec) {
        if (sd_event_source_set_time(s->timer, usec) >= 0)
                sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
}

static void timer_in(GateSession *s, uint64_t usec) {
        timer_at(s, now_usec(CLOCK_MONOTONIC) + usec);
}

static const char *status_text(int code) {
        switch (code) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 417: return "Expectation Failed";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        }
        return "Error";
}

static void session_read(GateSession *s);
static void session_process(GateSession *s);
static void session_send(GateSession *s);
static void session_response(GateSession *s);
static void session_write(GateSession *s);

/* Sends a refusal, logs it, and closes after a short linger that reads and
 * drops what the caller still sends: closing with unread bytes would reset
 * the connection and could take the answer with it. */
static void session_refuse(GateSession *s, int code, const char *reason) {
        char buf[512];
        int n;

        s->gate->refused++;
        session_log(s, code, reason);
        leave_handler(s);
        up_close(s);
        broker_request_done(&s->req);
        out_free(s);
        n = snprintf(buf, sizeof(buf),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "X-Sandbox-Gate-Reason: %s\r\n%s%sConnection: close\r\n\r\n%s\n",
                     code, status_text(code), strlen(reason) + 1, reason,
                     code == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
                     code == 503 ? "Retry-After: 1\r\n" : "", reason);
        if (n > 0 && (size_t) n < sizeof(buf))
                (void) send(s->fd, buf, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) shutdown(s->fd, SHUT_WR);
        s->state = SESSION_LINGER;
        client_want(s, EPOLLIN);
        timer_in(s, LINGER_USEC);
}

static void session_linger(GateSession *s) {
        uint8_t buf[16384];
        for (;;) {
                ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0 || (s->lingered += (size_t) n) > LINGER_BYTES) {
                        gate_session_free(s);
                        return;
                }
        }
}

/* ---- the request ---- */

static const BrokerRoute *session_route(const GateSession *s) {
        return s->front ? &s->gate->route_front : &s->gate->route_direct;
}

static void session_next_request(GateSession *s) {
        size_t consumed = s->req.consumed;

        broker_request_done(&s->req);
        memmove(s->in, s->in + consumed, s->in_len - consumed);
        explicit_bzero(s->in + s->in_len - consumed, consumed);
        s->in_len -= consumed;
        out_free(s);
        s->continue_sent = s->head_seen = s->retried = false;
        s->bytes_in = s->bytes_out = 0;
        s->start_usec = 0;
        s->method[0] = s->path[0] = 0;
        s->state = SESSION_READ;
        client_want(s, EPOLLIN);
        if (s->in_len > 0) {
                session_process(s);   /* a pipelined request is already here */
                return;
        }
        timer_in(s, s->gate->config.idle_usec);
}

/* Just after the gate started (its worker just started, or woke from a
 * suspend: a request started the gate), the handler may not listen yet: a
 * refused connection is tried again, within the request's timeout, until
 * this long after the gate's start; then it is the 502 at once. */
#define HANDLER_GRACE_USEC (5 * USEC_PER_SEC)
#define HANDLER_RETRY_USEC (50 * USEC_PER_MSEC)

static bool handler_may_come(const GateSession *s, int err) {
        return (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH) &&
               now_usec(CLOCK_MONOTONIC) < s->gate->started_usec + HANDLER_GRACE_USEC;
}

static void handler_wait(GateSession *s) {
        up_close(s);
        s->state = SESSION_WAITING;
        timer_at(s, MIN(now_usec(CLOCK_MONOTONIC) + HANDLER_RETRY_USEC, s->handler_deadline));
}

static int on_up_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        GateSession *s = userdata;

        if (s->state == SESSION_CONNECTING) {
                int err = 0;
                socklen_t len = sizeof(err);
                if (getsockopt(s->up_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
                        if (handler_may_come(s, err))
                                handler_wait(s);
                        else
                                session_refuse(s, 502, "handler-unreachable");
                        return 0;
                }
                s->state = SESSION_SENDING;
                session_send(s);
        } else if (s->state == SESSION_SENDING)
                session_send(s);
        else if (s->state == SESSION_RESPONSE)
                session_response(s);
        else
                up_want(s, 0);
        return 0;
}

static int up_connect(GateSession *s) {
        const GateConfig *c = &s->gate->config;
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(c->upstream_port) };
        int r;

        if (inet_pton(AF_INET, c->upstream_host, &addr.sin_addr) != 1)
                return -EINVAL;
        s->up_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->up_fd < 0)
                return -errno;
        (void) setsockopt(s->up_fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        s->up_reused = false;
        if (connect(s->up_fd, (struct sockaddr *) &addr, sizeof(addr)) < 0 && errno != EINPROGRESS) {
                r = -errno;
                s->up_fd = safe_close(s->up_fd);
                return r;
        }
        r = sd_event_add_io(s->gate->event, &s->up_io, s->up_fd, EPOLLOUT, on_up_io, s);
        if (r < 0) {
                s->up_fd = safe_close(s->up_fd);
                return r;
        }
        (void) sd_event_source_set_description(s->up_io, "gate-handler");
        s->state = SESSION_CONNECTING;
        return 0;
}

/* To the handler: on the connection kept from the last request, or a new one. */
static void session_to_handler(GateSession *s) {
        int r;

        s->sent = 0;
        s->handler_deadline = now_usec(CLOCK_MONOTONIC) + s->gate->config.timeout_usec;
        timer_at(s, s->handler_deadline);
        if (s->up_fd >= 0) {
                s->up_reused = true;
                s->state = SESSION_SENDING;
                session_send(s);
                return;
        }
        r = up_connect(s);
        if (r < 0 && handler_may_come(s, -r))
                handler_wait(s);
        else if (r < 0)
                session_refuse(s, 502, "handler-unreachable");
}

/* A kept connection the handler closed meanwhile fails before any answer:
 * the request, held whole, goes once more on a fresh one. */
static bool session_retry(GateSession *s) {
        if (!s->up_reused || s->retried || s->resp.head_bytes > 0 || s->out_len > 0)
                return false;
        s->retried = true;
        up_close(s);
        s->bytes_in = 0;
        session_to_handler(s);
        return true;
}

static bool head_complete(const GateSession *s) {
        return s->in_len >= 4 && memmem(s->in, MIN(s->in_len, (size_t) BROKER_HEAD_MAX), "\r\n\r\n", 4);
}

static void session_process(GateSession *s) {
        const GateConfig *c = &s->gate->config;
        BrokerRefusal refusal;
        int r;

        if (!s->start_usec)
                s->start_usec = now_usec(CLOCK_MONOTONIC);
        r = broker_request_parse(session_route(s), s->in, s->in_len, &s->req, &refusal);
        if (r == BROKER_PARSE_MORE) {
                if (s->req.expect_continue && !s->continue_sent) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        (void) send(s->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                        s->continue_sent = true;
                }
                /* Slow headers and slow bodies: each has its own deadline. */
                if (!s->head_seen && head_complete(s))
                        s->head_seen = true;
                timer_at(s, s->start_usec + (s->head_seen ? c->body_timeout_usec : c->header_timeout_usec));
                return;
        }
        if (r < 0 || r == BROKER_PARSE_REFUSED) {
                note_request_line(s);
                session_refuse(s, r < 0 ? 500 : refusal.status, r < 0 ? "out-of-memory" : refusal.reason);
                return;
        }
        snprintf(s->method, sizeof(s->method), "%s", s->req.method);
        sanitize(s->path, sizeof(s->path), (const uint8_t *) s->req.path, strlen(s->req.path));
        client_want(s, 0);
        if (s->gate->at_handler >= c->max_concurrent) {
                session_refuse(s, 503, "too-many-requests");
                return;
        }
        s->gate->at_handler++;
        s->at_handler = true;
        gate_note_status(s->gate);
        session_to_handler(s);
}

static void session_read(GateSession *s) {
        const GateConfig *c = &s->gate->config;
        size_t limit = BROKER_HEAD_MAX + c->max_request_bytes + CHUNK_OVERHEAD + 1;

        for (;;) {
                if (s->in_len == s->in_allocated) {
                        if (s->in_allocated >= limit)
                                break;   /* the parser refuses what is this long */
                        size_t bigger = MIN(MAX(s->in_allocated * 2, (size_t) READ_CHUNK), limit);
                        int r = buffer_grow(s, &s->in, &s->in_allocated, s->in_len, bigger);
                        if (r < 0) {
                                note_request_line(s);
                                session_refuse(s, 503, r == -ENOBUFS ? "gate-busy" : "out-of-memory");
                                return;
                        }
                }
                ssize_t n = recv(s->fd, s->in + s->in_len, s->in_allocated - s->in_len, 0);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        gate_session_free(s);
                        return;
                }
                if (n == 0) {
                        /* Closed between requests, or in the middle of one: nothing to answer. */
                        gate_session_free(s);
                        return;
                }
                s->in_len += (size_t) n;
                if (!s->start_usec)
                        s->start_usec = now_usec(CLOCK_MONOTONIC);
                if ((size_t) n < READ_CHUNK)
                        break;
        }
        if (s->in_len > 0)
                session_process(s);
}

/* ---- the handler ---- */

static void session_send(GateSession *s) {
        while (s->sent < s->req.upstream_size) {
                ssize_t n = send(s->up_fd, s->req.upstream + s->sent, s->req.upstream_size - s->sent, MSG_NOSIGNAL);
                if (n >= 0) {
                        s->sent += (size_t) n;
                        s->bytes_in += (uint64_t) n;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN) {
                        up_want(s, EPOLLOUT);
                        return;
                }
                if (!session_retry(s))
                        session_refuse(s, 502, "handler-write-failed");
                return;
        }
        s->state = SESSION_RESPONSE;
        s->up_reusable = true;
        broker_response_init(&s->resp, s->gate->config.max_response_bytes, streq(s->req.method, "HEAD"));
        up_want(s, EPOLLIN);
        session_response(s);
}

/* The response is whole: it goes to the caller, and only now. */
static void session_release(GateSession *s) {
        s->gate->served++;
        leave_handler(s);
        if (!s->up_reusable || !s->resp.keep_alive || !s->req.keep_alive)
                up_close(s);
        else
                up_want(s, 0);
        s->state = SESSION_WRITING;
        s->out_done = 0;
        session_write(s);
}

static void session_response(GateSession *s) {
        const GateConfig *c = &s->gate->config;
        size_t limit = BROKER_RESPONSE_HEAD_MAX + c->max_response_bytes + CHUNK_OVERHEAD;

        for (;;) {
                if (s->resp.complete) {
                        session_release(s);
                        return;
                }
                if (s->out_len == s->out_allocated) {
                        if (s->out_allocated >= limit) {
                                session_refuse(s, 502, "response-too-large");
                                return;
                        }
                        size_t bigger = MIN(MAX(s->out_allocated * 2, (size_t) READ_CHUNK), limit);
                        int r = buffer_grow(s, &s->out, &s->out_allocated, s->out_len, bigger);
                        if (r < 0) {
                                session_refuse(s, 503, r == -ENOBUFS ? "gate-busy" : "out-of-memory");
                                return;
                        }
                }
                ssize_t n = recv(s->up_fd, s->out + s->out_len, s->out_allocated - s->out_len, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        if (!session_retry(s))
                                session_refuse(s, 502, "handler-error");
                        return;
                }
                if (n == 0) {
                        s->up_reusable = false;
                        if (broker_response_feed(&s->resp, NULL, 0) == 0 && s->resp.complete)
                                continue;   /* a body delimited by the close */
                        if (session_retry(s))
                                return;
                        session_refuse(s, 502, s->resp.head_bytes ? "response-truncated" : "handler-closed");
                        return;
                }
                ssize_t k = broker_response_feed(&s->resp, s->out + s->out_len, (size_t) n);
                if (k < 0) {
                        session_refuse(s, 502, s->resp.error);
                        return;
                }
                if (k < n)
                        s->up_reusable = false;   /* bytes past the response: not the next one's */
                s->out_len += (size_t) k;
        }
}

/* ---- the caller ---- */

static void session_write(GateSession *s) {
        while (s->out_done < s->out_len) {
                ssize_t n = send(s->fd, s->out + s->out_done, s->out_len - s->out_done, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                client_want(s, EPOLLOUT);
                                timer_in(s, s->gate->config.timeout_usec);
                                return;
                        }
                        session_log(s, s->resp.status, "client-closed");
                        gate_session_free(s);
                        return;
                }
                s->out_done += (size_t) n;
                s->bytes_out += (uint64_t) n;
        }
        session_log(s, s->resp.status, NULL);
        s->answered++;
        /* A draining gate closes each connection after its answer, reading
         * what the caller still sends a little while (a close with unread
         * bytes would reset the connection and could take the answer). */
        if (s->gate->draining) {
                (void) shutdown(s->fd, SHUT_WR);
                s->state = SESSION_LINGER;
                client_want(s, EPOLLIN);
                timer_in(s, LINGER_USEC);
                return;
        }
        if (!s->req.keep_alive || !s->resp.keep_alive) {
                (void) shutdown(s->fd, SHUT_WR);
                gate_session_free(s);
                return;
        }
        session_next_request(s);
}

/* ---- events ---- */

static int on_client_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        GateSession *s = userdata;

        switch (s->state) {
        case SESSION_READ:
                session_read(s);
                break;
        case SESSION_WRITING:
                session_write(s);
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
        GateSession *s = userdata;

        switch (s->state) {
        case SESSION_READ:
                if (s->in_len == 0)
                        gate_session_free(s);   /* an idle keep-alive connection */
                else {
                        note_request_line(s);
                        session_refuse(s, 408, s->head_seen ? "body-timeout" : "header-timeout");
                }
                break;
        case SESSION_WAITING:
                if (now_usec(CLOCK_MONOTONIC) < s->handler_deadline) {
                        int r = up_connect(s);
                        if (r >= 0)
                                timer_at(s, s->handler_deadline);
                        else if (handler_may_come(s, -r))
                                handler_wait(s);
                        else
                                session_refuse(s, 502, "handler-unreachable");
                        break;
                }
                __attribute__((fallthrough));
        case SESSION_CONNECTING:
        case SESSION_SENDING:
        case SESSION_RESPONSE:
                session_refuse(s, 504, "handler-timeout");
                break;
        case SESSION_WRITING:
                session_log(s, s->resp.status, "client-timeout");
                gate_session_free(s);
                break;
        case SESSION_LINGER:
                gate_session_free(s);
                break;
        }
        return 0;
}

int gate_session_start(Gate *g, int fd, bool front) {
        GateSession *s = calloc(1, sizeof(*s));
        int r;

        if (!s) {
                safe_close(fd);
                return -ENOMEM;
        }
        s->gate = g;
        s->front = front;
        s->fd = fd;
        s->up_fd = -1;
        if (!front)
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        session_link(g, s);
        r = sd_event_add_io(g->event, &s->io, fd, EPOLLIN, on_client_io, s);
        if (r >= 0)
                r = sd_event_add_time(g->event, &s->timer, CLOCK_MONOTONIC,
                                      now_usec(CLOCK_MONOTONIC) + g->config.header_timeout_usec, 0, on_timer, s);
        if (r < 0) {
                gate_session_free(s);
                return r;
        }
        (void) sd_event_source_set_description(s->io, "gate-session");
        (void) sd_event_source_set_description(s->timer, "gate-session-timer");
        if (g->n_sessions > GATE_CONNECTIONS_MAX) {
                s->start_usec = now_usec(CLOCK_MONOTONIC);
                session_refuse(s, 503, "too-many-connections");
        }
        return 0;
}

void gate_drain_sessions(Gate *g) {
        GateSession *next;

        /* Between requests on a kept connection: nothing is under way, and
         * a client sends its next request on a new connection after a
         * close it sees there. A connection that has not sent its first
         * request yet keeps its header timeout: its caller connected
         * before the stop. */
        for (GateSession *s = g->sessions; s; s = next) {
                uint8_t b;
                next = s->next;
                /* Not one whose next request is arriving: it is answered. */
                if (s->state == SESSION_READ && s->in_len == 0 && s->answered > 0 &&
                    recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
                        gate_session_free(s);
        }
}

void gate_free_sessions(Gate *g) {
        while (g->sessions)
                gate_session_free(g->sessions);
}
