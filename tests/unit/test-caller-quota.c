/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The caps on what one caller UID, and all callers together, may have
 * waiting (calls parked on polkit, journal reads), and their [Bus] keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "caller-quota.h"
#include "config.h"
#include "errors.h"
#include "test-config.h"

#define TESTER 1500
#define OTHER 1600
#define THIRD 1700

static void test_per_uid_cap(void **state) {
        CallerQuota q;

        caller_quota_init(&q, 3, 10);
        for (int i = 0; i < 3; i++)
                assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        /* The fourth is refused, and takes nothing. */
        assert_int_equal(caller_quota_acquire(&q, TESTER), -EUSERS);
        assert_int_equal(caller_quota_held(&q, TESTER), 3);
        assert_int_equal(q.total, 3);
        /* Another user is not held back by TESTER's cap (control). */
        assert_int_equal(caller_quota_acquire(&q, OTHER), 0);
        assert_int_equal(caller_quota_held(&q, OTHER), 1);
        /* One answered: TESTER may wait for one more. */
        caller_quota_release(&q, TESTER);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        caller_quota_done(&q);
}

static void test_total_cap(void **state) {
        CallerQuota q;

        caller_quota_init(&q, 2, 4);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        assert_int_equal(caller_quota_acquire(&q, OTHER), 0);
        assert_int_equal(caller_quota_acquire(&q, OTHER), 0);
        /* THIRD holds nothing, but all together hold the total. */
        assert_int_equal(caller_quota_acquire(&q, THIRD), -ENOBUFS);
        assert_int_equal(caller_quota_held(&q, THIRD), 0);
        /* A UID at its own cap hears about its own cap first. */
        assert_int_equal(caller_quota_acquire(&q, TESTER), -EUSERS);
        caller_quota_release(&q, OTHER);
        assert_int_equal(caller_quota_acquire(&q, THIRD), 0);
        assert_int_equal(q.total, 4);
        caller_quota_done(&q);
}

/* Root's reserved share: admitted past the total others filled, never past
 * its own cap; the total held stays bounded. */
static void test_reserved_past_total(void **state) {
        CallerQuota q;

        caller_quota_init(&q, 2, 4);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
                assert_int_equal(caller_quota_acquire(&q, OTHER), 0);
        }
        assert_int_equal(caller_quota_acquire(&q, 0), -ENOBUFS);
        assert_int_equal(caller_quota_acquire_reserved(&q, 0), 0);
        assert_int_equal(caller_quota_acquire_reserved(&q, 0), 0);
        assert_int_equal(caller_quota_acquire_reserved(&q, 0), -EUSERS);
        assert_int_equal(q.total, 6);
        /* Others still see the total as full. */
        caller_quota_release(&q, TESTER);
        assert_int_equal(caller_quota_acquire(&q, THIRD), -ENOBUFS);
        caller_quota_release(&q, 0);
        caller_quota_release(&q, 0);
        assert_int_equal(caller_quota_acquire(&q, THIRD), 0);
        caller_quota_done(&q);
}

/* Releases balance acquisitions exactly; a stray release (a UID holding
 * nothing) changes nothing, so no UID can buy itself credit. */
static void test_release_balances(void **state) {
        CallerQuota q;

        caller_quota_init(&q, 2, 4);
        caller_quota_release(&q, TESTER);
        assert_int_equal(q.total, 0);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        assert_int_equal(caller_quota_acquire(&q, OTHER), 0);
        caller_quota_release(&q, TESTER);
        caller_quota_release(&q, TESTER);
        assert_int_equal(caller_quota_held(&q, TESTER), 0);
        assert_int_equal(caller_quota_held(&q, OTHER), 1);
        assert_int_equal(q.total, 1);
        /* A UID holding nothing has no entry left behind. */
        assert_int_equal(q.n_entries, 1);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        assert_int_equal(caller_quota_acquire(&q, TESTER), 0);
        assert_int_equal(caller_quota_acquire(&q, TESTER), -EUSERS);
        caller_quota_done(&q);
}

/* A flood: many acquisitions from one UID, interleaved with answers; the
 * count never passes the caps and returns to zero. */
