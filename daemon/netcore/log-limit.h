/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Bounds the refusals one worker's proxy logs: the first `burst` of a
 * window in full, the rest counted by reason for one summary entry when the
 * window ends, so a worker looping on refused CONNECTs cannot rotate other
 * workers' entries out of the journal. Allow decisions and close entries
 * never pass through here: they are never dropped. Pure, on a caller-supplied
 * monotonic clock. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_LIMIT_BURST_DEFAULT 20
#define LOG_LIMIT_WINDOW_USEC_DEFAULT (10ULL * 1000 * 1000)
#define LOG_LIMIT_REASONS_MAX 16
#define LOG_LIMIT_REASON_MAX 96

typedef struct LogLimitReason {
        char reason[LOG_LIMIT_REASON_MAX];
        uint64_t count;
} LogLimitReason;

typedef struct LogLimit {
        unsigned burst;
        uint64_t window_usec;
        bool window_open;
        uint64_t window_start;
        unsigned logged;                 /* in full, in this window */
        uint64_t suppressed;             /* counted, not yet summarised */
        LogLimitReason reasons[LOG_LIMIT_REASONS_MAX];
        size_t n_reasons;
        uint64_t other;                  /* reasons beyond the table */
} LogLimit;

void log_limit_init(LogLimit *l, unsigned burst, uint64_t window_usec);
/* One refusal at `now`: true if it is to be logged in full, false if it was
 * counted for the summary. A window opens with the first refusal after the
 * previous one's summary was taken. */
bool log_limit_refusal(LogLimit *l, const char *reason, uint64_t now);
/* When the open window ends (for a timer); meaningful while suppressed > 0. */
uint64_t log_limit_window_end(const LogLimit *l);
/* A summary is due once the window with suppressed refusals has ended. */
bool log_limit_summary_due(const LogLimit *l, uint64_t now);
/* Writes "reason=count; reason=count" (most frequent first, "other=N" for
 * reasons past the table) to buf, returns how many were suppressed and
 * closes the window. 0 and an empty string if nothing was. */
uint64_t log_limit_take_summary(LogLimit *l, char *buf, size_t size);
