/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "class.h"
#include "probe-unit.h"
#include "walls-probe.h"

typedef struct Manager Manager;

/* A runtime probe: sandbox-launch probe, run by systemd as a oneshot unit
 * (the daemon itself holds none of the privileges a runtime needs), whose
 * one line of output says "ok <detail>" or "unavailable <reason>". */
typedef struct RuntimeProbe RuntimeProbe;

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
void manager_probes_free(Manager *m);

/* Parses the probe's output line into (available, reason). */
int probe_parse_output(const char *out, bool *ret_available, char *reason, size_t n);
