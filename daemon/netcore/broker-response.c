/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "broker-response.h"

static int fail(BrokerResponse *r, const char *reason) {
        if (!r->error)
                r->error = reason;
        return -1;
}

static int on_headers_complete(http_parser *p) {
        BrokerResponse *r = p->data;

        r->status = (int) p->status_code;
        if (p->status_code < 100 || p->status_code > 599)
                return fail(r, "malformed-response");
        if (p->status_code == 101 || p->upgrade)
                return fail(r, "upgrade-refused");
        /* An interim response has no body: one that claims a body is framed
         * differently by different readers. */
        if (p->status_code < 200 &&
            ((p->flags & F_CHUNKED) || ((p->flags & F_CONTENTLENGTH) && p->content_length > 0)))
                return fail(r, "malformed-response");
        if (p->status_code >= 200) {
                r->head_done = true;
                /* From the head alone: nothing of it has reached the worker yet.
                 * The answer to HEAD gives the size a GET would get, and has no body. */
                if (!r->no_body && (p->flags & F_CONTENTLENGTH) && p->content_length > r->max_body)
                        return fail(r, "response-too-large");
        }
        /* 1 tells the parser there is no body, as for the answer to HEAD. */
        return r->no_body || p->status_code < 200 ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
        BrokerResponse *r = p->data;

        (void) at;
        r->body_bytes += n;
        if (r->body_bytes > r->max_body)
                return fail(r, "response-too-large");
        return 0;
}

static int on_message_complete(http_parser *p) {
        BrokerResponse *r = p->data;

        if (p->status_code < 200)
                return 0;   /* an interim response: the final one follows */
        r->complete = true;
        r->keep_alive = http_should_keep_alive(p);
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings settings = {
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};

void broker_response_init(BrokerResponse *r, uint64_t max_body, bool no_body) {
        *r = (BrokerResponse) { .max_body = max_body, .no_body = no_body };
        http_parser_init(&r->parser, HTTP_RESPONSE);
        r->parser.data = r;
}

/* Checks head bytes as they arrive (bare CR or LF, obs-fold, control
 * characters, the size). Returns how many of IN are head, SIZE if all of
 * them may be, or -1. Stops after the blank line. */
static ssize_t check_head(BrokerResponse *r, const uint8_t *in, size_t size) {
        for (size_t i = 0; i < size; i++) {
                uint8_t c = in[i];
                uint8_t prev = r->head_tail_len ? r->head_tail[r->head_tail_len - 1] : 0;
                uint8_t prev2 = r->head_tail_len > 1 ? r->head_tail[r->head_tail_len - 2] : 0;

                if (++r->head_bytes > BROKER_RESPONSE_HEAD_MAX)
                        return fail(r, "response-head-too-large");
                if (prev == '\r' && c != '\n')
                        return fail(r, "malformed-response");   /* bare CR */
                if (c == '\n' && prev != '\r')
                        return fail(r, "malformed-response");   /* bare LF */
                if (prev == '\n' && prev2 == '\r' && r->head_bytes > 2 && (c == ' ' || c == '\t'))
                        return fail(r, "malformed-response");   /* obs-fold */
                if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f)
                        return fail(r, "malformed-response");
                if (r->head_tail_len == sizeof(r->head_tail))
                        memmove(r->head_tail, r->head_tail + 1, --r->head_tail_len);
                r->head_tail[r->head_tail_len++] = c;
                if (c == '\n' && r->head_tail_len == 3 && r->head_tail[0] == '\n' && r->head_tail[1] == '\r')
                        return (ssize_t) (i + 1);
        }
        return (ssize_t) size;
}

ssize_t broker_response_feed(BrokerResponse *r, const uint8_t *in, size_t size) {
        size_t done = 0;

        assert(r);
        if (r->error)
                return -1;
        if (r->complete)
                return 0;
        if (size == 0) {
                /* The close ends a body without framing, and nothing else. */
                http_parser_execute(&r->parser, &settings, NULL, 0);
                if (r->error)
                        return -1;
                if (!r->complete)
                        return fail(r, "response-truncated");
                return 0;
        }
        while (done < size && !r->complete) {
                size_t chunk = size - done;
                /* Until the final head is complete, only head bytes go to the parser. */
                if (!r->head_done) {
                        ssize_t k = check_head(r, in + done, chunk);
                        if (k < 0)
                                return -1;
                        chunk = (size_t) k;
                }
                size_t n = http_parser_execute(&r->parser, &settings, (const char *) in + done, chunk);
                if (r->error)
                        return -1;
                enum http_errno e = HTTP_PARSER_ERRNO(&r->parser);
                if (e != HPE_OK && e != HPE_PAUSED)
                        return fail(r, "malformed-response");
                done += n;
                if (n < chunk && !r->complete)
                        return fail(r, "malformed-response");
                if (!r->head_done && r->head_tail_len == 3 && r->head_tail[2] == '\n' && r->head_tail[1] == '\r' &&
                    r->head_tail[0] == '\n') {
                        /* An interim response ended: the next head starts afresh. */
                        r->head_bytes = 0;
                        r->head_tail_len = 0;
                }
        }
        return (ssize_t) done;
}
