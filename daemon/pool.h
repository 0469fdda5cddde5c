/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The warm pool: gVisor sandboxes started ahead of demand, one transient
 * unit each with its own DynamicUser UID, home, walls, network namespace and
 * proxy socket, exactly as a cold worker's, whose workload is a waiter
 * (sandbox-exec --pool-wait) holding the unit's stdio. CreateWorker claims
 * one of the request's class: the caps go onto the running unit
 * (SetUnitProperties), the memory guard's limit into the bundle, the job
 * (argv, environment, credentials, process limit) down the sandbox's stdin,
 * and the waiter execve()s the workload. The sandbox is the worker from then
 * on, used once and destroyed with it; the pool refills in the background.
 * Waiting sandboxes are no workers: ListWorkers does not show them, but
 * they count against MaxWorkers. */

#include "manager.h"

typedef struct PoolEntry PoolEntry;

/* Starts the refill; the pool then follows the configuration, the gate and
 * the host's memory by itself. */
int pool_start(Manager *m);
void pool_free_all(Manager *m);

/* How many sandboxes wait, ready to be claimed. */
unsigned pool_n_ready(const Manager *m);
/* Waiting or still starting: what counts against MaxWorkers. */
unsigned pool_n_total(const Manager *m);
/* The disk caps the pool's sandboxes hold, and how much of them is not
 * yet taken on the host (worker-disk.h). */
uint64_t pool_disk_held(const Manager *m, uint64_t *ret_unwritten);

/* The start job of UNIT ended: true if it was a pool sandbox's. */
bool pool_job_removed(Manager *m, const char *unit, const char *result);

/* Makes room for one cold worker when only waiting sandboxes fill
 * MaxWorkers: stops one. */
void pool_yield_slot(Manager *m);

/* A pooled worker's RuntimeMaxSec, USEC from now (0: at once): systemd's
 * would count from the pool sandbox's start and cannot be changed on a
 * running unit, so sandboxd stops the worker itself (result "timeout"). */
int pool_arm_runtime_timer(Worker *w, uint64_t usec);

/* Serves the request from the pool if it can: 1 when claimed (the reply to
 * REQUEST follows when the workload was handed over; SPEC was taken), 0 when
 * it must start cold (*ret_reason says why), or a negative errno with ERROR. */
int pool_claim(Manager *m, WorkerSpec *spec, uid_t owner, sd_bus_message *request, const char **ret_reason,
               SbxError *error);
