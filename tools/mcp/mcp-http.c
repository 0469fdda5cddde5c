/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MCP's Streamable HTTP transport (revision 2025-03-26 and later): POST
 * /mcp carries one JSON-RPC message and is answered with application/json;
 * this server starts no stream of its own, so GET is 405, as the
 * specification allows. Sessions (Mcp-Session-Id) are made by initialize
 * and ended by DELETE. The walls: on a UNIX socket, a peer of another UID
 * (root included) is refused before a byte is read; on TCP, a loopback
 * address only, and every request carries the bearer token; an Origin
 * header that is not this machine's loopback is refused (DNS rebinding). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mcp-transport.h"
#include "util.h"

#define HTTP_HEAD_MAX (16u * 1024u)
#define HTTP_MAX_CONNECTIONS 32u
#define HTTP_MAX_SESSIONS 16u
/* A connection that sends nothing this long is closed. */
#define HTTP_IDLE_MSEC (120 * 1000)
#define MCP_ENDPOINT "/mcp"

int mcp_listen_parse(const char *s, McpListen *ret) {
        McpListen l = {};
        const char *colon;
        char host[64];
        unsigned long port;
        char *end;

        if (isempty(s))
                return -EINVAL;
        if (s[0] == '/') {
                if (strlen(s) >= sizeof(l.path))
                        return -EINVAL;
                l.unix_socket = true;
                snprintf(l.path, sizeof(l.path), "%s", s);
                *ret = l;
                return 0;
        }
        colon = strrchr(s, ':');
        if (!colon || (size_t) (colon - s) >= sizeof(host))
                return -EINVAL;
        snprintf(host, sizeof(host), "%.*s", (int) (colon - s), s);
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
                return -EINVAL;
        if (host[0] == '[' && host[strlen(host) - 1] == ']') {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *) &l.addr;
                host[strlen(host) - 1] = '\0';
                if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
                        return -EINVAL;
                if (!IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
                        return -EPERM;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons((uint16_t) port);
                l.addr_len = sizeof(*a);
        } else {
                struct sockaddr_in *a = (struct sockaddr_in *) &l.addr;
                if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
                        return -EINVAL;
                /* 127.0.0.0/8: the token is the wall, and it crosses no wire. */
                if ((ntohl(a->sin_addr.s_addr) >> 24) != 127)
                        return -EPERM;
                a->sin_family = AF_INET;
                a->sin_port = htons((uint16_t) port);
                l.addr_len = sizeof(*a);
        }
        *ret = l;
        return 0;
}

int mcp_token_read(const char *path, char **ret) {
        _cleanup_close_ int fd = -1;
        char buf[4097];
        struct stat st;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if (st.st_mode & 0077)
                return -EPERM;
        n = read_full(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return (int) n;
        if ((size_t) n == sizeof(buf) - 1)
                return -E2BIG;
        if (n > 0 && buf[n - 1] == '\n')
                n--;
        buf[n] = '\0';
        if (n < 16 || strpbrk(buf, " \t\r\n"))
                return -EINVAL;
        *ret = strdup(buf);
        explicit_bzero(buf, sizeof(buf));
        return *ret ? 0 : -ENOMEM;
}

bool http_bearer_ok(const char *value, const char *token) {
        size_t lv, lt;
        unsigned char diff = 0;

        if (!value || !token || strncasecmp(value, "Bearer ", 7) != 0)
                return false;
        value += 7;
        lv = strlen(value);
        lt = strlen(token);
        /* Constant time in the token's bytes: no early exit on a mismatch. */
        for (size_t i = 0; i < lt; i++)
                diff |= (unsigned char) token[i] ^ (unsigned char) (i < lv ? value[i] : 0);
        return diff == 0 && lv == lt;
}

bool http_origin_ok(const HttpRequest *req) {
        static const char * const loopback[] = { "http://127.0.0.1", "http://localhost", "http://[::1]" };

        if (!req->has_origin)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(loopback); i++) {
                size_t n = strlen(loopback[i]);
                if (strncasecmp(req->origin, loopback[i], n) == 0 &&
                    (req->origin[n] == '\0' || req->origin[n] == ':'))
                        return true;
        }
        return false;
}

static void copy_field(char *dst, size_t size, const char *v, size_t n, bool *has) {
        snprintf(dst, size, "%.*s", (int) MIN(n, size - 1), v);
        if (has)
                *has = true;
}

