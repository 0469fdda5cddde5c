/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a cold start and a pool claim (pool.h) do alike to a new worker
 * (worker_new()) once it is admitted: its secrets kept, its egress policy
 * served, its unit watched, the gate's second check, the unit put in
 * motion, and then the worker added to the owner's, the status line and the
 * "Starting worker" entry. The reply to CreateWorker follows when the start
 * ends (worker_start_done(), worker_start_failed()). */

#include <systemd/sd-bus.h>

#include "errors.h"
#include "worker.h"

typedef struct WorkerPrepare {
        sd_bus_message *request;        /* the CreateWorker call, answered when the start ends */
        /* Puts the unit in motion once all is set up: NULL for a cold start
         * (StartTransientUnit of W's unit, on a new channel, with its
         * environment credential and its proxy pair's names); else a claim's,
         * on a sandbox whose unit runs already. */
        int (*emit)(Worker *w, void *userdata);
        /* After the unit was put in motion, before W is added: what only
         * the caller knows (a workspace taken, the pool's entry handed
         * over). It cannot fail. May be NULL. */
        void (*placed)(Worker *w, void *userdata);
        void *userdata;
} WorkerPrepare;

/* Sets W up and puts its unit in motion as P says. On failure ERROR is set
 * (its name, or START_FAILED "Failed to set up the worker") and the caller
 * frees W; nothing was added. */
int worker_prepare(Worker *w, const WorkerPrepare *p, SbxError *error);
