/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* unit-drop.c without a systemd: a peer on a socketpair plays systemd's
 * StopUnit (a job for a loaded unit, NoSuchUnit for one it does not have)
 * and sends UnitRemoved when the test says a unit was collected. The drop is
 * over only once every unit is gone; a stop job alone does not end it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <systemd/sd-id128.h>

#include "unit-drop.h"
#include "unit-stop.h"
#include "test-bus.h"
#include "util.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

typedef struct Fake {
        sd_event *event;
        sd_bus *client, *server;
        sd_bus_slot *filter;
        char loaded[4][64];     /* what the fake systemd has; "" for a free slot */
        char stopped[256];      /* the units StopUnit was called for, each followed by ' ' */
        char modes[64];
        unsigned n_stops;
        unsigned n_reads;       /* GetAll calls: the drop asking whether a unit is gone */
        unsigned n_done;
        bool all_gone;
        unsigned refuse;        /* StopUnit calls to refuse as the bus daemon would, first */
        bool removed_first;     /* the refused unit's UnitRemoved overtakes the refusal */
        UnitDrop *drop;
        UnitStops *stops;
} Fake;

static bool fake_has(Fake *f, const char *unit) {
        for (size_t i = 0; i < ELEMENTSOF(f->loaded); i++)
                if (streq(f->loaded[i], unit))
                        return true;
        return false;
}

static void fake_remove(Fake *f, const char *unit);

static int on_server_message(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Fake *f = userdata;
        const char *unit, *mode;
        int r;

        /* Asked for a unit's state, it says whether it still has it. */
        if (sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.Properties", "GetAll")) {
                _cleanup_free_ char *name = NULL;

                f->n_reads++;
                assert_true(sd_bus_path_decode(sd_bus_message_get_path(msg), "/org/freedesktop/systemd1/unit",
                                               &name) > 0);
                return sd_bus_reply_method_return(msg, "a{sv}", 2, "LoadState", "s",
                                                  fake_has(f, name) ? "loaded" : "not-found", "ActiveState", "s",
                                                  fake_has(f, name) ? "active" : "inactive");
        }
        if (!sd_bus_message_is_method_call(msg, SYSTEMD_MANAGER, "StopUnit"))
                return 0;
        r = sd_bus_message_read(msg, "ss", &unit, &mode);
        if (r < 0)
                return r;
        f->n_stops++;
        strncat(f->stopped, unit, sizeof(f->stopped) - strlen(f->stopped) - 2);
        strcat(f->stopped, " ");
        strncat(f->modes, mode, sizeof(f->modes) - strlen(f->modes) - 2);
        strcat(f->modes, " ");
        if (f->refuse > 0) {
                f->refuse--;
                if (f->removed_first)
                        fake_remove(f, unit);
                return sd_bus_reply_method_errorf(msg, "org.freedesktop.DBus.Error.LimitsExceeded",
                                                  "The maximum number of pending replies per connection has been reached");
        }
        if (!fake_has(f, unit))
                return sd_bus_reply_method_errorf(msg, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.",
                                                  unit);
        return sd_bus_reply_method_return(msg, "o", "/org/freedesktop/systemd1/job/7");
}

/* systemd collected UNIT: UnitRemoved, from systemd's name as a bus would
 * stamp it (a direct connection has no bus to do so). */
static void fake_say_removed(Fake *f, const char *unit);

static void fake_remove(Fake *f, const char *unit) {
        for (size_t i = 0; i < ELEMENTSOF(f->loaded); i++)
                if (streq(f->loaded[i], unit))
                        f->loaded[i][0] = 0;
        fake_say_removed(f, unit);
}

/* UnitRemoved for UNIT: fake_remove's signal; alone, for a unit systemd
 * still has, a forgery or a stale one. */
