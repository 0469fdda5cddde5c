/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "class.h"
#include "probe-unit.h"

typedef struct Manager Manager;

/* A runtime probe: sandbox-launch probe, run by systemd as a oneshot unit
 * (the daemon itself holds none of the privileges a runtime needs), whose
 * one line of output says "ok <detail>" or "unavailable <reason>". */
typedef struct RuntimeProbe RuntimeProbe;

/* The walls probe (walls-probe.c, verdicts in walls.h): a unit with a trusted
 * worker's namespacing that reports its namespaces and PID 1's.
 * Starts the walls probe unless it is running; if it cannot, the walls are
 * refused (every class with them) until a probe answers. */
int manager_probe_walls(Manager *m);
/* Called for every JobRemoved; returns true if UNIT was the walls probe. */
bool manager_walls_job_removed(Manager *m, const char *unit, const char *result);
/* The walls probe did not answer in time: fail closed. */
void manager_walls_probe_timeout(Manager *m);
void manager_walls_probe_free(Manager *m);
/* Answers the Preflight() calls waiting for probes, once none is pending. */
void manager_probes_answer_waiters(Manager *m);

/* Starts probes of every sandboxing runtime not already being probed, and the
 * walls probe.
 * REQUEST, if given, is a Preflight() call answered once all are done. */
int manager_probe_runtimes(Manager *m, sd_bus_message *request);
/* Runs the event loop until no probe is pending or TIMEOUT passes. */
int manager_probe_runtimes_wait(Manager *m, uint64_t timeout_usec);
/* Re-probes every runtime every ten minutes. */
int manager_start_reprobe_timer(Manager *m);
/* Called for every JobRemoved; returns true if UNIT was a probe. */
bool manager_probe_job_removed(Manager *m, const char *unit, const char *result);
/* A runtime whose binary disappeared since its probe is unavailable now. */
void manager_runtimes_revalidate(Manager *m);
void manager_probes_free(Manager *m);

/* Parses the probe's output line into (available, reason). */
int probe_parse_output(const char *out, bool *ret_available, char *reason, size_t n);
