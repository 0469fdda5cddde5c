/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker-path.h"
#include "broker-request.h"

/* Beyond the head and the body's cap, what chunk lines may add before the
 * request is refused as too large instead of read further. */
#define BROKER_CHUNK_OVERHEAD_MAX (64 * 1024)

typedef struct Span {
        const char *p;
        size_t n;
} Span;

typedef struct ParseState {
        const BrokerRoute *route;
        BrokerRefusal *refusal;
        Span url;
        Span names[BROKER_HEADERS_MAX], values[BROKER_HEADERS_MAX];
        size_t n_headers;
        bool in_value, headers_done, done, expect_continue;
        uint8_t *body;
        size_t body_size, body_allocated;
} ParseState;

static int refuse(ParseState *st, int status, const char *reason) {
        if (!st->refusal->status)
                *st->refusal = (BrokerRefusal) { .status = status, .reason = reason };
        return -1;
}

static bool span_is(const Span *s, const char *word) {
        return s->n == strlen(word) && strncasecmp(s->p, word, s->n) == 0;
}

/* One buffer is parsed in one call, so the pieces of an element arrive in
 * order and contiguous: a repeated callback extends the span. */
static void span_add(Span *s, const char *at, size_t n) {
        if (!s->p)
                s->p = at;
        s->n = (size_t) (at + n - s->p);
}

static int on_url(http_parser *p, const char *at, size_t n) {
        ParseState *st = p->data;
        span_add(&st->url, at, n);
        if (st->url.n > BROKER_TARGET_MAX)
                return refuse(st, 414, "target-too-long");
        return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n) {
        ParseState *st = p->data;

        if (st->headers_done)           /* trailers: never forwarded */
                return 0;
        if (st->in_value || st->n_headers == 0) {
                if (st->n_headers == BROKER_HEADERS_MAX)
                        return refuse(st, 431, "too-many-headers");
                st->n_headers++;
                st->in_value = false;
        }
        span_add(&st->names[st->n_headers - 1], at, n);
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
        ParseState *st = p->data;

        if (st->headers_done || st->n_headers == 0)
                return 0;
        st->in_value = true;
        span_add(&st->values[st->n_headers - 1], at, n);
        return 0;
}

static bool is_token(const Span *s) {
        if (s->n == 0)
                return false;
        for (size_t i = 0; i < s->n; i++) {
                unsigned char c = (unsigned char) s->p[i];
                if (!isalnum(c) && !strchr("!#$%&'*+-.^_`|~", c))
                        return false;
        }
        return true;
}

static bool span_starts_with(const Span *s, const char *word) {
        return s->n > strlen(word) && strncasecmp(s->p, word, strlen(word)) == 0;
}

static bool route_allows_method(const BrokerRoute *r, const char *method) {
        for (char * const *m = r->methods; m && *m; m++)
                if (strcmp(*m, method) == 0)
                        return true;
        return false;
}

static int check_target(ParseState *st) {
        const Span *u = &st->url;
        const char *q;
        size_t path_n;
        bool allowed = false;

        /* Origin-form only: an absolute URL or authority would name another host. */
        if (u->n == 0 || u->p[0] != '/')
                return refuse(st, 400, "target-not-a-path");
        q = memchr(u->p, '?', u->n);
        path_n = q ? (size_t) (q - u->p) : u->n;
        /* Neither rule lets a '#' through: no fragment goes upstream. */
        if (!broker_path_is_valid(u->p, path_n) || (q && !broker_query_is_valid(q + 1, u->n - path_n - 1)))
                return refuse(st, 400, "invalid-path");
        for (char * const *pre = st->route->paths; pre && *pre && !allowed; pre++)
                allowed = broker_path_allowed(u->p, path_n, *pre);
        if (!allowed)
                return refuse(st, 403, "path-not-allowed");
        return 0;
}

