/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* systemd-bus.c on a real bus (the $SANDBOXD_BUS_ADDRESS path, where a fake
 * systemd sits on a dbus-daemon): a signal counts only when its sender is the
 * unique name that owns org.freedesktop.systemd1. One that another client
 * sends straight to sandboxd's unique name is ignored, which a match on the
 * well-known name alone (sandboxd before issue 22) let through. Needs
 * dbus-daemon; skipped (77) without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "systemd-bus.h"
#include "util.h"

#define DBUS_DAEMON "/usr/bin/dbus-daemon"

typedef struct Fixture {
        pid_t daemon;
        char address[512];
        sd_event *event;
        sd_bus *systemd, *sandboxd, *attacker;
        const char *systemd_name;
        unsigned n_checked;             /* signals the match that checks the sender saw */
        unsigned n_unchecked;           /* signals a match on the well-known name saw */
        bool barrier;
} Fixture;

static int open_client(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);

        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        int out[2];
        ssize_t n;

        assert_non_null(f);
        assert_int_equal(pipe(out), 0);
        f->daemon = fork();
        assert_true(f->daemon >= 0);
        if (f->daemon == 0) {
                char fd[32];
                close(out[0]);
                snprintf(fd, sizeof(fd), "--print-address=%d", out[1]);
                execl(DBUS_DAEMON, DBUS_DAEMON, "--session", "--nofork", "--nopidfile",
                      "--address=unix:tmpdir=/tmp", fd, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        n = read(out[0], f->address, sizeof(f->address) - 1);
        close(out[0]);
        assert_true(n > 0);
        f->address[strcspn(f->address, "\n")] = 0;

        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(open_client(f->address, &f->systemd), 0);
        assert_int_equal(open_client(f->address, &f->sandboxd), 0);
        assert_int_equal(open_client(f->address, &f->attacker), 0);
        assert_true(sd_bus_request_name(f->systemd, SYSTEMD_DEST, 0) >= 0);
        assert_int_equal(sd_bus_get_unique_name(f->systemd, &f->systemd_name), 0);
        assert_int_equal(sd_bus_attach_event(f->sandboxd, f->event, 0), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        sd_bus_flush_close_unref(f->attacker);
        sd_bus_flush_close_unref(f->sandboxd);
        sd_bus_flush_close_unref(f->systemd);
        sd_event_unref(f->event);
        kill(f->daemon, SIGTERM);
        (void) waitpid(f->daemon, NULL, 0);
        free(f);
        return 0;
}

static int on_checked(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Fixture *f = userdata;

        assert_string_equal(sd_bus_message_get_sender(m), f->systemd_name);
        f->n_checked++;
        return 0;
}

static int on_unchecked(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ((Fixture *) userdata)->n_unchecked++;
        return 0;
}

static int on_barrier(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ((Fixture *) userdata)->barrier = true;
        return 0;
}

/* What tester did with busctl emit --destination: a systemd signal, sent
 * straight to sandboxd's unique name. */
static void send_forged(Fixture *f, const char *member) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const char *target;

        assert_int_equal(sd_bus_get_unique_name(f->sandboxd, &target), 0);
        assert_int_equal(sd_bus_message_new_signal(f->attacker, &m, SYSTEMD_PATH, SYSTEMD_MANAGER, member), 0);
        assert_int_equal(sd_bus_message_set_destination(m, target), 0);
        assert_true(sd_bus_message_append(m, "b", 0) >= 0);
        assert_true(sd_bus_send(f->attacker, m, NULL) >= 0);
        m = sd_bus_message_unref(m);
        /* Sent after it on the same connection, so delivered after it. */
        assert_int_equal(sd_bus_message_new_signal(f->attacker, &m, "/", "org.sandboxd.Test", "Barrier"), 0);
        assert_int_equal(sd_bus_message_set_destination(m, target), 0);
        assert_true(sd_bus_send(f->attacker, m, NULL) >= 0);
        assert_true(sd_bus_flush(f->attacker) >= 0);
}

static void run_until(Fixture *f, bool *flag) {
        for (unsigned i = 0; !*flag && i < 1000; i++)
                assert_true(sd_event_run(f->event, 5 * USEC_PER_SEC) >= 0);
        assert_true(*flag);
}

static void test_forged_signal_ignored(void **state) {
        Fixture *f = *state;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *checked = NULL, *unchecked = NULL, *barrier = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        bool got_real = false;

        assert_true(systemd_match_signal_async(f->sandboxd, &checked, SYSTEMD_PATH, SYSTEMD_MANAGER, "Reloading",
                                               on_checked, NULL, f) >= 0);
        assert_true(sd_bus_match_signal_async(f->sandboxd, &unchecked, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                              "Reloading", on_unchecked, NULL, f) >= 0);
        assert_true(sd_bus_match_signal(f->sandboxd, &barrier, NULL, "/", "org.sandboxd.Test", "Barrier",
                                        on_barrier, f) >= 0);
        /* A round trip after the AddMatch calls: the bus has them all. */
        assert_true(sd_bus_call_method(f->sandboxd, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetId", &e, NULL, NULL) >= 0);

        send_forged(f, "Reloading");
        run_until(f, &f->barrier);
        assert_int_equal(f->n_checked, 0);
        /* The hole itself, so this test fails if sd-bus ever hides it: the
         * well-known name let the forgery through. */
        assert_int_equal(f->n_unchecked, 1);

        /* The control: systemd's own signal counts. */
        assert_true(sd_bus_emit_signal(f->systemd, SYSTEMD_PATH, SYSTEMD_MANAGER, "Reloading", "b", 0) >= 0);
        assert_true(sd_bus_flush(f->systemd) >= 0);
        for (unsigned i = 0; f->n_checked == 0 && i < 1000; i++)
                assert_true(sd_event_run(f->event, 5 * USEC_PER_SEC) >= 0);
        got_real = f->n_checked == 1;
        assert_true(got_real);
}

/* On a connection that is no bus client (PID 1's private socket, or the
 * socketpairs of the other unit tests) there is no sender to check. */
static void test_private_connection_needs_no_sender(void **state) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(sd_bus_new(&bus), 0);
        assert_int_equal(sd_bus_set_fd(bus, sv[0], sv[0]), 0);
        assert_int_equal(sd_bus_start(bus), 0);
        assert_true(systemd_match_signal_async(bus, &slot, SYSTEMD_PATH, SYSTEMD_MANAGER, "Reloading", on_unchecked,
                                               NULL, NULL) >= 0);
        close(sv[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_forged_signal_ignored, setup, teardown),
                cmocka_unit_test(test_private_connection_needs_no_sender),
        };

        if (access(DBUS_DAEMON, X_OK) < 0) {
                printf("1..0 # SKIP no %s\n", DBUS_DAEMON);
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
