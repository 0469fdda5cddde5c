/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "journal-batch.h"
#include "event-util.h"
#include "journal-entry.h"
#include "util.h"

void journal_batch_init(JournalBatch *b, sd_event *event) {
        assert(b);
        *b = (JournalBatch) { .event = sd_event_ref(event) };
}

static void batch_send(JournalBatch *b, struct iovec *iov, unsigned n) {
        struct mmsghdr msgs[JOURNAL_BATCH_ENTRIES];

        assert(n <= JOURNAL_BATCH_ENTRIES);
        for (unsigned i = 0; i < n; i++)
                msgs[i] = (struct mmsghdr) { .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
        struct timespec start = {};
        if (b->flushed)
                (void) clock_gettime(CLOCK_MONOTONIC, &start);
        int r = log_journal_sendmmsg(msgs, n);
        if (b->flushed)
                b->flushed((uint64_t) start.tv_sec * UINT64_C(1000000000) + (uint64_t) start.tv_nsec, n);
        unsigned sent = r < 0 ? 0 : (unsigned) r;
        if (sent < n) {
                /* Said once per batch, not per entry: the journal is what is failing. */
                b->lost += n - sent;
                fprintf(stderr, "%s: the journal took %u of %u entries (%" PRIu64 " lost so far)\n",
                        program_invocation_short_name, sent, n, b->lost);
        }
}

void journal_batch_flush(JournalBatch *b) {
        struct iovec iov[JOURNAL_BATCH_ENTRIES];

        assert(b);
        if (b->timer)
                (void) sd_event_source_set_enabled(b->timer, SD_EVENT_OFF);
        if (b->n == 0)
                return;
        for (unsigned i = 0; i < b->n; i++) {
                size_t start = i == 0 ? 0 : b->ends[i - 1];
                iov[i] = (struct iovec) { .iov_base = b->buf + start, .iov_len = b->ends[i] - start };
        }
        batch_send(b, iov, b->n);
        b->n = 0;
        b->used = 0;
}

void journal_batch_done(JournalBatch *b) {
        if (!b)
                return;
        journal_batch_flush(b);
        b->timer = sd_event_source_disable_unref(b->timer);
        free(b->buf);
        b->buf = NULL;
        b->event = sd_event_unref(b->event);
}

static int on_batch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        journal_batch_flush(userdata);
        return 0;
}

static void batch_arm(JournalBatch *b) {
        /* A wait: a decision reaches the journal at most a tenth of the delay late. */
        int r = b->timer ? event_timer_arm(b->timer, JOURNAL_BATCH_DELAY_USEC, TIMER_WAIT)
                         : event_add_timer(b->event, &b->timer, JOURNAL_BATCH_DELAY_USEC, TIMER_WAIT, on_batch_timer, b,
                                           "journal-batch-timer");
        if (r >= 0)
                r = sd_event_source_set_enabled(b->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                journal_batch_flush(b);   /* no timer: nothing may wait for one */
}

/* An entry bigger than the whole buffer (none of the proxy's are) goes alone. */
static void send_alone(JournalBatch *b, size_t need, int priority, const char *message, va_list ap) {
        char *buf = malloc(need);
        if (!buf) {
                b->lost++;
                return;
        }
        journal_entry_formatv(buf, need, priority, program_invocation_short_name, message, ap);
        batch_send(b, &(struct iovec) { .iov_base = buf, .iov_len = need }, 1);
        free(buf);
}

void journal_batch_add(JournalBatch *b, int priority, const char *message, ...) {
        va_list ap;

        assert(b);
        if (!log_struct_echo(message))
                return;
        if (!b->buf) {
                b->buf = malloc(JOURNAL_BATCH_BYTES);
                if (!b->buf) {
                        b->lost++;
                        return;
                }
        }
        for (int attempt = 0;; attempt++) {
                va_start(ap, message);
                size_t need = journal_entry_formatv(b->buf + b->used, JOURNAL_BATCH_BYTES - b->used, priority,
                                                    program_invocation_short_name, message, ap);
                va_end(ap);
                if (b->used + need <= JOURNAL_BATCH_BYTES) {
                        b->used += need;
                        b->ends[b->n++] = b->used;
                        break;
                }
                if (b->n == 0 || attempt > 0) {
                        journal_batch_flush(b);
                        va_start(ap, message);
                        send_alone(b, need, priority, message, ap);
                        va_end(ap);
                        return;
                }
                journal_batch_flush(b);   /* and format it again into the empty buffer */
        }
        if (b->n == JOURNAL_BATCH_ENTRIES)
                journal_batch_flush(b);
        else if (b->n == 1)
                batch_arm(b);
}
