/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* unit-stop.c without a systemd: as in test-unit-drop.c, a peer on a
 * socketpair plays systemd's StopUnit, and also the bus daemon that refuses
 * a call (LimitsExceeded, as dbus-daemon answers past max_replies) as many
 * times as the test says. A refused stop is asked again until systemd takes
 * it, the unit is removed, its owner cancels it, or the give-up time passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <systemd/sd-id128.h>

#include "unit-stop.h"
#include "test-bus.h"
#include "util.h"

#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

typedef struct Fake {
        sd_event *event;
        sd_bus *client, *server;
        sd_bus_slot *filter;
        unsigned refuse;        /* how many StopUnit calls to refuse before answering */
        bool refuse_all;
        bool deny;              /* answer as systemd does a caller it will not obey */
        bool hold;              /* answer nothing: calls stay in flight */
        char loaded[64];        /* the one unit the fake systemd has; others are NoSuchUnit */
        char stopped[512];      /* the units StopUnit was called for, each followed by ' ' */
        unsigned n_stops;
        uint64_t stop_at[16];   /* monotonic time of each call */
        UnitStops *stops;
} Fake;

static int on_server_message(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Fake *f = userdata;
        const char *unit, *mode;
        int r;

        if (!sd_bus_message_is_method_call(msg, SYSTEMD_MANAGER, "StopUnit"))
                return 0;
        r = sd_bus_message_read(msg, "ss", &unit, &mode);
        if (r < 0)
                return r;
        assert_string_equal(mode, "replace");
        if (f->n_stops < ELEMENTSOF(f->stop_at))
                f->stop_at[f->n_stops] = now_usec(CLOCK_MONOTONIC);
        f->n_stops++;
        strncat(f->stopped, unit, sizeof(f->stopped) - strlen(f->stopped) - 2);
        strcat(f->stopped, " ");
        if (f->hold)
                return 1;
        if (f->deny)
                return sd_bus_reply_method_errorf(msg, "org.freedesktop.DBus.Error.AccessDenied", "Access denied");
        if (f->refuse_all || f->refuse > 0) {
                if (f->refuse > 0)
                        f->refuse--;
                return sd_bus_reply_method_errorf(msg, "org.freedesktop.DBus.Error.LimitsExceeded",
                                                  "The maximum number of pending replies per connection has been reached");
        }
        if (!streq(f->loaded, unit))
                return sd_bus_reply_method_errorf(msg, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.",
                                                  unit);
        return sd_bus_reply_method_return(msg, "o", "/org/freedesktop/systemd1/job/7");
}

static void fake_remove(Fake *f, const char *unit) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(f->server, &m, SYSTEMD_PATH, SYSTEMD_MANAGER, "UnitRemoved"), 0);
        assert_true(sd_bus_message_set_sender(m, "org.freedesktop.systemd1") >= 0);
        assert_true(sd_bus_message_append(m, "so", unit, "/org/freedesktop/systemd1/unit/x") >= 0);
        assert_true(sd_bus_send(f->server, m, NULL) >= 0);
}

/* Runs the loop until COND holds; five seconds without it is a failure. */
static void run_until(Fake *f, bool (*cond)(Fake *f)) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC;

        while (!cond(f)) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                assert_true(sd_event_run(f->event, 100 * USEC_PER_MSEC) >= 0);
        }
}

/* Runs the loop until it has had nothing to do for 300 ms: longer than
 * any retry delay the tests set. */
static void run_idle(Fake *f) {
        while (sd_event_run(f->event, 300 * USEC_PER_MSEC) > 0)
                ;
}

static bool both_ready(Fake *f) {
        return sd_bus_is_ready(f->client) > 0 && sd_bus_is_ready(f->server) > 0;
}

static bool nothing_pending(Fake *f) {
        return !unit_stops_pending(f->stops, "w.service");
}

static bool two_stops(Fake *f) {
        return f->n_stops >= 2;
}

static bool one_stop(Fake *f) {
        return f->n_stops >= 1;
}

static bool x_asked(Fake *f) {
        return strstr(f->stopped, "x.service");
}

static int fake_setup(void **state) {
        Fake *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(test_bus_pair(f->event, on_server_message, f, &f->client, &f->server, &f->filter), 0);
        run_until(f, both_ready);
        assert_int_equal(unit_stops_new(&f->stops, f->client, f->event), 0);
        /* The policy's shape, in milliseconds rather than seconds. */
        unit_stops_set_policy(f->stops, 20 * USEC_PER_MSEC, 60 * USEC_PER_MSEC, 10 * USEC_PER_SEC);
        snprintf(f->loaded, sizeof(f->loaded), "w.service");
        *state = f;
        return 0;
}

