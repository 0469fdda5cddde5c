/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The worker layer alone: a Worker owned by a fake WorkerOwner, with no
 * Manager, bus or systemd, reports each change of state through exactly
 * the callbacks worker.h promises, and worker_may_gc() decides freeing.
 * This test links only the worker layer and those below it, so it also
 * shows that the layer stands without the ones above. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "worker.h"

typedef struct {
        unsigned state_changed, appeared, released, ended, status_changed;
} Reports;

static Reports reports;

static void on_state_changed(Worker *w) { (void) w; reports.state_changed++; }
static void on_appeared(Worker *w) { (void) w; reports.appeared++; }
static void on_released(Worker *w) { (void) w; reports.released++; }
static void on_ended(Worker *w) { (void) w; reports.ended++; }
static void on_status_changed(Worker *w) { (void) w; reports.status_changed++; }

static const WorkerOwner fake_owner = {
        .state_changed = on_state_changed,
        .appeared = on_appeared,
        .released = on_released,
        .ended = on_ended,
        .status_changed = on_status_changed,
};

static Worker *new_worker(void) {
        WorkerSpec spec;
        Worker *w = NULL;

        worker_spec_init(&spec);
        assert_int_equal(worker_new_with_id(&w, &fake_owner, &spec, SBX_RUNTIME_SYSTEMD, "0123456789ab"), 0);
        assert_int_equal(w->state, WORKER_STARTING);
        reports = (Reports) { 0 };
        return w;
}

/* Its object appears once, with its first running moment; a suspend and
 * resume are changes of the same object. */
static void test_appears_once(void **state) {
        Worker *w = new_worker();

        (void) state;
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(reports.appeared, 1);
        assert_int_equal(reports.state_changed, 0);
        assert_true(w->exported);
        assert_int_equal(worker_set_state(w, WORKER_SUSPENDING), 0);
        assert_int_equal(worker_set_state(w, WORKER_SUSPENDED), 0);
        assert_int_equal(worker_set_state(w, WORKER_RESUMING), 0);
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(reports.appeared, 1);
        assert_int_equal(reports.state_changed, 4);
        assert_int_equal(reports.ended + reports.released, 0);
        worker_free(w);
}

/* A worker that ran ends on the bus too, and may be freed only once its
 * object has left the bus. */
static void test_end_of_a_running_worker(void **state) {
        Worker *w = new_worker();

        (void) state;
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(worker_set_state(w, WORKER_STOPPING), 0);
        assert_int_equal(reports.state_changed, 1);
        assert_false(worker_may_gc(w));
        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        assert_int_equal(reports.released, 1);
        assert_int_equal(reports.ended, 1);
        assert_int_equal(reports.status_changed, 1);
        assert_true(w->ended_realtime > 0);
        assert_false(worker_may_gc(w));
        w->unexported = true;
        assert_true(worker_may_gc(w));
        worker_free(w);
}

/* A start that failed was never on the bus: it is released and counted,
 * never announced as ended, and may be freed at once. */
static void test_failed_start(void **state) {
        Worker *w = new_worker();

        (void) state;
        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        assert_int_equal(reports.released, 1);
        assert_int_equal(reports.status_changed, 1);
        assert_int_equal(reports.ended, 0);
        assert_int_equal(reports.appeared, 0);
        assert_true(worker_may_gc(w));
        worker_free(w);
}

/* A transition outside the table changes nothing and reports nothing;
 * the same worker's valid transition (the control) still works. */
static void test_invalid_transition(void **state) {
        Worker *w = new_worker();

        (void) state;
        assert_int_equal(worker_set_state(w, WORKER_SUSPENDED), -EINVAL);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_memory_equal(&reports, &(Reports) { 0 }, sizeof(reports));
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), 0);
        assert_int_equal(w->state, WORKER_RUNNING);
        assert_int_equal(worker_set_state(w, WORKER_ENDED), 0);
        reports = (Reports) { 0 };
        assert_int_equal(worker_set_state(w, WORKER_RUNNING), -EINVAL);
        assert_int_equal(w->state, WORKER_ENDED);
        assert_memory_equal(&reports, &(Reports) { 0 }, sizeof(reports));
        worker_free(w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_appears_once),
                cmocka_unit_test(test_end_of_a_running_worker),
                cmocka_unit_test(test_failed_start),
                cmocka_unit_test(test_invalid_transition),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
