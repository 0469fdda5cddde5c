/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "util.h"
#include "worker-history.h"

void worker_history_init(WorkerHistory *h, size_t max, uint64_t max_age_usec) {
        *h = (WorkerHistory) { .max = max, .max_age_usec = max_age_usec };
}

void worker_history_done(WorkerHistory *h) {
        for (size_t i = 0; i < h->n; i++)
                free(h->records[i].result);
        free(h->records);
        *h = (WorkerHistory) {};
}

/* Drops the N oldest records. */
static void history_drop_oldest(WorkerHistory *h, size_t n) {
        n = MIN(n, h->n);
        /* An empty history has no array: memmove() must not see its NULL. */
        if (n == 0)
                return;
        for (size_t i = 0; i < n; i++)
                free(h->records[i].result);
        memmove(h->records, h->records + n, (h->n - n) * sizeof(EndedWorkerRecord));
        h->n -= n;
}

void worker_history_prune(WorkerHistory *h, uint64_t now_monotonic) {
        size_t old = 0;

        /* Oldest first, and ended_monotonic only grows: the expired ones are a prefix. */
        while (old < h->n && now_monotonic > h->records[old].ended_monotonic &&
               now_monotonic - h->records[old].ended_monotonic > h->max_age_usec)
                old++;
        history_drop_oldest(h, old);
        if (h->n > h->max)
                history_drop_oldest(h, h->n - h->max);
}

int worker_history_add(WorkerHistory *h, const EndedWorkerRecord *record, uint64_t now_monotonic) {
        EndedWorkerRecord copy = *record;

        if (h->max == 0)
                return 0;
        copy.result = strdup(record->result ?: "");
        if (!copy.result)
                return -ENOMEM;
        if (h->n == h->max)
                history_drop_oldest(h, 1);
        else {
                EndedWorkerRecord *grown = realloc(h->records, (h->n + 1) * sizeof(EndedWorkerRecord));
                if (!grown) {
                        free(copy.result);
                        return -ENOMEM;
                }
                h->records = grown;
        }
        h->records[h->n++] = copy;
        worker_history_prune(h, now_monotonic);
        return 0;
}
