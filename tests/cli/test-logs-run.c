/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* logs_run() against a fake ReadWorkerLog on a direct connection served from
 * a thread: paging by cursor past the daemon's page size, -n across pages,
 * -f until the end entry, and the daemon's refusal. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/socket.h>

#include "sandboxctl-logs.h"
#include "util.h"

typedef struct Fake {
        sd_bus *bus;
        pthread_t thread;
        int stop[2];                    /* written to end the thread */
        unsigned n_entries;             /* what the journal holds now */
        unsigned grow_to;               /* -f: after each call with nothing new, one more, up to this */
        bool refuse;
        unsigned calls;
        unsigned empty_calls;
} Fake;

static int method_read_worker_log(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Fake *f = userdata;
        const char *id, *cursor;
        unsigned start = 0, n;
        uint32_t max;
        int egress;
        char next[32];

        f->calls++;
        assert_true(sd_bus_message_read(m, "ssbu", &id, &cursor, &egress, &max) >= 0);
        if (f->refuse)
                return sd_bus_error_set(error, "org.sandboxd1.Error.NoSuchWorker", "No worker with id");
        assert_string_equal(id, "0123456789ab");
        assert_true(max > 0 && max <= LOGS_PAGE_SIZE);
        if (*cursor)
                assert_int_equal(sscanf(cursor, "c=%u", &start), 1), start++;
        n = start < f->n_entries ? MIN(f->n_entries - start, max) : 0;
        if (n == 0 && f->n_entries < f->grow_to) {
                f->empty_calls++;
                f->n_entries++;
        }
        assert_true(sd_bus_message_new_method_return(m, &reply) >= 0);
        assert_true(sd_bus_message_open_container(reply, 'a', "(tsuss)") >= 0);
        for (unsigned i = start; i < start + n; i++) {
                char msg[32];
                bool last = i + 1 == f->grow_to;
                snprintf(msg, sizeof(msg), "entry %u", i);
                assert_true(sd_bus_message_append(reply, "(tsuss)", (uint64_t) 1764580801000000 + i, "sandboxd", 6,
                                                  last ? "ended" : "", msg) >= 0);
        }
        assert_true(sd_bus_message_close_container(reply) >= 0);
        if (n > 0)
                snprintf(next, sizeof(next), "c=%u", start + n - 1);
        else
                snprintf(next, sizeof(next), "%s", cursor);
        assert_true(sd_bus_message_append(reply, "s", next) >= 0);
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("ReadWorkerLog", "ssbu", "a(tsuss)s", method_read_worker_log, 0),
        SD_BUS_VTABLE_END
};

static void *serve(void *userdata) {
        Fake *f = userdata;

        for (;;) {
                struct pollfd pfd[2] = {
                        { .fd = sd_bus_get_fd(f->bus), .events = (short) sd_bus_get_events(f->bus) },
                        { .fd = f->stop[0], .events = POLLIN },
                };
                int r;

                while ((r = sd_bus_process(f->bus, NULL)) > 0)
                        ;
                if (r < 0 || poll(pfd, 2, -1) < 0 || pfd[1].revents)
                        return NULL;
        }
}

/* Starts the fake; returns the client's end. */
static sd_bus *fake_start(Fake *f) {
        sd_bus *client = NULL;
        sd_id128_t server_id;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(f->stop, O_CLOEXEC), 0);
        assert_true(sd_bus_new(&f->bus) >= 0);
        assert_true(sd_bus_set_fd(f->bus, sv[0], sv[0]) >= 0);
        assert_true(sd_id128_randomize(&server_id) >= 0);
        assert_true(sd_bus_set_server(f->bus, true, server_id) >= 0);
        assert_true(sd_bus_add_object_vtable(f->bus, NULL, "/org/sandboxd1", "org.sandboxd1.Manager", manager_vtable,
                                             f) >= 0);
        assert_true(sd_bus_start(f->bus) >= 0);
        assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
        assert_true(sd_bus_new(&client) >= 0);
        assert_true(sd_bus_set_fd(client, sv[1], sv[1]) >= 0);
        assert_true(sd_bus_start(client) >= 0);
        return client;
}

static void fake_stop(Fake *f, sd_bus *client) {
        sd_bus_flush_close_unref(client);
        assert_int_equal(write(f->stop[1], "x", 1), 1);
        assert_int_equal(pthread_join(f->thread, NULL), 0);
        sd_bus_flush_close_unref(f->bus);
        close(f->stop[0]);
        close(f->stop[1]);
}

