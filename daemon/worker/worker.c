/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <assert.h>

#include "errors.h"
#include "event-util.h"
#include "rmrf.h"
#include "systemd-bus.h"
#include "unit-drop.h"
#include "unit-halt.h"
#include "uid-keep.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-gate.h"
#include "worker-persist.h"
#include "worker-ready.h"
#include "worker-resume.h"
#include "worker-secrets.h"
#include "worker-spawn.h"
#include "worker-suspend.h"
#include "worker-wake.h"
#include "worker.h"


static const char * const state_table[_WORKER_STATE_MAX] = {
        [WORKER_STARTING] = "starting",
        [WORKER_RUNNING] = "running",
        [WORKER_STOPPING] = "stopping",
        [WORKER_ENDED] = "ended",
        [WORKER_SUSPENDING] = "suspending",
        [WORKER_SUSPENDED] = "suspended",
        [WORKER_RESUMING] = "resuming",
};

const char *worker_state_to_string(WorkerState s) {
        return s < _WORKER_STATE_MAX ? state_table[s] : "unknown";
}

WorkerState worker_state_from_string(const char *s) {
        for (WorkerState i = 0; i < _WORKER_STATE_MAX; i++)
                if (streq(state_table[i], s))
                        return i;
        return _WORKER_STATE_MAX;
}

int worker_new(Worker **ret, const WorkerOwner *owner, WorkerSpec *spec, SbxRuntime runtime) {
        char id[WORKER_ID_LEN + 1];
        int r;

        r = random_hex_id(id, WORKER_ID_LEN);
        if (r < 0)
                return r;
        return worker_new_with_id(ret, owner, spec, runtime, id);
}

int worker_new_with_id(Worker **ret, const WorkerOwner *owner, WorkerSpec *spec, SbxRuntime runtime, const char *id) {
        _cleanup_(worker_freep) Worker *w = NULL;
        int r;

        assert(ret);
        assert(spec);
        assert(id);

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->owned_by = owner;
        w->manager = owner ? owner->manager : NULL;
        w->runtime = runtime;
        w->uid = (uid_t) -1;
        w->owner = (uid_t) -1;
        w->exit_status = -1;
        w->start.mode = "cold";
        w->start.pool_fds = (ChannelDaemonFds) { -1, -1, -1 };
        w->created_realtime = now_usec(CLOCK_REALTIME);
        w->spec = *spec;                /* takes ownership */
        worker_spec_init(spec);

        snprintf(w->id, sizeof(w->id), "%s", id);
        if (asprintf(&w->unit, "sandbox-%s.service", w->id) < 0 ||
            asprintf(&w->user, "sandbox-%s", w->id) < 0 ||
            asprintf(&w->home, SBX_STATE_ROOT "/%s", w->id) < 0 ||
            asprintf(&w->object_path, "/org/sandboxd1/worker/%s", w->id) < 0)
                return -ENOMEM;
        r = systemd_unit_path(w->unit, &w->unit_path);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        /* Its processes' owners hear the end before the worker goes. */
        worker_processes_end(w);
        worker_wake_free(w);
        channel_free(w->channel);
        sd_bus_message_unref(w->start.request);
        sd_bus_slot_unref(w->unit_match);
        sd_bus_slot_unref(w->gate.status_match);
        sd_bus_slot_unref(w->gate.start_call);
        unit_halt_free(w->gate.restart);
        sd_bus_slot_unref(w->unit_state_call);
        sd_bus_slot_unref(w->start.call);
        sd_event_source_disable_unref(w->timers.idle);
        sd_event_source_disable_unref(w->timers.linger);
        worker_waiters_fail(w, SBX_ERROR_NOT_RUNNING, "Worker is gone");
        free(w->waiters);
        free(w->suspend.unit);
        sd_bus_slot_unref(w->suspend.call);
        sd_bus_slot_unref(w->keep.call);
        sd_bus_message_unref(w->suspend.checkpoint);
        unit_drop_free(w->suspend.drop);
        unit_halt_free(w->suspend.gate_drain);
        sd_event_source_disable_unref(w->resume.watch);
        sd_event_source_disable_unref(w->resume.timer);
        unit_drop_free(w->resume.drop);
        free(w->resume.why);
        sd_event_source_disable_unref(w->timers.runtime);
        sd_event_source_disable_unref(w->start.ready_timer);
        safe_close(w->start.pool_fds.stdin_fd);
        safe_close(w->start.pool_fds.stdout_fd);
        safe_close(w->start.pool_fds.stderr_fd);
        worker_spec_done(&w->spec);
        free(w->egress.policy.data);
        erase_and_free(w->environment.data, w->environment.size);
        free(w->egress.socket);
        free(w->egress.service);
        free(w->gate.config.data);
        free(w->gate.socket);
        free(w->gate.service);
        free(w->unit);
        free(w->unit_path);
        free(w->user);
        free(w->home);
        free(w->object_path);
        free(w->unit_result);
        free(w->result);
        free(w);
        return NULL;
}

