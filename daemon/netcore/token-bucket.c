/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "token-bucket.h"

#define UNITS_PER_BYTE UINT64_C(1000000)
/* Bounds the product elapsed * rate: beyond this the bucket is full anyway. */
#define REFILL_CAP_USEC (UINT64_C(3600) * UNITS_PER_BYTE)
#define RATE_MAX (UINT64_C(1) << 40)

void token_bucket_init(TokenBucket *b, uint64_t rate, uint64_t burst, uint64_t now_usec) {
        assert(b);
        if (rate > RATE_MAX)
                rate = RATE_MAX;
        if (burst == 0)
                burst = rate / 4 > 16384 ? rate / 4 : 16384;
        if (burst > RATE_MAX)
                burst = RATE_MAX;
        *b = (TokenBucket) {
                .rate = rate,
                .burst = burst,
                .level = burst * UNITS_PER_BYTE,
                .last_usec = now_usec,
        };
}

static void refill(TokenBucket *b, uint64_t now_usec) {
        uint64_t elapsed, cap = b->burst * UNITS_PER_BYTE;

        if (now_usec <= b->last_usec)
                return;   /* a clock that stands still or steps back adds nothing */
        elapsed = now_usec - b->last_usec;
        b->last_usec = now_usec;
        if (elapsed > REFILL_CAP_USEC) {
                b->level = cap;
                return;
        }
        /* elapsed < 2^32 and rate <= 2^40 can exceed 64 bits together. */
        unsigned __int128 add = (unsigned __int128) elapsed * b->rate;
        b->level = add >= cap - b->level ? cap : b->level + (uint64_t) add;
}

uint64_t token_bucket_available(TokenBucket *b, uint64_t now_usec) {
        assert(b);
        if (b->rate == 0)
                return UINT64_MAX;
        refill(b, now_usec);
        return b->level / UNITS_PER_BYTE;
}

void token_bucket_consume(TokenBucket *b, uint64_t n) {
        assert(b);
        if (b->rate == 0)
                return;
        uint64_t units = n > b->burst ? b->burst * UNITS_PER_BYTE : n * UNITS_PER_BYTE;
        b->level = units >= b->level ? 0 : b->level - units;
}

uint64_t token_bucket_wait_usec(TokenBucket *b, uint64_t want, uint64_t now_usec) {
        assert(b);
        if (b->rate == 0)
                return 0;
        refill(b, now_usec);
        if (want > b->burst)
                want = b->burst;
        if (want == 0)
                want = 1;
        uint64_t need = want * UNITS_PER_BYTE;
        if (b->level >= need)
                return 0;
        return (need - b->level + b->rate - 1) / b->rate;
}

uint64_t token_bucket_wake_usec(TokenBucket *b, uint64_t now_usec) {
        uint64_t wait = token_bucket_wait_usec(b, THROTTLE_WAKE_BYTES, now_usec);
        return wait > THROTTLE_WAKE_MIN_USEC ? wait : THROTTLE_WAKE_MIN_USEC;
}
