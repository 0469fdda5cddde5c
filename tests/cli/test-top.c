/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxctl top and egress without a daemon: the CPU share between two
 * samples and the order it sorts by, unknown counters in the table and the
 * JSON, and the list that `egress --allow/--deny` sends. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandboxctl-top.h"
#include "util.h"

static TopRow row(const char *id, uint64_t cpu_nsec) {
        TopRow r = { .id = strdup(id), .class = strdup("trusted"), .state = strdup("running"),
                     .cpu_nsec = cpu_nsec, .cpu_percent = -1 };
        r.memory = 1 << 20;
        r.memory_peak = 2 << 20;
        r.tasks = 1;
        r.io_read = r.io_write = TOP_UNKNOWN;
        r.oom_kills = 0;
        return r;
}

static void test_cpu_share(void **state) {
        TopSample before = { .rows = calloc(2, sizeof(TopRow)), .n = 2, .at_usec = 1000000 };
        TopSample now = { .rows = calloc(3, sizeof(TopRow)), .n = 3, .at_usec = 2000000 };

        before.rows[0] = row("aaa", 1000000000);
        before.rows[1] = row("bbb", 5000000000);
        now.rows[0] = row("aaa", 1250000000);    /* 0.25 s in 1 s */
        now.rows[1] = row("bbb", 5900000000);    /* 0.9 s in 1 s */
        now.rows[2] = row("ccc", 7);             /* new: no share yet */
        top_sample_compare(&now, &before);
        /* the busiest first, the one without a share last */
        assert_string_equal(now.rows[0].id, "bbb");
        assert_true(now.rows[0].cpu_percent > 89.9 && now.rows[0].cpu_percent < 90.1);
        assert_string_equal(now.rows[1].id, "aaa");
        assert_true(now.rows[1].cpu_percent > 24.9 && now.rows[1].cpu_percent < 25.1);
        assert_string_equal(now.rows[2].id, "ccc");
        assert_true(now.rows[2].cpu_percent < 0);

        json_object *o = top_to_json(&now);
        assert_non_null(o);
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        assert_non_null(strstr(text, "\"id\":\"ccc\",\"class\":\"trusted\",\"state\":\"running\",\"cpu_percent\":null"));
        assert_non_null(strstr(text, "\"io_read_bytes\":null"));
        assert_non_null(strstr(text, "\"memory_peak\":2097152"));
        json_object_put(o);

        Table *t = top_to_table(&now);
        assert_non_null(t);
        assert_int_equal(table_n_rows(t), 3);
        table_free(t);
        top_sample_done(&before);
        top_sample_done(&now);
}

static void test_counter_reset(void **state) {
        /* A counter that went back (a unit started again) has no share. */
        TopSample before = { .rows = calloc(1, sizeof(TopRow)), .n = 1, .at_usec = 1 };
        TopSample now = { .rows = calloc(1, sizeof(TopRow)), .n = 1, .at_usec = 1000001 };
        before.rows[0] = row("aaa", 900);
        now.rows[0] = row("aaa", 100);
        top_sample_compare(&now, &before);
        assert_true(now.rows[0].cpu_percent < 0);
        top_sample_done(&before);
        top_sample_done(&now);
}

static void test_egress_edit(void **state) {
        char *current[] = { (char *) "a.example.org", (char *) "b.example.org", NULL };
        char *add[] = { (char *) "c.example.org", (char *) "a.example.org", NULL };
        char *remove[] = { (char *) "b.example.org", NULL };
        char *missing[] = { (char *) "z.example.org", NULL };
        char **l = NULL;
        const char *m = NULL;

        assert_int_equal(egress_allow_edit(current, add, remove, &l, &m), 0);
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "a.example.org");   /* kept once, not added again */
        assert_string_equal(l[1], "c.example.org");
        strv_free(l);
        l = NULL;

        assert_int_equal(egress_allow_edit(current, NULL, missing, &l, &m), -ENOENT);
        assert_string_equal(m, "z.example.org");
        assert_null(l);

        /* Taking out everything leaves an empty list: the daemon refuses it. */
        char *all[] = { (char *) "a.example.org", (char *) "b.example.org", NULL };
        assert_int_equal(egress_allow_edit(current, NULL, all, &l, &m), 0);
        assert_int_equal(strv_length(l), 0);
        strv_free(l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_share),
                cmocka_unit_test(test_counter_reset),
                cmocka_unit_test(test_egress_edit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