static int on_headers_complete(http_parser *p) {
        ParseState *st = p->data;
        size_t n_cl = 0, n_te = 0, n_host = 0;
        int r;

        st->headers_done = true;
        /* libhttp-parser takes "GET /path\r\n" as HTTP/0.9: what follows
         * would be a second request to it and headers to another reader. */
        if (p->http_major != 1 || p->http_minor > 1)
                return refuse(st, 505, "http-version-not-supported");
        for (size_t i = 0; i < st->n_headers; i++) {
                const Span *name = &st->names[i], *value = &st->values[i];
                /* libhttp-parser takes "Content-Length :1" as a header named
                 * "Content-Length ", which no check here would recognise and
                 * an upstream may read as a second framing (RFC 9112 5.1). */
                if (!is_token(name))
                        return refuse(st, 400, "invalid-header-name");
                /* libhttp-parser notes Transfer-Encoding on "Transfer-Encodingx"
                 * (found by fuzz-broker-request): names that only start like a
                 * framing header are read differently by different parsers. */
                if (span_starts_with(name, "Transfer-Encoding") || span_starts_with(name, "Content-Length"))
                        return refuse(st, 400, "ambiguous-framing");
                if (span_is(name, "Host"))
                        n_host++;
                if (span_is(name, "Content-Length"))
                        n_cl++;
                else if (span_is(name, "Transfer-Encoding")) {
                        n_te++;
                        if (!span_is(value, "chunked"))
                                return refuse(st, 501, "unsupported-transfer-encoding");
                } else if (span_is(name, "Upgrade"))
                        return refuse(st, 501, "upgrade-refused");
                else if (span_is(name, "Expect")) {
                        if (!span_is(value, "100-continue"))
                                return refuse(st, 417, "unsupported-expectation");
                        st->expect_continue = true;
                }
        }
        if (n_cl > 0 && n_te > 0)
                return refuse(st, 400, "ambiguous-framing");
        if (n_cl > 1)
                return refuse(st, 400, "duplicate-content-length");
        if (n_te > 1)
                return refuse(st, 400, "duplicate-transfer-encoding");
        /* A Host that goes on must be one: two would be read differently. */
        if (st->route->keep_host && n_host > 1)
                return refuse(st, 400, "duplicate-host");
        if (!st->route->any_method && !route_allows_method(st->route, http_method_str((enum http_method) p->method)))
                return refuse(st, 405, "method-not-allowed");
        r = check_target(st);
        if (r < 0)
                return r;
        if (n_cl > 0 && p->content_length > st->route->max_request_bytes)
                return refuse(st, 413, "request-too-large");
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
        ParseState *st = p->data;

        if (st->body_size + n > st->route->max_request_bytes)
                return refuse(st, 413, "request-too-large");
        if (st->body_size + n > st->body_allocated) {
                /* Copied, not realloc()ed, so no stale copy stays in freed memory. */
                size_t bigger = st->body_allocated ? st->body_allocated * 2 : 4096;
                uint8_t *b;
                while (bigger < st->body_size + n)
                        bigger *= 2;
                b = malloc(bigger);
                if (!b)
                        return refuse(st, 500, "out-of-memory");
                if (st->body_size)
                        memcpy(b, st->body, st->body_size);
                if (st->body) {
                        explicit_bzero(st->body, st->body_allocated);
                        free(st->body);
                }
                st->body = b;
                st->body_allocated = bigger;
        }
        memcpy(st->body + st->body_size, at, n);
        st->body_size += n;
        return 0;
}

static int on_message_complete(http_parser *p) {
        ParseState *st = p->data;
        st->done = true;
        /* One request per call: the caller keeps what follows. */
        http_parser_pause(p, 1);
        return 0;
}

/* What libhttp-parser lets through and an upstream may read otherwise:
 * bare CR or LF, obs-fold, control characters. Returns the head's length
 * (through the blank line), 0 when it is not complete yet, or -1. */
static ssize_t check_head(const uint8_t *in, size_t size, BrokerRefusal *refusal) {
        size_t limit = size < BROKER_HEAD_MAX ? size : BROKER_HEAD_MAX;

        for (size_t i = 0; i < limit; i++) {
                uint8_t c = in[i];
                if (c == '\r') {
                        if (i + 1 == size)
                                return 0;
                        if (in[i + 1] != '\n')
                                return *refusal = (BrokerRefusal) { 400, "bare-cr" }, -1;
                } else if (c == '\n') {
                        if (i == 0 || in[i - 1] != '\r')
                                return *refusal = (BrokerRefusal) { 400, "bare-lf" }, -1;
                        if (i >= 3 && in[i - 2] == '\n')
                                return (ssize_t) (i + 1);
                        if (i + 1 < size && (in[i + 1] == ' ' || in[i + 1] == '\t'))
                                return *refusal = (BrokerRefusal) { 400, "obs-fold" }, -1;
                } else if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return *refusal = (BrokerRefusal) { 400, "control-character" }, -1;
        }
        if (size >= BROKER_HEAD_MAX)
                return *refusal = (BrokerRefusal) { 431, "head-too-large" }, -1;
        return 0;
}

