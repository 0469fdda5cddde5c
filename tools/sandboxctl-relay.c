/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <sys/socket.h>

#include "sandboxctl-relay.h"
#include "util.h"

enum { SLOT_IN, SLOT_CHANNEL, SLOT_OUT };

int relay_init(Relay *r, int in_fd, int out_fd, int channel_fd) {
        if (!r || channel_fd < 0)
                return -EINVAL;
        *r = (Relay) {
                .in_fd = in_fd,
                .out_fd = out_fd,
                .channel_fd = channel_fd,
                .in_eof = in_fd < 0,
        };
        if (r->in_eof && shutdown(channel_fd, SHUT_WR) < 0 && errno != ENOTCONN)
                return -errno;
        r->channel_write_closed = r->in_eof;
        return fd_nonblock(channel_fd, true);
}

static bool relay_wants_input(const Relay *r) {
        return !r->in_eof && r->up_end < sizeof(r->up);
}

static bool relay_wants_channel_read(const Relay *r) {
        return !r->channel_eof && r->down_end < sizeof(r->down);
}

void relay_fill_pollfds(const Relay *r, struct pollfd pfd[static RELAY_N_POLLFDS]) {
        short channel_events = 0;

        if (relay_wants_channel_read(r))
                channel_events |= POLLIN;
        if (r->up_end > r->up_start && !r->channel_write_closed)
                channel_events |= POLLOUT;

        pfd[SLOT_IN] = (struct pollfd) { .fd = relay_wants_input(r) ? r->in_fd : -1, .events = POLLIN };
        pfd[SLOT_CHANNEL] = (struct pollfd) { .fd = channel_events ? r->channel_fd : -1, .events = channel_events };
        pfd[SLOT_OUT] = (struct pollfd) {
                .fd = r->down_end > r->down_start && !r->out_broken ? r->out_fd : -1,
                .events = POLLOUT,
        };
}

static void relay_read_input(Relay *r) {
        ssize_t n = read(r->in_fd, r->up + r->up_end, sizeof(r->up) - r->up_end);
        if (n > 0)
                r->up_end += (size_t) n;
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                /* A terminal hangup (EIO) ends our input just like EOF. */
                r->in_eof = true;
}

static int relay_write_channel(Relay *r) {
        ssize_t n = send(r->channel_fd, r->up + r->up_start, r->up_end - r->up_start, MSG_NOSIGNAL);
        if (n >= 0) {
                r->up_start += (size_t) n;
                if (r->up_start == r->up_end)
                        r->up_start = r->up_end = 0;
                return 0;
        }
        if (errno == EAGAIN || errno == EINTR)
                return 0;
        if (errno == EPIPE || errno == ECONNRESET) {
                /* The worker no longer reads: what we still hold has no recipient. */
                r->channel_write_closed = r->in_eof = true;
                r->up_start = r->up_end = 0;
                return 0;
        }
        return -errno;
}

static int relay_read_channel(Relay *r) {
        ssize_t n = read(r->channel_fd, r->down + r->down_end, sizeof(r->down) - r->down_end);
        if (n > 0) {
                r->down_end += (size_t) n;
                r->output_progress++;
                return 0;
        }
        if (n == 0 || errno == ECONNRESET) {
                r->channel_eof = true;
                r->output_progress++;
                return 0;
        }
        if (errno == EAGAIN || errno == EINTR)
                return 0;
        return -errno;
}

static void relay_write_output(Relay *r) {
        /* out_fd may be a blocking pipe shared with the shell; PIPE_BUF bytes
         * fit whenever poll reported it writable, so this write cannot stall
         * the channel direction. */
        size_t len = MIN(r->down_end - r->down_start, (size_t) PIPE_BUF);
        ssize_t n = write(r->out_fd, r->down + r->down_start, len);

        if (n > 0) {
                r->down_start += (size_t) n;
                r->output_progress++;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                /* Nobody reads our output any more (EPIPE): keep draining the
                 * channel so the worker is not blocked, and drop the bytes. */
                r->out_broken = true;
                r->down_start = r->down_end;
        }
        if (r->down_start == r->down_end)
                r->down_start = r->down_end = 0;
}

static void relay_drop_output_if_broken(Relay *r) {
        if (r->out_broken)
                r->down_start = r->down_end = 0;
}

int relay_dispatch(Relay *r, const struct pollfd pfd[static RELAY_N_POLLFDS]) {
        const short readable = POLLIN | POLLHUP | POLLERR | POLLNVAL;
        int k;

        if (pfd[SLOT_IN].fd >= 0 && (pfd[SLOT_IN].revents & readable)) {
                if (pfd[SLOT_IN].revents & POLLNVAL)
                        r->in_eof = true;
                else
                        relay_read_input(r);
        }
        if (pfd[SLOT_CHANNEL].fd >= 0) {
                short revents = pfd[SLOT_CHANNEL].revents;

                if ((revents & (POLLOUT | POLLERR | POLLHUP)) && r->up_end > r->up_start &&
                    !r->channel_write_closed) {
                        k = relay_write_channel(r);
                        if (k < 0)
                                return k;
                }
                if ((revents & readable) && relay_wants_channel_read(r)) {
                        k = relay_read_channel(r);
                        if (k < 0)
                                return k;
                }
        }
        if (pfd[SLOT_OUT].fd >= 0 && (pfd[SLOT_OUT].revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)))
                relay_write_output(r);
        relay_drop_output_if_broken(r);

        /* Input is over and fully sent: tell the worker by half-closing. */
        if (r->in_eof && r->up_end == r->up_start && !r->channel_write_closed) {
                if (shutdown(r->channel_fd, SHUT_WR) < 0 && errno != ENOTCONN)
                        return -errno;
                r->channel_write_closed = true;
        }
        return 0;
}

bool relay_output_done(const Relay *r) {
        return r->channel_eof && r->down_end == r->down_start;
}

int relay_run(Relay *r) {
        while (!relay_output_done(r)) {
                struct pollfd pfd[RELAY_N_POLLFDS];
                int k;

                relay_fill_pollfds(r, pfd);
                if (poll(pfd, RELAY_N_POLLFDS, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                k = relay_dispatch(r, pfd);
                if (k < 0)
                        return k;
        }
        return 0;
}