static int fake_teardown(void **state) {
        Fake *f = *state;

        unit_stops_free(f->stops);
        sd_bus_slot_unref(f->filter);
        sd_bus_flush_close_unref(f->client);
        sd_bus_flush_close_unref(f->server);
        sd_event_unref(f->event);
        free(f);
        return 0;
}

static void test_retry_delay(void **state) {
        uint64_t step = UNIT_STOP_RETRY_STEP_USEC, max = UNIT_STOP_RETRY_MAX_USEC;

        /* The worker's policy before this helper: 250 ms * attempt, at most 5 s. */
        assert_int_equal(step, 250 * USEC_PER_MSEC);
        assert_int_equal(max, 5 * USEC_PER_SEC);
        assert_int_equal(unit_stop_retry_delay(1, step, max), 250 * USEC_PER_MSEC);
        assert_int_equal(unit_stop_retry_delay(2, step, max), 500 * USEC_PER_MSEC);
        assert_int_equal(unit_stop_retry_delay(19, step, max), 4750 * USEC_PER_MSEC);
        assert_int_equal(unit_stop_retry_delay(20, step, max), 5 * USEC_PER_SEC);
        assert_int_equal(unit_stop_retry_delay(1000, step, max), 5 * USEC_PER_SEC);
        assert_int_equal(unit_stop_retry_delay(0, step, max), 250 * USEC_PER_MSEC);
        assert_true(UNIT_STOP_GIVE_UP_USEC >= 60 * USEC_PER_SEC);
}

static void test_taken_at_once(void **state) {
        Fake *f = *state;

        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_true(unit_stops_pending(f->stops, "w.service"));
        run_until(f, nothing_pending);
        run_idle(f);
        assert_int_equal(f->n_stops, 1);
        assert_string_equal(f->stopped, "w.service ");
}

static void test_no_such_unit_is_done(void **state) {
        Fake *f = *state;

        f->loaded[0] = 0;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", NULL), 0);
        run_until(f, nothing_pending);
        run_idle(f);
        assert_int_equal(f->n_stops, 1);
}

static void test_refused_is_asked_again(void **state) {
        Fake *f = *state;

        f->refuse = 3;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, nothing_pending);
        run_idle(f);
        /* Three refusals, then the job. */
        assert_int_equal(f->n_stops, 4);
        assert_string_equal(f->stopped, "w.service w.service w.service w.service ");
        /* Further apart each time: 20, 40, 60 ms (the cap). */
        assert_true(f->stop_at[1] - f->stop_at[0] >= 20 * USEC_PER_MSEC);
        assert_true(f->stop_at[2] - f->stop_at[1] >= 40 * USEC_PER_MSEC);
        assert_true(f->stop_at[3] - f->stop_at[2] >= 60 * USEC_PER_MSEC);
}

static bool three_stops(Fake *f) {
        return f->n_stops >= 3;
}

/* No more than the cap await their reply; the rest go in order as places
 * free up (here: a cancel). */
static void test_in_flight_cap(void **state) {
        Fake *f = *state;

        unit_stops_set_max_in_flight(f->stops, 2);
        f->hold = true;
        assert_int_equal(unit_stops_stop(f->stops, "a.service", NULL), 0);
        assert_int_equal(unit_stops_stop(f->stops, "b.service", NULL), 0);
        assert_int_equal(unit_stops_stop(f->stops, "c.service", NULL), 0);
        assert_int_equal(unit_stops_stop(f->stops, "d.service", NULL), 0);
        run_until(f, two_stops);
        run_idle(f);
        assert_string_equal(f->stopped, "a.service b.service ");
        assert_true(unit_stops_pending(f->stops, "c.service"));
        assert_int_equal(unit_stops_attempts(f->stops, "c.service"), 0);
        unit_stops_cancel(f->stops, "a.service");
        run_until(f, three_stops);
        run_idle(f);
        assert_string_equal(f->stopped, "a.service b.service c.service ");
        assert_int_equal(unit_stops_attempts(f->stops, "d.service"), 0);
}

/* systemd's own refusal is the same the next time: logged, not asked again. */
static void test_denied_is_not_asked_again(void **state) {
        Fake *f = *state;

        f->deny = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, nothing_pending);
        run_idle(f);
        assert_int_equal(f->n_stops, 1);
}