uint64_t worker_last_activity_realtime(const Worker *w) {
        uint64_t mono_now, last;

        if (!w->channel)
                return w->created_realtime;
        mono_now = now_usec(CLOCK_MONOTONIC);
        last = channel_last_activity(w->channel);
        return now_usec(CLOCK_REALTIME) - (mono_now > last ? mono_now - last : 0);
}

uint64_t worker_idle_usec(const Worker *w, uint64_t now_monotonic) {
        uint64_t last;

        if (!w->channel)
                return 0;
        last = channel_last_activity(w->channel);
        return now_monotonic > last ? now_monotonic - last : 0;
}

bool worker_is_alive(const Worker *w) {
        return w->state != WORKER_ENDED && w->state < _WORKER_STATE_MAX;
}

int worker_exit_status_from_exec(int code, int status) {
        switch (code) {
        case 1: /* CLD_EXITED */
                return status & 0xff;
        case 2: /* CLD_KILLED */
        case 3: /* CLD_DUMPED */
                return 128 + (status & 0x7f);
        default:
                return -1;
        }
}

const char *worker_end_reason(const char *stop_reason, const char *unit_result, int exec_main_code) {
        if (stop_reason)
                return stop_reason;
        if (unit_result && streq(unit_result, "timeout"))
                return "timeout";
        if (unit_result && streq(unit_result, "oom-kill"))
                return "oom";
        /* Any exit code is the worker's own answer; a signal is not. */
        return exec_main_code == 1 ? "exited" : "failed";
}

int worker_result_format(const char *stop_reason, const char *unit_result, int exec_main_code,
                         int exec_main_status, bool launcher, char **ret) {
        int r;

        /* What we stopped it for comes first: an idle reap or a Stop kills
         * with SIGTERM, which is not the worker failing. */
        if (stop_reason)
                r = asprintf(ret, "%s", stop_reason);
        else if (unit_result && streq(unit_result, "timeout"))
                r = asprintf(ret, "timeout");
        else if (unit_result && streq(unit_result, "oom-kill"))
                r = asprintf(ret, "oom");
        else if (exec_main_code == 1 && launcher && exec_main_status == SBX_LAUNCH_EXIT_SETUP)
                r = asprintf(ret, "failed: the sandbox could not be set up (sandbox-launch exit status %d)",
                             SBX_LAUNCH_EXIT_SETUP);
        else if (exec_main_code == 1)
                r = asprintf(ret, "exited %d", exec_main_status & 0xff);
        else if (exec_main_code == 2 || exec_main_code == 3)
                r = asprintf(ret, "killed by signal %d", exec_main_status & 0x7f);
        else
                r = asprintf(ret, "failed: unit result %s", unit_result ?: "unknown");
        return r < 0 ? -ENOMEM : 0;
}

int worker_result_format_failed(const char *reason, char **ret) {
        return asprintf(ret, "failed: %s", reason ?: "unknown") < 0 ? -ENOMEM : 0;
}

/* ---- the lifecycle ------------------------------------------------------ */

/* Every state a worker may go to from each state; everything else is a bug
 * in the daemon. */
static const bool state_transitions[_WORKER_STATE_MAX][_WORKER_STATE_MAX] = {
        [WORKER_STARTING] = { [WORKER_RUNNING] = true, [WORKER_ENDED] = true },
        [WORKER_RUNNING] = { [WORKER_STOPPING] = true, [WORKER_ENDED] = true, [WORKER_SUSPENDING] = true },
        [WORKER_STOPPING] = { [WORKER_ENDED] = true },
        [WORKER_SUSPENDING] = { [WORKER_SUSPENDED] = true, [WORKER_RUNNING] = true, [WORKER_ENDED] = true },
        [WORKER_SUSPENDED] = { [WORKER_RESUMING] = true, [WORKER_ENDED] = true },
        /* Back to suspended: a resume that failed before the sandbox ran (worker-resume.h). */
        [WORKER_RESUMING] = { [WORKER_RUNNING] = true, [WORKER_ENDED] = true, [WORKER_SUSPENDED] = true },
};