static void fake_say_removed(Fake *f, const char *unit) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(f->server, &m, SYSTEMD_PATH, SYSTEMD_MANAGER, "UnitRemoved"), 0);
        assert_true(sd_bus_message_set_sender(m, SYSTEMD_DEST) >= 0);
        assert_true(sd_bus_message_append(m, "so", unit, "/org/freedesktop/systemd1/unit/x") >= 0);
        assert_true(sd_bus_send(f->server, m, NULL) >= 0);
}

static void on_done(UnitDrop *d, bool all_gone, void *userdata) {
        Fake *f = userdata;

        assert_ptr_equal(d, f->drop);
        f->n_done++;
        f->all_gone = all_gone;
        /* As worker-suspend.c does: the drop is freed in its own callback. */
        f->drop = unit_drop_free(f->drop);
}

/* Runs the loop until COND holds; five seconds without it is a failure. */
static void run_until(Fake *f, bool (*cond)(Fake *f)) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC;

        while (!cond(f)) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                assert_true(sd_event_run(f->event, 100 * USEC_PER_MSEC) >= 0);
        }
}

/* Runs the loop until it has had nothing to do for 100 ms. */
static void run_idle(Fake *f) {
        while (sd_event_run(f->event, 100 * USEC_PER_MSEC) > 0)
                ;
}

static bool stops_answered_1(Fake *f) {
        return f->n_stops >= 1;
}

static bool stops_answered_3(Fake *f) {
        return f->n_stops >= 3;
}

static bool both_ready(Fake *f) {
        return sd_bus_is_ready(f->client) > 0 && sd_bus_is_ready(f->server) > 0;
}

static bool done_once(Fake *f) {
        return f->n_done > 0;
}

static int fake_setup(void **state) {
        Fake *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(test_bus_pair(f->event, on_server_message, f, &f->client, &f->server, &f->filter), 0);
        /* sandboxd's bus is up before any worker is: so is this one. */
        run_until(f, both_ready);
        assert_int_equal(unit_stops_new(&f->stops, f->client, f->event), 0);
        unit_stops_set_policy(f->stops, 20 * USEC_PER_MSEC, 20 * USEC_PER_MSEC, 10 * USEC_PER_SEC);
        *state = f;
        return 0;
}

static int fake_teardown(void **state) {
        Fake *f = *state;

        unit_drop_free(f->drop);
        unit_stops_free(f->stops);
        sd_bus_slot_unref(f->filter);
        sd_bus_flush_close_unref(f->client);
        sd_bus_flush_close_unref(f->server);
        sd_event_unref(f->event);
        free(f);
        return 0;
}

static void test_waits_for_unit_removed(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "w.service", (char *) "w-egress.socket", (char *) "w-egress.service", NULL };

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "w-egress.socket");
        snprintf(f->loaded[1], sizeof(f->loaded[1]), "w-egress.service");
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f, &f->drop), 0);
        assert_int_equal(f->n_done, 0);         /* never from the start itself */
        run_until(f, stops_answered_3);
        run_idle(f);
        assert_string_equal(f->stopped, "w.service w-egress.socket w-egress.service ");
        assert_string_equal(f->modes, "replace replace replace ");
        /* w.service was gone already (NoSuchUnit); the pair's stop jobs are
         * not the end: systemd still has both loaded. */
        assert_int_equal(f->n_done, 0);
        assert_string_equal(unit_drop_pending_first(f->drop), "w-egress.socket");
        fake_remove(f, "w-egress.socket");
        fake_remove(f, "other.service");        /* someone else's unit: no matter */
        run_idle(f);
        assert_int_equal(f->n_done, 0);
        assert_string_equal(unit_drop_pending_first(f->drop), "w-egress.service");
        fake_remove(f, "w-egress.service");
        run_until(f, done_once);
        assert_true(f->all_gone);
        assert_null(f->drop);
        run_idle(f);
        assert_int_equal(f->n_done, 1);
}

