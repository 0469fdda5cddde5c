/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxctl logs without a daemon: its options, ReadWorkerLog's reply read
 * back, the lines and JSON it prints, -n's tail and the pager's choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "pager.h"
#include "sandboxctl-logs.h"
#include "test-bus.h"
#include "util.h"

static int parse(LogsArgs *a, char *err, size_t n, ...) {
        char *argv[16];
        int argc = 0;
        va_list ap;

        va_start(ap, n);
        for (char *s = va_arg(ap, char *); s && argc < 15; s = va_arg(ap, char *))
                argv[argc++] = s;
        va_end(ap);
        argv[argc] = NULL;
        return logs_parse_args(argc, argv, NULL, a, err, n);
}

static void test_parse_args(void **state) {
        LogsArgs a;
        char err[256];

        assert_int_equal(parse(&a, err, sizeof(err), "logs", "0123456789ab", NULL), 0);
        assert_string_equal(a.id, "0123456789ab");
        assert_false(a.follow);
        assert_false(a.egress);
        assert_false(a.json);
        assert_true(a.legend);
        assert_true(a.pager);
        assert_true(a.lines == UINT64_MAX);

        assert_int_equal(parse(&a, err, sizeof(err), "logs", "-f", "--egress", "-n", "5", "--json", "--no-legend",
                               "--no-pager", "0123456789ab", NULL), 0);
        assert_true(a.follow && a.egress && a.json && !a.legend && !a.pager);
        assert_true(a.lines == 5);
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "0123456789ab", "--follow", "--lines=0", NULL), 0);
        assert_true(a.follow);
        assert_true(a.lines == 0);

        assert_int_equal(parse(&a, err, sizeof(err), "logs", "--help", NULL), 1);
        assert_int_equal(parse(&a, err, sizeof(err), "logs", NULL), -EINVAL);
        assert_non_null(strstr(err, "one worker ID"));
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "a", "b", NULL), -EINVAL);
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "-n", "many", "a", NULL), -EINVAL);
        assert_non_null(strstr(err, "'many'"));
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "-n", "-1", "a", NULL), -EINVAL);
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "a", "-n", NULL), -EINVAL);
        assert_non_null(strstr(err, "needs an argument"));
        assert_int_equal(parse(&a, err, sizeof(err), "logs", "--all", "a", NULL), -EINVAL);
        assert_non_null(strstr(err, "unknown option '--all'"));
}

static void test_page_read(void **state) {
        _cleanup_free_ LogEntry *entries = NULL;
        sd_bus_message *m;
        const char *cursor;
        size_t n;
        int peer = -1;
        sd_bus *bus = test_bus_new_offline(&peer);

        assert_non_null(bus);
        m = test_message_new(bus, "ReadWorkerLog");
        assert_non_null(m);
        assert_true(sd_bus_message_append(m, "a(tsuss)s", 2,
                                          UINT64_C(1764580801123456), "sandboxd", 6, "started", "Worker started",
                                          UINT64_C(1764580802000001), "egress", 4, "deny", "egress deny x:443",
                                          "s=1;i=2") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(log_page_read(m, &entries, &n, &cursor), 0);
        assert_int_equal(n, 2);
        assert_string_equal(cursor, "s=1;i=2");
        assert_true(entries[0].timestamp_usec == UINT64_C(1764580801123456));
        assert_string_equal(entries[0].source, "sandboxd");
        assert_int_equal(entries[1].priority, 4);
        assert_string_equal(entries[1].event, "deny");
        assert_string_equal(entries[1].message, "egress deny x:443");
        sd_bus_message_unref(m);
        free(TAKE_PTR(entries));

        /* An empty page still carries its cursor. */
        m = test_message_new(bus, "ReadWorkerLog");
        assert_true(sd_bus_message_append(m, "a(tsuss)s", 0, "") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(log_page_read(m, &entries, &n, &cursor), 0);
        assert_int_equal(n, 0);
        assert_string_equal(cursor, "");
        sd_bus_message_unref(m);

        /* A reply of another shape is an error, not garbage. */
        m = test_message_new(bus, "ReadWorkerLog");
        assert_true(sd_bus_message_append(m, "a(tss)", 0) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_true(log_page_read(m, &entries, &n, &cursor) < 0);
        sd_bus_message_unref(m);
        sd_bus_unref(bus);
        close(peer);
}

static void test_format(void **state) {
        LogEntry e = { UINT64_C(1764580801000042), "sandboxd", 6, "ended", "Worker ended" };
        _cleanup_free_ char *text = NULL, *json = NULL;
        json_object *o;

        setenv("TZ", "UTC", 1);
        tzset();
        text = log_entry_format(&e, false);
        assert_string_equal(text, "2025-12-01T09:20:01.000042+0000 sandboxd: Worker ended");

        e.message = "a \"quoted\" /path";
        json = log_entry_format(&e, true);
        assert_non_null(json);
        assert_null(strchr(json, '\n'));
        o = json_tokener_parse(json);
        assert_non_null(o);
        assert_true(json_object_get_uint64(json_object_object_get(o, "timestamp_usec")) == UINT64_C(1764580801000042));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "source")), "sandboxd");
        assert_int_equal(json_object_get_int(json_object_object_get(o, "priority")), 6);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "event")), "ended");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "message")), "a \"quoted\" /path");
        json_object_put(o);
}

