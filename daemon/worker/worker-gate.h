/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's endpoint on sandboxd's side: the gate's settings (served to
 * the gate unit as its "gate-config" credential), its token (the spec's
 * Endpoint TokenCredential, served as "gate-token" to that unit alone and
 * to nothing else), the endpoints' directory, the gate pair's names and
 * its loopback port. */

#include "fdstore.h"
#include "unit-halt.h"
#include "worker.h"
#include "worker-unit.h"

/* Sets up W's gate if its spec has an Endpoint: the settings, the unit
 * names, /run/sandboxd-endpoints (0750, root and [Endpoints] SocketGroup=). */
int worker_gate_prepare(Worker *w, SbxError *error);

/* What W's gate unit may load as credential NAME. -ENOENT for anything else. */
int worker_gate_credential(const Worker *w, const char *name, const uint8_t **ret_data, size_t *ret_size);

/* Whether a live worker in the list from FIRST holds the EndpointName NAME. */
bool worker_gate_name_taken(const Worker *first, const char *name);

/* The first port of [Endpoints] PortRange= no live worker in the list from
 * FIRST holds (a port is not reused while its worker lives): 0 without a
 * range, -EADDRNOTAVAIL when every one is taken. */
int worker_gate_pick_port(const Worker *first, const SbxConfig *c);

/* Across a restart of sandboxd: the token as a sealed memfd in systemd's fd
 * store (secret-<id>-gate-token; a service name holds no '-', so none is
 * another's), the settings in the worker-state file. */
int worker_gate_persist(Worker *w);
void worker_gate_forget(Worker *w);
/* After a restart: W's endpoint from the saved settings CONFIG (taken over;
 * NULL: none) and PORT, its token taken back from FDS. -ENOKEY when the token
 * is missing or not what sandboxd stored, which leaves W unaccounted for. */
int worker_gate_restore(Worker *w, char *config, char *endpoint_name, uint64_t port, FdStore *fds);

/* The gate pair's aux entries in W's StartTransientUnit, if it has one. */
int worker_gate_append_aux(sd_bus_message *m, const Worker *w, const WorkerUnitEnv *env);

/* Stops W's gate socket unit, or with SERVICE its gate (whose stop is its
 * drain: what is under way is answered first, sandbox-gate), and tells DONE
 * once systemd says it is down, or after TIMEOUT_USEC. A checkpoint stops
 * the socket first (alone: the worker's unit Requires= it), then the gate:
 * in the other order PID 1 drops each connection that comes while the gate
 * drains. The socket stays loaded while the worker runs. */
int worker_gate_halt(Worker *w, bool service, uint64_t timeout_usec, unit_halt_done_t done, UnitHalt **ret);
/* Starts W's gate socket again beside its running unit, after a checkpoint
 * that failed once the gate had drained, and for a worker adopted after a
 * restart of sandboxd (a socket that listens already stays as it is).
 * Asynchronous; a refusal is logged. */
int worker_gate_start(Worker *w);

/* A request the gate's handler answered is the worker's activity, as a
 * byte on its channel is, and a worker is busy while one is under way. The
 * gate has no bus (nor should it), so it tells systemd (STATUS=,
 * NotifyAccess=main: no other process can) and sandboxd watches its
 * service's StatusText and ActiveState. */
int worker_gate_watch(Worker *w);

/* Whether STATUS, the gate service's StatusText, tells of activity since
 * *SEEN, which it updates: a request served (any other count than the one
 * seen: a gate started again counts from 0), or requests that were at the
 * handler and are no longer (answered, or refused by the handler's
 * timeout: their callers held the token). */
bool worker_gate_seen_status(WorkerGateSeen *seen, const char *status);

/* The same for ACTIVE_STATE, the gate service's: a start that ended (the
 * connection that started the gate reaches it now) is activity. */
bool worker_gate_seen_state(WorkerGateSeen *seen, const char *active_state);

/* Whether W's endpoint is in use, so the idle reaper must wait: a request
 * past the token at the handler, or a gate that a connection started and
 * that does not take it yet (a slow start would otherwise outlast an idle
 * timeout, and the suspend cut the request that woke the worker). */
bool worker_gate_busy(const Worker *w);
