/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where an upstream's response to one brokered request ends, and whether
 * it may go to the worker: libhttp-parser reads the framing (Content-Length,
 * chunked, or up to the close), the head is held to the same rules as a
 * request's (no bare CR or LF, no obs-fold, at most BROKER_RESPONSE_HEAD_MAX),
 * a Content-Length over the cap is refused from the head alone and any
 * other body is counted as it passes. Interim 1xx responses are passed
 * through and parsing continues with the final one; 101 is refused (the
 * broker never asks for an upgrade). Pure: no I/O, no global state. */

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BROKER_RESPONSE_HEAD_MAX (64 * 1024)

typedef struct BrokerResponse {
        http_parser parser;
        uint64_t max_body;
        uint64_t body_bytes;            /* decoded body bytes so far */
        size_t head_bytes;              /* of the current head, through the blank line once known */
        uint8_t head_tail[3];           /* the last bytes of the head seen, for checks across feeds */
        size_t head_tail_len;
        bool no_body;                   /* the answer to a HEAD request */
        bool head_done;                 /* the final response's head is complete */
        bool complete;
        bool keep_alive;                /* valid once complete */
        int status;
        const char *error;              /* a static reason token once refused */
} BrokerResponse;

void broker_response_init(BrokerResponse *r, uint64_t max_body, bool no_body);

/* Feeds the next SIZE bytes from the upstream (SIZE 0: the upstream closed).
 * Returns how many of them belong to this response (stopping where it
 * completes), or -1 with r->error set: "malformed-response",
 * "response-head-too-large", "response-too-large", "upgrade-refused",
 * "response-truncated" (the upstream closed before the end). */
ssize_t broker_response_feed(BrokerResponse *r, const uint8_t *in, size_t size);
