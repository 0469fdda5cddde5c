/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the daemon remembers of ended workers, so that `sandboxctl list
 * --all` can still show how each one ended after its object left the bus.
 * Bounded in count and in age; no I/O, no clock of its own (callers pass
 * the monotonic time), so it is testable as it is. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "class.h"

typedef struct EndedWorkerRecord {
        char id[13];
        SbxClass class;
        SbxClass requested_class;
        uid_t owner;
        uid_t uid;
        uint64_t created_realtime;
        uint64_t ended_realtime;
        uint64_t ended_monotonic;       /* what the age bound is measured on */
        int exit_status;                /* -1: none (a start that failed) */
        char *result;
} EndedWorkerRecord;

typedef struct WorkerHistory {
        EndedWorkerRecord *records;          /* oldest first */
        size_t n;
        size_t max;                     /* 0: remember nothing */
        uint64_t max_age_usec;
} WorkerHistory;

void worker_history_init(WorkerHistory *h, size_t max, uint64_t max_age_usec);
void worker_history_done(WorkerHistory *h);

/* Forgets the records older than the age bound at NOW (monotonic). */
void worker_history_prune(WorkerHistory *h, uint64_t now_monotonic);

/* Copies RECORD (its result string too) in as the newest, then prunes by
 * age and count. */
int worker_history_add(WorkerHistory *h, const EndedWorkerRecord *record, uint64_t now_monotonic);
