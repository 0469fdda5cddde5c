/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandbox-gate: one worker's inbound gate. Socket-activated from
 * sandbox-<id>-gate.socket, whose listeners are on the host (the UNIX
 * socket /run/sandboxd-endpoints/<id>.sock, and 127.0.0.1:<port> where the
 * operator gave a port range); the gate itself runs in the worker's
 * network namespace (JoinsNamespaceOf=), where the one address it connects
 * to is the worker's handler. It holds the caller's token, which the worker
 * never does, and checks each request before a byte of it reaches the
 * handler (gate-session.h). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "broker-request.h"
#include "gate-config.h"
#include "journal-batch.h"
#include "log-limit.h"

#define GATE_LISTENERS_MAX 4


typedef struct GateSession GateSession;

typedef struct Gate {
        sd_event *event;
        GateConfig config;
        uint8_t token[GATE_TOKEN_MAX];
        size_t token_size;
        /* The UNIX socket is the trusted front's: X-Forwarded-* it sends go
         * on. On TCP anyone local may connect: they are dropped. */
        BrokerRoute route_front, route_direct;
        sd_event_source *listeners[GATE_LISTENERS_MAX];
        size_t n_listeners;
        GateSession *sessions;
        unsigned n_sessions;
        unsigned at_handler;            /* requests sent to the handler, not yet answered */
        uint64_t served;                /* requests answered by the handler */
        uint64_t refused;
        uint64_t buffered;              /* bytes the sessions' buffers hold, within config.buffer_budget */
        sd_event_source *status_timer;  /* STATUS= to systemd, at most once a second ... */
        bool status_due;
        unsigned open_told;             /* ... but at once when a request reaches the handler and this is 0 */
        JournalBatch journal;
        LogLimit refusal_log;
        uint64_t started_usec;          /* CLOCK_MONOTONIC: the handler's grace counts from it */
        /* Told to stop (SIGTERM: a stop of the gate, which sandboxd asks for
         * before a worker's checkpoint): no new connection, each request in
         * flight answered, then the exit (gate_drain()). */
        bool draining;
        sd_event_source *drain_timer;
} Gate;

/* Takes ownership of a listening socket; FRONT: it is the UNIX socket. */
int gate_add_listener(Gate *g, int fd, bool front);
void gate_free_sessions(Gate *g);

/* Stops taking connections (the ones queued already are taken first: the
 * caller connected before the stop), closes connections idle between
 * requests, lets each request under way be answered and its connection
 * close after it, and ends the event loop once none is left, or at
 * DEADLINE_USEC (CLOCK_MONOTONIC) whatever is left. */
int gate_drain(Gate *g, uint64_t deadline_usec);
/* A session went: a draining gate with none left ends its loop. */
void gate_session_gone(Gate *g);

/* Logs one answered or refused request (never the token or a body). */
void gate_log_request(Gate *g, bool front, const char *method, const char *path, int status, uint64_t bytes_in,
                      uint64_t bytes_out, uint64_t usec, const char *reason);
/* The counts changed (a request reached the handler, or left it answered
 * or refused): they go to systemd's StatusText= (GATE_STATUS_FORMAT). */
void gate_note_status(Gate *g);
