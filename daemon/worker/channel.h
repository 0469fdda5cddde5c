/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "util.h"

/* The relay between a worker's stdio and at most one client. The daemon sees
 * every byte, so it knows when the worker was last active, and no client ever
 * holds the worker's own ends. Output produced while no client is attached is
 * buffered up to a cap, then the worker is back-pressured.
 *
 * The worker gets a pipe each for stdin, stdout and stderr, not one socket for
 * all: a runtime that imports host fds (gVisor) reads each fd's flags and then
 * makes the host side non-blocking, so two fds sharing one open file
 * description reached the workload with O_NONBLOCK on whichever was imported
 * second, and its read of stdin failed with EAGAIN (or a write to a full
 * stdout would have). Separate descriptions cannot leak flags into each other.
 * (systemd gives a unit whose stdout is a passed fd that same fd as stderr,
 * whatever StandardError= says, so stderr is passed explicitly too.)
 *
 * The daemon's write end of the worker's stdin raises SIGPIPE if the worker
 * closed its stdin: the process must ignore SIGPIPE. */
typedef struct Channel Channel;

typedef void (*ChannelActivityFn)(Channel *c, void *userdata);

#define CHANNEL_OUT_BUFFER (256u * 1024u)
#define CHANNEL_IN_BUFFER (64u * 1024u)

/* The worker's ends of its three pipes: blocking, close-on-exec, each its own
 * open file description. */
typedef struct ChannelWorkerFds {
        int stdin_fd, stdout_fd, stderr_fd;
} ChannelWorkerFds;

/* Makes the worker's pipes and returns the worker's ends, which the caller
 * hands to the worker's unit and then closes. What the worker writes to
 * stderr reaches the client as stdout does, as with 2>&1 (though not
 * ordered with it). */
int channel_new(Channel **ret, sd_event *event, ChannelWorkerFds *ret_worker, ChannelActivityFn on_activity,
                void *userdata);
void channel_worker_fds_close(ChannelWorkerFds *fds);

/* The daemon's ends: the write end of the worker's stdin (-1 once closed)
 * and the read ends of its stdout and stderr. */
typedef struct ChannelDaemonFds {
        int stdin_fd, stdout_fd, stderr_fd;
} ChannelDaemonFds;

/* A channel over ends kept across a restart of the daemon (systemd's fd
 * store), with the idle clock at LAST_ACTIVITY (CLOCK_MONOTONIC). Takes the
 * fds on success only. Output the worker wrote meanwhile waits in the pipes
 * and reaches the next client. STDIN_FD -1: the worker's stdin was closed. */
int channel_new_from_fds(Channel **ret, sd_event *event, const ChannelDaemonFds *fds, uint64_t last_activity,
                         ChannelActivityFn on_activity, void *userdata);
ChannelDaemonFds channel_daemon_fds(const Channel *c);
/* Called once when the daemon closes its end of the worker's stdin. */
void channel_set_stdin_closed_callback(Channel *c, ChannelActivityFn fn);
Channel *channel_free(Channel *c);

/* Makes a new socketpair, keeps one end and returns the other, which the
 * caller must close after handing it on. -EBUSY while a client is attached. */
int channel_attach(Channel *c, int *ret_client_fd);
bool channel_is_attached(const Channel *c);

/* A worker that starts through sandbox-exec writes a readiness token as the
 * first bytes of its stdout (shared/sandbox-exec.h). Once asked for, those
 * bytes are read aside and never reach a client, and FN is called once: 0
 * when exactly TOKEN (LEN bytes, kept by the caller) was read, -EBADMSG as
 * soon as a byte differs, -EPIPE at EOF before all of it. What follows the
 * token is relayed as ever; stderr is relayed meanwhile. */
typedef void (*ChannelReadyFn)(Channel *c, int result, void *userdata);
void channel_expect_token(Channel *c, const char *token, size_t len, ChannelReadyFn fn);
bool channel_token_pending(const Channel *c);
/* Reads toward the token what the worker's stdout holds now. GONE: the
 * worker's processes are gone, so what the pipe holds is all there will be,
 * and a token still short is -EPIPE (systemd's copy of the write end may
 * keep the pipe from ever reaching EOF). */
void channel_read_token(Channel *c, bool gone);

/* CLOCK_MONOTONIC time of the last byte in either direction (or creation). */
uint64_t channel_last_activity(const Channel *c);
/* Something other than the channel's bytes counts as activity now (a
 * process Exec started or ended, worker-spawn.h): the idle clock restarts. */
void channel_touch(Channel *c);
/* The worker's processes are gone: collect what it wrote, then pass EOF on. */
void channel_worker_ended(Channel *c);
/* Whether the worker's side may still have something for a client: bytes
 * buffered, or its stdout or stderr not yet at EOF. */
bool channel_has_pending_output(const Channel *c);
uint64_t channel_bytes_in(const Channel *c);
uint64_t channel_bytes_out(const Channel *c);
