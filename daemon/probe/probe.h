/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "class.h"
#include "config.h"
#include "probe-unit.h"
#include "runtimes.h"
#include "walls-probe.h"

/* A runtime probe: sandbox-launch probe, run by systemd as a oneshot unit
 * (the daemon itself holds none of the privileges a runtime needs), whose
 * one line of output says "ok <detail>" or "unavailable <reason>". */
typedef struct RuntimeProbe RuntimeProbe;
typedef struct Prober Prober;

/* The probes of the runtimes and of the walls, and the Preflight() calls
 * waiting for them. Whoever owns it (the manager) embeds it and fills in the
 * handles, pointers to its own: it opens the systemd connection after it
 * made the Prober (at start-up), so the probes read them at use. A probe's
 * verdict goes into *runtimes, which the owner's gate reads. */
struct Prober {
        sd_event *const *event;
        sd_bus *const *systemd;         /* PID 1 (systemd-bus.h) */
        const SbxConfig *config;
        RuntimeTable *runtimes;         /* the owner's: what the probes found */
        char *const *launcher_path;     /* sandbox-launch, which probes a runtime */
        char *const *walls_path;        /* sandbox-walls, which probes the walls */

        RuntimeProbe *probes[_SBX_RUNTIME_MAX];
        bool probe_again[_SBX_RUNTIME_MAX]; /* asked for while it ran (walls-probe.h's again) */
        WallsProbe walls;               /* made by prober_init() from the handles above */
        sd_event_source *reprobe_timer;
        /* A probe since the last round ended gave no verdict (did not
         * start, answer or finish): the next round comes sooner. */
        bool no_verdict;
        unsigned retry_step;            /* rounds in a row without a verdict */
        uint64_t next_round_usec;       /* from a round's end (or the timer's start) */
        sd_bus_message **preflight_waiters;
        size_t n_preflight_waiters;
};

/* Once the handles are filled in: the walls probe's, from them. */
void prober_init(Prober *p);
/* Starts the walls probe, or another once the running one ends (walls-probe.h). */
int prober_probe_walls(Prober *p);
/* Starts probes of every sandboxing runtime and the walls probe; for one
 * already being probed, another once that ends: a verdict asked for now is
 * one a probe started now gave.
 * REQUEST, if given, is a Preflight() call answered once all are done. */
int prober_probe_runtimes(Prober *p, sd_bus_message *request);
/* Runs the event loop until no probe is pending or TIMEOUT passes. */
int prober_probe_runtimes_wait(Prober *p, uint64_t timeout_usec);
/* Re-probes every runtime and the walls every ten minutes; after a round in
 * which a probe gave no verdict (it could not start, did not answer in
 * time, said nothing usable: a loaded host), sooner, every
 * probe_retry_delay_usec(). A verdict, even a refusal (a runtime that says
 * it is unavailable, a namespace found shared), waits the ten minutes. */
int prober_start_reprobe_timer(Prober *p);
/* After STEP rounds in a row without a verdict (0 for the first): 30 s,
 * doubling, at most the ten minutes. */
uint64_t probe_retry_delay_usec(unsigned step);
/* Called for every JobRemoved; returns true if UNIT was a probe. */
bool prober_job_removed(Prober *p, const char *unit, const char *result);
void prober_done(Prober *p);

/* Parses the probe's output line into (available, reason). */
int probe_parse_output(const char *out, bool *ret_available, char *reason, size_t n);
