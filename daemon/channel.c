/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "channel.h"

typedef struct Buffer {
        uint8_t *data;
        size_t cap, start, end;
} Buffer;

struct Channel {
        sd_event *event;
        int worker_fd;
        int client_fd;
        sd_event_source *worker_source;
        sd_event_source *client_source;
        Buffer to_client;               /* the worker's output */
        Buffer to_worker;               /* the client's input */
        bool worker_eof;                /* the worker closed its stdout */
        bool worker_ended;              /* its processes are gone: what is readable now is all */
        bool worker_write_shut;         /* we passed EOF on to the worker's stdin */
        bool client_eof;                /* the client half-closed: EOF goes on to the worker */
        bool client_write_shut;         /* we passed the worker's EOF on to the client */
        uint64_t last_activity;
        uint64_t bytes_in, bytes_out;
        ChannelActivityFn on_activity;
        void *userdata;
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

static ssize_t buffer_drain(Buffer *b, int fd) {
        ssize_t n = send(fd, b->data + b->start, buffer_len(b), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        buffer_consume(b, (size_t) n);
        return n;
}

static void channel_touch(Channel *c) {
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

static void channel_update_events(Channel *c) {
        uint32_t ev = 0;

        if (c->worker_source) {
                if (!c->worker_eof && buffer_space(&c->to_client) > 0)
                        ev |= EPOLLIN;
                if (buffer_len(&c->to_worker) > 0 && !c->worker_write_shut)
                        ev |= EPOLLOUT;
                if (ev) {
                        sd_event_source_set_io_events(c->worker_source, ev);
                        sd_event_source_set_enabled(c->worker_source, SD_EVENT_ON);
                } else
                        sd_event_source_set_enabled(c->worker_source, SD_EVENT_OFF);
        }
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
        if (c->client_eof && !c->worker_write_shut && buffer_len(&c->to_worker) == 0) {
                (void) shutdown(c->worker_fd, SHUT_WR);
                c->worker_write_shut = true;
        }
        if (c->worker_eof && c->client_fd >= 0 && !c->client_write_shut && buffer_len(&c->to_client) == 0) {
                (void) shutdown(c->client_fd, SHUT_WR);
                c->client_write_shut = true;
        }
}

/* Once the worker's processes are gone, the bytes already in the socket are
 * all there will be; systemd may hold its copy of the fd for a while yet, so
 * EOF is declared when the socket runs dry instead of waiting for it. */
static void channel_drain_ended_worker(Channel *c) {
        while (c->worker_ended && !c->worker_eof && buffer_space(&c->to_client) > 0) {
                ssize_t n = buffer_fill(&c->to_client, c->worker_fd);
                if (n > 0) {
                        c->bytes_out += (uint64_t) n;
                        continue;
                }
                c->worker_eof = true;
        }
}

static int on_worker_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Channel *c = userdata;
        ssize_t n;

        if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->worker_eof && buffer_space(&c->to_client) > 0) {
                n = buffer_fill(&c->to_client, fd);
                if (n > 0) {
                        c->bytes_out += (uint64_t) n;
                        channel_touch(c);
                } else if (n != -EAGAIN)
                        c->worker_eof = true;
        }
        if ((revents & (EPOLLOUT | EPOLLERR)) && buffer_len(&c->to_worker) > 0) {
                n = buffer_drain(&c->to_worker, fd);
                if (n > 0)
                        channel_touch(c);
                else if (n != -EAGAIN) {
                        /* The worker closed its stdin: what it will never read is dropped. */
                        c->to_worker.start = c->to_worker.end = 0;
                        c->worker_write_shut = true;
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
                n = buffer_drain(&c->to_client, fd);
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
                } else if (n == 0 && (revents & EPOLLHUP) && !c->client_write_shut) {
                        /* Both directions closed by the client: it went away
                         * (a detach), which is not an EOF for the worker. */
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

int channel_new(Channel **ret, sd_event *event, int worker_fd, ChannelActivityFn on_activity, void *userdata) {
        Channel *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c) {
                safe_close(worker_fd);
                return -ENOMEM;
        }
        *c = (Channel) {
                .event = sd_event_ref(event),
                .worker_fd = worker_fd,
                .client_fd = -1,
                .to_client = { .data = malloc(CHANNEL_OUT_BUFFER), .cap = CHANNEL_OUT_BUFFER },
                .to_worker = { .data = malloc(CHANNEL_IN_BUFFER), .cap = CHANNEL_IN_BUFFER },
                .last_activity = now_usec(CLOCK_MONOTONIC),
                .on_activity = on_activity,
                .userdata = userdata,
        };
        if (!c->to_client.data || !c->to_worker.data) {
                channel_free(c);
                return -ENOMEM;
        }
        r = fd_nonblock(worker_fd, true);
        if (r >= 0)
                r = sd_event_add_io(event, &c->worker_source, worker_fd, EPOLLIN, on_worker_io, c);
        if (r < 0) {
                channel_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Channel *channel_free(Channel *c) {
        if (!c)
                return NULL;
        channel_detach(c);
        sd_event_source_disable_unref(c->worker_source);
        safe_close(c->worker_fd);
        free(c->to_client.data);
        free(c->to_worker.data);
        sd_event_unref(c->event);
        free(c);
        return NULL;
}

int channel_attach(Channel *c, int *ret_client_fd) {
        int pair[2], r;

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
        channel_drain_ended_worker(c);
        channel_propagate_eof(c);
        channel_update_events(c);
}

bool channel_has_pending_output(const Channel *c) { return !c->worker_eof || buffer_len(&c->to_client) > 0; }
uint64_t channel_last_activity(const Channel *c) { return c->last_activity; }
uint64_t channel_bytes_in(const Channel *c) { return c->bytes_in; }
uint64_t channel_bytes_out(const Channel *c) { return c->bytes_out; }
