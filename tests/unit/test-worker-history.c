/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ended workers' history: bounded by count and by age, oldest first,
 * records owning their result strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util.h"
#include "worker-history.h"

static void add(WorkerHistory *h, const char *id, uint64_t ended, const char *result) {
        EndedWorkerRecord r = { .owner = 1000, .ended_monotonic = ended, .exit_status = -1, .result = (char *) result };

        snprintf(r.id, sizeof(r.id), "%s", id);
        assert_int_equal(worker_history_add(h, &r, ended), 0);
}

/* The daemon's first ListWorkersEx prunes a history that never held a
 * record (no array yet); UBSan must see no NULL reach memmove(). */
static void test_prune_empty(void **state) {
        WorkerHistory h;

        worker_history_init(&h, 3, USEC_PER_SEC);
        worker_history_prune(&h, 10 * USEC_PER_SEC);
        assert_int_equal(h.n, 0);
        add(&h, "000000000001", USEC_PER_SEC, "idle");
        worker_history_prune(&h, 10 * USEC_PER_SEC);
        assert_int_equal(h.n, 0);
        worker_history_prune(&h, 20 * USEC_PER_SEC);
        assert_int_equal(h.n, 0);
        worker_history_done(&h);
}

static void test_bounded_count_keeps_newest(void **state) {
        WorkerHistory h;
        char id[13];

        worker_history_init(&h, 3, 3600 * USEC_PER_SEC);
        for (unsigned i = 0; i < 5; i++) {
                snprintf(id, sizeof(id), "%012u", i);
                add(&h, id, (i + 1) * USEC_PER_SEC, "idle");
        }
        assert_int_equal(h.n, 3);
        assert_string_equal(h.records[0].id, "000000000002");
        assert_string_equal(h.records[2].id, "000000000004");
        assert_string_equal(h.records[2].result, "idle");
        worker_history_done(&h);
        assert_int_equal(h.n, 0);
}

static void test_bounded_age(void **state) {
        WorkerHistory h;
        char result[] = "exited 3";

        worker_history_init(&h, 10, 60 * USEC_PER_SEC);
        add(&h, "aaaaaaaaaaaa", 10 * USEC_PER_SEC, result);
        /* The record has a copy: the caller's string may change or go. */
        result[0] = 'X';
        add(&h, "bbbbbbbbbbbb", 50 * USEC_PER_SEC, "stopped");
        assert_string_equal(h.records[0].result, "exited 3");
        worker_history_prune(&h, 70 * USEC_PER_SEC);
        assert_int_equal(h.n, 2);
        worker_history_prune(&h, 71 * USEC_PER_SEC);
        assert_int_equal(h.n, 1);
        assert_string_equal(h.records[0].id, "bbbbbbbbbbbb");
        /* A clock read before the record (never expected) expires nothing. */
        worker_history_prune(&h, 1);
        assert_int_equal(h.n, 1);
        worker_history_prune(&h, 200 * USEC_PER_SEC);
        assert_int_equal(h.n, 0);
        worker_history_done(&h);
}

static void test_zero_remembers_nothing(void **state) {
        WorkerHistory h;

        worker_history_init(&h, 0, 3600 * USEC_PER_SEC);
        add(&h, "aaaaaaaaaaaa", 1, "idle");
        assert_int_equal(h.n, 0);
        worker_history_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prune_empty),
                cmocka_unit_test(test_bounded_count_keeps_newest),
                cmocka_unit_test(test_bounded_age),
                cmocka_unit_test(test_zero_remembers_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
