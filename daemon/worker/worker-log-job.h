/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* ReadWorkerLog's journal reading, off the event loop. sd-journal reads
 * mmap()ed files: a page fault on a cold or large journal blocks in the
 * kernel and no non-blocking API avoids it, so reading in small steps on the
 * event loop would still stall the loop (and the channels it relays) for as
 * long as the disk takes. Each read runs in a thread of its own with its own
 * sd_journal, touching nothing of the manager's; the loop sees only the
 * finished page, through an eventfd, and sends the reply. A read is bounded
 * (worker-log.h: entries, entries looked at, bytes, time) and so are the
 * reads under way (Bus:LogReadsPerUser, Bus:LogReadsMax). */

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <sys/types.h>

typedef struct WorkerLogJob WorkerLogJob;
typedef struct WorkerOwner WorkerOwner;

typedef struct WorkerLogRequest {
        const char *id;
        const char *cursor;
        bool egress;
        unsigned max;
        uid_t caller;
        uid_t owner;            /* a live worker's; UID_INVALID: read from the journal */
        bool all;               /* root or manage-workers: any worker's log */
} WorkerLogRequest;

/* Starts reading and replies to MSG when done: the page, NoSuchWorker when
 * the worker is unknown or not the caller's (and not ALL), InvalidArgument
 * for a cursor the journal cannot parse. 0 when started; -EBUSY with
 * SBX_ERROR_TOO_MANY_REQUESTS in RET_ERROR past a cap (root: its own
 * Bus:LogReadsPerUser only, never the total others fill);
 * another negative errno when it could not start. */
/* O: the owner whose list and quota (WorkerOwner.log_jobs, .log_read_quota) hold the job. */
int worker_log_job_start(const WorkerOwner *o, sd_bus_message *msg, const WorkerLogRequest *req, sd_bus_error *ret_error);

/* Waits for the reads under way (each is bounded in time) and frees them. */
void worker_log_jobs_free(const WorkerOwner *o);