/* Equal without a data-dependent branch or early exit: the time taken
 * depends on the lengths only, never on where the first difference is. */
static bool equal_constant_time(const uint8_t *a, size_t a_n, const uint8_t *b, size_t b_n) {
        volatile uint8_t diff = (uint8_t) (a_n != b_n);

        for (size_t i = 0; i < b_n; i++)
                diff |= (uint8_t) ((i < a_n ? a[i] : 0) ^ b[i]);
        return diff == 0;
}

/* The caller's credential, read from the head (HEAD_N bytes that
 * check_head() passed: CRLF lines, no obs-fold, no control bytes) before
 * libhttp-parser sees a byte: a caller without it learns nothing of what
 * else the gate would refuse. */
static bool token_ok(const BrokerRoute *route, const uint8_t *in, size_t head_n, BrokerRefusal *refusal) {
        static const char name[] = "Authorization:", scheme[] = "Bearer ";
        const uint8_t *line = memchr(in, '\n', head_n), *end = in + head_n, *found = NULL;
        size_t found_n = 0;

        for (line = line ? line + 1 : end; line < end;) {
                const uint8_t *nl = memchr(line, '\n', (size_t) (end - line));
                size_t n = (size_t) (nl - line) - 1;   /* without the CR */
                if (n >= strlen(name) && strncasecmp((const char *) line, name, strlen(name)) == 0) {
                        if (found)
                                return *refusal = (BrokerRefusal) { 401, "ambiguous-token" }, false;
                        found = line + strlen(name);
                        found_n = n - strlen(name);
                        while (found_n > 0 && (*found == ' ' || *found == '\t'))
                                found++, found_n--;
                        while (found_n > 0 && (found[found_n - 1] == ' ' || found[found_n - 1] == '\t'))
                                found_n--;
                }
                line = nl + 1;
        }
        if (!found || found_n <= strlen(scheme) || strncasecmp((const char *) found, scheme, strlen(scheme)) != 0)
                return *refusal = (BrokerRefusal) { 401, "missing-token" }, false;
        if (!equal_constant_time(found + strlen(scheme), found_n - strlen(scheme), route->require_token,
                                 route->require_token_size))
                return *refusal = (BrokerRefusal) { 401, "wrong-token" }, false;
        return true;
}