int http_request_parse(const char *buf, size_t len, size_t max, HttpRequest *ret) {
        HttpRequest req = { .content_length = -1 };
        const char *end = NULL, *p, *line_end;
        char version[16];

        for (size_t i = 0; i + 3 < len; i++)
                if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
                        end = buf + i + 4;
                        break;
                }
        if (!end)
                return len > max ? -E2BIG : 0;
        if ((size_t) (end - buf) > max)
                return -E2BIG;

        /* The request line: METHOD SP TARGET SP HTTP/1.x */
        line_end = memmem(buf, (size_t) (end - buf), "\r\n", 2);
        if (!line_end)
                return -EBADMSG;
        {
                char line[512];
                if ((size_t) (line_end - buf) >= sizeof(line))
                        return -EBADMSG;
                memcpy(line, buf, (size_t) (line_end - buf));
                line[line_end - buf] = '\0';
                if (sscanf(line, "%15s %255s %15s", req.method, req.target, version) != 3 ||
                    !startswith(version, "HTTP/1."))
                        return -EBADMSG;
                req.close = streq(version, "HTTP/1.0");
        }
        for (p = line_end + 2; p < end - 2; p = line_end + 2) {
                const char *colon, *v;
                size_t name_len, v_len;

                line_end = memmem(p, (size_t) (end - p), "\r\n", 2);
                if (!line_end)
                        return -EBADMSG;
                colon = memchr(p, ':', (size_t) (line_end - p));
                if (!colon || colon == p)
                        return -EBADMSG;
                name_len = (size_t) (colon - p);
                for (v = colon + 1; v < line_end && (*v == ' ' || *v == '\t'); v++)
                        ;
                v_len = (size_t) (line_end - v);
                while (v_len > 0 && (v[v_len - 1] == ' ' || v[v_len - 1] == '\t'))
                        v_len--;
#define IS(name) (name_len == strlen(name) && strncasecmp(p, name, name_len) == 0)
                if (IS("Content-Length")) {
                        char num[24];
                        char *e;
                        if (v_len == 0 || v_len >= sizeof(num) || req.content_length >= 0)
                                return -EBADMSG;
                        memcpy(num, v, v_len);
                        num[v_len] = '\0';
                        errno = 0;
                        req.content_length = strtoll(num, &e, 10);
                        if (errno || *e || req.content_length < 0 || num[0] == '-' || num[0] == '+')
                                return -EBADMSG;
                } else if (IS("Transfer-Encoding"))
                        req.chunked = true;
                else if (IS("Connection"))
                        req.close = v_len == 5 && strncasecmp(v, "close", 5) == 0;
                else if (IS("Authorization"))
                        copy_field(req.authorization, sizeof(req.authorization), v, v_len, &req.has_authorization);
                else if (IS("Mcp-Session-Id"))
                        copy_field(req.session_id, sizeof(req.session_id), v, v_len, &req.has_session_id);
                else if (IS("MCP-Protocol-Version"))
                        copy_field(req.protocol_version, sizeof(req.protocol_version), v, v_len,
                                   &req.has_protocol_version);
                else if (IS("Content-Type"))
                        copy_field(req.content_type, sizeof(req.content_type), v, v_len, NULL);
                else if (IS("Accept"))
                        copy_field(req.accept, sizeof(req.accept), v, v_len, &req.has_accept);
                else if (IS("Origin"))
                        copy_field(req.origin, sizeof(req.origin), v, v_len, &req.has_origin);
#undef IS
        }
        *ret = req;
        return (int) (end - buf);
}

/* A session of the HTTP transport: a message-layer session and its id. */
typedef struct HttpSession {
        char id[33];
        McpSession *session;
        unsigned refs;                  /* the table's and each request's */
        bool gone;                      /* DELETEd or evicted */
        uint64_t last_used;
} HttpSession;

typedef struct HttpServer {
        const McpServer *server;
        const char *token;              /* NULL: UNIX socket */
        bool unix_socket;
        pthread_mutex_t lock;
        pthread_cond_t idle;
        HttpSession *sessions[HTTP_MAX_SESSIONS];
        unsigned connections;
} HttpServer;

static void session_unref_locked(HttpServer *h, HttpSession *s) {
        if (--s->refs > 0)
                return;
        mcp_session_free(s->session);
        free(s);
}

static void session_drop_locked(HttpServer *h, size_t i) {
        HttpSession *s = h->sessions[i];

        h->sessions[i] = NULL;
        s->gone = true;
        mcp_session_cancel_all(s->session);
        session_unref_locked(h, s);
}

static HttpSession *session_find(HttpServer *h, const char *id) {
        HttpSession *found = NULL;

        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++)
                if (h->sessions[i] && streq(h->sessions[i]->id, id)) {
                        found = h->sessions[i];
                        found->refs++;
                        found->last_used = now_usec(CLOCK_MONOTONIC);
                        break;
                }
        pthread_mutex_unlock(&h->lock);
        return found;
}