bool worker_state_transition_valid(WorkerState from, WorkerState to) {
        return from < _WORKER_STATE_MAX && to < _WORKER_STATE_MAX && state_transitions[from][to];
}

int worker_set_state(Worker *w, WorkerState s) {
        const WorkerOwner *o = w->owned_by;
        WorkerState old = w->state;

        assert(o);
        if (!worker_state_transition_valid(old, s)) {
                /* A programming error: loud, but the daemon and every other
                 * worker go on, and this one keeps the state it had. */
                log_struct(LOG_CRIT, "Refusing an invalid state transition of a worker",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_STATE", worker_state_to_string(old),
                           "SANDBOXD_NEW_STATE", worker_state_to_string(s), NULL);
                return -EINVAL;
        }
        w->state = s;
        /* Plain, without the worker's ID field: ReadWorkerLog shows its owner
         * sandboxd's lifecycle entries, which the callers log with the facts
         * of the change, and this line would double each of them. */
        log_debug("Worker %s: %s -> %s", w->id, worker_state_to_string(old), worker_state_to_string(s));

        switch (s) {
        case WORKER_RUNNING:
                /* Running again (a resume done, a checkpoint that failed):
                 * the disk's next stop is no suspend's. */
                if (w->spec.disk_max > 0 && old != WORKER_STARTING)
                        (void) worker_disk_mark_kept(w->id, false);
                /* Its object appears on the bus with its first running moment;
                 * back from suspending or resuming it is the same object. */
                if (w->exported) {
                        o->state_changed(w);
                        /* Woken, or its checkpoint failed: what its
                         * endpoint held goes to its gate. */
                        if (old == WORKER_RESUMING || old == WORKER_SUSPENDING)
                                worker_wake_running(w, old == WORKER_RESUMING);
                        break;
                }
                w->exported = true;
                o->appeared(w);
                break;
        case WORKER_STOPPING:
                o->state_changed(w);
                break;
        case WORKER_SUSPENDING:
        case WORKER_RESUMING:
                o->state_changed(w);
                break;
        case WORKER_SUSPENDED:
                o->state_changed(w);
                /* Its gate went with its unit: sandboxd holds the endpoint. */
                worker_wake_listen(w);
                break;
        case WORKER_ENDED:
                w->ended_realtime = now_usec(CLOCK_REALTIME);
                worker_wake_free(w);
                /* No longer alive; its home is unmounted and the unit gone:
                 * the next worker may have its workspace. */
                o->released(w);
                /* A worker whose start failed was never on the bus. */
                if (w->exported)
                        o->ended(w);
                o->status_changed(w);
                break;
        default:
                break;
        }
        return 0;
}

void worker_restore_running(Worker *w) {
        assert(!w->exported);
        /* Not a transition: it was running before the restart, and clients
         * know it already, so nothing is emitted (no second WorkerNew). */
        w->state = WORKER_RUNNING;
        w->exported = true;
        w->unit_seen_active = true;
}

void worker_restore_suspending(Worker *w) {
        assert(!w->exported);
        /* Its sandbox ran: a checkpoint that fails leaves it running. */
        w->state = WORKER_SUSPENDING;
        w->exported = true;
        w->unit_seen_active = true;
        w->suspend.result = 0;
        /* Its gate drained before the checkpoint started: held again. */
        worker_wake_listen(w);
}

void worker_restore_suspended(Worker *w) {
        assert(!w->exported);
        /* As worker_restore_running(): clients knew it, suspended. */
        w->state = WORKER_SUSPENDED;
        w->exported = true;
        worker_wake_listen(w);
}

bool worker_may_gc(const Worker *w) {
        return w->state == WORKER_ENDED && (!w->exported || w->unexported);
}

/* Hands W to its owner to be freed, if it may be: the one place that decides. */
static void worker_collect(Worker *w) {
        if (worker_may_gc(w))
                w->owned_by->collect(w);
}

/* An ended worker's record outlives its object on the bus (ListWorkersEx). */
static void worker_remember(const Worker *w) {
        EndedWorkerRecord record = {
                .class = w->spec.class,
                .requested_class = w->spec.requested_class,
                .owner = w->owner,
                .uid = w->uid,
                .created_realtime = w->created_realtime,
                .ended_realtime = w->ended_realtime,
                .ended_monotonic = now_usec(CLOCK_MONOTONIC),
                .exit_status = w->exit_status,
                .result = w->result,
        };
        int r;

        memcpy(record.id, w->id, sizeof(record.id));
        r = worker_history_add(w->owned_by->history, &record, record.ended_monotonic);
        if (r < 0)
                log_warning_errno(r, "Failed to remember the end of worker %s: %m", w->id);
}

