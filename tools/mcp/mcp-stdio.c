/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MCP over stdio: one JSON-RPC message a line, in and out (mcp-transport.h). */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp-transport.h"
#include "util.h"

typedef struct StdioOut {
        int fd;
        pthread_mutex_t lock;           /* one message at a time on the pipe */
        pthread_cond_t idle;
        unsigned threads;               /* call threads alive */
} StdioOut;

typedef struct CallThread {
        StdioOut *out;
        McpCall *call;
} CallThread;

static int write_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, buf, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                buf += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Writes MESSAGE (freed) and its newline as one unit. */
static void out_send(StdioOut *o, char *message) {
        if (!message)
                return;
        pthread_mutex_lock(&o->lock);
        /* A host that went away is noticed by the reader at end of input. */
        if (write_all(o->fd, message, strlen(message)) >= 0)
                (void) write_all(o->fd, "\n", 1);
        pthread_mutex_unlock(&o->lock);
        free(message);
}

static void out_notify(void *userdata, char *message) {
        out_send(userdata, message);
}

static void *call_thread(void *p) {
        CallThread *t = p;
        StdioOut *o = t->out;

        out_send(o, mcp_call_run(t->call));
        free(t);
        pthread_mutex_lock(&o->lock);
        o->threads--;
        pthread_cond_broadcast(&o->idle);
        pthread_mutex_unlock(&o->lock);
        return NULL;
}

static int start_call(StdioOut *o, McpCall *call) {
        CallThread *t = malloc(sizeof(CallThread));
        pthread_attr_t attr;
        pthread_t thread;
        int r;

        if (!t) {
                mcp_call_free(call);
                return -ENOMEM;
        }
        *t = (CallThread) { o, call };
        pthread_mutex_lock(&o->lock);
        o->threads++;
        pthread_mutex_unlock(&o->lock);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = -pthread_create(&thread, &attr, call_thread, t);
        pthread_attr_destroy(&attr);
        if (r < 0) {
                pthread_mutex_lock(&o->lock);
                o->threads--;
                pthread_mutex_unlock(&o->lock);
                mcp_call_free(call);
                free(t);
        }
        return r;
}

static int handle_line(McpSession *s, StdioOut *o, const char *line, size_t len) {
        char *response = NULL;
        McpCall *call = NULL;
        int r;

        /* Blank lines (and a CR of CRLF) carry no message. */
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
                len--;
        if (len == 0)
                return 0;
        r = mcp_session_handle(s, line, len, &response, &call);
        if (r < 0)
                return r;
        out_send(o, response);
        return call ? start_call(o, call) : 0;
}

int mcp_stdio_run(const McpServer *server, int in_fd, int out_fd) {
        size_t max = server->max_message ?: MCP_MAX_MESSAGE_DEFAULT;
        StdioOut o = { .fd = out_fd, .lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER };
        _cleanup_free_ char *buf = NULL;
        size_t size = 64 * 1024, used = 0, dropped = 0;
        bool discarding = false;
        _cleanup_close_ int sfd = -1;
        McpSession *s;
        sigset_t mask;
        int r = 0;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
                return -EINVAL;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        s = mcp_session_new(server);
        buf = malloc(size);
        if (s)
                mcp_session_set_notify(s, out_notify, &o);
        if (!s || !buf) {
                mcp_session_free(s);
                return -ENOMEM;
        }
        for (;;) {
                ssize_t n;
                char *nl;

                if (used == size) {
                        /* A line longer than the cap is read to its end and
                         * thrown away, then refused (it cannot be answered by
                         * id: its id was never parsed). */
                        if (size > max) {
                                discarding = true;
                                dropped += used;
                                used = 0;
                        } else {
                                char *b = realloc(buf, size * 2);
                                if (!b) {
                                        r = -ENOMEM;
                                        break;
                                }
                                buf = b;
                                size *= 2;
                        }
                }
                struct pollfd p[2] = { { .fd = in_fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (sfd >= 0 && p[1].revents) {
                        /* SIGTERM or SIGINT: the host gives up on us; stop
                         * what is at work (a one-shot's worker with it). */
                        mcp_session_cancel_all(s);
                        break;
                }
                n = read(in_fd, buf + used, size - used);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : 0;
                        break;
                }
                used += (size_t) n;
                while ((nl = memchr(buf, '\n', used))) {
                        size_t len = (size_t) (nl - buf);
                        if (discarding || len > max) {
                                /* The cap's own answer, for the whole line's length. */
                                out_send(&o, mcp_too_large(server, dropped + len));
                                discarding = false;
                                dropped = 0;
                        } else
                                r = handle_line(s, &o, buf, len);
                        if (r < 0)
                                break;
                        memmove(buf, nl + 1, used - len - 1);
                        used -= len + 1;
                }
                if (r < 0)
                        break;
        }

        /* End of input is the host's shutdown: the answers of calls still at
         * work are still written (a host that does not wait sends SIGTERM,
         * which cancels them). */
        if (r < 0)
                mcp_session_cancel_all(s);
        pthread_mutex_lock(&o.lock);
        while (o.threads > 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 200 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                (void) pthread_cond_timedwait(&o.idle, &o.lock, &ts);
                /* A SIGTERM while waiting still cancels. */
                if (sfd >= 0 && o.threads > 0) {
                        struct pollfd p = { .fd = sfd, .events = POLLIN };
                        if (poll(&p, 1, 0) > 0)
                                mcp_session_cancel_all(s);
                }
        }
        pthread_mutex_unlock(&o.lock);
        mcp_session_free(s);
        return r;
}
