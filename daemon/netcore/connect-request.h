/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Strict parser for the one request a tunnel may carry:
 *   CONNECT host:port HTTP/1.x CRLF *(header CRLF) CRLF   (x = 0 or 1)
 * Headers (Host, Proxy-Connection, User-Agent, Proxy-Authorization, ...) are
 * checked for syntax only and otherwise ignored.
 * It never allocates and keeps no state between calls: the caller appends
 * what it read to one buffer and calls again until the answer is not
 * "need more". */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONNECT_REQUEST_MAX   8192   /* whole request, headers included */
#define CONNECT_LINE_MAX      1024   /* any one line */
#define CONNECT_HEADERS_MAX   64
#define CONNECT_HOST_MAX      253    /* a DNS name; bracketed IPv6 is shorter */

typedef enum ConnectParseResult {
        CONNECT_PARSE_NEED_MORE = 0,
        CONNECT_PARSE_OK = 1,
        CONNECT_PARSE_TOO_LONG = -1,       /* over a length cap */
        CONNECT_PARSE_NOT_CONNECT = -2,    /* GET/POST/... or absolute-form: plain HTTP */
        CONNECT_PARSE_MALFORMED = -3,      /* garbage, bad authority, bad header */
        CONNECT_PARSE_BAD_VERSION = -4,    /* not HTTP/1.0 or HTTP/1.1 */
        CONNECT_PARSE_EXTRA_DATA = -5,     /* bytes after the request that are not TLS */
} ConnectParseResult;

typedef struct ConnectRequest {
        char host[CONNECT_HOST_MAX + 1];   /* as sent, brackets removed from IPv6 */
        bool host_is_bracketed;            /* "[...]" form: an IPv6 literal */
        uint16_t port;
        size_t request_size;               /* bytes up to and including the blank line */
} ConnectRequest;

/* Parses buf[0..len). On CONNECT_PARSE_OK, *ret is filled and any bytes past
 * ret->request_size are the start of the client's tunnel stream; they are
 * only accepted if they start a TLS record (a client that sends before the
 * 200 is optimistic TLS, anything else is a second request). */
ConnectParseResult connect_request_parse(const uint8_t *buf, size_t len, ConnectRequest *ret);

const char *connect_parse_result_to_string(ConnectParseResult r);