/* ---- systemd's view of a worker's unit ---------------------------------- */

static void worker_reply_created(Worker *w) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = TAKE_PTR(w->start.request);

        if (!req)
                return;
        w->owned_by->reply_created(w, req, NULL);
}

/* SANDBOXD_OWNER_UID goes into every lifecycle entry: once the worker's
 * object is gone, it is what ReadWorkerLog decides its owner by. */
void worker_owner_field(const Worker *w, char buf[static 16]) {
        snprintf(buf, 16, "%u", (unsigned) w->owner);
}

void worker_log_starting(const Worker *w, const char *mode, const char *reason) {
        char owner_uid[16];

        assert(w);
        worker_owner_field(w, owner_uid);
        log_struct(LOG_INFO, "Starting worker",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class),
                   "SANDBOXD_REQUESTED_CLASS", sbx_class_to_string(w->spec.requested_class),
                   "SANDBOXD_ORIGIN", w->spec.origin ?: SBX_ORIGIN_DEFAULT,
                   "SANDBOXD_OWNER_UID", owner_uid, "SANDBOXD_EVENT", "starting",
                   "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime),
                   "SANDBOXD_START_MODE", mode, reason ? "SANDBOXD_REASON" : NULL, reason, NULL);
}

void worker_start_failed(Worker *w, const char *why) {
        const WorkerOwner *o = w->owned_by;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = TAKE_PTR(w->start.request);
        char owner_uid[16];
        int r;

        worker_owner_field(w, owner_uid);
        log_struct(LOG_ERR, "Worker failed to start",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, "SANDBOXD_REASON", why,
                   "SANDBOXD_EVENT", "start-failed", "SANDBOXD_OWNER_UID", owner_uid, NULL);
        /* systemd may already have made the home and started the proxy's
         * socket; nothing may outlive the attempt, and the caller, told of
         * the failure, must not find the home still there. */
        worker_delete_home(w);
        worker_stop_egress(w);
        uid_keep_stop(w);
        worker_forget(w);
        worker_waiters_fail(w, SBX_ERROR_START_FAILED, "The resumed unit failed to start");
        if (req)
                o->reply_created(w, req, why);
        r = worker_result_format_failed(why, &w->result);
        if (worker_set_state(w, WORKER_ENDED) < 0)
                return;
        if (r >= 0)
                worker_remember(w);
        /* A shared-kernel worker's start also fails when its namespace check
         * found one of PID 1's: verify the walls again, so that the next
         * request meets the answer at the gate. */
        if (w->runtime == SBX_RUNTIME_SYSTEMD || w->runtime == SBX_RUNTIME_WASM)
                o->needs_probe(w, WORKER_PROBE_WALLS);
        worker_collect(w);
}

