/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "token-bucket.h"

static void test_unlimited(void **state) {
        TokenBucket b;
        token_bucket_init(&b, 0, 0, 0);
        assert_true(token_bucket_available(&b, 0) == UINT64_MAX);
        token_bucket_consume(&b, 1 << 30);
        assert_true(token_bucket_available(&b, 0) == UINT64_MAX);
        assert_int_equal(token_bucket_wait_usec(&b, 1 << 20, 0), 0);
}

static void test_burst_and_refill(void **state) {
        TokenBucket b;
        uint64_t t = 1000000;

        token_bucket_init(&b, 100000, 10000, t);   /* 100 kB/s, 10 kB burst */
        assert_int_equal(token_bucket_available(&b, t), 10000);
        token_bucket_consume(&b, 10000);
        assert_int_equal(token_bucket_available(&b, t), 0);
        assert_int_equal(token_bucket_wait_usec(&b, 1000, t), 10000);   /* 1000 B at 100 kB/s */
        assert_int_equal(token_bucket_available(&b, t + 10000), 1000);
        assert_int_equal(token_bucket_available(&b, t + 10010), 1001);
        /* Never above the burst, however long idle. */
        assert_int_equal(token_bucket_available(&b, t + 60 * 1000000ULL), 10000);
        assert_int_equal(token_bucket_available(&b, t + 100000ULL * 1000000ULL), 10000);
        /* Wants above the burst wait only for the burst. */
        token_bucket_consume(&b, 10000);
        uint64_t now = t + 100000ULL * 1000000ULL;
        assert_int_equal(token_bucket_wait_usec(&b, 1 << 20, now), 100000);
        /* A clock stepping back adds nothing and does not underflow. */
        assert_int_equal(token_bucket_available(&b, 5), 0);
}

static void test_default_burst(void **state) {
        TokenBucket b;
        token_bucket_init(&b, 1000, 0, 0);
        assert_int_equal(b.burst, 16384);
        token_bucket_init(&b, 4000000, 0, 0);
        assert_int_equal(b.burst, 1000000);
}

/* Over a long run of small, irregular steps the total matches the rate
 * exactly: nothing is lost to rounding. */
static void test_no_drift(void **state) {
        TokenBucket b;
        uint64_t now = 0, sent = 0;

        token_bucket_init(&b, 333333, 4096, now);
        token_bucket_consume(&b, token_bucket_available(&b, now));
        for (unsigned i = 0; i < 100000; i++) {
                now += 7 + (i % 13);
                uint64_t avail = token_bucket_available(&b, now);
                uint64_t take = avail > 1500 ? 1500 : avail;
                token_bucket_consume(&b, take);
                sent += take;
        }
        /* Sent what the elapsed time earned, less what still sits in the bucket. */
        uint64_t earned = now * 333333 / 1000000;
        assert_true(sent <= earned);
        assert_true(earned - sent <= 4096 + 1);
}

static void test_huge_values(void **state) {
        TokenBucket b;
        token_bucket_init(&b, UINT64_MAX, UINT64_MAX, 0);
        assert_true(token_bucket_available(&b, UINT64_MAX) > 0);
        token_bucket_consume(&b, UINT64_MAX);
        assert_true(token_bucket_available(&b, UINT64_MAX - 1) == 0);
        assert_true(token_bucket_wait_usec(&b, UINT64_MAX, 0) >= 1);
}

/* A paused transfer wakes when a page's worth is back, never sooner than
 * the floor, and the wait is what the rate says: at 2 MB/s 4096 bytes take
 * 2048 us, far below sd-event's default timer window of 250 ms. */
static void test_wake(void **state) {
        TokenBucket b;
        token_bucket_init(&b, 2000000, 65536, 0);
        token_bucket_consume(&b, 65536);
        assert_int_equal(token_bucket_wake_usec(&b, 0), 2048);
        assert_true(token_bucket_wake_usec(&b, 0) < 250000);
        token_bucket_init(&b, 100000000, 65536, 0);   /* 100 MB/s: 41 us for a page, so the floor */
        token_bucket_consume(&b, 65536);
        assert_int_equal(token_bucket_wake_usec(&b, 0), THROTTLE_WAKE_MIN_USEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unlimited),
                cmocka_unit_test(test_burst_and_refill),
                cmocka_unit_test(test_default_burst),
                cmocka_unit_test(test_no_drift),
                cmocka_unit_test(test_huge_values),
                cmocka_unit_test(test_wake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
