/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "channel.h"

typedef struct Buffer {
        uint8_t *data;
        size_t cap, start, end;
} Buffer;

/* Our read end of the worker's stdout or stderr pipe. */
typedef struct WorkerOutput {
        int fd;
        sd_event_source *source;
        bool eof;
} WorkerOutput;

enum { WORKER_STDOUT, WORKER_STDERR, N_WORKER_OUTPUTS };

struct Channel {
        sd_event *event;
        int worker_stdin;               /* our write end of the worker's stdin pipe */
        sd_event_source *stdin_source;
        WorkerOutput out[N_WORKER_OUTPUTS];
        int client_fd;
        sd_event_source *client_source;
        Buffer to_client;               /* the worker's stdout and stderr, as they come */
        Buffer to_worker;               /* the client's input */
        bool worker_ended;              /* its processes are gone: what is readable now is all */
        bool worker_write_shut;         /* its stdin is closed: EOF passed on, or it stopped reading */
        bool client_eof;                /* the client half-closed: EOF goes on to the worker */
        bool client_write_shut;         /* we passed the worker's EOF on to the client */
        uint64_t last_activity;
        uint64_t bytes_in, bytes_out;
        ChannelActivityFn on_activity;
        ChannelActivityFn on_stdin_closed;
        void *userdata;
        const char *token;              /* awaited on stdout before anything is relayed */
        size_t token_len, token_got;
        ChannelReadyFn on_ready;
};

static size_t buffer_len(const Buffer *b) { return b->end - b->start; }

static size_t buffer_space(Buffer *b) {
        if (b->start > 0 && b->end == b->cap) {
                memmove(b->data, b->data + b->start, b->end - b->start);
                b->end -= b->start;
                b->start = 0;
        }
        return b->cap - b->end;
}

static void buffer_consume(Buffer *b, size_t n) {
        b->start += n;
        if (b->start == b->end)
                b->start = b->end = 0;
}

/* Reads what fits. Returns bytes read, 0 at EOF, -EAGAIN or another error. */
static ssize_t buffer_fill(Buffer *b, int fd) {
        ssize_t n = read(fd, b->data + b->end, buffer_space(b));
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->end += (size_t) n;
        return n;
}

/* FD is non-blocking; a pipe whose reader is gone gives EPIPE, as SIGPIPE is
 * ignored, and a socket is written with MSG_NOSIGNAL. */
static ssize_t buffer_drain(Buffer *b, int fd, bool is_socket) {
        ssize_t n = is_socket ? send(fd, b->data + b->start, buffer_len(b), MSG_NOSIGNAL | MSG_DONTWAIT)
                              : write(fd, b->data + b->start, buffer_len(b));
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        buffer_consume(b, (size_t) n);
        return n;
}

/* The worker closed both its stdout and its stderr. */
static bool channel_worker_eof(const Channel *c) {
        return c->out[WORKER_STDOUT].eof && c->out[WORKER_STDERR].eof;
}

void channel_touch(Channel *c) {
        c->last_activity = now_usec(CLOCK_MONOTONIC);
        if (c->on_activity)
                c->on_activity(c, c->userdata);
}

static void channel_detach(Channel *c) {
        c->client_source = sd_event_source_disable_unref(c->client_source);
        c->client_fd = safe_close(c->client_fd);
        c->client_eof = false;
        c->client_write_shut = false;
}

/* No more input for the worker: closing our end is its EOF. */
static void channel_close_worker_stdin(Channel *c) {
        bool was_open = c->worker_stdin >= 0;

        c->stdin_source = sd_event_source_disable_unref(c->stdin_source);
        c->worker_stdin = safe_close(c->worker_stdin);
        c->worker_write_shut = true;
        /* Another copy of our end (systemd's fd store holds one) would keep
         * the worker from ever seeing its EOF. */
        if (was_open && c->on_stdin_closed)
                c->on_stdin_closed(c, c->userdata);
}

