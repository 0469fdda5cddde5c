/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The answer to a CONNECT the proxy will not carry out: a status line, the
 * reason in X-Sandbox-Egress-Reason, and the same reason as a one-line
 * text/plain body for whoever only shows the body (a program printing what
 * urllib's HTTPError or a browser got). Pure: it formats into a buffer. */

#include <stddef.h>
#include <stdint.h>

/* What the body may quote of a host name: more is cut. */
#define EGRESS_REFUSAL_HOST_MAX 253

/* HOST is what the proxy made of the request (the normalised name, or for
 * an invalid one what the client sent), empty if it got no host at all.
 * Every byte of HOST and REASON outside a small set of name characters is
 * written as '?', so nothing the client sent comes back as it was (no CR,
 * LF or markup). Returns the length written, or 0 if BUF is too small. */
size_t egress_refusal_format(char *buf, size_t size, int code, const char *host, uint16_t port, const char *reason);

/* The same for a request to a broker listener: the status, the reason
 * header and a body naming SERVICE; sanitised alike, "Connection: close". */
size_t egress_broker_refusal_format(char *buf, size_t size, int code, const char *service, const char *reason);

const char *egress_status_text(int code);
