/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The probe unit's lifecycle without a systemd: a peer on a socketpair plays
 * systemd's StartTransientUnit, so the unit's name and properties, the start
 * error and the output read from the pipe after JobRemoved are checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <systemd/sd-id128.h>

#include "probe-unit.h"
#include "util.h"

#define START_ERROR "org.freedesktop.systemd1.UnitExists"

typedef struct FakeSystemd {
        sd_bus *client, *server;
        sd_bus_slot *filter;
        bool refuse;            /* answer StartTransientUnit with START_ERROR */
        bool called;
        char unit[64], mode[16];
        char properties[1024];  /* the property names, each followed by ' ' */
        char std_error[16];
        int output_fd;          /* the peer's copy of StandardOutputFileDescriptor */
} FakeSystemd;

typedef struct Answer {
        unsigned n_calls;
        char start_error[128];
        char result[32];
        char output[4200];
        bool had_output;
        char unit[64];
} Answer;

static int on_start_transient_unit(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        FakeSystemd *f = userdata;
        const char *unit, *mode, *name;
        int r;

        if (!sd_bus_message_is_method_call(msg, "org.freedesktop.systemd1.Manager", "StartTransientUnit"))
                return 0;
        f->called = true;
        r = sd_bus_message_read(msg, "ss", &unit, &mode);
        if (r < 0)
                return r;
        snprintf(f->unit, sizeof(f->unit), "%s", unit);
        snprintf(f->mode, sizeof(f->mode), "%s", mode);
        r = sd_bus_message_enter_container(msg, 'a', "(sv)");
        while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'r', "sv")) > 0) {
                const char *contents, *s;
                int fd;

                r = sd_bus_message_read(msg, "s", &name);
                if (r >= 0)
                        r = sd_bus_message_peek_type(msg, NULL, &contents);
                if (r < 0)
                        return r;
                strncat(f->properties, name, sizeof(f->properties) - strlen(f->properties) - 2);
                strcat(f->properties, " ");
                if (streq(name, "StandardOutputFileDescriptor")) {
                        r = sd_bus_message_read(msg, "v", "h", &fd);
                        if (r >= 0)
                                f->output_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                } else if (streq(name, "StandardError")) {
                        r = sd_bus_message_read(msg, "v", "s", &s);
                        if (r >= 0)
                                snprintf(f->std_error, sizeof(f->std_error), "%s", s);
                } else
                        r = sd_bus_message_skip(msg, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
        }
        if (r < 0)
                return r;
        if (f->refuse)
                return sd_bus_reply_method_errorf(msg, START_ERROR, "Unit %s already exists.", unit);
        return sd_bus_reply_method_return(msg, "o", "/org/freedesktop/systemd1/job/1");
}

/* Runs both ends until DONE says so; five seconds with nothing to do on
 * either socket is a failure. */
static void pump_until(FakeSystemd *f, bool (*done)(void *userdata), void *userdata) {
        while (!done(userdata)) {
                int r1 = sd_bus_process(f->client, NULL), r2 = sd_bus_process(f->server, NULL);
                struct pollfd p[2];

                assert_true(r1 >= 0 && r2 >= 0);
                if (r1 > 0 || r2 > 0)
                        continue;
                p[0] = (struct pollfd) { sd_bus_get_fd(f->client), (short) sd_bus_get_events(f->client), 0 };
                p[1] = (struct pollfd) { sd_bus_get_fd(f->server), (short) sd_bus_get_events(f->server), 0 };
                assert_true(poll(p, 2, 5000) > 0);
        }
}

static bool both_ready(void *userdata) {
        FakeSystemd *f = userdata;
        return sd_bus_is_ready(f->client) > 0 && sd_bus_is_ready(f->server) > 0;
}

static bool start_called(void *userdata) {
        return ((FakeSystemd *) userdata)->called;
}

static bool answered(void *userdata) {
        return ((Answer *) userdata)->n_calls > 0;
}

static int fake_systemd_setup(void **state) {
        FakeSystemd *f = calloc(1, sizeof(*f));
        sd_id128_t id;
        int sv[2];

        assert_non_null(f);
        f->output_fd = -1;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_bus_new(&f->server), 0);
        assert_int_equal(sd_bus_set_fd(f->server, sv[1], sv[1]), 0);
        assert_int_equal(sd_bus_set_server(f->server, 1, id), 0);
        assert_int_equal(sd_bus_negotiate_fds(f->server, 1), 0);
        assert_int_equal(sd_bus_add_filter(f->server, &f->filter, on_start_transient_unit, f), 0);
        assert_int_equal(sd_bus_start(f->server), 0);
        assert_int_equal(sd_bus_new(&f->client), 0);
        assert_int_equal(sd_bus_set_fd(f->client, sv[0], sv[0]), 0);
        assert_int_equal(sd_bus_negotiate_fds(f->client, 1), 0);
        assert_int_equal(sd_bus_start(f->client), 0);
        /* sd-bus blocks a send until it knows whether fds can pass. */
        pump_until(f, both_ready, f);
        *state = f;
        return 0;
}

static int fake_systemd_teardown(void **state) {
        FakeSystemd *f = *state;

        sd_bus_slot_unref(f->filter);
        sd_bus_flush_close_unref(f->client);
        sd_bus_flush_close_unref(f->server);
        safe_close(f->output_fd);
        free(f);
        return 0;
}

