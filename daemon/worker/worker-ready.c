/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sandbox-exec.h"
#include "event-util.h"
#include "worker-disk.h"
#include "worker-ready.h"

void worker_ready_failure_reason(int exec_main_code, int exec_main_status, char *buf, size_t size) {
        static const struct {
                int status;
                const char *what;
        } statuses[] = {
                { SBX_EXEC_EXIT_ENVIRONMENT, "the worker's environment could not be read" },
                { SBX_EXEC_EXIT_USAGE, "sandbox-exec was given a bad command line" },
                { SBX_EXEC_EXIT_READY, "sandbox-exec could not write its readiness token" },
                { SBX_EXEC_EXIT_SHARED, "a namespace of the worker is PID 1's" },
                { SBX_EXEC_EXIT_CANNOT_EXEC, "the command cannot be executed" },
                { SBX_EXEC_EXIT_NOT_FOUND, "the command does not exist" },
        };

        if (exec_main_code == 1) {
                for (size_t i = 0; i < ELEMENTSOF(statuses); i++)
                        if (statuses[i].status == (exec_main_status & 0xff)) {
                                snprintf(buf, size, "%s (sandbox-exec exit status %d)", statuses[i].what,
                                         statuses[i].status);
                                return;
                        }
                snprintf(buf, size, "sandbox-exec exited %d before the workload ran", exec_main_status & 0xff);
        } else if (exec_main_code == 2 || exec_main_code == 3)
                snprintf(buf, size, "sandbox-exec was killed by signal %d before the workload ran",
                         exec_main_status & 0x7f);
        else
                snprintf(buf, size, "the unit ended before the workload ran");
}

static void worker_ready_decide(Worker *w);

static void on_ready_token(Channel *c, int result, void *userdata) {
        Worker *w = userdata;

        w->start.ready_result = result;
        worker_ready_decide(w);
}

/* The unit is left to systemd's stop, and the worker to the failed start. */
static int on_ready_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;

        if (w->state != WORKER_STARTING)
                return 0;
        /* Asked again if the bus refuses it: the worker is gone from
         * sandboxd's view at once, and nothing else would stop its unit. */
        (void) unit_stops_stop(worker_unit_stops(w), w->unit, w->id);
        worker_start_failed(w, w->start.ready_result < 0 ? "sandbox-exec's output was not its readiness token"
                                                   : "no readiness token from sandbox-exec in time");
        return 0;
}

/* Called on each of the facts it waits for: the job's end, the token (or
 * what came instead), the unit's end. */
static void worker_ready_decide(Worker *w) {
        char why[160];

        if (w->state != WORKER_STARTING || !w->start.job_done)
                return;
        if (w->start.ready_result > 0) {
                /* The bytes of a worker that is gone are all in the pipe:
                 * this resolves the token, and comes back here. */
                if (w->unit_ended)
                        channel_read_token(w->channel, true);
                return;
        }
        if (w->start.ready_result == 0) {
                w->start.ready_timer = sd_event_source_disable_unref(w->start.ready_timer);
                worker_start_done(w);
                return;
        }
        /* No token: the unit's exit status says why, once it ended. */
        if (!w->unit_ended)
                return;
        w->start.ready_timer = sd_event_source_disable_unref(w->start.ready_timer);
        if (w->start.job_canceled && w->exec_main_code == 0)
                worker_disk_start_job_why(w->id, w->spec.disk_max, "canceled", why, sizeof(why));
        else
                worker_ready_failure_reason(w->exec_main_code, w->exec_main_status, why, sizeof(why));
        worker_start_failed(w, why);
}

void worker_ready_expect(Worker *w) {
        w->start.awaits_ready = true;
        w->start.ready_result = 1;
        channel_expect_token(w->channel, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN, on_ready_token);
}

void worker_ready_job_done(Worker *w) {
        int r;

        /* Once: another job's end (the stop job's, which can come while the
         * unit's end is being confirmed) must not arm a second timer over
         * the first, which would then fire on a freed worker. */
        if (w->start.job_done)
                return;
        w->start.job_done = true;
        r = event_add_timer(worker_event(w), &w->start.ready_timer, WORKER_READY_TIMEOUT_USEC, TIMER_WAIT,
                            on_ready_timeout, w, "worker-ready-timer");
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to bound the wait for a worker's readiness",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                (void) unit_stops_stop(worker_unit_stops(w), w->unit, w->id);
                worker_start_failed(w, "cannot bound the wait for its readiness");
                return;
        }
        worker_ready_decide(w);
}

void worker_ready_job_removed(Worker *w, const char *result) {
        char why[256];

        if (streq(result, "done") || streq(result, "failed")) {
                worker_ready_job_done(w);
                return;
        }
        /* A command that ends at once can end its unit while the start job
         * still runs: the exec socket, bound to the unit, stops with it and,
         * through Requires=, cancels the start job. The token decides, as
         * for a job that is done: it is in the pipe if the workload ran.
         * systemd confirmed the unit is not up (manager.c), so its end is
         * asked for now, started or not: a unit that never ran sends no end
         * of its own, and one whose end came first has had it dropped. */
        if (streq(result, "canceled")) {
                w->start.job_canceled = true;
                worker_ready_job_done(w);
                if ((w->state == WORKER_STARTING || w->state == WORKER_RUNNING) && !w->unit_ended) {
                        w->unit_ended = true;
                        worker_confirm_unit_end(w);
                }
                return;
        }
        worker_disk_start_job_why(w->id, w->spec.disk_max, result, why, sizeof(why));
        worker_start_failed(w, why);
}

void worker_ready_unit_ended(Worker *w) {
        worker_ready_decide(w);
}