static int worker_lookup_uid(Worker *w) {
        _cleanup_free_ char *priv = NULL;
        struct stat st;

        /* systemd chowns the home to the dynamic UID before exec, and Type=exec
         * means the start job is done only after exec: the owner is the UID. */
        if (asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", w->id) < 0)
                return -ENOMEM;
        if (stat(priv, &st) < 0)
                return -errno;
        w->uid = st.st_uid;
        return 0;
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata);

int worker_arm_idle_timer(Worker *w) {
        uint64_t deadline = channel_last_activity(w->channel) + w->spec.limits.idle_timeout_usec;

        /* A limit the client set: the reaper acts within a tenth of it. */
        if (w->timers.idle)
                return event_timer_arm_at(w->timers.idle, deadline, TIMER_WAIT) < 0 ? -EIO : 0;
        return event_add_timer_at(worker_event(w), &w->timers.idle, deadline, TIMER_WAIT, on_idle_timer, w,
                                  "worker-idle-timer");
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        uint64_t deadline = channel_last_activity(w->channel) + w->spec.limits.idle_timeout_usec;

        if (w->state != WORKER_RUNNING)
                return 0;
        /* A process Exec started is activity for as long as it runs, and
         * so is a request at the endpoint's handler. */
        if (w->processes.n > 0 || worker_gate_busy(w)) {
                channel_touch(w->channel);
                return worker_arm_idle_timer(w), 0;
        }
        if (now_usec(CLOCK_MONOTONIC) < deadline)
                return worker_arm_idle_timer(w), 0;
        if (w->spec.idle_suspend) {
                log_struct(LOG_INFO, "Worker idle for too long, suspending it",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
                if (worker_suspend(w, NULL, NULL) >= 0)
                        return 0;
                /* Refused (the create checked it could be): stopping is what idle means otherwise. */
        }
        log_struct(LOG_INFO, "Worker idle for too long, stopping it",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
        (void) worker_stop(w, "idle", NULL);
        return 0;
}

/* A start or a resume longer than IdleTimeoutUSec would otherwise leave the
 * worker past its deadline the moment it runs: reaped (or suspended again)
 * before its workload did anything, and a request that woke it cut. */
void worker_start_idle_clock(Worker *w) {
        int r;

        if (w->channel)
                channel_touch(w->channel);
        r = worker_arm_idle_timer(w);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the idle timer of worker %s: %m", w->id);
}

void worker_start_done(Worker *w) {
        int r;

        r = worker_lookup_uid(w);
        if (r < 0)
                log_warning_errno(r, "Cannot determine the UID of worker %s: %m", w->id);
        worker_secrets_started(w);
        worker_start_idle_clock(w);
        {
                char uid[16], owner_uid[16];
                snprintf(uid, sizeof(uid), "%u", (unsigned) w->uid);
                worker_owner_field(w, owner_uid);
                log_struct(LOG_INFO, "Worker started",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                           "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class),
                           "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime),
                           "SANDBOXD_WORKER_UID", uid, "SANDBOXD_EVENT", "started",
                           "SANDBOXD_OWNER_UID", owner_uid, NULL);
        }
        /* Before the reply: a daemon killed right after it must find the
         * worker again (adopt.h). */
        r = worker_persist(w);
        if (r < 0)
                log_struct(LOG_ERR, "Failed to persist the worker's state; it will not survive a restart of sandboxd",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
        worker_reply_created(w);
        if (worker_set_state(w, WORKER_RUNNING) < 0)
                return;
        if (w->unit_ended)
                worker_unit_gone(w);
}

static int on_linger_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;

        assert(w->state == WORKER_ENDED);
        w->owned_by->gone(w);
        w->unexported = true;
        worker_collect(w);
        return 0;
}

void worker_delete_home(Worker *w) {
        _cleanup_free_ char *priv = NULL;
        int r;

        /* First: a disk unit stopping meanwhile then removes what it holds. */
        if (w->spec.disk_max > 0)
                (void) worker_disk_mark_kept(w->id, false);
        worker_delete_images(w);
        r = rm_rf(w->home);
        if (r < 0)
                log_warning_errno(r, "Failed to remove %s: %m", w->home);
        if (asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", w->id) < 0)
                return;
        r = rm_rf(priv);
        /* A workspace or the worker's disk is still mounted there until its
         * unit stops, which then removes the mount point itself. */
        if (r == -EXDEV && (w->spec.workspace || w->spec.disk_max > 0))
                log_debug("Leaving %s to the workspace's mount unit", priv);
        else if (r < 0)
                log_warning_errno(r, "Failed to remove %s: %m", priv);
        r = worker_disk_remove(w->id);
        if (r < 0 && r != -EXDEV)
                log_warning_errno(r, "Failed to remove the disk of worker %s: %m", w->id);
}

static int on_cleanup_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        char *id = userdata;

        if (e)
                log_struct(LOG_ERR, "Failed to start the cleanup of a sandboxed worker",
                           "SANDBOXD_WORKER_ID", id, "SANDBOXD_REASON", e->message ?: e->name, NULL);
        free(id);
        return 0;
}

/* A sandboxed worker's own ExecStopPost removes its bundle and the runtime's
 * state. When the bundle is still there once the unit is gone, that did not
 * happen: a "systemctl daemon-reload" while the worker ran makes systemd 252
 * forget the command (see unit-props.h), or the cleanup failed. Run it again
 * from a unit of its own, so nothing of the worker outlives it. */
static void worker_cleanup_leftovers(Worker *w) {
        worker_cleanup_sandbox_leftovers(w->owned_by, w->id, w->runtime);
}

void worker_cleanup_sandbox_leftovers(const WorkerOwner *o, const char *worker_id, SbxRuntime runtime) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *bundle = NULL, *unit = NULL, *id = NULL;
        WorkerSpec spec = {};
        WorkerUnitParams p = {
                .id = worker_id,
                .spec = &spec,
                .config = o->config,
                .runtime = runtime,
                .launcher_path = *o->launcher_path,
        };
        int r;

        if (runtime != SBX_RUNTIME_RUNSC && runtime != SBX_RUNTIME_KATA)
                return;
        if (asprintf(&bundle, SBX_BUNDLE_ROOT "/%s", worker_id) < 0 ||
            asprintf(&unit, "sandbox-%s-cleanup.service", worker_id) < 0 || !(id = strdup(worker_id))) {
                log_error("Out of memory checking the leftovers of %s.", worker_id);
                return;
        }
        if (access(bundle, F_OK) < 0)
                return;
        log_struct(LOG_WARNING, "A sandboxed worker's bundle outlived it; cleaning up from a unit of its own",
                   "SANDBOXD_WORKER_ID", worker_id, "SANDBOXD_UNIT", unit, NULL);
        r = systemd_start_transient_unit_new(*o->systemd, &msg, unit, "replace");
        if (r >= 0)
                r = worker_cleanup_unit_append_properties(msg, &p);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(*o->systemd, NULL, msg, on_cleanup_reply, id, 0);
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to start the cleanup of a sandboxed worker",
                           "SANDBOXD_WORKER_ID", worker_id, "SANDBOXD_REASON", strerror(-r), NULL);
                return;
        }
        TAKE_PTR(id);
}