static void test_end_entry(void **state) {
        LogEntry e = { 0, "sandboxd", 6, "ended", "" };

        assert_true(log_entry_is_end(&e));
        e.event = "start-failed";
        assert_true(log_entry_is_end(&e));
        e.event = "started";
        assert_false(log_entry_is_end(&e));
        /* Only sandboxd's word ends a worker. */
        e = (LogEntry) { 0, "launcher", 6, "ended", "" };
        assert_false(log_entry_is_end(&e));
        e.source = "egress";
        assert_false(log_entry_is_end(&e));
}

static char *tail_output(LogTail *t) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(log_tail_flush(t, f), 0);
        fclose(f);
        return buf;
}

static void test_tail(void **state) {
        LogTail t;
        char *out;

        log_tail_init(&t, 3);
        for (int i = 1; i <= 40; i++) {
                char *l;
                assert_true(asprintf(&l, "line %d", i) > 0);
                assert_int_equal(log_tail_push(&t, l), 0);
        }
        out = tail_output(&t);
        assert_string_equal(out, "line 38\nline 39\nline 40\n");
        free(out);
        /* Flushed: empty, and reusable. */
        assert_int_equal(log_tail_push(&t, strdup("again")), 0);
        out = tail_output(&t);
        assert_string_equal(out, "again\n");
        free(out);
        log_tail_done(&t);

        /* Fewer lines than asked for: all of them; -n 0: none. */
        log_tail_init(&t, 1000000);
        assert_int_equal(log_tail_push(&t, strdup("a")), 0);
        assert_int_equal(log_tail_push(&t, strdup("b")), 0);
        assert_true(t.allocated < 100);
        out = tail_output(&t);
        assert_string_equal(out, "a\nb\n");
        free(out);
        log_tail_done(&t);
        log_tail_init(&t, 0);
        assert_int_equal(log_tail_push(&t, strdup("a")), 0);
        out = tail_output(&t);
        assert_string_equal(out, "");
        free(out);
        log_tail_done(&t);

        /* Freed with lines still held (after a wrap). */
        log_tail_init(&t, 2);
        for (int i = 0; i < 5; i++)
                assert_int_equal(log_tail_push(&t, strdup("x")), 0);
        log_tail_done(&t);
}

static void test_pager_pick(void **state) {
        bool dflt;

        assert_string_equal(pager_pick(NULL, NULL, &dflt), "less -FRX");
        assert_true(dflt);
        assert_string_equal(pager_pick("most", "more", &dflt), "most");
        assert_false(dflt);
        assert_string_equal(pager_pick(NULL, "more -s", &dflt), "more -s");
        assert_false(dflt);
        /* Empty or cat: no pager, and a set SANDBOXCTL_PAGER is not overridden by PAGER. */
        assert_null(pager_pick("", "more", &dflt));
        assert_null(pager_pick("cat", "more", &dflt));
        assert_null(pager_pick(NULL, "", &dflt));
        assert_null(pager_pick(NULL, "cat", &dflt));
        assert_false(dflt);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_args),
                cmocka_unit_test(test_page_read),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_end_entry),
                cmocka_unit_test(test_tail),
                cmocka_unit_test(test_pager_pick),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
