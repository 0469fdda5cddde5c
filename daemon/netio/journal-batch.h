/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The proxy's journal entries (one per decision, one per closed tunnel),
 * held and sent together with one sendmmsg(): journald then runs once per
 * batch instead of twice per tunnel, and not while the next tunnel's bytes
 * wait for a CPU (on two cores journald, the client and the upstream take
 * turns). A batch goes when it holds JOURNAL_BATCH_ENTRIES entries or
 * JOURNAL_BATCH_BYTES bytes, JOURNAL_BATCH_DELAY_USEC after its first entry,
 * or when the proxy stops: a crash loses at most that (and journald stamps
 * an entry when it arrives, so up to the delay late). Where log_struct()
 * would print to stderr the message is printed at once, as before. */

#include <stdint.h>
#include <systemd/sd-event.h>

#define JOURNAL_BATCH_ENTRIES 32
#define JOURNAL_BATCH_BYTES (16 * 1024)
#define JOURNAL_BATCH_DELAY_USEC (100 * 1000)

typedef struct JournalBatch {
        sd_event *event;
        sd_event_source *timer;
        char *buf;                             /* the entries back to back, allocated on first use */
        size_t used;
        size_t ends[JOURNAL_BATCH_ENTRIES];    /* where each entry ends in buf */
        unsigned n;
        uint64_t lost;                         /* entries the journal did not take */
        /* Told of each send (its CLOCK_MONOTONIC start in ns, the entries
         * sent) when set: the egress proxy's tracing build times them. */
        void (*flushed)(uint64_t start_ns, unsigned n);
} JournalBatch;

void journal_batch_init(JournalBatch *b, sd_event *event);
/* Sends what is held and releases the buffer and the timer. */
void journal_batch_done(JournalBatch *b);
/* Like log_struct(): a formatted message, then KEY, value pairs, then NULL. */
void journal_batch_add(JournalBatch *b, int priority, const char *message, ...) __attribute__((sentinel));
void journal_batch_flush(JournalBatch *b);
