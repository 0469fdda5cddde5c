/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "worker.h"

/* A sleeping endpoint. A worker with an Endpoint and IdleAction=suspend is
 * woken by its next request: while it is suspended its gate pair is gone
 * (the gate joins the unit's namespaces) and the gate has no bus to ask for
 * a resume, so sandboxd listens on the endpoint's socket file itself. A
 * connection there resumes the worker. sandboxd accepts and holds the
 * connections without reading a byte of them: the token, the limits and
 * HTTP itself stay the gate's. Once the worker runs, each held connection
 * is handed to the new gate by relaying its bytes both ways, to the gate's
 * own socket (where a front's X-Forwarded-For is trusted, as it was on the
 * one the front connected to). A resume that fails, or does not end within
 * WAKE_HOLD_USEC, answers each held connection "503 Service Unavailable"
 * with the reason.
 *
 * The socket file is made in the endpoints directory, which is setgid to
 * [Endpoints] SocketGroup= (tmpfiles.d, and each gate's socket unit;
 * sandboxd holds no CAP_CHOWN): so it has the group the gate's own socket
 * has, mode 0660. On resume, PID 1 binds the gate's socket over it (systemd
 * unlinks a path in use and binds again), so no caller finds no socket.
 * The loopback port (PortRange=) is not held: sandboxd has no network of
 * its own (PrivateNetwork=yes), and keeps none; it is refused while the
 * worker sleeps. */

#define WAKE_HOLD_USEC (60 * USEC_PER_SEC)
#define WAKE_HELD_MAX 64
#define WAKE_RETRY_USEC (10 * USEC_PER_SEC)

/* W is suspended, or suspending once its gate's socket went: listen on its
 * endpoint (if it wakes on a request); requests held during the checkpoint
 * wake it once it is suspended. A failure is logged; the endpoint is then
 * closed as before (no socket). */
void worker_wake_listen(Worker *w);

/* W runs again, WOKEN by a resume or after a checkpoint that failed once
 * its gate had drained: the held connections go to its gate, tried again
 * for a moment while PID 1 binds the gate's socket. */
void worker_wake_running(Worker *w, bool woken);

/* The resume failed (W stays suspended): each held connection gets a 503
 * saying WHY, and so does each that comes within WAKE_RETRY_USEC, without
 * another resume. worker_wake_listen() follows with the state. */
void worker_wake_failed(Worker *w, const char *why);

/* W ended, or is freed: everything closed; held connections get a 503;
 * its socket file and name link removed while they are still sandboxd's. */
void worker_wake_free(Worker *w);