static bool is_dropped_header(const ParseState *st, const Span *name) {
        static const char * const dropped[] = {
                "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Proxy-Connection",
                "TE", "Trailer", "Upgrade", "Expect", "Authorization", "Proxy-Authorization",
        };
        static const char * const forwarded[] = {
                "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Real-IP",
        };
        for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
                if (span_is(name, dropped[i]))
                        return true;
        if (span_is(name, "Host") && !st->route->keep_host)
                return true;
        for (size_t i = 0; !st->route->keep_forwarded && i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
                if (span_is(name, forwarded[i]))
                        return true;
        return st->route->inject_name && span_is(name, st->route->inject_name);
}

static const Span *find_header(const ParseState *st, const char *name) {
        for (size_t i = 0; i < st->n_headers; i++)
                if (span_is(&st->names[i], name))
                        return &st->values[i];
        return NULL;
}

static int build_upstream(const ParseState *st, const char *method, BrokerRequest *ret) {
        const BrokerRoute *r = st->route;
        size_t size = 256 + strlen(method) + strlen(r->base) + st->url.n + strlen(r->host) +
                      (r->inject_name ? strlen(r->inject_name) + strlen(r->inject_value) : 0) + st->body_size;
        char *out, *w;
        int n;

        for (size_t i = 0; i < st->n_headers; i++)
                size += st->names[i].n + st->values[i].n + 4;
        out = malloc(size);
        if (!out)
                return -ENOMEM;
        w = out;
#define EMIT(...) do { n = snprintf(w, size - (size_t) (w - out), __VA_ARGS__); w += n; } while (0)
        EMIT("%s %s%.*s HTTP/1.1\r\n", method, r->base, (int) st->url.n, st->url.p);
        if (r->keep_host && find_header(st, "Host"))
                ;   /* passed on below, in the caller's order */
        else if (r->port == 443)
                EMIT("Host: %s\r\n", r->host);
        else
                EMIT("Host: %s:%u\r\n", r->host, (unsigned) r->port);
        for (size_t i = 0; i < st->n_headers; i++)
                if (!is_dropped_header(st, &st->names[i]))
                        EMIT("%.*s: %.*s\r\n", (int) st->names[i].n, st->names[i].p, (int) st->values[i].n,
                             st->values[i].p ?: "");
        if (r->inject_name)
                EMIT("%s: %s\r\n", r->inject_name, r->inject_value);
        if (st->body_size > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
            strcmp(method, "PATCH") == 0)
                EMIT("Content-Length: %zu\r\n", st->body_size);
        EMIT("\r\n");
#undef EMIT
        if (st->body_size)
                memcpy(w, st->body, st->body_size);
        w += st->body_size;
        ret->upstream = out;
        ret->upstream_size = (size_t) (w - out);
        return 0;
}

static void state_done(ParseState *st) {
        if (st->body) {
                explicit_bzero(st->body, st->body_allocated);
                free(st->body);
        }
}

int broker_request_parse(const BrokerRoute *route, const uint8_t *in, size_t size, BrokerRequest *ret,
                         BrokerRefusal *refusal) {
        static const http_parser_settings settings = {
                .on_url = on_url,
                .on_header_field = on_header_field,
                .on_header_value = on_header_value,
                .on_headers_complete = on_headers_complete,
                .on_body = on_body,
                .on_message_complete = on_message_complete,
        };
        ParseState st = { .route = route, .refusal = refusal };
        const char *method;
        http_parser p;
        ssize_t head;
        size_t parsed;
        int r;

        *ret = (BrokerRequest) {};
        *refusal = (BrokerRefusal) {};
        head = check_head(in, size, refusal);
        if (head < 0)
                return BROKER_PARSE_REFUSED;
        if (head == 0)
                return BROKER_PARSE_MORE;
        if (route->require_token && !token_ok(route, in, (size_t) head, refusal))
                return BROKER_PARSE_REFUSED;

        http_parser_init(&p, HTTP_REQUEST);
        p.data = &st;
        parsed = http_parser_execute(&p, &settings, (const char *) in, size);
        if (refusal->status) {
                state_done(&st);
                return refusal->status == 500 ? -ENOMEM : BROKER_PARSE_REFUSED;
        }
        if (HTTP_PARSER_ERRNO(&p) != HPE_OK && HTTP_PARSER_ERRNO(&p) != HPE_PAUSED) {
                enum http_errno e = HTTP_PARSER_ERRNO(&p);
                state_done(&st);
                *refusal = (BrokerRefusal) { 400,
                        /* An overflowing chunk size is reported as a content length. */
                        e == HPE_INVALID_CHUNK_SIZE || (e == HPE_INVALID_CONTENT_LENGTH && (p.flags & F_CHUNKED)) ?
                                "invalid-chunk-size" :
                        e == HPE_UNEXPECTED_CONTENT_LENGTH ? "ambiguous-framing" :
                        e == HPE_INVALID_CONTENT_LENGTH ? "invalid-content-length" :
                        e == HPE_INVALID_METHOD ? "invalid-method" : "malformed-request" };
                return BROKER_PARSE_REFUSED;
        }
        if (st.done && !st.headers_done) {
                state_done(&st);
                *refusal = (BrokerRefusal) { 505, "http-version-not-supported" };
                return BROKER_PARSE_REFUSED;
        }
        if (!st.done) {
                ret->expect_continue = st.expect_continue;
                state_done(&st);
                if (size > BROKER_HEAD_MAX + route->max_request_bytes + BROKER_CHUNK_OVERHEAD_MAX) {
                        *refusal = (BrokerRefusal) { 413, "request-too-large" };
                        return BROKER_PARSE_REFUSED;
                }
                return BROKER_PARSE_MORE;
        }
        method = http_method_str((enum http_method) p.method);
        r = build_upstream(&st, method, ret);
        state_done(&st);
        if (r < 0)
                return r;
        ret->consumed = parsed;
        ret->keep_alive = http_should_keep_alive(&p);
        snprintf(ret->method, sizeof(ret->method), "%s", method);
        snprintf(ret->path, sizeof(ret->path), "%.*s", (int) st.url.n, st.url.p);
        return BROKER_PARSE_OK;
}

void broker_request_done(BrokerRequest *r) {
        if (r->upstream) {
                explicit_bzero(r->upstream, r->upstream_size);
                free(r->upstream);
        }
        *r = (BrokerRequest) {};
}
