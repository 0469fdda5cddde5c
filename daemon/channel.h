/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "util.h"

/* The relay between a worker's stdio socket and at most one client. The
 * daemon sees every byte, so it knows when the worker was last active, and
 * no client ever holds the worker's own end. Output produced while no client
 * is attached is buffered up to a cap, then the worker is back-pressured. */
typedef struct Channel Channel;

typedef void (*ChannelActivityFn)(Channel *c, void *userdata);

#define CHANNEL_OUT_BUFFER (256u * 1024u)
#define CHANNEL_IN_BUFFER (64u * 1024u)

/* Takes ownership of WORKER_FD. */
int channel_new(Channel **ret, sd_event *event, int worker_fd, ChannelActivityFn on_activity, void *userdata);
Channel *channel_free(Channel *c);

/* Makes a new socketpair, keeps one end and returns the other, which the
 * caller must close after handing it on. -EBUSY while a client is attached. */
int channel_attach(Channel *c, int *ret_client_fd);
bool channel_is_attached(const Channel *c);

/* CLOCK_MONOTONIC time of the last byte in either direction (or creation). */
uint64_t channel_last_activity(const Channel *c);
/* The worker's processes are gone: collect what it wrote, then pass EOF on. */
void channel_worker_ended(Channel *c);
/* Whether the worker's side may still have something for a client: bytes
 * buffered, or its stdout not yet at EOF. */
bool channel_has_pending_output(const Channel *c);
uint64_t channel_bytes_in(const Channel *c);
uint64_t channel_bytes_out(const Channel *c);