/* A new session in the table; the least recently used one without a call
 * at work gives way when it is full. NULL: full of busy sessions. */
static HttpSession *session_new(HttpServer *h) {
        HttpSession *s = calloc(1, sizeof(HttpSession));
        size_t slot = SIZE_MAX;

        if (!s)
                return NULL;
        s->session = mcp_session_new(h->server);
        if (!s->session || random_hex_id(s->id, 32) < 0) {
                mcp_session_free(s->session);
                free(s);
                return NULL;
        }
        s->refs = 2;
        s->last_used = now_usec(CLOCK_MONOTONIC);
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < HTTP_MAX_SESSIONS && slot == SIZE_MAX; i++)
                if (!h->sessions[i])
                        slot = i;
        if (slot == SIZE_MAX) {
                uint64_t oldest = UINT64_MAX;
                for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++)
                        if (h->sessions[i]->refs == 1 && h->sessions[i]->last_used < oldest) {
                                oldest = h->sessions[i]->last_used;
                                slot = i;
                        }
                if (slot != SIZE_MAX)
                        session_drop_locked(h, slot);
        }
        if (slot != SIZE_MAX)
                h->sessions[slot] = s;
        pthread_mutex_unlock(&h->lock);
        if (slot == SIZE_MAX) {
                mcp_session_free(s->session);
                free(s);
                return NULL;
        }
        return s;
}

static void session_release(HttpServer *h, HttpSession *s) {
        pthread_mutex_lock(&h->lock);
        session_unref_locked(h, s);
        pthread_mutex_unlock(&h->lock);
}

static int send_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                buf += k;
                n -= (size_t) k;
        }
        return 0;
}

static const char *status_text(int status) {
        switch (status) {
        case 200: return "OK";
        case 202: return "Accepted";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 406: return "Not Acceptable";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 503: return "Service Unavailable";
        default:  return "Error";
        }
}

/* One response; BODY JSON (or NULL), EXTRA header lines (each ending in
 * CRLF, or NULL). */
static int respond(int fd, int status, const char *extra, const char *body, bool close) {
        char head[1024];
        size_t n = body ? strlen(body) : 0;
        int k;

        k = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\n%s%sContent-Length: %zu\r\nCache-Control: no-store\r\n%s\r\n", status,
                     status_text(status), body ? "Content-Type: application/json\r\n" : "", extra ?: "", n,
                     close ? "Connection: close\r\n" : "");
        if (k < 0 || (size_t) k >= sizeof(head))
                return -EINVAL;
        k = send_all(fd, head, (size_t) k);
        if (k >= 0 && body)
                k = send_all(fd, body, n);
        return k;
}

/* A refusal with a JSON-RPC error body (the SDK shows its message). */
static int refuse(int fd, int status, const char *extra, const char *message, bool close) {
        char body[512];

        snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
                 MCP_INVALID_REQUEST, message);
        return respond(fd, status, extra, body, close);
}

static bool version_known(const char *v) {
        for (size_t i = 0; mcp_protocol_versions[i]; i++)
                if (streq(v, mcp_protocol_versions[i]))
                        return true;
        return false;
}

static bool accepts_json(const HttpRequest *req) {
        return !req->has_accept || strstr(req->accept, "application/json") || strstr(req->accept, "*/*");
}

/* POST /mcp: one message. Returns < 0 when the connection is to close. */
static int handle_post(HttpServer *h, int fd, const HttpRequest *req, const char *body, size_t len) {
        _cleanup_free_ char *response = NULL;
        HttpSession *hs = NULL;
        McpCall *call = NULL;
        McpPeek peek;
        char extra[128] = "";
        int r;

        if (!startswith(req->content_type, "application/json"))
                return refuse(fd, 415, NULL, "Content-Type must be application/json", req->close);
        if (!accepts_json(req))
                return refuse(fd, 406, NULL, "Accept must include application/json", req->close);
        if (req->has_protocol_version && !version_known(req->protocol_version))
                return refuse(fd, 400, NULL, "Unsupported MCP-Protocol-Version", req->close);
        mcp_peek(body, len, &peek);
        if (peek.is_initialize) {
                hs = session_new(h);
                if (!hs)
                        return refuse(fd, 503, NULL, "Too many sessions at work; retry later", req->close);
                snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", hs->id);
        } else {
                if (!req->has_session_id)
                        return refuse(fd, 400, NULL, "Bad Request: Mcp-Session-Id header is required", req->close);
                hs = session_find(h, req->session_id);
                if (!hs)
                        /* The client starts a new session (the specification). */
                        return refuse(fd, 404, NULL, "Session not found", req->close);
        }
        r = mcp_session_handle(hs->session, body, len, &response, &call);
        if (r >= 0 && call)
                /* This connection waits for its answer; a cancellation or a
                 * ping comes on another. */
                response = mcp_call_run(call);
        session_release(h, hs);
        if (r < 0)
                return refuse(fd, 503, NULL, "Out of memory", true);
        if (call && !response)
                /* Cancelled: the client no longer waits for this answer. */
                return -ECANCELED;
        if (!response)
                return respond(fd, 202, NULL, NULL, req->close);
        return respond(fd, 200, extra, response, req->close);
}

