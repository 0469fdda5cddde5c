/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "probe-unit.h"
#include "walls.h"

/* The walls probe (walls-probe.c, verdicts in walls.h): a unit with a trusted
 * worker's namespacing that reports its namespaces and PID 1's. Its owner
 * (the Prober, probe.h) fills in the handles, pointers to its own, and is
 * told through ended() when a probe has answered, failed or timed out. */
typedef struct WallsProbe WallsProbe;
struct WallsProbe {
        sd_bus *const *systemd;         /* PID 1 (systemd-bus.h) */
        const SbxConfig *config;
        WallsStatus *status;            /* the owner's: each verdict goes here */
        char *const *walls_path;        /* sandbox-walls */
        /* The probe is over, its verdict in *status and its unit freed. */
        void (*ended)(WallsProbe *w);
        void *userdata;                 /* the owner's, for ended() */

        ProbeUnit *unit;                /* the probe running, if any */
        bool again;                     /* asked for while one ran: one more once it ends */
};

/* Starts the walls probe; while one runs, another once it ends, since the one
 * running may have looked before whatever prompted this call (a drop-in just
 * removed must not be answered by a probe that saw it). If it cannot start,
 * the walls are refused (every class with them) until a probe answers. */
int walls_probe_start(WallsProbe *w);
/* Called for every JobRemoved; returns true if UNIT was the walls probe. */
bool walls_probe_job_removed(WallsProbe *w, const char *unit, const char *result);
/* The walls probe did not answer in time: fail closed. */
void walls_probe_timeout(WallsProbe *w);
void walls_probe_done(WallsProbe *w);
