/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* MCP's two transports over the message layer (mcp-core.h): stdio, one
 * JSON-RPC message a line, and Streamable HTTP on a UNIX socket (only this
 * UID may connect: the peer's credentials are checked) or on a loopback TCP
 * port (each request carries a bearer token). Each tool call runs in a
 * thread of its own, so a ping or a notifications/cancelled is answered
 * while it works. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "mcp-core.h"

/* Serves IN_FD/OUT_FD until end of input; calls still at work then are
 * cancelled and waited for. 0, or a negative errno. */
int mcp_stdio_run(const McpServer *server, int in_fd, int out_fd);

typedef struct McpListen {
        bool unix_socket;
        char path[108];                 /* sun_path */
        struct sockaddr_storage addr;   /* loopback only */
        socklen_t addr_len;
} McpListen;

/* "PATH" (absolute, a UNIX socket) or "127.0.0.1:PORT" / "[::1]:PORT":
 * 0, or -EINVAL (not one of these) / -EPERM (not a loopback address). */
int mcp_listen_parse(const char *s, McpListen *ret);

/* A bearer token from FILE, which only its owner may read: 0, -EPERM when
 * group or others can read it, -EINVAL when it holds fewer than 16 bytes
 * (after one trailing newline is dropped). *ret is freed by the caller. */
int mcp_token_read(const char *path, char **ret);

/* Serves Streamable HTTP on L (endpoint /mcp) until SIGINT or SIGTERM.
 * TOKEN: required of every TCP request (NULL for a UNIX socket). */
int mcp_http_run(const McpServer *server, const McpListen *l, const char *token);

/* One HTTP/1.1 request head, as the server parses it (pure; unit-tested). */
typedef struct HttpRequest {
        char method[16];
        char target[256];
        char authorization[512];
        char session_id[128];
        char protocol_version[32];
        char content_type[128];
        char accept[256];
        char origin[256];
        long long content_length;       /* -1: none */
        bool chunked;
        bool close;                     /* Connection: close, or HTTP/1.0 */
        bool has_session_id, has_protocol_version, has_origin, has_authorization, has_accept;
} HttpRequest;

/* Parses the head at BUF: its length (through the blank line) when complete,
 * 0 when more is needed, -EBADMSG when malformed, -E2BIG when longer than
 * MAX (the cap on a head). */
int http_request_parse(const char *buf, size_t len, size_t max, HttpRequest *ret);

/* Whether the Authorization header value VALUE is "Bearer TOKEN", compared
 * in constant time. */
bool http_bearer_ok(const char *value, const char *token);
/* Whether an Origin header names this machine's loopback (or is absent). */
bool http_origin_ok(const HttpRequest *req);
