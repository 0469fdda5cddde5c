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

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "errors.h"
#include "runtimes.h"
#include "spec.h"
#include "worker.h"

typedef struct Pool Pool;
typedef struct PoolEntry PoolEntry;

/* The pool is its owner's (the manager's), which fills this in before
 * pool_start(): the handles the pool reads at use (the owner connects to
 * PID 1 after it made the pool) and a callback for each thing the pool asks
 * of the layers above it, the way WorkerOwner works for a worker. The
 * pool's own state follows; the owner never touches it. */
struct Pool {
        /* What a claimed sandbox's worker reports to; its event loop, PID 1,
         * stop queue, configuration and launcher are the pool's too. */
        const WorkerOwner *worker_owner;
        char *const *exec_path;         /* sandbox-exec, the waiter */
        char *const *egress_path;       /* sandbox-egress, the proxy */
        char *const *mkfs_path;         /* mkfs.ext4, for the sandbox's disk */
        const RuntimeTable *runtimes;   /* what the gate chooses from */
        const unsigned *n_alive;        /* the workers alive: they come first */
        void *userdata;                 /* the owner's */

        /* The runtimes' facts are brought up to date before the gate reads them. */
        void (*revalidate_runtimes)(Pool *pool);
        /* A sandbox never came up: the runtime may have broken since its probe. */
        void (*probe_runtimes)(Pool *pool);
        /* Admission of one more disk of WANT bytes (worker-disk.h). */
        int (*admit_disk)(Pool *pool, uint64_t want, SbxError *error);
        /* How many sandboxes wait or workers run changed: the status line. */
        void (*status_changed)(Pool *pool);

        PoolEntry *entries;             /* the waiting and starting sandboxes */
        unsigned failures_in_row;       /* sandboxes that did not come up since the last that did */
        uint64_t retry_after;           /* CLOCK_MONOTONIC: no new sandbox before (the back-off) */
        sd_event_source *timer;         /* the refill */
        sd_bus_slot *reload_match;      /* systemd's Reloading */
};

/* Starts the refill; the pool then follows the configuration, the gate and
 * the host's memory by itself. */
int pool_start(Pool *pool);
void pool_free_all(Pool *pool);

/* How many sandboxes wait, ready to be claimed. */
unsigned pool_n_ready(const Pool *pool);
/* Waiting or still starting: what counts against MaxWorkers. */
unsigned pool_n_total(const Pool *pool);
/* The disk caps the pool's sandboxes hold, and how much of them is not
 * yet taken on the host (worker-disk.h). */
uint64_t pool_disk_held(const Pool *pool, uint64_t *ret_unwritten);

/* The start job of UNIT ended: true if it was a pool sandbox's. */
bool pool_job_removed(Pool *pool, const char *unit, const char *result);

/* Makes room for one cold worker when only waiting sandboxes fill
 * MaxWorkers: stops one. */
void pool_yield_slot(Pool *pool);

/* A pooled worker's RuntimeMaxSec, USEC from now (0: at once): systemd's
 * would count from the pool sandbox's start and cannot be changed on a
 * running unit, so sandboxd stops the worker itself (result "timeout"). */
int pool_arm_runtime_timer(Worker *w, uint64_t usec);

/* Serves the request from the pool if it can: 1 when claimed (the reply to
 * REQUEST follows when the workload was handed over; SPEC was taken), 0 when
 * it must start cold (*ret_reason says why), or a negative errno with ERROR. */
int pool_claim(Pool *pool, WorkerSpec *spec, uid_t owner, sd_bus_message *request, const char **ret_reason,
               SbxError *error);