/* PartOf= carries stop jobs, not a worker that ended by itself: the proxy
 * pair is stopped explicitly so nothing of the worker's outlives it. */
void worker_stop_egress(Worker *w) {
        /* The gate pair the same: an endpoint goes with its worker. */
        if (w->gate.service) {
                (void) unit_stops_stop(worker_unit_stops(w), w->gate.socket, w->id);
                (void) unit_stops_stop(worker_unit_stops(w), w->gate.service, w->id);
        }
        if (!w->egress.service)
                return;
        (void) unit_stops_stop(worker_unit_stops(w), w->egress.socket, w->id);
        (void) unit_stops_stop(worker_unit_stops(w), w->egress.service, w->id);
}

/* The unit is gone: record the result, delete the home, tell clients. The
 * object lingers briefly so the result can still be read. */
void worker_unit_gone(Worker *w) {
        const WorkerOwner *o = w->owned_by;
        char status[16], owner_uid[16];
        int r;

        if (!worker_is_alive(w))
                return;
        /* A checkpoint ends the unit: whether that was a suspend is the
         * checkpoint's answer to give (worker-suspend.c). */
        if (w->state == WORKER_SUSPENDING && w->suspend.result >= 0) {
                worker_suspend_unit_gone(w);
                return;
        }
        /* The unit ended: a stop still being asked for is moot. */
        unit_stops_cancel(worker_unit_stops(w), w->unit);
        w->exit_status = worker_exit_status_from_exec(w->exec_main_code, w->exec_main_status);
        w->end_reason = worker_end_reason(w->stop_reason, w->unit_result, w->exec_main_code);
        r = worker_result_format(w->stop_reason, w->unit_result, w->exec_main_code, w->exec_main_status,
                                 w->runtime == SBX_RUNTIME_RUNSC || w->runtime == SBX_RUNTIME_KATA, &w->result);
        if (r < 0)
                log_warning_errno(r, "Failed to format the result of worker %s: %m", w->id);
        w->timers.idle = sd_event_source_disable_unref(w->timers.idle);
        w->timers.runtime = sd_event_source_disable_unref(w->timers.runtime);
        /* A suspended worker has no channel: its pipes went with its unit. */
        if (w->channel)
                channel_worker_ended(w->channel);
        worker_delete_home(w);
        worker_stop_egress(w);
        uid_keep_stop(w);
        worker_cleanup_leftovers(w);
        worker_forget(w);

        snprintf(status, sizeof(status), "%d", w->exit_status);
        worker_owner_field(w, owner_uid);
        log_struct(LOG_INFO, "Worker ended",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_REASON", w->end_reason, "SANDBOXD_RESULT", w->result ?: "",
                   "SANDBOXD_EXIT_STATUS", status,
                   "SANDBOXD_UNIT_RESULT", w->unit_result ?: "", "SANDBOXD_EVENT", "ended",
                   "SANDBOXD_OWNER_UID", owner_uid, NULL);
        /* Ended, however it ended: the result tells an idle reap from a
         * failure. Clients hear of it once nothing of the worker is left. */
        if (worker_set_state(w, WORKER_ENDED) < 0)
                return;
        worker_remember(w);
        /* sandbox-launch exits 125 when the runtime failed before the workload
         * ran: the runtime may have broken since its probe, so probe it again
         * and let the next request see the answer. */
        if (w->runtime != SBX_RUNTIME_SYSTEMD && w->exit_status == SBX_LAUNCH_EXIT_SETUP && !w->stop_reason) {
                log_struct(LOG_WARNING, "Sandboxed worker failed before its workload ran; re-probing the runtime",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime), NULL);
                o->needs_probe(w, WORKER_PROBE_RUNTIMES);
        }
        if (event_add_timer(worker_event(w), &w->timers.linger, WORKER_LINGER_USEC, TIMER_HOUSEKEEPING,
                            on_linger_timer, w, "worker-linger-timer") < 0)
                on_linger_timer(NULL, 0, w);
}

