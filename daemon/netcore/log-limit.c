/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log-limit.h"

void log_limit_init(LogLimit *l, unsigned burst, uint64_t window_usec) {
        assert(l);
        *l = (LogLimit) { .burst = burst, .window_usec = window_usec };
}

static void count_reason(LogLimit *l, const char *reason) {
        char r[LOG_LIMIT_REASON_MAX];

        snprintf(r, sizeof(r), "%s", reason ?: "");
        for (size_t i = 0; i < l->n_reasons; i++)
                if (strcmp(l->reasons[i].reason, r) == 0) {
                        l->reasons[i].count++;
                        return;
                }
        if (l->n_reasons == LOG_LIMIT_REASONS_MAX) {
                l->other++;
                return;
        }
        LogLimitReason *e = &l->reasons[l->n_reasons++];
        memcpy(e->reason, r, sizeof(r));
        e->count = 1;
}

bool log_limit_refusal(LogLimit *l, const char *reason, uint64_t now) {
        assert(l);
        /* A window whose summary is still pending keeps counting into it:
         * the totals stay exact whenever the summary is finally taken. */
        if (l->suppressed == 0 && (!l->window_open || now - l->window_start >= l->window_usec)) {
                l->window_open = true;
                l->window_start = now;
                l->logged = 0;
        }
        if (l->logged < l->burst) {
                l->logged++;
                return true;
        }
        l->suppressed++;
        count_reason(l, reason);
        return false;
}

uint64_t log_limit_window_end(const LogLimit *l) {
        assert(l);
        return l->window_start + l->window_usec;
}

bool log_limit_summary_due(const LogLimit *l, uint64_t now) {
        assert(l);
        return l->suppressed > 0 && now - l->window_start >= l->window_usec;
}

uint64_t log_limit_take_summary(LogLimit *l, char *buf, size_t size) {
        uint64_t n;
        size_t used = 0;

        assert(l);
        assert(buf || size == 0);
        if (size > 0)
                buf[0] = 0;
        /* Most frequent first: a selection sort over at most 16 entries. */
        for (size_t i = 0; i < l->n_reasons; i++) {
                size_t max = i;
                for (size_t j = i + 1; j < l->n_reasons; j++)
                        if (l->reasons[j].count > l->reasons[max].count)
                                max = j;
                LogLimitReason t = l->reasons[i];
                l->reasons[i] = l->reasons[max];
                l->reasons[max] = t;
        }
        for (size_t i = 0; i <= l->n_reasons && used < size; i++) {
                const char *name = i < l->n_reasons ? l->reasons[i].reason : "other";
                uint64_t count = i < l->n_reasons ? l->reasons[i].count : l->other;
                if (count == 0)
                        continue;
                int k = snprintf(buf + used, size - used, "%s%s=%" PRIu64, used ? "; " : "", name, count);
                if (k < 0)
                        break;
                used += (size_t) k;
        }
        n = l->suppressed;
        l->suppressed = 0;
        l->n_reasons = 0;
        l->other = 0;
        l->window_open = false;
        return n;
}