static void test_transient_errors(void **state) {
        assert_true(unit_stop_error_transient("org.freedesktop.DBus.Error.LimitsExceeded"));
        assert_true(unit_stop_error_transient("org.freedesktop.DBus.Error.NoReply"));
        assert_true(unit_stop_error_transient("org.freedesktop.DBus.Error.Timeout"));
        assert_false(unit_stop_error_transient("org.freedesktop.DBus.Error.AccessDenied"));
        assert_false(unit_stop_error_transient("org.freedesktop.DBus.Error.InvalidArgs"));
        assert_false(unit_stop_error_transient("org.freedesktop.systemd1.NoSuchUnit"));
        assert_false(unit_stop_error_transient(NULL));
}

static void test_second_stop_coalesces(void **state) {
        Fake *f = *state;

        f->hold = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_int_equal(unit_stops_stop(f->stops, "w.service", NULL), 0);
        run_until(f, one_stop);
        run_idle(f);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(unit_stops_attempts(f->stops, "w.service"), 1);
        /* A retry waiting counts as pending too. */
        unit_stops_cancel(f->stops, "w.service");
        f->hold = false;
        f->refuse_all = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, two_stops);
        assert_true(unit_stops_pending(f->stops, "w.service"));
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_int_equal(unit_stops_attempts(f->stops, "w.service"), 1);
        /* Another unit is its own stop. */
        assert_int_equal(unit_stops_stop(f->stops, "other.service", NULL), 0);
        assert_true(unit_stops_pending(f->stops, "other.service"));
        /* Once one is over, a new stop of the unit is a new call. */
        f->refuse_all = false;
        run_until(f, nothing_pending);
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_int_equal(unit_stops_attempts(f->stops, "w.service"), 1);
        run_until(f, nothing_pending);
}

static void test_gives_up(void **state) {
        Fake *f = *state;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        unsigned n;

        f->refuse_all = true;
        unit_stops_set_policy(f->stops, 20 * USEC_PER_MSEC, 40 * USEC_PER_MSEC, 200 * USEC_PER_MSEC);
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, nothing_pending);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 200 * USEC_PER_MSEC);
        assert_true(f->n_stops >= 3);
        n = f->n_stops;
        run_idle(f);
        assert_int_equal(f->n_stops, n);
}

static void test_cancel_ends_retry(void **state) {
        Fake *f = *state;

        f->refuse_all = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, two_stops);
        /* The worker's unit ended by itself: no more asking. */
        unit_stops_cancel(f->stops, "w.service");
        assert_false(unit_stops_pending(f->stops, "w.service"));
        f->n_stops = 0;
        run_idle(f);
        assert_int_equal(f->n_stops, 0);
        unit_stops_cancel(f->stops, "never-asked.service");
}

static void test_unit_removed_ends_retry(void **state) {
        Fake *f = *state;

        f->refuse_all = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        assert_int_equal(unit_stops_stop(f->stops, "x.service", NULL), 0);
        run_until(f, two_stops);
        /* systemd collected it: a later stop could only meet a new unit of the name. */
        fake_remove(f, "w.service");
        run_until(f, nothing_pending);
        assert_true(unit_stops_pending(f->stops, "x.service"));
        f->n_stops = 0;
        f->stopped[0] = 0;
        unit_stops_set_policy(f->stops, 20 * USEC_PER_MSEC, 20 * USEC_PER_MSEC, 10 * USEC_PER_SEC);
        run_until(f, x_asked);
        assert_null(strstr(f->stopped, "w.service"));
}

static void test_free_while_pending(void **state) {
        Fake *f = *state;

        f->refuse_all = true;
        assert_int_equal(unit_stops_stop(f->stops, "w.service", "w"), 0);
        run_until(f, one_stop);
        f->hold = true;
        assert_int_equal(unit_stops_stop(f->stops, "x.service", NULL), 0);
        run_until(f, x_asked);
        /* A retry timer and a call in flight: nothing may call back after. */
        f->stops = unit_stops_free(f->stops);
        f->n_stops = 0;
        run_idle(f);
        assert_int_equal(f->n_stops, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_retry_delay),
                cmocka_unit_test_setup_teardown(test_taken_at_once, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_no_such_unit_is_done, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_refused_is_asked_again, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_denied_is_not_asked_again, fake_setup, fake_teardown),
                cmocka_unit_test(test_transient_errors),
                cmocka_unit_test_setup_teardown(test_in_flight_cap, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_second_stop_coalesces, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_gives_up, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_cancel_ends_retry, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_unit_removed_ends_retry, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_free_while_pending, fake_setup, fake_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