static int handle_delete(HttpServer *h, int fd, const HttpRequest *req) {
        bool found = false;

        if (!req->has_session_id)
                return refuse(fd, 400, NULL, "Bad Request: Mcp-Session-Id header is required", req->close);
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++)
                if (h->sessions[i] && streq(h->sessions[i]->id, req->session_id)) {
                        session_drop_locked(h, i);
                        found = true;
                }
        pthread_mutex_unlock(&h->lock);
        return found ? respond(fd, 200, NULL, NULL, req->close) : refuse(fd, 404, NULL, "Session not found", req->close);
}

/* Reads until BUF holds at least WANT bytes; 0 at a clean end. */
static ssize_t read_more(int fd, char *buf, size_t used, size_t size) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        for (;;) {
                int k = poll(&p, 1, HTTP_IDLE_MSEC);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -ETIMEDOUT;
                n = recv(fd, buf + used, size - used, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                return n < 0 ? -errno : n;
        }
}

/* Serves the requests of one connection, one after the other (keep-alive). */
static void serve_connection(HttpServer *h, int fd) {
        size_t max_body = h->server->max_message ?: MCP_MAX_MESSAGE_DEFAULT;
        size_t size = HTTP_HEAD_MAX + 4096, used = 0;
        _cleanup_free_ char *buf = malloc(size);

        if (!buf)
                return;
        for (;;) {
                HttpRequest req;
                int head;
                ssize_t n;

                while ((head = http_request_parse(buf, used, HTTP_HEAD_MAX, &req)) == 0) {
                        n = read_more(fd, buf, used, size);
                        if (n <= 0)
                                return;
                        used += (size_t) n;
                }
                if (head < 0) {
                        (void) refuse(fd, head == -E2BIG ? 413 : 400, NULL, "Malformed HTTP request", true);
                        return;
                }
                /* The walls first: nothing about the request counts before them. */
                if (h->token && !http_bearer_ok(req.has_authorization ? req.authorization : NULL, h->token)) {
                        (void) refuse(fd, 401, "WWW-Authenticate: Bearer realm=\"sandboxctl-mcp\"\r\n",
                                      "Unauthorized: a bearer token is required", true);
                        return;
                }
                if (!http_origin_ok(&req)) {
                        (void) refuse(fd, 403, NULL, "Forbidden: Origin is not this machine's loopback", true);
                        return;
                }
                if (!streq(req.target, MCP_ENDPOINT) && !startswith(req.target, MCP_ENDPOINT "?")) {
                        (void) refuse(fd, 404, NULL, "Not Found: the endpoint is /mcp", true);
                        return;
                }
                if (req.chunked) {
                        (void) refuse(fd, 411, NULL, "Length Required: send Content-Length", true);
                        return;
                }
                if (req.content_length > (long long) max_body) {
                        char msg[128];
                        snprintf(msg, sizeof(msg), "Content Too Large: at most %zu bytes a message", max_body);
                        (void) refuse(fd, 413, NULL, msg, true);
                        return;
                }
                size_t body_len = req.content_length < 0 ? 0 : (size_t) req.content_length;
                if ((size_t) head + body_len > size) {
                        char *b = realloc(buf, (size_t) head + body_len);
                        if (!b)
                                return;
                        buf = b;
                        size = (size_t) head + body_len;
                }
                while (used < (size_t) head + body_len) {
                        n = read_more(fd, buf, used, size);
                        if (n <= 0)
                                return;
                        used += (size_t) n;
                }

                int r;
                if (streq(req.method, "POST")) {
                        if (req.content_length < 0)
                                r = refuse(fd, 411, NULL, "Length Required: send Content-Length", true);
                        else
                                r = handle_post(h, fd, &req, buf + head, body_len);
                } else if (streq(req.method, "DELETE"))
                        r = handle_delete(h, fd, &req);
                else
                        /* No stream from the server: GET is not offered. */
                        r = respond(fd, 405, "Allow: POST, DELETE\r\n", NULL, req.close);
                if (r < 0 || req.close)
                        return;
                memmove(buf, buf + head + body_len, used - (size_t) head - body_len);
                used -= (size_t) head + body_len;
        }
}

