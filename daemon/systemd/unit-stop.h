/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Every StopUnit sandboxd sends for a unit of its own, asked again when the
 * bus refused it. A refused call never reached systemd: the bus daemon caps
 * the replies a connection may await (128 by default), which hundreds of
 * stops at once pass, and a call may time out while PID 1 is busy; a stop
 * sent once and forgotten then leaves the unit running.
 *
 * A stop is over when systemd answers with a job, or with NoSuchUnit (the
 * unit is gone already), or when systemd says the unit was removed
 * (UnitRemoved: a retry after that could stop a new unit of the same name,
 * such as a resumed worker's), or when systemd itself refuses it (access,
 * a bad name: the same the next time; logged as stop-gave-up). What leaves
 * the call's fate open (the bus's cap, a timeout) is asked again, 250 ms *
 * attempt later (spread by up to a quarter, so that one burst's refusals do
 * not come back together), at most 5 s apart, for at most two minutes: what
 * is still running then is left to sandboxd's restart, which wipes what it
 * cannot account for. Only the first retry of a unit is logged as a
 * warning. A resume cancels the pending stops of the names it makes again.
 * Owned by the Manager; no global state. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "util.h"

#define UNIT_STOP_RETRY_STEP_USEC (250 * USEC_PER_MSEC)
#define UNIT_STOP_RETRY_MAX_USEC (5 * USEC_PER_SEC)
#define UNIT_STOP_GIVE_UP_USEC (120 * USEC_PER_SEC)
/* At most this many StopUnit calls await their reply; the rest queue, oldest
 * first: dbus-daemon lets one connection await 128 replies in all. */
#define UNIT_STOP_MAX_IN_FLIGHT 32

typedef struct UnitStops UnitStops;

int unit_stops_new(UnitStops **ret, sd_bus *bus, sd_event *event);
/* Cancels every pending call and retry: nothing calls back after. */
UnitStops *unit_stops_free(UnitStops *s);
static inline void unit_stops_freep(UnitStops **s) { unit_stops_free(*s); }

/* The policy, for tests that cannot wait minutes. */
void unit_stops_set_policy(UnitStops *s, uint64_t step_usec, uint64_t max_usec, uint64_t give_up_usec);
void unit_stops_set_max_in_flight(UnitStops *s, unsigned max);
/* Whether a StopUnit's error NAME leaves its fate open (the bus's cap, a
 * timeout), so that asking again may work. */
bool unit_stop_error_transient(const char *name);
/* How long after refused attempt ATTEMPT (1 for the first) the next one goes,
 * before a random spread of up to a quarter of it. */
uint64_t unit_stop_retry_delay(unsigned attempt, uint64_t step_usec, uint64_t max_usec);

/* Asks systemd to stop UNIT ("replace"), and again until one of the ends
 * above. WORKER_ID (may be NULL) goes into the log lines. A unit whose stop
 * is pending already is not asked twice: the first request stands. A call
 * that cannot even be queued counts as refused. Fails (and logs) only when
 * out of memory. */
int unit_stops_stop(UnitStops *s, const char *unit, const char *worker_id);
/* The unit ended, as its owner knows: no further ask for it. */
void unit_stops_cancel(UnitStops *s, const char *unit);
bool unit_stops_pending(const UnitStops *s, const char *unit);
/* The attempts made so far for a pending UNIT (0 when none is pending). */
unsigned unit_stops_attempts(const UnitStops *s, const char *unit);
