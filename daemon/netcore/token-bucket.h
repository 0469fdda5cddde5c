/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A token bucket counted in bytes, driven by a clock the caller reads (a
 * monotonic time in microseconds), so tests can step time by hand. Tokens
 * are kept in byte-microseconds, so refills are exact and a long run does
 * not drift from the configured rate. A rate of 0 means unlimited. */

#include <stdbool.h>
#include <stdint.h>

typedef struct TokenBucket {
        uint64_t rate;          /* bytes per second; 0 = unlimited */
        uint64_t burst;         /* bytes */
        uint64_t level;         /* byte-microseconds, at most burst * 1e6 */
        uint64_t last_usec;
} TokenBucket;

/* A burst of 0 picks a quarter second's worth (at least 16 KiB). The bucket starts full. */
void token_bucket_init(TokenBucket *b, uint64_t rate, uint64_t burst, uint64_t now_usec);

/* Refills up to now and returns whole bytes available (UINT64_MAX if unlimited). */
uint64_t token_bucket_available(TokenBucket *b, uint64_t now_usec);

/* Takes n bytes; callers take at most what token_bucket_available() returned. */
void token_bucket_consume(TokenBucket *b, uint64_t n);

/* Microseconds from now until at least `want` bytes (capped at burst) are available; 0 if already. */
uint64_t token_bucket_wait_usec(TokenBucket *b, uint64_t want, uint64_t now_usec);

/* A paused transfer sleeps until THROTTLE_WAKE_BYTES are available (waking
 * for every byte would cost a system call per byte) but at least
 * THROTTLE_WAKE_MIN_USEC (a shorter timer costs more than it gains). The
 * timer that waits is a TIMER_PACE (shared/event-util.h): on time, where
 * sd-event's default accuracy (250 ms) would turn a wait of a few
 * milliseconds into a quarter second and the rate into a fraction of itself. */
#define THROTTLE_WAKE_BYTES 4096
#define THROTTLE_WAKE_MIN_USEC 1000

/* Microseconds a paused transfer sleeps before it tries again. */
uint64_t token_bucket_wake_usec(TokenBucket *b, uint64_t now_usec);
