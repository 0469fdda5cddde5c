/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Who is told about a worker (the rule ListWorkers and every signal share)
 * and the registry of subscribed clients with its bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>

#include "subscribers.h"

static void test_sees_worker(void **state) {
        /* Root and the owner, always; anyone else only with sees_all. */
        assert_true(sbx_sees_worker(0, false, 1000));
        assert_true(sbx_sees_worker(1000, false, 1000));
        assert_false(sbx_sees_worker(1001, false, 1000));
        assert_true(sbx_sees_worker(1001, true, 1000));
        /* An unknown caller sees nothing, even of an unknown owner. */
        assert_false(sbx_sees_worker(UID_INVALID, true, 1000));
        assert_false(sbx_sees_worker(UID_INVALID, false, UID_INVALID));
        /* A worker whose owner is unknown (lost at start-up): root and
         * holders of manage-workers only. */
        assert_false(sbx_sees_worker(1000, false, UID_INVALID));
        assert_true(sbx_sees_worker(1000, true, UID_INVALID));
        assert_true(sbx_sees_worker(0, false, UID_INVALID));
}

static void test_sees_workspace(void **state) {
        assert_true(sbx_sees_workspace(0, 1000));
        assert_true(sbx_sees_workspace(1000, 1000));
        assert_false(sbx_sees_workspace(1001, 1000));
        assert_false(sbx_sees_workspace(UID_INVALID, UID_INVALID));
}

static void test_entitled(void **state) {
        Subscriber plain = { .name = (char *) ":1.5", .uid = 1001 };
        Subscriber admin = { .name = (char *) ":1.6", .uid = 1002, .sees_all = true };

        assert_false(subscriber_entitled(&plain, AUDIENCE_WORKER, 1000));
        assert_true(subscriber_entitled(&plain, AUDIENCE_WORKER, 1001));
        assert_true(subscriber_entitled(&admin, AUDIENCE_WORKER, 1000));
        /* manage-workers is not manage-workspaces. */
        assert_false(subscriber_entitled(&admin, AUDIENCE_WORKSPACE, 1000));
        assert_true(subscriber_entitled(&plain, AUDIENCE_WORKSPACE, 1001));
        assert_true(subscriber_entitled(&plain, AUDIENCE_EVERYONE, 1000));
}

static void test_add_remove(void **state) {
        Subscribers s;

        subscribers_init(&s);
        assert_int_equal(subscribers_add(&s, ":1.1", 1000, false), 0);
        assert_int_equal(subscribers_add(&s, ":1.2", 1000, false), 0);
        assert_int_equal(s.n, 2);
        /* Subscribing again is one subscription, with the new answer. */
        assert_int_equal(subscribers_add(&s, ":1.1", 1000, true), 0);
        assert_int_equal(s.n, 2);
        assert_true(subscribers_find(&s, ":1.1")->sees_all);
        assert_true(subscribers_remove(&s, ":1.1"));
        assert_false(subscribers_remove(&s, ":1.1"));
        assert_null(subscribers_find(&s, ":1.1"));
        assert_non_null(subscribers_find(&s, ":1.2"));
        assert_false(subscribers_remove(&s, NULL));
        assert_int_equal(subscribers_add(&s, "", 1000, false), -EINVAL);
        assert_int_equal(subscribers_add(&s, NULL, 1000, false), -EINVAL);
        assert_int_equal(subscribers_add(&s, ":1.3", UID_INVALID, false), -EINVAL);
        assert_int_equal(s.n, 1);
        subscribers_done(&s);
        assert_int_equal(s.n, 0);
}

static void test_bounds(void **state) {
        Subscribers s;
        char name[32];

        subscribers_init(&s);
        assert_int_equal(s.max_per_uid, SUBSCRIBERS_MAX_PER_UID);
        assert_int_equal(s.max_total, SUBSCRIBERS_MAX);
        s.max_per_uid = 3;
        s.max_total = 6;
        for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof(name), ":1.%d", i);
                assert_int_equal(subscribers_add(&s, name, 1000, false), 0);
        }
        assert_int_equal(subscribers_add(&s, ":1.99", 1000, false), -EUSERS);
        /* One user at its cap leaves the others their share. */
        assert_int_equal(subscribers_add(&s, ":2.0", 1001, false), 0);
        /* Root is bounded by the total only. */
        assert_int_equal(subscribers_add(&s, ":3.0", 0, true), 0);
        assert_int_equal(subscribers_add(&s, ":3.1", 0, true), 0);
        assert_int_equal(subscribers_add(&s, ":3.2", 0, true), -ENOSPC);
        assert_int_equal(subscribers_add(&s, ":2.1", 1001, false), -ENOSPC);
        assert_int_equal(subscribers_count_uid(&s, 1000), 3);
        /* A client leaving gives its place back. */
        assert_true(subscribers_remove(&s, ":1.0"));
        assert_int_equal(subscribers_add(&s, ":1.100", 1000, false), 0);
        assert_int_equal(subscribers_add(&s, ":1.101", 1000, false), -EUSERS);
        subscribers_done(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sees_worker),
                cmocka_unit_test(test_sees_workspace),
                cmocka_unit_test(test_entitled),
                cmocka_unit_test(test_add_remove),
                cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
