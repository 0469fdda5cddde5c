/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

/* One run of one of sandboxd's own helpers as a oneshot transient unit,
 * sandbox-probe-KIND-<hex>.service, whose standard output is a pipe the
 * daemon reads once systemd's job for the unit has ended. It owns the unit
 * name, the pipe and the pending StartTransientUnit call; what the helper
 * wrote means something only to its caller. */
typedef struct ProbeUnit ProbeUnit;

/* Appends the caller's own properties; MSG is inside the a(sv) array, after
 * the output pipe and the oneshot helper's properties. */
typedef int (*probe_unit_append_t)(sd_bus_message *msg, void *userdata);

/* Called once per probe: either START_ERROR (systemd refused the unit; RESULT
 * and OUTPUT are NULL) or the job's RESULT and all the helper wrote, as a
 * NUL-terminated string (empty if it wrote nothing). It may free U. */
typedef void (*probe_unit_done_t)(ProbeUnit *u, const sd_bus_error *start_error, const char *result,
                                  const char *output, void *userdata);

typedef struct ProbeUnitParams {
        const char *kind;               /* the unit name's middle part: a runtime, "walls" */
        const char *description;
        uint64_t timeout_usec;          /* the unit's start timeout */
        const char *path;
        char * const *argv;
        probe_unit_append_t append;     /* may be NULL */
        probe_unit_done_t done;
        void *userdata;
} ProbeUnitParams;

/* Asks systemd to start the unit; the answer comes to PARAMS->done. On
 * failure nothing was started and done is never called. */
int probe_unit_start(sd_bus *bus, const ProbeUnitParams *params, ProbeUnit **ret);
/* Called for every JobRemoved; if UNIT is U's, calls done and returns true. */
bool probe_unit_job_removed(ProbeUnit *u, const char *unit, const char *result);
const char *probe_unit_name(const ProbeUnit *u);
ProbeUnit *probe_unit_free(ProbeUnit *u);