static void worker_act_on_unit_end(Worker *w) {
        /* Before the start job is done, the job's result decides what happens;
         * after it, for a worker that awaits its token, the token. */
        if (w->unit_ended && w->state == WORKER_STARTING && w->start.awaits_ready)
                worker_ready_unit_ended(w);
        else if (w->unit_ended && w->state == WORKER_RESUMING)
                worker_resume_unit_ended(w);
        else if (w->unit_ended && w->state != WORKER_STARTING && w->state != WORKER_SUSPENDED)
                worker_unit_gone(w);
}

static int on_unit_end_read(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SystemdUnitState s;
        int r;

        w->unit_state_call = sd_bus_slot_unref(w->unit_state_call);
        r = systemd_unit_state_parse(reply, &s);
        if (r < 0 || !systemd_unit_state_down(&s)) {
                /* Ending the worker deletes its home: not on a word systemd
                 * takes back when asked. */
                log_struct(LOG_WARNING, "systemd does not confirm that a worker's unit ended; the worker is kept",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                           "SANDBOXD_EVENT", "unit-end-unconfirmed",
                           "SANDBOXD_ACTIVE_STATE", r < 0 ? strerror(-r) : s.active_state, NULL);
                w->unit_ended = false;
                return 0;
        }
        /* systemd's own account, while it still holds the unit (a collected
         * one reads as an empty "not-found" unit: the signal's values stand). */
        if (streq(s.load_state, "loaded")) {
                if (s.exec_main_code != 0) {
                        w->exec_main_code = s.exec_main_code;
                        w->exec_main_status = s.exec_main_status;
                }
                if (s.result[0]) {
                        free(w->unit_result);
                        w->unit_result = strdup(s.result);
                }
        }
        worker_act_on_unit_end(w);
        return 0;
}

/* A signal said the unit ended: act once systemd, asked again on the same
 * connection, says so too. */
void worker_confirm_unit_end(Worker *w) {
        int r;

        if (w->unit_state_call)
                return;
        r = systemd_unit_state_read_async(worker_systemd(w), &w->unit_state_call, w->unit_path, on_unit_end_read, w);
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to ask systemd for the state of a worker's unit; the worker is kept",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                           "SANDBOXD_EVENT", "unit-end-unconfirmed", "SANDBOXD_REASON", strerror(-r), NULL);
                w->unit_ended = false;
        }
}

static int on_unit_properties_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *iface;
        int r;

        /* A suspended worker has no unit; what comes is about the old one. */
        if (w->state == WORKER_SUSPENDED)
                return 0;
        r = sd_bus_message_read(msg, "s", &iface);
        if (r < 0)
                return 0;
        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return 0;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *name, *contents, *s;
                int32_t i;

                if (sd_bus_message_read(msg, "s", &name) < 0 || sd_bus_message_peek_type(msg, NULL, &contents) < 0)
                        return 0;
                if (streq(name, "ExecMainCode") && streq(contents, "i")) {
                        if (sd_bus_message_read(msg, "v", "i", &i) >= 0)
                                w->exec_main_code = i;
                } else if (streq(name, "ExecMainStatus") && streq(contents, "i")) {
                        if (sd_bus_message_read(msg, "v", "i", &i) >= 0)
                                w->exec_main_status = i;
                } else if (streq(name, "Result") && streq(contents, "s")) {
                        if (sd_bus_message_read(msg, "v", "s", &s) >= 0) {
                                free(w->unit_result);
                                w->unit_result = strdup(s);
                        }
                } else if (streq(name, "ActiveState") && streq(contents, "s")) {
                        if (sd_bus_message_read(msg, "v", "s", &s) >= 0) {
                                bool down = streq(s, "inactive") || streq(s, "failed");
                                /* A freshly loaded unit reports "inactive" before its
                                 * start job runs, so only an end after a start counts.
                                 * systemd coalesces changes, so a quick worker may never
                                 * be seen active: an exit code then proves it ran. */
                                if (down && (w->unit_seen_active || w->exec_main_code != 0))
                                        w->unit_ended = true;
                                if (!down)
                                        w->unit_seen_active = true;
                                if (streq(s, "deactivating") && w->state == WORKER_RUNNING)
                                        (void) worker_set_state(w, WORKER_STOPPING);
                        }
                } else if (sd_bus_message_skip(msg, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(msg) < 0)
                        return 0;
        }
        if (w->unit_ended && !(w->state == WORKER_STARTING && !w->start.awaits_ready))
                worker_confirm_unit_end(w);
        return 0;
}