static void test_flood_stays_bounded(void **state) {
        CallerQuota q;
        unsigned admitted = 0, refused = 0;

        caller_quota_init(&q, 8, 32);
        for (int i = 0; i < 2000; i++) {
                if (caller_quota_acquire(&q, TESTER) == 0)
                        admitted++;
                else
                        refused++;
                assert_true(caller_quota_held(&q, TESTER) <= 8);
                assert_true(q.total <= 32);
                if (i % 100 == 99)
                        while (caller_quota_held(&q, TESTER) > 0)
                                caller_quota_release(&q, TESTER);
        }
        assert_int_equal(admitted, 8 * 20);
        assert_int_equal(refused, 2000 - 8 * 20);
        while (caller_quota_held(&q, TESTER) > 0)
                caller_quota_release(&q, TESTER);
        assert_int_equal(q.total, 0);
        assert_int_equal(q.n_entries, 0);
        caller_quota_done(&q);
}

static void test_config_defaults_and_keys(void **state) {
        SbxConfig c;
        SbxError e = {};

        assert_int_equal(test_config_load("", &c, &e), 0);
        assert_int_equal(c.bus_authorizations_per_user, 8);
        assert_int_equal(c.bus_authorizations_max, 32);
        assert_int_equal(c.bus_interactive_authorization_timeout_usec, 120 * USEC_PER_SEC);
        assert_int_equal(c.bus_log_reads_per_user, 2);
        assert_int_equal(c.bus_log_reads_max, 4);
        sbx_config_done(&c);

        assert_int_equal(test_config_load("[Bus]\nAuthorizationsPerUser=2\nAuthorizationsMax=5\n"
                                          "InteractiveAuthorizationTimeoutSec=30s\nLogReadsPerUser=1\nLogReadsMax=1\n",
                                          &c, &e), 0);
        assert_int_equal(c.bus_authorizations_per_user, 2);
        assert_int_equal(c.bus_authorizations_max, 5);
        assert_int_equal(c.bus_interactive_authorization_timeout_usec, 30 * USEC_PER_SEC);
        assert_int_equal(c.bus_log_reads_per_user, 1);
        assert_int_equal(c.bus_log_reads_max, 1);
        sbx_config_done(&c);
}

static void test_config_refuses_bad_caps(void **state) {
        static const char *const bad[] = {
                "[Bus]\nAuthorizationsPerUser=0\n",
                "[Bus]\nAuthorizationsPerUser=40\n",             /* above the total */
                "[Bus]\nAuthorizationsMax=200\n",                /* dbus-daemon's 128 replies */
                "[Bus]\nLogReadsPerUser=0\n",
                "[Bus]\nLogReadsPerUser=8\n",
                "[Bus]\nInteractiveAuthorizationTimeoutSec=0\n", /* would never wait */
                "[Bus]\nInteractiveAuthorizationTimeoutSec=1h\n",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                SbxConfig c;
                SbxError e = {};
                assert_int_equal(test_config_load(bad[i], &c, &e), -ERANGE);
                assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
                sbx_config_done(&c);
        }
}

/* The one refusal past a cap: its name, and the cap, key and value it says. */
static void test_refusal_names_the_cap(void **state) {
        static const CallerQuotaWords words = { "log reads are under way", "LogReadsPerUser", "LogReadsMax",
                                                "answered" };
        CallerQuota q;
        SbxError e = {};

        caller_quota_init(&q, 2, 5);
        assert_int_equal(caller_quota_refusal(&q, -EUSERS, &words, &e), -EBUSY);
        assert_string_equal(e.name, SBX_ERROR_TOO_MANY_REQUESTS);
        assert_string_equal(e.message, "Too many of your log reads are under way (Bus:LogReadsPerUser=2); "
                                       "retry once they are answered");
        assert_int_equal(caller_quota_refusal(&q, -ENOBUFS, &words, &e), -EBUSY);
        assert_string_equal(e.name, SBX_ERROR_TOO_MANY_REQUESTS);
        assert_string_equal(e.message, "Too many log reads are under way (Bus:LogReadsMax=5); retry later");
        caller_quota_done(&q);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_per_uid_cap),
                cmocka_unit_test(test_total_cap),
                cmocka_unit_test(test_reserved_past_total),
                cmocka_unit_test(test_release_balances),
                cmocka_unit_test(test_flood_stays_bounded),
                cmocka_unit_test(test_refusal_names_the_cap),
                cmocka_unit_test(test_config_defaults_and_keys),
                cmocka_unit_test(test_config_refuses_bad_caps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
