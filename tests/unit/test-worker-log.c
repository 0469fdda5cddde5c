/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which journal entries are a worker's (the forgery defence of
 * ReadWorkerLog), and what the daemon accepts and sends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util.h"
#include "worker-log.h"

#define ID    "0123456789ab"
#define OTHER "ba9876543210"

static WorkerLogSource classify(const char *unit, const char *uid, const char *worker_id, bool egress) {
        return worker_log_classify(ID, &(WorkerLogFields) { .systemd_unit = unit, .uid = uid, .worker_id = worker_id },
                                   egress);
}

static void test_daemon_entries(void **state) {
        assert_int_equal(classify("sandboxd.service", "0", ID, false), WORKER_LOG_SOURCE_SANDBOXD);
        assert_int_equal(classify("sandboxd.service", "0", ID, true), WORKER_LOG_SOURCE_SANDBOXD);
        /* The daemon's entries about another worker, or about none. */
        assert_int_equal(classify("sandboxd.service", "0", OTHER, false), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandboxd.service", "0", NULL, false), WORKER_LOG_SOURCE_UNTRUSTED);
        /* Not root in sandboxd's unit: not the daemon. */
        assert_int_equal(classify("sandboxd.service", "1500", ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandboxd.service", NULL, ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
}

/* What a plain user, or the workload itself, can write: any field but the
 * trusted ones. None of it is the worker's log. */
static void test_forged_entries(void **state) {
        /* A user's session, naming the worker. */
        assert_int_equal(classify("session-1.scope", "1500", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "1500", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* Root, but not from sandboxd or the worker's units. */
        assert_int_equal(classify("cron.service", "0", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* A login user whose datagram journald got to after it exited (no
         * _SYSTEMD_UNIT), and a dynamic UID in a unit that is not the proxy's. */
        assert_int_equal(classify(NULL, "1500", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "1500", ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, NULL, ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("session-1.scope", "61300", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "61183", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "65520", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "61300x", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* The workload, in the worker's own unit under its dynamic UID. */
        assert_int_equal(classify("sandbox-" ID ".service", "61234", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandbox-" ID ".service", NULL, ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* Another worker's launcher or proxy naming this worker. */
        assert_int_equal(classify("sandbox-" OTHER ".service", "0", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandbox-" OTHER "-egress.service", "61300", ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* Units whose names merely start like the worker's. */
        assert_int_equal(classify("sandbox-" ID ".service.d", "0", NULL, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandbox-" ID "-egress.socket", "0", NULL, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify("sandbox-" ID "-egress.service-x", "61300", NULL, true),
                         WORKER_LOG_SOURCE_UNTRUSTED);
}

static void test_launcher_entries(void **state) {
        /* Root in the worker's unit: the launcher, with or without the field. */
        assert_int_equal(classify("sandbox-" ID ".service", "0", ID, false), WORKER_LOG_SOURCE_LAUNCHER);
        assert_int_equal(classify("sandbox-" ID ".service", "0", NULL, false), WORKER_LOG_SOURCE_LAUNCHER);
        assert_int_equal(classify("sandbox-" ID "-cleanup.service", "0", ID, false), WORKER_LOG_SOURCE_LAUNCHER);
        assert_int_equal(classify("sandbox-" ID "-cleanup.service", "61234", ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
}

/* journald leaves _SYSTEMD_UNIT out when the sender exited before it read
 * the datagram; _UID is always there. */
static void test_unit_lost(void **state) {
        /* Root naming the worker: the launcher reporting and exiting. */
        assert_int_equal(classify(NULL, "0", ID, false), WORKER_LOG_SOURCE_LAUNCHER);
        assert_int_equal(classify(NULL, "0", ID, true), WORKER_LOG_SOURCE_LAUNCHER);
        assert_int_equal(classify(NULL, "0", OTHER, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "0", NULL, true), WORKER_LOG_SOURCE_UNTRUSTED);
        /* A dynamic UID naming the worker: its proxy, stopped just after a decision. */
        assert_int_equal(classify(NULL, "61300", ID, true), WORKER_LOG_SOURCE_EGRESS);
        assert_int_equal(classify(NULL, "61184", ID, true), WORKER_LOG_SOURCE_EGRESS);
        assert_int_equal(classify(NULL, "65519", ID, true), WORKER_LOG_SOURCE_EGRESS);
        assert_int_equal(classify(NULL, "61300", ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "61300", OTHER, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(classify(NULL, "61300", NULL, true), WORKER_LOG_SOURCE_UNTRUSTED);
}

static void test_egress_entries(void **state) {
        assert_int_equal(classify("sandbox-" ID "-egress.service", "61300", ID, true), WORKER_LOG_SOURCE_EGRESS);
        /* Only when asked for. */
        assert_int_equal(classify("sandbox-" ID "-egress.service", "61300", ID, false), WORKER_LOG_SOURCE_UNTRUSTED);
        /* journald always records _UID; an entry without one did not come from the proxy. */
        assert_int_equal(classify("sandbox-" ID "-egress.service", NULL, ID, true), WORKER_LOG_SOURCE_UNTRUSTED);
}

static void test_bad_id_matches_nothing(void **state) {
        WorkerLogFields f = { .systemd_unit = "sandboxd.service", .uid = "0", .worker_id = "x" };

        assert_int_equal(worker_log_classify("x", &f, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(worker_log_classify(NULL, &f, true), WORKER_LOG_SOURCE_UNTRUSTED);
        assert_int_equal(worker_log_classify(ID, NULL, true), WORKER_LOG_SOURCE_UNTRUSTED);
}

static void test_source_names(void **state) {
        assert_string_equal(worker_log_source_to_string(WORKER_LOG_SOURCE_SANDBOXD), "sandboxd");
        assert_string_equal(worker_log_source_to_string(WORKER_LOG_SOURCE_LAUNCHER), "launcher");
        assert_string_equal(worker_log_source_to_string(WORKER_LOG_SOURCE_EGRESS), "egress");
        assert_null(worker_log_source_to_string(WORKER_LOG_SOURCE_UNTRUSTED));
        assert_null(worker_log_source_to_string(_WORKER_LOG_SOURCE_MAX));
}

static void test_id_valid(void **state) {
        assert_true(worker_log_id_valid(ID));
        assert_false(worker_log_id_valid(NULL));
        assert_false(worker_log_id_valid(""));
        assert_false(worker_log_id_valid("0123456789a"));
        assert_false(worker_log_id_valid("0123456789abc"));
        assert_false(worker_log_id_valid("0123456789AB"));
        assert_false(worker_log_id_valid("0123456789ag"));
        /* Would widen a journal match or a unit name. */
        assert_false(worker_log_id_valid("*.service\0ab"));
        assert_false(worker_log_id_valid("01234567/../"));
}

static void test_cursor_valid(void **state) {
        char long_cursor[WORKER_LOG_CURSOR_MAX + 1];

        assert_true(worker_log_cursor_valid(""));
        assert_true(worker_log_cursor_valid("s=0f1e;i=4a2;b=77aa;m=1c2d;t=5f0e;x=99"));
        assert_false(worker_log_cursor_valid(NULL));
        assert_false(worker_log_cursor_valid("s=1 i=2"));
        assert_false(worker_log_cursor_valid("s=1\ni=2"));
        assert_false(worker_log_cursor_valid("s=\xc3\xa9"));
        memset(long_cursor, 'a', sizeof(long_cursor) - 1);
        long_cursor[sizeof(long_cursor) - 1] = 0;
        assert_false(worker_log_cursor_valid(long_cursor));
        long_cursor[WORKER_LOG_CURSOR_MAX - 1] = 0;
        assert_true(worker_log_cursor_valid(long_cursor));
}

static void test_sanitize(void **state) {
        char ok[] = "egress deny h\xc3\xa9st:443 reason=x";
        char ctl[] = "a\nb\tc\x1b[31md\x7f";
        char c1[] = "x\xc2\x9b" "31my";
        char bad[] = "x\xff\xc3y";

        worker_log_text_sanitize(ok);
        assert_string_equal(ok, "egress deny h\xc3\xa9st:443 reason=x");
        worker_log_text_sanitize(ctl);
        assert_string_equal(ctl, "a b c [31md ");
        worker_log_text_sanitize(c1);
        assert_string_equal(c1, "x  31my");
        worker_log_text_sanitize(bad);
        assert_string_equal(bad, "x??y");
}

static void test_end_events(void **state) {
        assert_true(worker_log_event_is_end("ended"));
        assert_true(worker_log_event_is_end("start-failed"));
        assert_false(worker_log_event_is_end("started"));
        assert_false(worker_log_event_is_end(""));
        assert_false(worker_log_event_is_end(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemon_entries),
                cmocka_unit_test(test_forged_entries),
                cmocka_unit_test(test_launcher_entries),
                cmocka_unit_test(test_unit_lost),
                cmocka_unit_test(test_egress_entries),
                cmocka_unit_test(test_bad_id_matches_nothing),
                cmocka_unit_test(test_source_names),
                cmocka_unit_test(test_id_valid),
                cmocka_unit_test(test_cursor_valid),
                cmocka_unit_test(test_sanitize),
                cmocka_unit_test(test_end_events),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
