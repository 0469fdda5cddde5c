/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How many of something (calls parked while polkit decides, journal reads
 * under way) each caller UID, and all callers together, may hold at once.
 * Counted by UID, not by bus connection: one user can open as many
 * connections as it likes. Pure bookkeeping, no bus, no clock. */

#include <stddef.h>
#include <sys/types.h>

#include "util.h"

typedef struct CallerQuotaEntry {
        uid_t uid;
        unsigned n;
} CallerQuotaEntry;

typedef struct CallerQuota {
        unsigned per_uid_max;   /* 0: nothing is admitted */
        unsigned total_max;
        unsigned total;
        /* One entry per UID holding anything: at most total_max of them,
         * so a linear search is bounded by the cap itself. */
        CallerQuotaEntry *entries;
        size_t n_entries;
} CallerQuota;

void caller_quota_init(CallerQuota *q, unsigned per_uid_max, unsigned total_max);
void caller_quota_done(CallerQuota *q);

/* Takes one unit for UID. 0 when admitted; -EUSERS when UID already holds
 * per_uid_max, -ENOBUFS when all callers together hold total_max (UID's own
 * cap is checked first), -ENOMEM. Nothing is taken on failure. */
int caller_quota_acquire(CallerQuota *q, uid_t uid);

/* The same, past the total: only UID's own cap applies. For a caller
 * others must not be able to lock out (root), whose share is still bounded,
 * so the total held stays at most total_max + per_uid_max. */
int caller_quota_acquire_reserved(CallerQuota *q, uid_t uid);

/* Gives back one unit UID took; a release with nothing taken is ignored. */
void caller_quota_release(CallerQuota *q, uid_t uid);

unsigned caller_quota_held(const CallerQuota *q, uid_t uid);

/* The words of a refusal past one of Q's caps. */
typedef struct CallerQuotaWords {
        const char *what;               /* "log reads are under way" */
        const char *per_uid_key;        /* "LogReadsPerUser", in [Bus] */
        const char *total_key;          /* "LogReadsMax" */
        const char *until;              /* "answered": "retry once they are answered" */
} CallerQuotaWords;

/* The one refusal past a cap: org.sandboxd1.Error.TooManyRequests into
 * ERROR, naming the cap CAP says (-EUSERS: the caller's own, as
 * caller_quota_acquire() returns it; else the total), its key and value.
 * Returns -EBUSY. */
int caller_quota_refusal(const CallerQuota *q, int cap, const CallerQuotaWords *words, SbxError *error);
