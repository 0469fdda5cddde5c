/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timers' one accuracy rule (shared/event-util.h), and each short timer
 * of sandboxd and sandbox-egress firing when asked: armed through the helper
 * with its own span and kind, on a real sd-event loop, its median lateness
 * over a few rounds stays within its accuracy plus a margin for a loaded
 * machine's scheduling. The control: the same 2 ms wait with accuracy 0,
 * what the tunnel's throttle had before, fires a large part of sd-event's
 * 250 ms window late, so the measure can see what it guards against.
 * Spans past 2.5 s get sd-event's default window under the rule too and
 * are checked by their accuracy alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include "config.h"
#include "event-util.h"
#include "journal-batch.h"
#include "token-bucket.h"
#include "unit-stop.h"
#include "util.h"

/* What a loaded 2-core machine may add to a wake-up, beyond the accuracy. */
#define SCHED_MARGIN_USEC (40 * USEC_PER_MSEC)

typedef struct Round {
        uint64_t span, due, lateness[8];
        unsigned n, rounds;
        TimerKind kind;
        bool raw;               /* re-armed without the helper, accuracy 0 (the control) */
} Round;

static int on_fire(sd_event_source *s, uint64_t usec, void *userdata) {
        Round *r = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        r->lateness[r->n++] = now > r->due ? now - r->due : 0;
        if (r->n == r->rounds)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        r->due = now_usec(CLOCK_MONOTONIC) + r->span;
        if (r->raw) {
                assert_true(sd_event_source_set_time(s, r->due) >= 0);
                assert_true(sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0);
        } else
                assert_true(event_timer_arm(s, r->span, r->kind) >= 0);
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* The median lateness of ROUNDS firings of a timer of SPAN and KIND. */
static uint64_t median_lateness(uint64_t span, TimerKind kind, bool raw, unsigned rounds) {
        sd_event *e = NULL;
        sd_event_source *s = NULL;
        Round r = { .span = span, .kind = kind, .raw = raw, .rounds = rounds };
        uint64_t accuracy = 0;

        assert_true(rounds <= ELEMENTSOF(r.lateness));
        assert_true(sd_event_new(&e) >= 0);
        r.due = now_usec(CLOCK_MONOTONIC) + span;
        if (raw)
                assert_true(sd_event_add_time_relative(e, &s, CLOCK_MONOTONIC, span, 0, on_fire, &r) >= 0);
        else {
                assert_true(event_add_timer(e, &s, span, kind, on_fire, &r, "test-timer") >= 0);
                assert_true(sd_event_source_get_time_accuracy(s, &accuracy) >= 0);
                assert_int_equal(accuracy, timer_accuracy_usec(kind, span));
        }
        assert_true(sd_event_loop(e) >= 0);
        sd_event_source_unref(s);
        sd_event_unref(e);
        qsort(r.lateness, r.n, sizeof(r.lateness[0]), cmp_u64);
        return r.lateness[r.n / 2];
}

static void test_rule(void **state) {
        /* Never 0, which sd-event reads as its 250 ms default. */
        assert_int_equal(timer_accuracy_usec(TIMER_PACE, 2048), 1);
        assert_int_equal(timer_accuracy_usec(TIMER_PACE, 10 * USEC_PER_SEC), 1);
        assert_int_equal(timer_accuracy_usec(TIMER_WAIT, 0), 1);
        assert_int_equal(timer_accuracy_usec(TIMER_WAIT, 5), 1);
        assert_int_equal(timer_accuracy_usec(TIMER_WAIT, 100 * USEC_PER_MSEC), 10 * USEC_PER_MSEC);
        assert_int_equal(timer_accuracy_usec(TIMER_WAIT, 10 * USEC_PER_SEC), 250 * USEC_PER_MSEC);
        assert_int_equal(timer_accuracy_usec(TIMER_HOUSEKEEPING, 30 * USEC_PER_SEC), USEC_PER_SEC);
        /* Due now or overdue: at once, whatever the kind. */
        assert_int_equal(timer_accuracy_usec(TIMER_HOUSEKEEPING, 0), 1);
}

/* A throttle's wait (tunnel and broker session): at 2 MB/s a page takes
 * 2048 us; faster rates wait the floor. */
static void test_throttle_wait(void **state) {
        TokenBucket b;
        token_bucket_init(&b, 2000000, 65536, 0);
        token_bucket_consume(&b, 65536);
        uint64_t wait = token_bucket_wake_usec(&b, 0);

        assert_true(median_lateness(wait, TIMER_PACE, false, 7) <= SCHED_MARGIN_USEC);
        assert_true(median_lateness(THROTTLE_WAKE_MIN_USEC, TIMER_PACE, false, 7) <= SCHED_MARGIN_USEC);
}

/* The control: the same wait as the throttle had it before. Each firing
 * lands on sd-event's 250 ms grid, so the median is most of the window. */
static void test_control_default_accuracy(void **state) {
        assert_true(median_lateness(2048, TIMER_PACE, true, 5) > 60 * USEC_PER_MSEC);
}

/* A refused unit stop is asked again after UNIT_STOP_RETRY_STEP_USEC. */
static void test_stop_retry(void **state) {
        assert_true(median_lateness(UNIT_STOP_RETRY_STEP_USEC, TIMER_WAIT, false, 5) <=
                    timer_accuracy_usec(TIMER_WAIT, UNIT_STOP_RETRY_STEP_USEC) + SCHED_MARGIN_USEC);
}

/* The proxy's journal batch is flushed JOURNAL_BATCH_DELAY_USEC after its first entry. */
static void test_journal_batch(void **state) {
        assert_true(median_lateness(JOURNAL_BATCH_DELAY_USEC, TIMER_WAIT, false, 5) <=
                    timer_accuracy_usec(TIMER_WAIT, JOURNAL_BATCH_DELAY_USEC) + SCHED_MARGIN_USEC);
}

/* The warm pool refills at PoolRefillPerSecond (default 2): a pace. */
static void test_pool_refill(void **state) {
        SbxConfig c;
        sbx_config_init_defaults(&c);
        uint64_t span = USEC_PER_SEC / c.pool_refill_per_second;

        sbx_config_done(&c);
        assert_true(median_lateness(span, TIMER_PACE, false, 3) <= SCHED_MARGIN_USEC);
}

/* The proxy's resolver is first armed for 1 s, then for c-ares' next
 * retry: a connect waits on it. */
static void test_resolver(void **state) {
        assert_true(median_lateness(USEC_PER_SEC, TIMER_WAIT, false, 3) <=
                    timer_accuracy_usec(TIMER_WAIT, USEC_PER_SEC) + SCHED_MARGIN_USEC);
}

/* A time already past (a deadline missed while the loop was busy) fires at once. */
static int on_past(sd_event_source *s, uint64_t usec, void *userdata) {
        *(uint64_t *) userdata = now_usec(CLOCK_MONOTONIC);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void test_past_fires_at_once(void **state) {
        sd_event *e = NULL;
        sd_event_source *s = NULL;
        uint64_t fired = 0, t0 = now_usec(CLOCK_MONOTONIC);

        assert_true(sd_event_new(&e) >= 0);
        assert_true(event_add_timer_at(e, &s, t0 - 1, TIMER_WAIT, on_past, &fired, "test-past") >= 0);
        assert_true(sd_event_loop(e) >= 0);
        assert_true(fired - t0 <= SCHED_MARGIN_USEC);
        sd_event_source_unref(s);
        sd_event_unref(e);
        /* A timer far off re-armed into the past through the helper: the same. */
        assert_true(sd_event_new(&e) >= 0);
        assert_true(event_add_timer(e, &s, 60 * USEC_PER_SEC, TIMER_WAIT, on_past, &fired, "test-past") >= 0);
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_true(event_timer_arm_at(s, t0 - 1, TIMER_HOUSEKEEPING) >= 0);
        assert_true(sd_event_loop(e) >= 0);
        assert_true(fired - t0 <= SCHED_MARGIN_USEC);
        sd_event_source_unref(s);
        sd_event_unref(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rule),
                cmocka_unit_test(test_throttle_wait),
                cmocka_unit_test(test_control_default_accuracy),
                cmocka_unit_test(test_stop_retry),
                cmocka_unit_test(test_journal_batch),
                cmocka_unit_test(test_pool_refill),
                cmocka_unit_test(test_resolver),
                cmocka_unit_test(test_past_fires_at_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
