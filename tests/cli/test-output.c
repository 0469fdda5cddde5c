/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* list/preflight/status output built from replies shaped like the daemon's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sandboxctl-output.h"
#include "test-bus.h"
#include "util.h"

typedef struct Fixture {
        sd_bus *bus;
        int peer;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        if (!f)
                return -1;
        f->bus = test_bus_new_offline(&f->peer);
        if (!f->bus) {
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        sd_bus_unref(f->bus);
        close(f->peer);
        free(f);
        return 0;
}

static sd_bus_message *list_workers_reply(Fixture *f) {
        sd_bus_message *m = test_message_new(f->bus, "ListWorkers");

        assert_non_null(m);
        assert_true(sd_bus_message_append(m, "a(ssssuuo)", 2,
                                          "0123456789ab", "trusted", "running", "sandbox-0123456789ab.service",
                                          (uint32_t) 61234, (uint32_t) 0, "/org/sandboxd1/worker/0123456789ab",
                                          "ba9876543210", "standard", "starting", "",
                                          (uint32_t) 4000000000U, (uint32_t) 1500,
                                          "/org/sandboxd1/worker/ba9876543210") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        return m;
}

static char *capture(int (*print)(const void *what, FILE *f), const void *what) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(print(what, f), 0);
        fclose(f);
        return buf;
}

static int print_table(const void *t, FILE *f) {
        return table_print(t, f, true);
}

static int print_json(const void *o, FILE *f) {
        return json_print((json_object *) o, f);
}

static int print_properties(const void *o, FILE *f) {
        return properties_print((json_object *) o, f);
}

/* T as sandboxctl prints it, with its legend; takes T. */
static char *table_text(Table *t) {
        char *text = capture(print_table, t);

        table_free(t);
        return text;
}

/* O as sandboxctl --json prints it; takes O. */
static char *json_text(json_object *o) {
        char *text = capture(print_json, o);

        json_object_put(o);
        return text;
}

static void assert_json_string(json_object *o, const char *key, const char *expected) {
        json_object *v;
        assert_true(json_object_object_get_ex(o, key, &v));
        assert_true(json_object_is_type(v, json_type_string));
        assert_string_equal(json_object_get_string(v), expected);
}

/* The legacy ListWorkers reply (a daemon older than ListWorkersEx). */
static void test_list_legacy_json(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = list_workers_reply(f);
        _cleanup_free_ WorkerEntry *workers = NULL;
        _cleanup_free_ char *text = NULL;
        json_object *o, *parsed, *first, *second, *v;
        size_t n;

        assert_int_equal(worker_list_read(m, &workers, &n), 0);
        assert_int_equal(n, 2);
        o = worker_list_to_json(workers, n);
        assert_non_null(o);
        text = json_text(o);

        /* What a consumer sees: the printed text, parsed back. */
        parsed = json_tokener_parse(text);
        assert_non_null(parsed);
        assert_true(json_object_is_type(parsed, json_type_array));
        assert_int_equal(json_object_array_length(parsed), 2);
        first = json_object_array_get_idx(parsed, 0);
        assert_json_string(first, "id", "0123456789ab");
        assert_json_string(first, "class", "trusted");
        assert_json_string(first, "state", "running");
        assert_json_string(first, "unit", "sandbox-0123456789ab.service");
        assert_json_string(first, "path", "/org/sandboxd1/worker/0123456789ab");
        assert_true(json_object_object_get_ex(first, "uid", &v));
        assert_true(json_object_is_type(v, json_type_int));
        assert_int_equal(json_object_get_int64(v), 61234);
        /* What an old daemon cannot say is null, not made up. */
        assert_true(json_object_object_get_ex(first, "created_usec", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(first, "result", &v));
        assert_null(v);
        second = json_object_array_get_idx(parsed, 1);
        assert_json_string(second, "unit", "");
        assert_true(json_object_object_get_ex(second, "uid", &v));
        assert_int_equal(json_object_get_int64(v), 4000000000LL);
        assert_json_string(second, "owner", "1500");
        assert_true(json_object_object_get_ex(second, "owner_uid", &v));
        assert_int_equal(json_object_get_int64(v), 1500);
        /* Paths are printed as they are, not with escaped slashes. */
        assert_non_null(strstr(text, "\"/org/sandboxd1/worker/0123456789ab\""));
        json_object_put(parsed);
        sd_bus_message_unref(m);
}

#define NOW (UINT64_C(1800000000) * USEC_PER_SEC)

/* A ListWorkersEx reply: a running worker, an idle-reaped one, one that
 * exited 3, and a key this client does not know. */
static sd_bus_message *list_workers_ex_reply(Fixture *f) {
        sd_bus_message *m = test_message_new(f->bus, "ListWorkersEx");

        assert_non_null(m);
        assert_true(sd_bus_message_open_container(m, 'a', "a{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "a{sv}", 12,
                                          "Id", "s", "0123456789ab", "Class", "s", "trusted",
                                          "RequestedClass", "s", "trusted", "State", "s", "running",
                                          "Result", "s", "", "Owner", "u", (uint32_t) 0, "UID", "u", (uint32_t) 61234,
                                          "Unit", "s", "sandbox-0123456789ab.service",
                                          "Path", "o", "/org/sandboxd1/worker/0123456789ab",
                                          "CreatedUSec", "t", NOW - 190 * USEC_PER_SEC,
                                          "IdleUSec", "t", 5 * USEC_PER_SEC + 999999,
                                          "FutureKey", "as", 1, "x") >= 0);
        assert_true(sd_bus_message_append(m, "a{sv}", 9,
                                          "Id", "s", "ba9876543210", "Class", "s", "untrusted",
                                          "State", "s", "ended", "Result", "s", "idle",
                                          "Owner", "u", (uint32_t) 1500, "Unit", "s", "sandbox-ba9876543210.service",
                                          "CreatedUSec", "t", NOW - 2 * 3600 * USEC_PER_SEC,
                                          "EndedUSec", "t", NOW - 3600 * USEC_PER_SEC,
                                          "ExitStatus", "i", (int32_t) 143) >= 0);
        assert_true(sd_bus_message_append(m, "a{sv}", 6,
                                          "Id", "s", "cccccccccccc", "Class", "s", "standard",
                                          "State", "s", "ended", "Result", "s", "exited 3",
                                          "Owner", "u", (uint32_t) 1500, "CreatedUSec", "t", NOW - 3 * 86400 * USEC_PER_SEC) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        return m;
}

static void test_list_ex(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = list_workers_ex_reply(f);
        _cleanup_free_ WorkerEntry *workers = NULL;
        _cleanup_free_ char *text = NULL, *table = NULL;
        json_object *o, *parsed, *e, *v;
        Table *t;
        size_t n;

        assert_int_equal(worker_list_ex_read(m, &workers, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(workers[0].state, "running");
        assert_null(workers[0].result);
        assert_int_equal(workers[0].idle_usec, 5 * USEC_PER_SEC + 999999);
        assert_int_equal(workers[1].uid, UINT32_MAX);
        assert_int_equal(workers[1].idle_usec, UINT64_MAX);
        assert_string_equal(workers[1].result, "idle");
        workers[0].memory_bytes = 12 * 1024 * 1024 + 300 * 1024;
        workers[0].owner_name = "root";
        workers[1].owner_name = "tester";
        worker_list_sort(workers, n);
        assert_string_equal(workers[0].id, "cccccccccccc");

        t = worker_list_to_table(workers, n, NOW);
        assert_non_null(t);
        table = table_text(t);
        assert_string_equal(table,
                            "ID           CLASS     STATE   RESULT   OWNER  AGE  IDLE MEMORY\n"
                            "cccccccccccc standard  ended   exited 3 1500   3d   -    -\n"
                            "ba9876543210 untrusted ended   idle     tester 2h   -    -\n"
                            "0123456789ab trusted   running -        root   3min 5s   12M\n");

        o = worker_list_to_json(workers, n);
        assert_non_null(o);
        text = json_text(o);
        parsed = json_tokener_parse(text);
        assert_non_null(parsed);
        assert_int_equal(json_object_array_length(parsed), 3);
        e = json_object_array_get_idx(parsed, 1);
        assert_json_string(e, "state", "ended");
        assert_json_string(e, "result", "idle");
        assert_json_string(e, "owner", "tester");
        assert_true(json_object_object_get_ex(e, "exit_status", &v));
        assert_int_equal(json_object_get_int64(v), 143);
        assert_true(json_object_object_get_ex(e, "ended_usec", &v));
        assert_true(json_object_is_type(v, json_type_int));
        assert_true(json_object_object_get_ex(e, "idle_usec", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(e, "uid", &v));
        assert_null(v);
        e = json_object_array_get_idx(parsed, 2);
        assert_json_string(e, "state", "running");
        assert_true(json_object_object_get_ex(e, "result", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(e, "memory_bytes", &v));
        assert_int_equal(json_object_get_int64(v), 12 * 1024 * 1024 + 300 * 1024);
        assert_true(json_object_object_get_ex(e, "idle_usec", &v));
        assert_int_equal(json_object_get_int64(v), 5999999);
        assert_true(json_object_object_get_ex(e, "created_usec", &v));
        assert_int_equal((uint64_t) json_object_get_int64(v), NOW - 190 * USEC_PER_SEC);
        assert_true(json_object_object_get_ex(e, "uid", &v));
        assert_int_equal(json_object_get_int64(v), 61234);
        json_object_put(parsed);
        sd_bus_message_unref(m);
}

/* READ refuses the reply M, and returns no workers; takes M. */
static void assert_list_refused(sd_bus_message *m, int (*read)(sd_bus_message *, WorkerEntry **, size_t *)) {
        WorkerEntry *workers = NULL;
        size_t n;

        assert_int_equal(test_message_seal(m), 0);
        assert_true(read(m, &workers, &n) < 0);
        assert_null(workers);
        sd_bus_message_unref(m);
}

static void test_list_ex_wrong_shape(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "ListWorkersEx");

        /* An entry without Id or State is no worker. */
        assert_true(sd_bus_message_append(m, "aa{sv}", 1, 1, "Class", "s", "trusted") >= 0);
        assert_list_refused(m, worker_list_ex_read);
}

static void assert_duration(uint64_t usec, const char *expected) {
        char buf[16];
        format_short_duration(buf, sizeof(buf), usec);
        assert_string_equal(buf, expected);
}

static void assert_bytes(uint64_t bytes, const char *expected) {
        char buf[16];
        format_bytes(buf, sizeof(buf), bytes);
        assert_string_equal(buf, expected);
}

static void test_formats(void **state) {
        assert_duration(0, "0s");
        assert_duration(999999, "0s");
        assert_duration(5 * USEC_PER_SEC, "5s");
        assert_duration(59 * USEC_PER_SEC + 999999, "59s");
        assert_duration(60 * USEC_PER_SEC, "1min");
        assert_duration(3599 * USEC_PER_SEC, "59min");
        assert_duration(3600 * USEC_PER_SEC, "1h");
        assert_duration(86399 * USEC_PER_SEC, "23h");
        assert_duration(86400 * USEC_PER_SEC * 400, "400d");
        assert_duration(UINT64_MAX, "213503982d");

        assert_bytes(0, "0B");
        assert_bytes(1023, "1023B");
        assert_bytes(1024, "1.0K");
        assert_bytes(1536, "1.5K");
        assert_bytes(10 * 1024 - 1, "9.9K");
        assert_bytes(10 * 1024, "10K");
        assert_bytes(1024 * 1024 - 1, "1023K");
        assert_bytes(256 * 1024 * 1024, "256M");
        assert_bytes(UINT64_C(3) << 30, "3.0G");
        assert_bytes(UINT64_C(5) << 40, "5.0T");
        assert_bytes(UINT64_MAX, "15E");
}

static void test_states(void **state) {
        char *bad = NULL;
        unsigned mask = 0;

        assert_int_equal(worker_states_parse("running", &mask, &bad), 0);
        assert_int_equal(mask, 1u << 1);
        assert_int_equal(worker_states_parse("ended,starting", &mask, &bad), 0);
        assert_true(worker_states_match(mask, "ended"));
        assert_true(worker_states_match(mask, "starting"));
        assert_false(worker_states_match(mask, "running"));
        assert_false(worker_states_match(mask, NULL));
        assert_false(worker_states_match(WORKER_STATES_ALL, "failed"));
        assert_true(worker_states_match(WORKER_STATES_ALIVE, "stopping"));
        assert_false(worker_states_match(WORKER_STATES_ALIVE, "ended"));

        assert_int_equal(worker_states_parse("running,failed", &mask, &bad), -EINVAL);
        assert_string_equal(bad, "failed");
        free(bad);
        bad = NULL;
        assert_int_equal(worker_states_parse(",", &mask, &bad), -EINVAL);
        free(bad);
}

static void test_list_json_empty(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "ListWorkers");
        _cleanup_free_ WorkerEntry *workers = NULL;
        _cleanup_free_ char *text = NULL;
        json_object *o;
        size_t n = 99;

        assert_true(sd_bus_message_append(m, "a(ssssuuo)", 0) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(worker_list_read(m, &workers, &n), 0);
        assert_int_equal(n, 0);
        o = worker_list_to_json(workers, n);
        text = json_text(o);
        assert_string_equal(text, "[\n]\n");
        sd_bus_message_unref(m);
}

static void test_list_wrong_shape(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "ListWorkers");

        assert_true(sd_bus_message_append(m, "a(ss)", 1, "a", "b") >= 0);
        assert_list_refused(m, worker_list_read);
}


static void test_preflight(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "Preflight");
        _cleanup_free_ PreflightEntry *entries = NULL;
        _cleanup_free_ char *text = NULL, *table = NULL;
        json_object *o, *parsed, *v;
        Table *t;
        size_t n;

        assert_true(sd_bus_message_append(m, "a(sssbs)", 2,
                                          "trusted", "systemd", "/usr/lib/systemd/systemd", 1, "",
                                          "hostile", "kata", "", 0, "kata-runtime not found") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(preflight_read(m, &entries, &n), 0);
        assert_int_equal(n, 2);

        o = preflight_to_json(entries, n);
        text = json_text(o);
        parsed = json_tokener_parse(text);
        assert_int_equal(json_object_array_length(parsed), 2);
        assert_true(json_object_object_get_ex(json_object_array_get_idx(parsed, 0), "available", &v));
        assert_true(json_object_is_type(v, json_type_boolean));
        assert_true(json_object_get_boolean(v));
        assert_true(json_object_object_get_ex(json_object_array_get_idx(parsed, 1), "available", &v));
        assert_false(json_object_get_boolean(v));
        assert_json_string(json_object_array_get_idx(parsed, 1), "reason", "kata-runtime not found");
        json_object_put(parsed);

        t = preflight_to_table(entries, n);
        table = table_text(t);
        assert_string_equal(table,
                            "CLASS   RUNTIME PATH                     AVAILABLE REASON\n"
                            "trusted systemd /usr/lib/systemd/systemd yes       -\n"
                            "hostile kata    -                        no        kata-runtime not found\n");
        sd_bus_message_unref(m);
}

static int print_walls(const void *walls, FILE *f) {
        return preflight_walls_print(walls, 2, f);
}

/* The walls the daemon verified come after the classes: a field each in
 * --json, a "wall: verdict (detail)" line each in the table output. */
static void test_preflight_walls(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "Preflight");
        _cleanup_free_ PreflightEntry *entries = NULL;
        _cleanup_free_ PreflightWall *walls = NULL;
        _cleanup_free_ char *text = NULL, *lines = NULL;
        json_object *o, *parsed, *v, *w;
        size_t n, n_walls;

        assert_true(sd_bus_message_append(m, "a(sssbs)", 1, "trusted", "systemd", "systemd", 0,
                                          "Isolation class trusted refused: the network namespace is PID 1's") >= 0);
        assert_true(sd_bus_message_append(m, "a(sbs)", 2,
                                          "namespaces", 0, "the network namespace is PID 1's (net=4:1)",
                                          "ip-firewall", 0, "a loopback connection got through IPAddressDeny=any") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(preflight_read(m, &entries, &n), 0);
        assert_int_equal(preflight_walls_read(m, &walls, &n_walls), 0);
        assert_int_equal(n, 1);
        assert_int_equal(n_walls, 2);

        o = preflight_report_to_json(entries, n, walls, n_walls);
        text = json_text(o);
        parsed = json_tokener_parse(text);
        assert_true(json_object_object_get_ex(parsed, "classes", &v));
        assert_int_equal(json_object_array_length(v), 1);
        assert_true(json_object_object_get_ex(parsed, "walls", &v));
        assert_int_equal(json_object_array_length(v), 2);
        w = json_object_array_get_idx(v, 1);
        assert_json_string(w, "wall", "ip-firewall");
        assert_true(json_object_object_get_ex(w, "verified", &v));
        assert_true(json_object_is_type(v, json_type_boolean));
        assert_false(json_object_get_boolean(v));
        assert_json_string(w, "detail", "a loopback connection got through IPAddressDeny=any");
        json_object_put(parsed);

        lines = capture(print_walls, walls);
        assert_string_equal(lines,
                            "namespaces: NOT verified (the network namespace is PID 1's (net=4:1))\n"
                            "ip-firewall: unavailable (a loopback connection got through IPAddressDeny=any)\n");
        sd_bus_message_unref(m);

        /* An older daemon's reply has no walls: none, not an error. */
        m = test_message_new(f->bus, "Preflight");
        assert_true(sd_bus_message_append(m, "a(sssbs)", 0) >= 0);
        assert_int_equal(test_message_seal(m), 0);
        free(entries);
        entries = NULL;
        assert_int_equal(preflight_read(m, &entries, &n), 0);
        free(walls);
        walls = NULL;
        assert_int_equal(preflight_walls_read(m, &walls, &n_walls), 0);
        assert_int_equal(n_walls, 0);
        sd_bus_message_unref(m);
}

static void test_status_properties(void **state) {
        Fixture *f = *state;
        sd_bus_message *m = test_message_new(f->bus, "GetAll");
        _cleanup_free_ char *text = NULL;
        json_object *o = NULL, *v;

        assert_true(sd_bus_message_append(m, "a{sv}", 8,
                                          "Id", "s", "0123456789ab",
                                          "State", "s", "ended",
                                          "Result", "s", "idle",
                                          "EndedUSec", "t", (uint64_t) 0,
                                          "UID", "u", (uint32_t) 61234,
                                          "ExitStatus", "i", (int32_t) -1,
                                          "IdleTimeoutUSec", "t", (uint64_t) 600 * USEC_PER_SEC,
                                          "Extra", "as", 1, "x") >= 0);
        assert_int_equal(test_message_seal(m), 0);
        assert_int_equal(properties_to_json(m, &o), 0);

        assert_json_string(o, "State", "ended");
        assert_json_string(o, "Result", "idle");
        assert_true(json_object_object_get_ex(o, "ExitStatus", &v));
        assert_int_equal(json_object_get_int64(v), -1);
        assert_true(json_object_object_get_ex(o, "IdleTimeoutUSec", &v));
        assert_int_equal(json_object_get_uint64(v), 600 * USEC_PER_SEC);
        /* Non-basic values are skipped, not misread. */
        assert_false(json_object_object_get_ex(o, "Extra", NULL));

        text = capture(print_properties, o);
        assert_non_null(strstr(text, "             Id: 0123456789ab\n"));
        assert_non_null(strstr(text, "          State: ended\n"));
        assert_non_null(strstr(text, "         Result: idle\n"));
        /* A moment, not a duration. */
        assert_non_null(strstr(text, "      EndedUSec: 0 (n/a)\n"));
        assert_non_null(strstr(text, "     ExitStatus: -1\n"));
        assert_non_null(strstr(text, "IdleTimeoutUSec: 600000000 (10min)\n"));
        json_object_put(o);
        sd_bus_message_unref(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_list_legacy_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_json_empty, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_wrong_shape, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_ex, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_ex_wrong_shape, setup, teardown),
                cmocka_unit_test(test_formats),
                cmocka_unit_test(test_states),
                cmocka_unit_test_setup_teardown(test_preflight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_preflight_walls, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_properties, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
