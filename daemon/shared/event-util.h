/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

/* Names S and hands it to its event loop, which frees it with itself: for a
 * source nobody reaches again (a signal, a loop's own eventfd), which would
 * otherwise be created floating and so nameless. Takes the caller's
 * reference; should the loop refuse it, S stays the caller's and runs all
 * the same. Header-only, so that a binary without libsystemd can include
 * util's neighbours. */
static inline int event_source_float(sd_event_source *s, const char *description) {
        int r;

        (void) sd_event_source_set_description(s, description);
        r = sd_event_source_set_floating(s, true);
        if (r >= 0)
                sd_event_source_unref(s);
        return r;
}

/* How late a timer may fire, by what it is for: the one rule for every timer
 * of sandboxd and sandbox-egress. sd-event fires a timer anywhere between its
 * time and its time plus its accuracy (to wake up once for many), and takes
 * an accuracy of 0 as its default of 250 ms: harmless for housekeeping, but a
 * throttle's wait of a few milliseconds became a quarter second and a 2 MB/s
 * tunnel moved 267 kB/s. */
typedef enum TimerKind {
        /* A pace: a throttle's wait, whose lateness divides a rate. On time. */
        TIMER_PACE,
        /* A wait someone is held by, or a bound on one: a handshake, a
         * connect, a resolver's retry, a readiness or resume wait, a stop's
         * retry, a pool refill, a journal batch, an idle or run-time limit.
         * Late by at most a tenth of its span, never more than sd-event's
         * default window. */
        TIMER_WAIT,
        /* Housekeeping nobody waits on (a periodic re-probe, an ended
         * worker's record, a log summary): within a second. */
        TIMER_HOUSEKEEPING,
} TimerKind;

#define TIMER_PACE_ACCURACY_USEC 1ULL                   /* 0 would mean sd-event's default */
#define TIMER_WAIT_ACCURACY_MAX_USEC 250000ULL
#define TIMER_HOUSEKEEPING_ACCURACY_USEC 1000000ULL

/* The accuracy of a timer of KIND due SPAN_USEC from now. One due now (or
 * overdue) fires at once, whatever its kind: sd-event would otherwise wait
 * for a coalescing point up to the accuracy ahead. */
static inline uint64_t timer_accuracy_usec(TimerKind kind, uint64_t span_usec) {
        if (span_usec == 0)
                return 1;
        switch (kind) {
        case TIMER_PACE:
                return TIMER_PACE_ACCURACY_USEC;
        case TIMER_WAIT:
                return span_usec / 10 < 1 ? 1 : span_usec / 10 > TIMER_WAIT_ACCURACY_MAX_USEC
                                                         ? TIMER_WAIT_ACCURACY_MAX_USEC : span_usec / 10;
        case TIMER_HOUSEKEEPING:
        default:
                return TIMER_HOUSEKEEPING_ACCURACY_USEC;
        }
}

/* Arms S, a CLOCK_MONOTONIC timer, to fire once USEC_FROM_NOW from now
 * with KIND's accuracy. */
static inline int event_timer_arm(sd_event_source *s, uint64_t usec_from_now, TimerKind kind) {
        int r = sd_event_source_set_time_accuracy(s, timer_accuracy_usec(kind, usec_from_now));
        if (r >= 0)
                r = sd_event_source_set_time_relative(s, usec_from_now);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r;
}

/* The same at USEC on CLOCK_MONOTONIC (the loop's idea of now gives the span;
 * a time past fires at once). */
static inline int event_timer_arm_at(sd_event_source *s, uint64_t usec, TimerKind kind) {
        uint64_t now = 0;
        int r;

        (void) sd_event_now(sd_event_source_get_event(s), CLOCK_MONOTONIC, &now);
        r = sd_event_source_set_time_accuracy(s, timer_accuracy_usec(kind, usec > now ? usec - now : 0));
        if (r >= 0)
                r = sd_event_source_set_time(s, usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r;
}

/* A new CLOCK_MONOTONIC timer due USEC_FROM_NOW from now with KIND's
 * accuracy, named DESCRIPTION, in *RET. */
static inline int event_add_timer(sd_event *e, sd_event_source **ret, uint64_t usec_from_now, TimerKind kind,
                                  sd_event_time_handler_t callback, void *userdata, const char *description) {
        int r = sd_event_add_time_relative(e, ret, CLOCK_MONOTONIC, usec_from_now,
                                           timer_accuracy_usec(kind, usec_from_now), callback, userdata);
        if (r >= 0)
                (void) sd_event_source_set_description(*ret, description);
        return r;
}

/* The same due at USEC on CLOCK_MONOTONIC. */
static inline int event_add_timer_at(sd_event *e, sd_event_source **ret, uint64_t usec, TimerKind kind,
                                     sd_event_time_handler_t callback, void *userdata, const char *description) {
        uint64_t now = 0;
        int r;

        (void) sd_event_now(e, CLOCK_MONOTONIC, &now);
        r = sd_event_add_time(e, ret, CLOCK_MONOTONIC, usec, timer_accuracy_usec(kind, usec > now ? usec - now : 0),
                              callback, userdata);
        if (r >= 0)
                (void) sd_event_source_set_description(*ret, description);
        return r;
}