static int append_extra(sd_bus_message *msg, void *userdata) {
        return sd_bus_message_append(msg, "(sv)", "DynamicUser", "b", 1);
}

static void on_done(ProbeUnit *u, const sd_bus_error *start_error, const char *result, const char *output,
                    void *userdata) {
        Answer *a = userdata;

        a->n_calls++;
        snprintf(a->unit, sizeof(a->unit), "%s", probe_unit_name(u));
        if (start_error)
                snprintf(a->start_error, sizeof(a->start_error), "%s", start_error->name);
        if (result)
                snprintf(a->result, sizeof(a->result), "%s", result);
        a->had_output = output != NULL;
        if (output)
                snprintf(a->output, sizeof(a->output), "%s", output);
}

static ProbeUnit *start_probe(FakeSystemd *f, Answer *a) {
        const char *argv[] = { "/usr/libexec/sandboxd/sandbox-walls", "probe", NULL };
        const ProbeUnitParams params = {
                .kind = "walls",
                .description = "a test probe",
                .timeout_usec = 30 * USEC_PER_SEC,
                .path = argv[0],
                .argv = (char **) argv,
                .append = append_extra,
                .done = on_done,
                .userdata = a,
        };
        ProbeUnit *u = NULL;

        assert_int_equal(probe_unit_start(f->client, &params, &u), 0);
        assert_non_null(u);
        pump_until(f, start_called, f);
        return u;
}

static void test_unit_and_output(void **state) {
        FakeSystemd *f = *state;
        Answer a = {};
        ProbeUnit *u = start_probe(f, &a);
        const char *name = probe_unit_name(u);

        /* sandbox-probe-walls-<8 hex>.service, started with mode fail */
        assert_int_equal(strlen(name), strlen("sandbox-probe-walls-") + 8 + strlen(".service"));
        assert_true(startswith(name, "sandbox-probe-walls-"));
        assert_int_equal(strspn(name + strlen("sandbox-probe-walls-"), "0123456789abcdef"), 8);
        assert_string_equal(f->unit, name);
        assert_string_equal(f->mode, "fail");
        /* The pipe, stderr to the journal, the oneshot helper, then the caller's own. */
        assert_string_equal(f->properties, "StandardOutputFileDescriptor StandardError Description Type CollectMode "
                                           "PrivateNetwork TimeoutStartUSec InaccessiblePaths ExecStart DynamicUser ");
        assert_string_equal(f->std_error, "journal");
        assert_true(f->output_fd >= 0);

        /* The successful start reply (written by the time the call was
         * seen) is no answer yet. */
        for (int r = 1; r > 0;)
                assert_true((r = sd_bus_process(f->client, NULL)) >= 0);
        assert_int_equal(a.n_calls, 0);

        assert_int_equal(write(f->output_fd, "unit net=4:1\n", 13), 13);
        assert_int_equal(write(f->output_fd, "host net=4:2\n", 13), 13);
        f->output_fd = safe_close(f->output_fd);
        assert_false(probe_unit_job_removed(u, "sandbox-probe-walls-00000000.service", "done"));
        assert_false(probe_unit_job_removed(NULL, name, "done"));
        assert_int_equal(a.n_calls, 0);
        assert_true(probe_unit_job_removed(u, name, "failed"));
        assert_int_equal(a.n_calls, 1);
        assert_string_equal(a.unit, name);
        assert_string_equal(a.start_error, "");
        assert_string_equal(a.result, "failed");
        assert_string_equal(a.output, "unit net=4:1\nhost net=4:2\n");
        probe_unit_free(u);
}

static void test_no_output(void **state) {
        FakeSystemd *f = *state;
        Answer a = {};
        ProbeUnit *u = start_probe(f, &a);

        /* The unit never wrote, and its writer is still open: no blocking read. */
        assert_true(probe_unit_job_removed(u, probe_unit_name(u), "timeout"));
        assert_int_equal(a.n_calls, 1);
        assert_true(a.had_output);
        assert_string_equal(a.output, "");
        assert_string_equal(a.result, "timeout");
        probe_unit_free(u);
}

static void test_long_output_bounded(void **state) {
        FakeSystemd *f = *state;
        Answer a = {};
        ProbeUnit *u = start_probe(f, &a);
        char big[5000];

        memset(big, 'x', sizeof(big));
        assert_int_equal(write(f->output_fd, big, sizeof(big)), (ssize_t) sizeof(big));
        assert_true(probe_unit_job_removed(u, probe_unit_name(u), "done"));
        assert_int_equal(strlen(a.output), 4095);
        probe_unit_free(u);
}

static void test_start_error(void **state) {
        FakeSystemd *f = *state;
        Answer a = {};
        ProbeUnit *u;

        f->refuse = true;
        u = start_probe(f, &a);
        pump_until(f, answered, &a);
        assert_int_equal(a.n_calls, 1);
        assert_string_equal(a.start_error, START_ERROR);
        assert_string_equal(a.result, "");
        assert_false(a.had_output);
        probe_unit_free(u);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_unit_and_output, fake_systemd_setup, fake_systemd_teardown),
                cmocka_unit_test_setup_teardown(test_no_output, fake_systemd_setup, fake_systemd_teardown),
                cmocka_unit_test_setup_teardown(test_long_output_bounded, fake_systemd_setup, fake_systemd_teardown),
                cmocka_unit_test_setup_teardown(test_start_error, fake_systemd_setup, fake_systemd_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
