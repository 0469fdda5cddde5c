/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Moves bytes between the terminal (an input and an output fd) and a
 * worker's channel socket. It is a poll(2) state machine rather than an
 * event-loop object so a caller can poll the relay's fds together with its
 * own (a bus connection, a signalfd), and so it works with regular files
 * and /dev/null, which epoll refuses. Input EOF half-closes the channel
 * (SHUT_WR), so the worker sees EOF on its stdin; channel EOF ends the
 * output direction. */

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#define RELAY_BUFFER_SIZE (64U * 1024U)
#define RELAY_N_POLLFDS 3

typedef struct Relay {
        int in_fd;
        int out_fd;
        int channel_fd;

        uint8_t up[RELAY_BUFFER_SIZE];   /* read from in_fd, to be sent on the channel */
        size_t up_start, up_end;
        uint8_t down[RELAY_BUFFER_SIZE]; /* read from the channel, to be written to out_fd */
        size_t down_start, down_end;

        bool in_eof;
        bool channel_write_closed;
        bool channel_eof;
        bool out_broken;       /* the reader of out_fd went away: output is discarded */
        uint64_t output_progress; /* counts reads from the channel and writes to out_fd */
} Relay;

/* The channel fd is switched to non-blocking; in_fd and out_fd are left as
 * they are, since they may be shared with the calling shell. */
int relay_init(Relay *r, int in_fd, int out_fd, int channel_fd);

/* Fills RELAY_N_POLLFDS entries; unused ones get fd -1. */
void relay_fill_pollfds(const Relay *r, struct pollfd pfd[static RELAY_N_POLLFDS]);

/* Does the I/O the poll results allow. Returns a negative errno only for a
 * channel failure that ends the relay (ECONNRESET counts as EOF). */
int relay_dispatch(Relay *r, const struct pollfd pfd[static RELAY_N_POLLFDS]);

/* True once the channel reached EOF and everything read from it was written out. */
bool relay_output_done(const Relay *r);

/* Runs until relay_output_done(); for callers that wait on nothing else. */
int relay_run(Relay *r);
