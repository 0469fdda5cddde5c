/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One request a worker sends to a service's loopback listener, checked and
 * rewritten for the upstream: the broker's request path without its I/O.
 *
 * Framing is parsed by libhttp-parser; before it sees a byte, the head is
 * checked for what that parser tolerates and an upstream might read
 * differently: a bare CR or LF, an obs-fold continuation line. Then:
 * Content-Length together with Transfer-Encoding, Content-Length twice, a
 * Transfer-Encoding other than "chunked", an Upgrade, a target that is not
 * an absolute path (absolute-form, authority-form, '*') or holds a dot
 * segment or an encoded dot or slash, a method or path prefix the service
 * does not allow, a body over its cap (413, decided from Content-Length
 * before the body arrives). The upstream always gets a body with a
 * Content-Length (a chunked body is de-chunked, bounded by the cap), so
 * however leniently chunk lines were read, the upstream sees one framing.
 *
 * The worker's own Authorization, Proxy-Authorization and injected-header
 * values are dropped, as are hop-by-hop headers; the injected header is
 * added. Pure: no I/O, no global state. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BROKER_HEAD_MAX (16 * 1024)
#define BROKER_HEADERS_MAX 100
#define BROKER_TARGET_MAX 4096

typedef struct BrokerRoute {
        const char *host;               /* upstream Host, a DNS name */
        uint16_t port;
        const char *base;               /* "" or "/v1": prefixed to the worker's path */
        char * const *methods;          /* NULL-terminated */
        char * const *paths;            /* allowed prefixes, NULL-terminated */
        const char *inject_name;        /* e.g. "Authorization" */
        const char *inject_value;       /* the template filled with the secret */
        uint64_t max_request_bytes;
        /* The inbound gate's options (daemon/gate/); all zero for the broker.
         * With require_token set, "Authorization: Bearer <token>" (once) is
         * checked before anything else in the head, in constant time: 401
         * "missing-token" or "wrong-token". */
        const uint8_t *require_token;
        size_t require_token_size;
        bool any_method;                /* every method libhttp-parser knows, not methods */
        bool keep_host;                 /* the caller's Host goes on (host only when it sent none) */
        bool keep_forwarded;            /* X-Forwarded-For/-Proto/-Host and Forwarded go on (a trusted
                                         * front); otherwise they are dropped */
        /* inject_name NULL: nothing is injected. */
} BrokerRoute;

typedef struct BrokerRequest {
        char *upstream;                 /* head and body for the upstream; holds the secret */
        size_t upstream_size;
        size_t consumed;                /* bytes of the input this request took */
        bool keep_alive;                /* the worker may send another on this connection */
        bool expect_continue;           /* set on BROKER_PARSE_MORE: answer 100 Continue once */
        char method[16];
        char path[BROKER_TARGET_MAX + 1];   /* as the worker sent it, for the log */
} BrokerRequest;

typedef enum BrokerParseResult {
        BROKER_PARSE_OK,
        BROKER_PARSE_MORE,              /* incomplete: read more and call again with all of it */
        BROKER_PARSE_REFUSED,           /* answer status/reason, then close */
} BrokerParseResult;

typedef struct BrokerRefusal {
        int status;                     /* 400, 401, 403, 405, 413, 431, 501 */
        const char *reason;             /* a static token such as "ambiguous-framing" */
} BrokerRefusal;

/* Parses the request at the start of IN. On BROKER_PARSE_OK, *ret holds
 * the upstream bytes (free with broker_request_done(), which wipes them).
 * -ENOMEM on allocation failure. */
int broker_request_parse(const BrokerRoute *route, const uint8_t *in, size_t size, BrokerRequest *ret,
                         BrokerRefusal *refusal);

void broker_request_done(BrokerRequest *r);