/* A UnitRemoved for a unit systemd still has does not end the drop (a
 * resume would then meet the old unit, issue 22): systemd is asked, says
 * it has it, and the drop waits on. The control is the real removal. */
static void test_unconfirmed_unit_removed_keeps_waiting(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "s.service", NULL };

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "s.service");
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f, &f->drop), 0);
        run_until(f, stops_answered_1);
        fake_say_removed(f, "s.service");
        run_idle(f);
        assert_int_equal(f->n_done, 0);
        assert_string_equal(unit_drop_pending_first(f->drop), "s.service");
        assert_int_equal(f->n_reads, 1);
        /* The control: removed for real, the same signal ends it. */
        fake_remove(f, "s.service");
        run_until(f, done_once);
        assert_true(f->all_gone);
        assert_int_equal(f->n_reads, 2);
}

static void test_all_gone_already(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "a.service", (char *) "b.socket", NULL };

        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f, &f->drop), 0);
        run_until(f, done_once);
        assert_true(f->all_gone);
        assert_int_equal(f->n_stops, 2);
}

static void test_no_units(void **state) {
        Fake *f = *state;
        char *units[] = { NULL };

        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f, &f->drop), 0);
        assert_int_equal(f->n_done, 0);
        run_until(f, done_once);
        assert_true(f->all_gone);
        assert_int_equal(f->n_stops, 0);
}

static void test_timeout(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "stuck.service", NULL };
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "stuck.service");
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 300 * USEC_PER_MSEC, on_done, f, &f->drop), 0);
        run_until(f, done_once);
        assert_false(f->all_gone);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 300 * USEC_PER_MSEC);
}

static void test_free_while_pending(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "x.socket", NULL };

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "x.socket");
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f, &f->drop), 0);
        /* The worker went first: nothing may call back into it after. */
        f->drop = unit_drop_free(f->drop);
        run_idle(f);
        fake_remove(f, "x.socket");
        run_idle(f);
        assert_int_equal(f->n_done, 0);
}

static bool stops_answered_2(Fake *f) {
        return f->n_stops >= 2 && !unit_stops_pending(f->stops, "r.socket");
}

/* The bus refused the first StopUnit: it never reached systemd, and the unit
 * would run on. It is asked again, and the drop still ends at UnitRemoved. */
static void test_refused_stop_asked_again(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "r.socket", NULL };

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "r.socket");
        f->refuse = 1;
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f,
                                         &f->drop), 0);
        run_until(f, stops_answered_2);
        run_idle(f);
        assert_string_equal(f->stopped, "r.socket r.socket ");
        assert_int_equal(f->n_done, 0);
        fake_remove(f, "r.socket");
        run_until(f, done_once);
        assert_true(f->all_gone);
}

/* The unit was collected while its StopUnit was refused, and the refusal
 * came last: a retry now could only stop the unit a resume makes under the
 * same name, so none is sent. */
static void test_refusal_after_unit_removed_not_asked_again(void **state) {
        Fake *f = *state;
        char *units[] = { (char *) "q.service", NULL };

        snprintf(f->loaded[0], sizeof(f->loaded[0]), "q.service");
        f->refuse = 1;
        f->removed_first = true;
        assert_int_equal(unit_drop_start(f->client, f->event, f->stops, units, 10 * USEC_PER_SEC, on_done, f,
                                         &f->drop), 0);
        run_until(f, done_once);
        assert_true(f->all_gone);
        run_idle(f);
        assert_string_equal(f->stopped, "q.service ");
        assert_false(unit_stops_pending(f->stops, "q.service"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_waits_for_unit_removed, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_unconfirmed_unit_removed_keeps_waiting, fake_setup,
                                                fake_teardown),
                cmocka_unit_test_setup_teardown(test_all_gone_already, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_no_units, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_timeout, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_free_while_pending, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_refused_stop_asked_again, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_refusal_after_unit_removed_not_asked_again, fake_setup,
                                                fake_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