static void on_channel_activity(Channel *c, void *userdata) {
        Worker *w = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        /* LastActivityUSec changes with every byte; tell clients once a second. */
        if (w->exported && now - w->activity_emitted >= USEC_PER_SEC) {
                w->activity_emitted = now;
                w->owned_by->activity(w);
                /* The idle clock must continue from here after a restart. */
                if (worker_is_alive(w))
                        (void) worker_save_state(w);
        }
}

static void on_channel_stdin_closed(Channel *c, void *userdata) {
        worker_forget_stdin(userdata);
}

int worker_stop(Worker *w, const char *reason, SbxError *error) {
        int r;

        if (w->state == WORKER_SUSPENDED) {
                /* No unit to stop: its image and home go now. */
                if (!w->stop_reason)
                        w->stop_reason = reason;
                worker_unit_gone(w);
                return 0;
        }
        if (!worker_is_alive(w) || w->state == WORKER_STARTING || w->state == WORKER_SUSPENDING ||
            w->state == WORKER_RESUMING)
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s is %s, not running", w->id,
                                     w->state == WORKER_STARTING ? "still starting" : worker_state_to_string(w->state));
        if (!w->stop_reason)
                w->stop_reason = reason;
        /* A stop the bus refuses is asked again (unit-stop.h) until systemd
         * takes it or the unit ends (worker_unit_gone). */
        r = unit_stops_stop(worker_unit_stops(w), w->unit, w->id);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to ask systemd to stop %s: %s",
                                     w->unit, strerror(-r));
        if (w->state == WORKER_RUNNING)
                (void) worker_set_state(w, WORKER_STOPPING);
        return 0;
}

int worker_open_channel(Worker *w, int *ret_fd, SbxError *error) {
        int r;

        if (w->state == WORKER_SUSPENDING || w->state == WORKER_SUSPENDED || w->state == WORKER_RESUMING)
                return sbx_error_set(error, -EAGAIN, SBX_ERROR_SUSPENDED, "Worker %s is %s", w->id,
                                     worker_state_to_string(w->state));
        if (!w->channel || w->state == WORKER_STARTING)
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s has no channel", w->id);
        /* An ended worker's last output can still be collected (a quick worker
         * may end before its client attaches); after that there is nothing. */
        if (!worker_is_alive(w) && !channel_has_pending_output(w->channel))
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING,
                                     "Worker %s has %s and its output was delivered", w->id,
                                     worker_state_to_string(w->state));
        r = channel_attach(w->channel, ret_fd);
        if (r == -EBUSY)
                return sbx_error_set(error, r, SBX_ERROR_CHANNEL_BUSY,
                                     "Worker %s already has a client attached to its channel", w->id);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_NOT_RUNNING, "Cannot open the channel of worker %s: %s",
                                     w->id, strerror(-r));
        return 0;
}

int worker_watch_unit(Worker *w) {
        int r;

        r = systemd_match_unit_properties_async(worker_systemd(w), &w->unit_match, w->unit_path,
                                                on_unit_properties_changed, w);
        if (r < 0)
                return r;
        /* Its endpoint's requests are activity too (worker-gate.h). */
        return worker_gate_watch(w);
}

int worker_new_channel(Worker *w, ChannelWorkerFds *ret_worker_fds) {
        int r;

        r = channel_new(&w->channel, worker_event(w), ret_worker_fds, on_channel_activity, w);
        if (r < 0)
                return r;
        channel_set_stdin_closed_callback(w->channel, on_channel_stdin_closed);
        return 0;
}

int worker_adopt_channel(Worker *w, const ChannelDaemonFds *fds, uint64_t last_activity) {
        int r;

        r = channel_new_from_fds(&w->channel, worker_event(w), fds, last_activity, on_channel_activity, w);
        if (r < 0)
                return r;
        channel_set_stdin_closed_callback(w->channel, on_channel_stdin_closed);
        return 0;
}