static void channel_update_events(Channel *c) {
        uint32_t ev;

        /* The token is read aside: a full buffer does not hold it up. */
        for (size_t i = 0; i < N_WORKER_OUTPUTS; i++)
                if (c->out[i].source)
                        sd_event_source_set_enabled(c->out[i].source,
                                                    !c->out[i].eof && ((i == WORKER_STDOUT && c->token) ||
                                                                       buffer_space(&c->to_client) > 0)
                                                            ? SD_EVENT_ON : SD_EVENT_OFF);
        if (c->stdin_source)
                sd_event_source_set_enabled(c->stdin_source, buffer_len(&c->to_worker) > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        if (c->client_source) {
                /* RDHUP stays raised once the client half-closed, so it is
                 * only asked for while we would read the EOF anyway. */
                ev = 0;
                if (!c->client_eof && buffer_space(&c->to_worker) > 0)
                        ev |= EPOLLIN | EPOLLRDHUP;
                if (buffer_len(&c->to_client) > 0)
                        ev |= EPOLLOUT;
                sd_event_source_set_io_events(c->client_source, ev);
        }
}

/* EOFs travel on once everything before them has been delivered. */
static void channel_propagate_eof(Channel *c) {
        if (c->client_eof && !c->worker_write_shut && buffer_len(&c->to_worker) == 0)
                channel_close_worker_stdin(c);
        if (channel_worker_eof(c) && c->client_fd >= 0 && !c->client_write_shut && buffer_len(&c->to_client) == 0) {
                (void) shutdown(c->client_fd, SHUT_WR);
                c->client_write_shut = true;
        }
}

/* Once the worker's processes are gone, the bytes already in the pipes are
 * all there will be; systemd may hold its copies of the write ends for a while
 * yet, so EOF is declared when a pipe runs dry instead of waiting for it. */
static void channel_drain_ended_worker(Channel *c) {
        for (size_t i = 0; i < N_WORKER_OUTPUTS; i++)
                while (c->worker_ended && !c->out[i].eof && buffer_space(&c->to_client) > 0) {
                        ssize_t n = buffer_fill(&c->to_client, c->out[i].fd);
                        if (n > 0) {
                                c->bytes_out += (uint64_t) n;
                                continue;
                        }
                        c->out[i].eof = true;
                }
}

/* At most what is left of the token is read, so the bytes after it stay in
 * the pipe for the relay; a wrong byte ends the wait at once. */
void channel_read_token(Channel *c, bool gone) {
        WorkerOutput *out = &c->out[WORKER_STDOUT];
        ChannelReadyFn fn;
        char buf[64];
        int result = 1;

        while (c->token && result > 0) {
                ssize_t n = read(out->fd, buf, MIN(c->token_len - c->token_got, sizeof(buf)));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        if (gone)
                                result = -EPIPE;
                        break;
                }
                if (n <= 0) {
                        out->eof = n == 0;
                        result = n == 0 ? -EPIPE : -errno;
                } else if (memcmp(buf, c->token + c->token_got, (size_t) n) != 0)
                        result = -EBADMSG;
                else if ((c->token_got += (size_t) n) == c->token_len)
                        result = 0;
        }
        if (result > 0)
                return;
        fn = c->on_ready;
        c->token = NULL;
        c->on_ready = NULL;
        channel_update_events(c);
        if (fn)
                fn(c, result, c->userdata);
}

void channel_expect_token(Channel *c, const char *token, size_t len, ChannelReadyFn fn) {
        c->token = token;
        c->token_len = len;
        c->token_got = 0;
        c->on_ready = fn;
        channel_update_events(c);
}

bool channel_token_pending(const Channel *c) { return c->token; }

static int on_worker_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Channel *c = userdata;
        WorkerOutput *out = &c->out[fd == c->out[WORKER_STDOUT].fd ? WORKER_STDOUT : WORKER_STDERR];
        ssize_t n;

        if (out == &c->out[WORKER_STDOUT] && c->token) {
                /* FN may be anything: nothing of C is touched after it. */
                channel_read_token(c, false);
                return 0;
        }
        if (!out->eof && buffer_space(&c->to_client) > 0) {
                n = buffer_fill(&c->to_client, fd);
                if (n > 0) {
                        c->bytes_out += (uint64_t) n;
                        channel_touch(c);
                } else if (n != -EAGAIN)
                        out->eof = true;
        }
        channel_propagate_eof(c);
        channel_update_events(c);
        return 0;
}

static int on_worker_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Channel *c = userdata;
        ssize_t n;

        if (buffer_len(&c->to_worker) > 0) {
                n = buffer_drain(&c->to_worker, fd, false);
                if (n > 0)
                        channel_touch(c);
                else if (n != -EAGAIN) {
                        /* The worker closed its stdin: what it will never read is dropped. */
                        c->to_worker.start = c->to_worker.end = 0;
                        channel_close_worker_stdin(c);
                }
        }
        channel_propagate_eof(c);
        channel_update_events(c);
        return 0;
}

