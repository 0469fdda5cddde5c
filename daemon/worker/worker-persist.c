/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <systemd/sd-daemon.h>
#include <time.h>

#include "fdstore.h"
#include "worker-broker.h"
#include "worker-gate.h"
#include "worker-persist.h"
#include "worker-secrets.h"
#include "worker-state-file.h"

static const char * const stdio_names[WORKER_N_STDIO] = { "stdin", "stdout", "stderr" };

void worker_fd_name(char *buf, size_t size, const char *id, size_t i) {
        snprintf(buf, size, "%s-%s", id, stdio_names[i]);
}

static void worker_to_record(const Worker *w, WorkerRecord *r) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), real = now_usec(CLOCK_REALTIME);
        uint64_t age = real > w->created_realtime ? real - w->created_realtime : 0;

        /* Borrowed pointers: R is formatted, never freed. */
        worker_record_init(r);
        memcpy(r->id, w->id, sizeof(r->id));
        r->unit = w->unit;
        r->class = w->spec.class;
        r->requested_class = w->spec.requested_class;
        r->origin = w->spec.origin;
        r->runtime = w->runtime;
        r->owner = w->owner;
        r->uid = w->uid;
        r->limits = w->spec.limits;
        /* The cap its disk was made with, asked for or the default. */
        r->has_disk_max = w->spec.disk_max > 0;
        r->disk_max = w->spec.disk_max;
        r->egress_rate_bps = w->spec.egress_rate_bps;
        r->egress_socket = w->egress.socket;
        r->egress_service = w->egress.service;
        r->egress_policy = (char *) w->egress.policy.data;
        r->gate_config = (char *) w->gate.config.data;
        r->gate_port = w->gate.tcp_port;
        r->endpoint_name = w->spec.endpoint.name;
        r->workspace = w->spec.workspace;
        r->created_realtime = w->created_realtime;
        r->created_monotonic = mono > age ? mono - age : 0;
        r->last_activity_monotonic = w->channel ? channel_last_activity(w->channel) : r->created_monotonic;
        /* Saved with its image complete while its old units go: a restart
         * meanwhile finds it suspended, not a running worker without a unit.
         * So while it resumes: the image is its state until the resume is
         * done (restore_stop_interrupted_resume). */
        r->suspended = w->state == WORKER_SUSPENDED || w->state == WORKER_RESUMING ||
                       (w->state == WORKER_SUSPENDING && w->suspend.drop);
        /* Its checkpoint runs: a restart meanwhile watches it to its end
         * (restore_adopt_suspending), never takes the unit's end for the
         * worker's. */
        if (w->state == WORKER_SUSPENDING && !w->suspend.drop && !w->suspend.gate_drain && w->suspend.result >= 0) {
                r->suspending = w->suspend.unit;
                r->checkpoint_budget = w->suspend.budget;
        }
        r->idle_suspend = w->spec.idle_suspend;
        r->argv = w->spec.argv;
        r->pooled = streq(w->start.mode, "pooled");
        r->kept_secrets = w->secrets.keep;
}

int worker_save_state_in(Worker *w, const char *dir) {
        WorkerRecord r;

        worker_to_record(w, &r);
        return worker_record_save(dir, &r);
}

int worker_save_state(Worker *w) {
        return worker_save_state_in(w, SBX_WORKER_STATE_DIR);
}

int worker_save_state_suspending(Worker *w, const char *unit, uint64_t budget) {
        WorkerRecord r;

        worker_to_record(w, &r);
        r.suspended = false;
        r.suspending = (char *) unit;
        r.checkpoint_budget = budget;
        return worker_record_save(SBX_WORKER_STATE_DIR, &r);
}

static int persist_stdio(Worker *w) {
        ChannelDaemonFds fds = channel_daemon_fds(w->channel);
        int fd[] = { fds.stdin_fd, fds.stdout_fd, fds.stderr_fd };
        char name[64];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(fd); i++) {
                if (fd[i] < 0)
                        continue;
                worker_fd_name(name, sizeof(name), w->id, i);
                r = fdstore_push(name, fd[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int worker_persist_channel(Worker *w) {
        int r = persist_stdio(w);

        if (r < 0)
                return r;
        (void) sd_notify_barrier(false, 5 * USEC_PER_SEC);
        return 0;
}

void worker_forget_channel(Worker *w) {
        char name[64];

        for (size_t i = 0; i < WORKER_N_STDIO; i++) {
                worker_fd_name(name, sizeof(name), w->id, i);
                (void) fdstore_remove(name);
        }
}

int worker_persist(Worker *w) {
        int r;

        r = persist_stdio(w);
        if (r < 0)
                return r;
        r = worker_broker_persist(w);
        if (r < 0)
                return r;
        r = worker_gate_persist(w);
        if (r < 0)
                return r;
        r = worker_secrets_persist(w);
        if (r < 0)
                return r;
        /* The fds must be in systemd's hands before the client hears of the
         * worker: a daemon killed right after the reply would lose them. */
        (void) sd_notify_barrier(false, 5 * USEC_PER_SEC);
        return worker_save_state(w);
}

void worker_forget_stdin(Worker *w) {
        char name[64];

        worker_fd_name(name, sizeof(name), w->id, 0);
        (void) fdstore_remove(name);
}

void worker_forget(Worker *w) {
        int r;

        worker_forget_channel(w);
        /* A suspend that saved the sandbox keeps the broker's secrets and
         * the worker's own: the resumed unit and its proxy load them again
         * (seen: without them the proxy fails "The credential of service
         * NAME is empty"). */
        if (w->state != WORKER_SUSPENDING || w->suspend.result <= 0) {
                worker_broker_forget(w);
                worker_gate_forget(w);
                worker_secrets_forget(w);
        }
        r = worker_record_remove(SBX_WORKER_STATE_DIR, w->id);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the state file of worker %s: %m", w->id);
}