typedef struct Connection {
        HttpServer *h;
        int fd;
} Connection;

static void *connection_thread(void *p) {
        Connection *c = p;
        HttpServer *h = c->h;

        serve_connection(h, c->fd);
        safe_close(c->fd);
        free(c);
        pthread_mutex_lock(&h->lock);
        h->connections--;
        pthread_cond_broadcast(&h->idle);
        pthread_mutex_unlock(&h->lock);
        return NULL;
}

/* The peer of a UNIX connection is this UID, as the kernel recorded it at
 * connect(): nobody else, root included, may drive this user's workers. */
static bool peer_is_us(int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);

        return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred) &&
               cred.uid == getuid();
}

static void accept_one(HttpServer *h, int listen_fd) {
        Connection *c;
        pthread_attr_t attr;
        pthread_t thread;
        int fd;

        fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        if (h->unix_socket && !peer_is_us(fd)) {
                (void) refuse(fd, 403, NULL, "Forbidden: this socket serves only the user who started the server", true);
                log_warning("Refused a connection from another user on the MCP socket");
                safe_close(fd);
                return;
        }
        pthread_mutex_lock(&h->lock);
        bool full = h->connections >= HTTP_MAX_CONNECTIONS;
        if (!full)
                h->connections++;
        pthread_mutex_unlock(&h->lock);
        if (full) {
                (void) refuse(fd, 503, NULL, "Too many connections", true);
                safe_close(fd);
                return;
        }
        c = malloc(sizeof(Connection));
        if (c) {
                *c = (Connection) { h, fd };
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                if (pthread_create(&thread, &attr, connection_thread, c) == 0) {
                        pthread_attr_destroy(&attr);
                        return;
                }
                pthread_attr_destroy(&attr);
                free(c);
        }
        safe_close(fd);
        pthread_mutex_lock(&h->lock);
        h->connections--;
        pthread_mutex_unlock(&h->lock);
}

static int listen_socket(const McpListen *l) {
        _cleanup_close_ int fd = -1;
        int one = 1;

        fd = socket(l->unix_socket ? AF_UNIX : l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (l->unix_socket) {
                struct sockaddr_un a = { .sun_family = AF_UNIX };
                struct stat st;
                mode_t old;
                int r;

                memcpy(a.sun_path, l->path, strlen(l->path));
                /* A socket left by an earlier run of ours is replaced; anything else stays. */
                if (lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == getuid())
                        (void) unlink(l->path);
                /* 0600 from the start: no moment where another user may connect. */
                old = umask(0177);
                r = bind(fd, (struct sockaddr *) &a, sizeof(a));
                umask(old);
                if (r < 0)
                        return -errno;
        } else {
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                if (bind(fd, (const struct sockaddr *) &l->addr, l->addr_len) < 0)
                        return -errno;
        }
        if (listen(fd, 64) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int mcp_http_run(const McpServer *server, const McpListen *l, const char *token) {
        HttpServer h = {
                .server = server,
                .token = l->unix_socket ? NULL : token,
                .unix_socket = l->unix_socket,
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .idle = PTHREAD_COND_INITIALIZER,
        };
        _cleanup_close_ int fd = -1, sfd = -1;
        sigset_t mask;

        if (!l->unix_socket && isempty(token))
                return -EPERM;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
                return -EINVAL;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0)
                return -errno;
        fd = listen_socket(l);
        if (fd < 0)
                return fd;
        /* Readiness for whoever started us (a test, a unit): after listen(). */
        fprintf(stderr, "sandboxctl mcp: listening on %s%s\n", l->unix_socket ? l->path : "loopback TCP",
                l->unix_socket ? "" : " (bearer token required)");
        fflush(stderr);
        for (;;) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents)
                        break;
                if (p[0].revents)
                        accept_one(&h, fd);
        }
        if (l->unix_socket)
                (void) unlink(l->path);
        /* Stop: cancel what is at work, wait for the connections to finish. */
        pthread_mutex_lock(&h.lock);
        for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++)
                if (h.sessions[i])
                        session_drop_locked(&h, i);
        /* A connection idle in a read notices only its own timeout: the
         * process's exit ends those after a while. */
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 30;
        while (h.connections > 0)
                if (pthread_cond_timedwait(&h.idle, &h.lock, &deadline) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&h.lock);
        return 0;
}