static int on_client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Channel *c = userdata;
        ssize_t n;

        if ((revents & EPOLLOUT) && buffer_len(&c->to_client) > 0) {
                n = buffer_drain(&c->to_client, fd, true);
                if (n > 0) {
                        channel_touch(c);
                        channel_drain_ended_worker(c);
                }
                else if (n != -EAGAIN) {
                        channel_detach(c);
                        channel_update_events(c);
                        return 0;
                }
        }
        if ((revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !c->client_eof &&
            buffer_space(&c->to_worker) > 0) {
                n = buffer_fill(&c->to_worker, fd);
                if (n > 0) {
                        c->bytes_in += (uint64_t) n;
                        channel_touch(c);
                } else if ((n == 0 && (revents & EPOLLHUP) && !c->client_write_shut) || n == -ECONNRESET) {
                        /* Both directions closed by the client: it went away
                         * (a detach), which is not an EOF for the worker. A
                         * client that went away with output still unread in
                         * its socket shows as ECONNRESET: a detach too. */
                        channel_detach(c);
                } else if (n != -EAGAIN) {
                        c->client_eof = true;
                }
        } else if ((revents & (EPOLLHUP | EPOLLERR)) && c->client_eof && buffer_len(&c->to_client) == 0)
                channel_detach(c);

        channel_propagate_eof(c);
        channel_update_events(c);
        return 0;
}

static Channel *channel_alloc(sd_event *event, ChannelActivityFn on_activity, void *userdata) {
        Channel *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        *c = (Channel) {
                .event = sd_event_ref(event),
                .worker_stdin = -1,
                .out = { { .fd = -1 }, { .fd = -1 } },
                .client_fd = -1,
                .to_client = { .data = malloc(CHANNEL_OUT_BUFFER), .cap = CHANNEL_OUT_BUFFER },
                .to_worker = { .data = malloc(CHANNEL_IN_BUFFER), .cap = CHANNEL_IN_BUFFER },
                .last_activity = now_usec(CLOCK_MONOTONIC),
                .on_activity = on_activity,
                .userdata = userdata,
        };
        if (!c->to_client.data || !c->to_worker.data)
                return channel_free(c);
        return c;
}

/* Watches our ends, which are set in C already. */
static int channel_add_sources(Channel *c) {
        int r;

        if (c->worker_stdin >= 0) {
                r = fd_nonblock(c->worker_stdin, true);
                if (r < 0)
                        return r;
                r = sd_event_add_io(c->event, &c->stdin_source, c->worker_stdin, EPOLLOUT, on_worker_stdin, c);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(c->stdin_source, "channel-worker-stdin");
        } else
                c->worker_write_shut = true;
        for (size_t i = 0; i < N_WORKER_OUTPUTS; i++) {
                r = fd_nonblock(c->out[i].fd, true);
                if (r < 0)
                        return r;
                r = sd_event_add_io(c->event, &c->out[i].source, c->out[i].fd, EPOLLIN, on_worker_output, c);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(c->out[i].source, i == WORKER_STDERR ? "channel-worker-stderr"
                                                                                 : "channel-worker-stdout");
        }
        channel_update_events(c);
        return 0;
}

int channel_new(Channel **ret, sd_event *event, ChannelWorkerFds *ret_worker, ChannelActivityFn on_activity,
                void *userdata) {
        _cleanup_close_ int stdin_read = -1, stdout_write = -1, stderr_write = -1;
        int pipe_fds[2];
        Channel *c;
        int r;

        c = channel_alloc(event, on_activity, userdata);
        if (!c)
                return -ENOMEM;
        r = 0;
        if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                r = -errno;
        else {
                stdin_read = pipe_fds[0];
                c->worker_stdin = pipe_fds[1];
        }
        for (size_t i = 0; r >= 0 && i < N_WORKER_OUTPUTS; i++) {
                if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
                        r = -errno;
                        break;
                }
                c->out[i].fd = pipe_fds[0];
                if (i == WORKER_STDOUT)
                        stdout_write = pipe_fds[1];
                else
                        stderr_write = pipe_fds[1];
        }
        if (r >= 0)
                r = channel_add_sources(c);
        if (r < 0) {
                channel_free(c);
                return r;
        }
        *ret_worker = (ChannelWorkerFds) {
                .stdin_fd = TAKE_FD(stdin_read),
                .stdout_fd = TAKE_FD(stdout_write),
                .stderr_fd = TAKE_FD(stderr_write),
        };
        *ret = c;
        return 0;
}