/* Runs logs_run with ARGS against F; returns what it printed. */
static char *run_logs(Fake *f, LogsArgs *args, int *ret_r, char **ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *client = fake_start(f);
        char *buf = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);

        assert_non_null(out);
        args->id = "0123456789ab";
        *ret_r = logs_run(client, args, out, -1, &error);
        fclose(out);
        fake_stop(f, client);
        if (ret_error)
                *ret_error = error.name ? strdup(error.name) : NULL;
        return buf;
}

static unsigned count_lines(const char *s) {
        unsigned n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static void test_pages_past_the_daemons_limit(void **state) {
        Fake f = { .n_entries = 2500, .grow_to = 2500 };
        LogsArgs a = { .lines = UINT64_MAX, .legend = false };
        _cleanup_free_ char *out = NULL;
        int r;

        out = run_logs(&f, &a, &r, NULL);
        assert_int_equal(r, 0);
        assert_int_equal(count_lines(out), 2500);
        assert_non_null(strstr(out, " sandboxd: entry 0\n"));
        assert_non_null(strstr(out, " sandboxd: entry 999\n2025-12-01T09:20:01.001000+0000 sandboxd: entry 1000\n"));
        assert_non_null(strstr(out, " sandboxd: entry 2499\n"));
        /* 1000 + 1000 + 500, then one that finds nothing new. */
        assert_int_equal(f.calls, 4);
}

static void test_lines_across_pages(void **state) {
        Fake f = { .n_entries = 2500, .grow_to = 2500 };
        LogsArgs a = { .lines = 3, .legend = true };
        _cleanup_free_ char *out = NULL;
        int r;

        out = run_logs(&f, &a, &r, NULL);
        assert_int_equal(r, 0);
        assert_string_equal(strchr(out, ' '), " sandboxd: entry 2497\n" "2025-12-01T09:20:01.002498+0000 sandboxd: entry 2498\n"
                                              "2025-12-01T09:20:01.002499+0000 sandboxd: entry 2499\n");
}

static void test_empty_and_json(void **state) {
        Fake f = { 0 };
        LogsArgs a = { .lines = UINT64_MAX, .legend = true };
        _cleanup_free_ char *out = NULL, *json = NULL;
        int r;

        out = run_logs(&f, &a, &r, NULL);
        assert_int_equal(r, 0);
        assert_string_equal(out, "-- No entries --\n");
        f = (Fake) { .n_entries = 2, .grow_to = 2 };
        a = (LogsArgs) { .lines = UINT64_MAX, .legend = true, .json = true };
        json = run_logs(&f, &a, &r, NULL);
        assert_int_equal(r, 0);
        assert_string_equal(json, "{\"timestamp_usec\":1764580801000000,\"source\":\"sandboxd\",\"priority\":6,"
                                  "\"event\":\"\",\"message\":\"entry 0\"}\n"
                                  "{\"timestamp_usec\":1764580801000001,\"source\":\"sandboxd\",\"priority\":6,"
                                  "\"event\":\"ended\",\"message\":\"entry 1\"}\n");
}

/* The journal grows by one entry each time -f finds nothing new; the last is
 * sandboxd's end: -f prints all of them and stops after one more look. */
static void test_follow_until_the_end(void **state) {
        Fake f = { .n_entries = 2, .grow_to = 5 };
        LogsArgs a = { .lines = UINT64_MAX, .legend = true, .follow = true };
        _cleanup_free_ char *out = NULL;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r;

        out = run_logs(&f, &a, &r, NULL);
        assert_int_equal(r, 0);
        assert_int_equal(count_lines(out), 6);
        assert_non_null(strstr(out, " sandboxd: entry 4\n-- Worker 0123456789ab has ended --\n"));
        assert_int_equal(f.empty_calls, 3);
        /* It waited between looks rather than spinning: three waits for the
         * growth, one after the end. */
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 4 * LOGS_FOLLOW_INTERVAL_USEC);
        assert_true(f.calls <= 12);
}

static void test_refused(void **state) {
        Fake f = { .refuse = true };
        LogsArgs a = { .lines = UINT64_MAX, .legend = true };
        _cleanup_free_ char *out = NULL, *name = NULL;
        int r;

        out = run_logs(&f, &a, &r, &name);
        assert_true(r < 0);
        assert_string_equal(name, "org.sandboxd1.Error.NoSuchWorker");
        assert_string_equal(out, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pages_past_the_daemons_limit),
                cmocka_unit_test(test_lines_across_pages),
                cmocka_unit_test(test_empty_and_json),
                cmocka_unit_test(test_follow_until_the_end),
                cmocka_unit_test(test_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
