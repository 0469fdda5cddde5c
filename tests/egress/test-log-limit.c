/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "log-limit.h"

#define SEC (1000ULL * 1000)

static void test_burst_then_summary(void **state) {
        LogLimit l;
        char buf[512];
        uint64_t t = 1000 * SEC;
        unsigned full = 0;

        log_limit_init(&l, 20, 10 * SEC);
        /* 1000 refusals within one window: 20 in full, 980 counted. */
        for (unsigned i = 0; i < 1000; i++)
                full += log_limit_refusal(&l, i % 100 == 0 ? "ip-literal" : "not-in-allow-list", t + i * 1000);
        assert_int_equal(full, 20);
        assert_false(log_limit_summary_due(&l, t + 9 * SEC));
        assert_int_equal(log_limit_window_end(&l), t + 10 * SEC);
        assert_true(log_limit_summary_due(&l, t + 10 * SEC));
        /* The first 20 included refusals 0 (ip-literal); 1 more ip-literal
         * every 100 among the rest: 9, so 971 for the other reason. */
        assert_int_equal(log_limit_take_summary(&l, buf, sizeof(buf)), 980);
        assert_string_equal(buf, "not-in-allow-list=971; ip-literal=9");
        assert_false(log_limit_summary_due(&l, t + 11 * SEC));
        assert_int_equal(log_limit_take_summary(&l, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");

        /* The next window starts with its own burst. */
        assert_true(log_limit_refusal(&l, "ip-literal", t + 12 * SEC));
        assert_int_equal(l.logged, 1);
}

static void test_quiet_worker_never_summarised(void **state) {
        LogLimit l;
        char buf[64];

        log_limit_init(&l, 20, 10 * SEC);
        /* 19 refusals every window, for a minute: every one in full. */
        for (unsigned w = 0; w < 6; w++)
                for (unsigned i = 0; i < 19; i++) {
                        assert_true(log_limit_refusal(&l, "not-in-allow-list", w * 10 * SEC + i * SEC / 2));
                        assert_false(log_limit_summary_due(&l, w * 10 * SEC + i * SEC / 2));
                }
        assert_int_equal(log_limit_take_summary(&l, buf, sizeof(buf)), 0);
}

static void test_pending_summary_keeps_counting(void **state) {
        LogLimit l;
        char buf[64];

        log_limit_init(&l, 2, 10 * SEC);
        assert_true(log_limit_refusal(&l, "a", 0));
        assert_true(log_limit_refusal(&l, "a", 1));
        assert_false(log_limit_refusal(&l, "a", 2));
        /* The summary was not taken at the window's end (a late timer): later
         * refusals go into the same count rather than open a window whose
         * burst would hide that the summary is still owed. */
        assert_false(log_limit_refusal(&l, "b", 11 * SEC));
        assert_int_equal(log_limit_take_summary(&l, buf, sizeof(buf)), 2);
        assert_string_equal(buf, "a=1; b=1");
        assert_true(log_limit_refusal(&l, "a", 12 * SEC));
}

static void test_many_reasons_and_small_buffer(void **state) {
        LogLimit l;
        char buf[2048], small[12], name[32];

        log_limit_init(&l, 0, 10 * SEC);
        for (unsigned i = 0; i < LOG_LIMIT_REASONS_MAX + 4; i++) {
                snprintf(name, sizeof(name), "private-address r%u", i);
                assert_false(log_limit_refusal(&l, name, i));
        }
        /* A reason longer than the table's slot is cut, still counted. */
        char long_reason[300];
        memset(long_reason, 'x', sizeof(long_reason) - 1);
        long_reason[sizeof(long_reason) - 1] = 0;
        assert_false(log_limit_refusal(&l, long_reason, 100));
        assert_false(log_limit_refusal(&l, NULL, 101));
        assert_int_equal(log_limit_take_summary(&l, buf, sizeof(buf)), LOG_LIMIT_REASONS_MAX + 6);
        assert_non_null(strstr(buf, "private-address r0=1"));
        assert_non_null(strstr(buf, "other=6"));
        assert_null(strstr(buf, "r16="));

        assert_false(log_limit_refusal(&l, "not-in-allow-list", 200 * SEC));
        assert_int_equal(log_limit_take_summary(&l, small, sizeof(small)), 1);
        assert_int_equal(strlen(small), sizeof(small) - 1);   /* cut, terminated */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_burst_then_summary),
                cmocka_unit_test(test_quiet_worker_never_summarised),
                cmocka_unit_test(test_pending_summary_keeps_counting),
                cmocka_unit_test(test_many_reasons_and_small_buffer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