int channel_new_from_fds(Channel **ret, sd_event *event, const ChannelDaemonFds *fds, uint64_t last_activity,
                         ChannelActivityFn on_activity, void *userdata) {
        Channel *c;
        int r;

        if (fds->stdout_fd < 0 || fds->stderr_fd < 0)
                return -EBADF;
        c = channel_alloc(event, on_activity, userdata);
        if (!c)
                return -ENOMEM;
        c->worker_stdin = fds->stdin_fd;
        c->out[WORKER_STDOUT].fd = fds->stdout_fd;
        c->out[WORKER_STDERR].fd = fds->stderr_fd;
        c->last_activity = last_activity;
        r = channel_add_sources(c);
        if (r < 0) {
                /* The fds are the caller's again: only ours are closed. */
                c->worker_stdin = -1;
                c->out[WORKER_STDOUT].fd = c->out[WORKER_STDERR].fd = -1;
                channel_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

ChannelDaemonFds channel_daemon_fds(const Channel *c) {
        return (ChannelDaemonFds) {
                .stdin_fd = c->worker_stdin,
                .stdout_fd = c->out[WORKER_STDOUT].fd,
                .stderr_fd = c->out[WORKER_STDERR].fd,
        };
}

void channel_set_stdin_closed_callback(Channel *c, ChannelActivityFn fn) {
        c->on_stdin_closed = fn;
}

void channel_worker_fds_close(ChannelWorkerFds *fds) {
        fds->stdin_fd = safe_close(fds->stdin_fd);
        fds->stdout_fd = safe_close(fds->stdout_fd);
        fds->stderr_fd = safe_close(fds->stderr_fd);
}

Channel *channel_free(Channel *c) {
        if (!c)
                return NULL;
        channel_detach(c);
        sd_event_source_disable_unref(c->stdin_source);
        safe_close(c->worker_stdin);
        for (size_t i = 0; i < N_WORKER_OUTPUTS; i++) {
                sd_event_source_disable_unref(c->out[i].source);
                safe_close(c->out[i].fd);
        }
        free(c->to_client.data);
        free(c->to_worker.data);
        sd_event_unref(c->event);
        free(c);
        return NULL;
}

/* A client that went away whose hang-up the event loop has not dispatched
 * yet must not hold the channel against the next one (a client that
 * reattaches at once): its hang-up is handled here as the loop would handle
 * it, its last input taken first. A client still there keeps the channel. */
static void channel_reap_departed_client(Channel *c) {
        while (c->client_fd >= 0) {
                struct pollfd p = { .fd = c->client_fd, .events = POLLIN | POLLRDHUP };
                uint64_t bytes_in = c->bytes_in;
                bool client_eof = c->client_eof;
                uint32_t revents = EPOLLIN | EPOLLRDHUP | EPOLLHUP;

                if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLHUP | POLLERR)))
                        return;
                if (p.revents & POLLERR)
                        revents |= EPOLLERR;
                if (buffer_len(&c->to_client) > 0)
                        revents |= EPOLLOUT;
                (void) on_client_io(c->client_source, c->client_fd, revents, c);
                if (c->client_fd >= 0 && c->bytes_in == bytes_in && c->client_eof == client_eof)
                        return;         /* its input waits for room toward the worker */
        }
}

int channel_attach(Channel *c, int *ret_client_fd) {
        int pair[2], r;

        channel_reap_departed_client(c);
        if (c->client_fd >= 0)
                return -EBUSY;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
                return -errno;
        r = sd_event_add_io(c->event, &c->client_source, pair[0], EPOLLIN | EPOLLRDHUP, on_client_io, c);
        if (r < 0) {
                safe_close(pair[0]);
                safe_close(pair[1]);
                return r;
        }
        (void) sd_event_source_set_description(c->client_source, "channel-client");
        c->client_fd = pair[0];
        /* The client's end is handed over blocking, as a plain fd would be. */
        (void) fd_nonblock(pair[1], false);
        channel_touch(c);
        channel_propagate_eof(c);
        channel_update_events(c);
        *ret_client_fd = pair[1];
        return 0;
}

bool channel_is_attached(const Channel *c) { return c->client_fd >= 0; }
void channel_worker_ended(Channel *c) {
        c->worker_ended = true;
        /* Never relayed: its bytes are read aside first. */
        if (c->token)
                channel_read_token(c, true);
        channel_drain_ended_worker(c);
        channel_propagate_eof(c);
        channel_update_events(c);
}

bool channel_has_pending_output(const Channel *c) { return !channel_worker_eof(c) || buffer_len(&c->to_client) > 0; }
uint64_t channel_last_activity(const Channel *c) { return c->last_activity; }
uint64_t channel_bytes_in(const Channel *c) { return c->bytes_in; }
uint64_t channel_bytes_out(const Channel *c) { return c->bytes_out; }
