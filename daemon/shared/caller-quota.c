/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "caller-quota.h"
#include "errors.h"

void caller_quota_init(CallerQuota *q, unsigned per_uid_max, unsigned total_max) {
        *q = (CallerQuota) { .per_uid_max = per_uid_max, .total_max = total_max };
}

void caller_quota_done(CallerQuota *q) {
        free(q->entries);
        *q = (CallerQuota) {};
}

static CallerQuotaEntry *entry_find(const CallerQuota *q, uid_t uid) {
        for (size_t i = 0; i < q->n_entries; i++)
                if (q->entries[i].uid == uid)
                        return &q->entries[i];
        return NULL;
}

static int acquire(CallerQuota *q, uid_t uid, bool reserved) {
        CallerQuotaEntry *e = entry_find(q, uid);

        if ((e ? e->n : 0) >= q->per_uid_max)
                return -EUSERS;
        if (!reserved && q->total >= q->total_max)
                return -ENOBUFS;
        if (!e) {
                CallerQuotaEntry *l = realloc(q->entries, (q->n_entries + 1) * sizeof(*l));
                if (!l)
                        return -ENOMEM;
                q->entries = l;
                e = &q->entries[q->n_entries++];
                *e = (CallerQuotaEntry) { .uid = uid };
        }
        e->n++;
        q->total++;
        return 0;
}

int caller_quota_acquire(CallerQuota *q, uid_t uid) {
        return acquire(q, uid, false);
}

int caller_quota_acquire_reserved(CallerQuota *q, uid_t uid) {
        return acquire(q, uid, true);
}

void caller_quota_release(CallerQuota *q, uid_t uid) {
        CallerQuotaEntry *e = entry_find(q, uid);

        if (!e || e->n == 0)
                return;
        e->n--;
        q->total--;
        /* A UID holding nothing has no entry: the table stays as small as
         * the number of callers waiting. */
        if (e->n == 0)
                *e = q->entries[--q->n_entries];
}

unsigned caller_quota_held(const CallerQuota *q, uid_t uid) {
        const CallerQuotaEntry *e = entry_find(q, uid);
        return e ? e->n : 0;
}

int caller_quota_refusal(const CallerQuota *q, int cap, const CallerQuotaWords *words, SbxError *error) {
        assert(q && words);
        if (cap == -EUSERS)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_TOO_MANY_REQUESTS,
                                     "Too many of your %s (Bus:%s=%u); retry once they are %s", words->what,
                                     words->per_uid_key, q->per_uid_max, words->until);
        return sbx_error_set(error, -EBUSY, SBX_ERROR_TOO_MANY_REQUESTS, "Too many %s (Bus:%s=%u); retry later",
                             words->what, words->total_key, q->total_max);
}
