/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "adopt.h"
#include "bus-manager.h"
#include "bus-worker.h"
#include "egress-units.h"
#include "env-cred.h"
#include "errors.h"
#include "gate.h"
#include "manager.h"
#include "rmrf.h"
#include "unit-props.h"
#include "worker-view.h"
#include "worker-state-file.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

static void worker_finalize(Worker *w);
static void worker_delete_home(Worker *w);
static void worker_stop_egress(Worker *w);
static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

int manager_new(Manager **ret, const char *config_path, SbxError *error) {
        Manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        sbx_config_init_defaults(&m->config);
        runtime_table_init(&m->runtimes);
        r = sbx_config_load(&m->config, config_path, error);
        if (r < 0)
                goto fail;
        worker_history_init(&m->history, m->config.ended_workers_max, m->config.ended_workers_max_age_usec);
        m->launcher_path = strdup(getenv("SANDBOXD_LAUNCHER") ?: SANDBOXD_LIBEXECDIR "/sandbox-launch");
        m->exec_path = strdup(getenv("SANDBOXD_EXEC") ?: SANDBOXD_LIBEXECDIR "/sandbox-exec");
        m->egress_path = strdup(getenv("SANDBOXD_EGRESS") ?: SANDBOXD_LIBEXECDIR "/sandbox-egress");
        m->walls_path = strdup(getenv("SANDBOXD_WALLS") ?: SANDBOXD_LIBEXECDIR "/sandbox-walls");
        if (!m->launcher_path || !m->exec_path || !m->egress_path || !m->walls_path) {
                r = -ENOMEM;
                goto fail;
        }
        r = sd_event_default(&m->event);
        if (r < 0)
                goto fail;
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->workers) {
                Worker *w = m->workers;
                m->workers = w->next;
                worker_free(w);
        }
        worker_history_done(&m->history);
        manager_probes_free(m);
        credential_server_free(m->credentials);
        bus_polkit_queries_free(m);
        strv_free(m->restore_removed);
        sd_bus_slot_unref(m->worker_filter);
        sd_bus_slot_unref(m->job_removed_match);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        sbx_config_done(&m->config);
        free(m->launcher_path);
        free(m->exec_path);
        free(m->egress_path);
        free(m->walls_path);
        free(m);
        return NULL;
}

Worker *manager_find_worker(Manager *m, const char *id) {
        for (Worker *w = m->workers; w; w = w->next)
                if (streq(w->id, id))
                        return w;
        return NULL;
}

Worker *manager_find_worker_by_unit(Manager *m, const char *unit) {
        for (Worker *w = m->workers; w; w = w->next)
                if (streq(w->unit, unit))
                        return w;
        return NULL;
}

static void manager_unlink_worker(Manager *m, Worker *w) {
        for (Worker **p = &m->workers; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
}

static void manager_update_status(Manager *m) {
        bus_manager_notify_status(m);
}

/* An ended worker's record outlives its object on the bus (ListWorkersEx). */
static void manager_remember_worker(Manager *m, const Worker *w) {
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
        r = worker_history_add(&m->history, &record, record.ended_monotonic);
        if (r < 0)
                log_warning_errno(r, "Failed to remember the end of worker %s: %m", w->id);
}

/* ---- the gate ---------------------------------------------------------- */

int manager_choose_runtime(Manager *m, SbxClass class, SbxRuntime *ret, SbxError *error) {
        /* A runtime binary that vanished since its probe takes its classes with it. */
        manager_runtimes_revalidate(m);
        return gate_choose(&m->runtimes, &m->config, class, ret, error);
}

/* ---- systemd's view of a worker's unit ---------------------------------- */

static void worker_reply_created(Worker *w) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = TAKE_PTR(w->create_request);
        int r;

        if (!req)
                return;
        r = sd_bus_reply_method_return(req, "so", w->id, w->object_path);
        if (r < 0)
                log_warning_errno(r, "Failed to reply to CreateWorker for %s: %m", w->id);
}

/* SANDBOXD_OWNER_UID goes into every lifecycle entry: once the worker's
 * object is gone, it is what ReadWorkerLog decides its owner by. */
static void worker_owner_field(const Worker *w, char buf[static 16]) {
        snprintf(buf, 16, "%u", (unsigned) w->owner);
}

static void worker_fail_start(Worker *w, const char *why) {
        Manager *m = w->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = TAKE_PTR(w->create_request);
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
        worker_forget(w);
        if (req)
                (void) sd_bus_reply_method_errorf(req, SBX_ERROR_START_FAILED,
                                                  "Worker unit %s failed to start (%s); see journalctl -u %s",
                                                  w->unit, why, w->unit);
        if (worker_is_alive(w) && m->n_alive > 0)
                m->n_alive--;
        w->state = WORKER_ENDED;
        w->ended_realtime = now_usec(CLOCK_REALTIME);
        r = worker_result_format_failed(why, &w->result);
        if (r >= 0)
                manager_remember_worker(m, w);
        /* A shared-kernel worker's start also fails when its namespace check
         * found one of PID 1's: verify the walls again, so that the next
         * request meets the answer at the gate. */
        if (w->runtime == SBX_RUNTIME_SYSTEMD || w->runtime == SBX_RUNTIME_WASM)
                (void) manager_probe_walls(m);
        manager_unlink_worker(m, w);
        worker_free(w);
        manager_update_status(m);
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

static int worker_arm_idle_timer(Worker *w) {
        uint64_t deadline = channel_last_activity(w->channel) + w->spec.limits.idle_timeout_usec;

        if (w->idle_timer)
                return sd_event_source_set_time(w->idle_timer, deadline) < 0 ? -EIO :
                       sd_event_source_set_enabled(w->idle_timer, SD_EVENT_ONESHOT);
        /* 100 ms accuracy: the reaper must act within a second of the deadline. */
        return sd_event_add_time(w->manager->event, &w->idle_timer, CLOCK_MONOTONIC, deadline,
                                 100 * USEC_PER_MSEC, on_idle_timer, w);
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        uint64_t deadline = channel_last_activity(w->channel) + w->spec.limits.idle_timeout_usec;

        if (w->state != WORKER_RUNNING)
                return 0;
        if (now_usec(CLOCK_MONOTONIC) < deadline)
                return worker_arm_idle_timer(w), 0;
        log_struct(LOG_INFO, "Worker idle for too long, stopping it",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit, NULL);
        (void) manager_stop_worker(w->manager, w, "idle", NULL);
        return 0;
}

static void worker_started(Worker *w) {
        int r;

        r = worker_lookup_uid(w);
        if (r < 0)
                log_warning_errno(r, "Cannot determine the UID of worker %s: %m", w->id);
        w->state = WORKER_RUNNING;
        w->exported = true;
        /* The secrets are in the unit's credential store now; the daemon's copy
         * goes, the environment's values with it. */
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                explicit_bzero(w->spec.credentials[i].data, w->spec.credentials[i].size);
        if (w->environment.data)
                explicit_bzero(w->environment.data, w->environment.size);
        for (char **e = w->spec.environment; e && *e; e++)
                explicit_bzero(*e, strlen(*e));

        r = worker_arm_idle_timer(w);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the idle timer of worker %s: %m", w->id);
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
        bus_worker_emit_new(w);
        if (w->unit_ended)
                worker_finalize(w);
}

static int on_linger_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;

        bus_worker_emit_gone(w);
        manager_unlink_worker(m, w);
        worker_free(w);
        return 0;
}

static void worker_delete_home(Worker *w) {
        _cleanup_free_ char *priv = NULL;
        int r;

        r = rm_rf(w->home);
        if (r < 0)
                log_warning_errno(r, "Failed to remove %s: %m", w->home);
        if (asprintf(&priv, SBX_PRIVATE_STATE_ROOT "/%s", w->id) < 0)
                return;
        r = rm_rf(priv);
        if (r < 0)
                log_warning_errno(r, "Failed to remove %s: %m", priv);
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
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *bundle = NULL, *unit = NULL, *id = NULL;
        Manager *m = w->manager;
        WorkerUnitParams p = {
                .id = w->id,
                .spec = &w->spec,
                .config = &m->config,
                .runtime = w->runtime,
                .launcher_path = m->launcher_path,
        };
        int r;

        if (w->runtime != SBX_RUNTIME_RUNSC && w->runtime != SBX_RUNTIME_KATA)
                return;
        if (asprintf(&bundle, SBX_BUNDLE_ROOT "/%s", w->id) < 0 || asprintf(&unit, "sandbox-%s-cleanup.service", w->id) < 0 ||
            !(id = strdup(w->id))) {
                log_error("Out of memory checking the leftovers of %s.", w->id);
                return;
        }
        if (access(bundle, F_OK) < 0)
                return;
        log_struct(LOG_WARNING, "A sandboxed worker's bundle outlived it; cleaning up from a unit of its own",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", unit, NULL);
        r = sd_bus_message_new_method_call(m->bus, &msg, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(msg, "ss", unit, "replace");
        if (r >= 0)
                r = worker_cleanup_unit_append_properties(msg, &p);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(m->bus, NULL, msg, on_cleanup_reply, id, 0);
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to start the cleanup of a sandboxed worker",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                return;
        }
        TAKE_PTR(id);
}

/* PartOf= carries stop jobs, not a worker that ended by itself: the proxy
 * pair is stopped explicitly so nothing of the worker's outlives it. */
static void worker_stop_egress(Worker *w) {
        if (!w->egress_service)
                return;
        (void) sd_bus_call_method_async(w->manager->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                        "StopUnit", on_stop_reply, NULL, "ss", w->egress_socket, "replace");
        (void) sd_bus_call_method_async(w->manager->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                        "StopUnit", on_stop_reply, NULL, "ss", w->egress_service, "replace");
}

/* The unit is gone: record the result, delete the home, tell clients. The
 * object lingers briefly so the result can still be read. */
static void worker_finalize(Worker *w) {
        Manager *m = w->manager;
        char status[16], owner_uid[16];
        int r;

        if (!worker_is_alive(w))
                return;
        w->exit_status = worker_exit_status_from_exec(w->exec_main_code, w->exec_main_status);
        w->end_reason = worker_end_reason(w->stop_reason, w->unit_result, w->exec_main_code);
        r = worker_result_format(w->stop_reason, w->unit_result, w->exec_main_code, w->exec_main_status,
                                 w->runtime == SBX_RUNTIME_RUNSC || w->runtime == SBX_RUNTIME_KATA, &w->result);
        if (r < 0)
                log_warning_errno(r, "Failed to format the result of worker %s: %m", w->id);
        /* Ended, however it ended: the result tells an idle reap from a failure. */
        w->state = WORKER_ENDED;
        w->ended_realtime = now_usec(CLOCK_REALTIME);
        if (m->n_alive > 0)
                m->n_alive--;
        manager_remember_worker(m, w);
        w->idle_timer = sd_event_source_disable_unref(w->idle_timer);
        channel_worker_ended(w->channel);
        worker_delete_home(w);
        worker_stop_egress(w);
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
        bus_worker_emit_ended(w);
        manager_update_status(m);
        /* sandbox-launch exits 125 when the runtime failed before the workload
         * ran: the runtime may have broken since its probe, so probe it again
         * and let the next request see the answer. */
        if (w->runtime != SBX_RUNTIME_SYSTEMD && w->exit_status == SBX_LAUNCH_EXIT_SETUP && !w->stop_reason) {
                log_struct(LOG_WARNING, "Sandboxed worker failed before its workload ran; re-probing the runtime",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime), NULL);
                (void) manager_probe_runtimes(m, NULL);
        }
        if (sd_event_add_time_relative(m->event, &w->linger_timer, CLOCK_MONOTONIC, WORKER_LINGER_USEC,
                                       USEC_PER_SEC, on_linger_timer, w) < 0)
                on_linger_timer(NULL, 0, w);
}

static int on_unit_properties_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *iface;
        int r;

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
                                if (streq(s, "deactivating") && w->state == WORKER_RUNNING) {
                                        w->state = WORKER_STOPPING;
                                        bus_worker_emit_state(w);
                                }
                        }
                } else if (sd_bus_message_skip(msg, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(msg) < 0)
                        return 0;
        }
        /* Before the start job is done, the job's result decides what happens. */
        if (w->unit_ended && w->state != WORKER_STARTING)
                worker_finalize(w);
        return 0;
}

static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *job, *unit, *result;
        uint32_t id;
        Worker *w;

        if (sd_bus_message_read(msg, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        if (manager_probe_job_removed(m, unit, result))
                return 0;
        w = manager_find_worker_by_unit(m, unit);
        if (!w || w->state != WORKER_STARTING)
                return 0;
        if (streq(result, "done"))
                worker_started(w);
        else {
                char why[64];
                snprintf(why, sizeof(why), "start job %s", result);
                worker_fail_start(w, why);
        }
        return 0;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        w->start_call = sd_bus_slot_unref(w->start_call);
        if (e) {
                char why[400];
                snprintf(why, sizeof(why), "%s", e->message ?: e->name);
                worker_fail_start(w, why);
        }
        return 0;
}

static void on_channel_activity(Channel *c, void *userdata) {
        Worker *w = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        /* LastActivityUSec changes with every byte; tell clients once a second. */
        if (w->exported && now - w->activity_emitted >= USEC_PER_SEC) {
                w->activity_emitted = now;
                bus_worker_emit_activity(w);
                /* The idle clock must continue from here after a restart. */
                if (worker_is_alive(w))
                        (void) worker_save_state(w);
        }
}

static void on_channel_stdin_closed(Channel *c, void *userdata) {
        worker_forget_stdin(userdata);
}

static int manager_build_start_message(Manager *m, Worker *w, const ChannelWorkerFds *stdio, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        WorkerUnitParams p = {
                .id = w->id,
                .unit = w->unit,
                .user = w->user,
                .home = w->home,
                .spec = &w->spec,
                .config = &m->config,
                .runtime = w->runtime,
                .launcher_path = m->launcher_path,
                .exec_path = m->exec_path,
                .stdio = stdio,
                .egress_proxy_url = w->egress_service ? SBX_EGRESS_PROXY_URL : NULL,
                .egress_socket = w->egress_socket,
                .walls_path = m->walls_path,
                .host_ns = &m->runtimes.walls.host,
        };
        int r;

        r = sd_bus_message_new_method_call(m->bus, &msg, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(msg, "ss", w->unit, "fail");
        if (r < 0)
                return r;
        r = worker_unit_append_properties(msg, &p);
        if (r < 0)
                return r;
        r = worker_egress_append_aux_units(msg, w->id, w->unit, w->egress_service ? m->egress_path : NULL,
                                           SBX_CREDENTIAL_SOCKET);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(msg);
        return 0;
}

/* A bare Argv[0] is looked for as the worker of RUNTIME will see it, never
 * in the caller's $PATH, and the unit is given the path found: argv[0] is
 * that path for every runtime, because an OCI process has no separate
 * program path to keep a typed name beside. */
static int manager_resolve_command(Manager *m, WorkerSpec *spec, SbxRuntime runtime, SbxError *error) {
        _cleanup_free_ char *path = NULL;
        WorkerView view;
        int r;

        if (!exec_name_is_bare(spec->argv[0]))
                return 0;
        r = worker_view_for_runtime(runtime, &m->config, &view);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_ISOLATION_UNAVAILABLE,
                                     "The %s runtime has no file system view to search for '%.255s' in",
                                     sbx_runtime_to_string(runtime), spec->argv[0]);
        r = worker_view_find_executable(&view, spec->argv[0], &path, error);
        if (r < 0)
                return r;
        free(spec->argv[0]);
        spec->argv[0] = TAKE_PTR(path);
        return 0;
}

/* systemd creates a home even on a full file system (a directory costs no
 * block on most), and the worker then starts only to fail at its first
 * write: a full disk is refused up front instead, before anything exists.
 * A file system that counts no inodes (f_files 0) is judged by its bytes. */
#define HOME_MIN_FREE_BYTES (UINT64_C(1) << 20)
#define HOME_MIN_FREE_INODES 16

static int manager_check_home_space(SbxError *error) {
        struct statvfs st;
        uint64_t free_bytes;

        if (statvfs(SBX_PRIVATE_STATE_ROOT, &st) < 0)
                return sbx_error_set(error, -errno, SBX_ERROR_START_FAILED,
                                     "Cannot check the free space for worker homes in " SBX_PRIVATE_STATE_ROOT ": %s",
                                     strerror(errno));
        free_bytes = (uint64_t) st.f_bavail * st.f_frsize;
        if (free_bytes < HOME_MIN_FREE_BYTES || (st.f_files > 0 && st.f_favail < HOME_MIN_FREE_INODES))
                return sbx_error_set(error, -ENOSPC, SBX_ERROR_START_FAILED,
                                     "No room for a worker's home: " SBX_PRIVATE_STATE_ROOT
                                     " has %" PRIu64 " KiB and %" PRIu64 " inodes free, at least %" PRIu64
                                     " KiB and %d inodes are needed",
                                     free_bytes / 1024, (uint64_t) st.f_favail, HOME_MIN_FREE_BYTES / 1024,
                                     HOME_MIN_FREE_INODES);
        return 0;
}

int manager_create_worker(Manager *m, WorkerSpec *spec, uid_t owner, sd_bus_message *request, SbxError *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *start = NULL;
        _cleanup_(channel_worker_fds_close) ChannelWorkerFds worker_stdio = { -1, -1, -1 };
        SbxRuntime runtime;
        Worker *w = NULL;
        int r;

        if (m->n_alive >= m->config.max_workers)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_TOO_MANY_WORKERS,
                                     "This host already runs %u workers, the configured maximum", m->n_alive);
        r = manager_check_home_space(error);
        if (r < 0)
                return r;
        /* systemd fetches a worker's secrets, environment and egress policy
         * from the credential socket when the unit starts; without it the
         * start fails with nothing to say why. */
        if (spec->n_credentials > 0 || strv_length(spec->environment) > 0 || worker_wants_egress(spec)) {
                r = credential_server_reachable(m->credentials);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_START_FAILED,
                                             "The credential socket " SBX_CREDENTIAL_SOCKET
                                             " is gone (%s): a worker with secrets, an environment or egress"
                                             " cannot start until sandboxd is restarted",
                                             strerror(-r));
        }
        /* Gate, first check: choose the runtime for the class. */
        r = manager_choose_runtime(m, spec->class, &runtime, error);
        if (r < 0)
                return r;
        r = gate_check_features(runtime, spec->set & SPEC_HAS_DISK_MAX, error);
        if (r < 0)
                return r;
        /* Before anything exists: a command that is not there creates nothing. */
        r = manager_resolve_command(m, spec, runtime, error);
        if (r < 0)
                return r;

        r = worker_new(&w, m, spec, runtime);
        if (r < 0)
                return r;
        w->owner = owner;
        r = env_credential_encode(w->spec.environment, &w->environment.data, &w->environment.size);
        if (r < 0)
                goto fail;
        w->environment.name = (char *) SBX_ENV_CREDENTIAL;
        if (worker_wants_egress(&w->spec)) {
                r = worker_egress_policy_json(&w->spec, &m->config, w->id, (char **) &w->egress_policy.data, error);
                if (r < 0)
                        goto fail;
                w->egress_policy.size = strlen((char *) w->egress_policy.data);
                w->egress_policy.name = (char *) "egress-policy";
                r = worker_egress_unit_names(w->id, &w->egress_socket, &w->egress_service);
                if (r < 0)
                        goto fail;
        }
        r = channel_new(&w->channel, m->event, &worker_stdio, on_channel_activity, w);
        if (r < 0)
                goto fail;
        channel_set_stdin_closed_callback(w->channel, on_channel_stdin_closed);
        r = sd_bus_match_signal_async(m->bus, &w->unit_match, SYSTEMD_DEST, w->unit_path,
                                      "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      on_unit_properties_changed, NULL, w);
        if (r < 0)
                goto fail;
        r = manager_build_start_message(m, w, &worker_stdio, &start);
        if (r < 0)
                goto fail;

        /* Gate, second check: the runtime chosen must still serve the class
         * now that the unit is about to be emitted. A runtime that broke in
         * between fails the request; it is never swapped for a weaker one. */
        manager_runtimes_revalidate(m);
        r = gate_recheck(&m->runtimes, &m->config, w->spec.class, w->runtime, error);
        if (r < 0)
                goto fail;

        r = sd_bus_call_async(m->bus, &w->start_call, start, on_start_reply, w, 0);
        if (r < 0)
                goto fail;
        w->create_request = sd_bus_message_ref(request);
        w->next = m->workers;
        m->workers = w;
        m->n_alive++;
        manager_update_status(m);
        {
                char owner_uid[16];
                worker_owner_field(w, owner_uid);
                if (w->spec.class != w->spec.requested_class)
                        log_struct(LOG_NOTICE, "Worker's class raised to its origin's floor",
                                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_ORIGIN", w->spec.origin ?: SBX_ORIGIN_DEFAULT,
                                   "SANDBOXD_REQUESTED_CLASS", sbx_class_to_string(w->spec.requested_class),
                                   "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class), NULL);
                log_struct(LOG_INFO, "Starting worker",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                           "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class),
                           "SANDBOXD_REQUESTED_CLASS", sbx_class_to_string(w->spec.requested_class),
                           "SANDBOXD_ORIGIN", w->spec.origin ?: SBX_ORIGIN_DEFAULT,
                           "SANDBOXD_OWNER_UID", owner_uid, "SANDBOXD_EVENT", "starting",
                           "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime), NULL);
        }
        return 0;
fail:
        worker_free(w);
        if (error && !error->name)
                sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to set up the worker: %s", strerror(-r));
        return r;
}

int manager_adopt_worker(Manager *m, Worker *w, const ChannelDaemonFds *fds, uint64_t last_activity) {
        _cleanup_free_ char *state = NULL;
        ChannelDaemonFds own = *fds;
        int r;

        r = channel_new_from_fds(&w->channel, m->event, fds, last_activity, on_channel_activity, w);
        if (r < 0) {
                safe_close(own.stdin_fd);
                safe_close(own.stdout_fd);
                safe_close(own.stderr_fd);
                worker_free(w);
                return r;
        }
        channel_set_stdin_closed_callback(w->channel, on_channel_stdin_closed);
        r = sd_bus_match_signal_async(m->bus, &w->unit_match, SYSTEMD_DEST, w->unit_path,
                                      "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      on_unit_properties_changed, NULL, w);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        /* Running, and known to clients already: no second WorkerNew. */
        w->state = WORKER_RUNNING;
        w->exported = true;
        w->unit_seen_active = true;
        w->next = m->workers;
        m->workers = w;
        m->n_alive++;
        /* A deadline that passed while the daemon was down fires at once. */
        r = worker_arm_idle_timer(w);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the idle timer of worker %s: %m", w->id);
        log_struct(LOG_INFO, "Worker re-adopted after a restart of sandboxd",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class),
                   "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime), NULL);
        /* The unit may have ended between the listing and the subscription;
         * systemd's limits (RuntimeMaxSec= among them) are the unit's own and
         * ran on meanwhile. */
        r = sd_bus_get_property_string(m->bus, SYSTEMD_DEST, w->unit_path, "org.freedesktop.systemd1.Unit",
                                       "ActiveState", NULL, &state);
        if (r < 0 || streq(state, "inactive") || streq(state, "failed")) {
                w->unit_ended = true;
                worker_finalize(w);
        }
        manager_update_status(m);
        return 0;
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e && !sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit"))
                log_warning("Failed to stop a worker unit: %s", e->message ?: e->name);
        return 0;
}

int manager_stop_worker(Manager *m, Worker *w, const char *reason, SbxError *error) {
        int r;

        if (!worker_is_alive(w) || w->state == WORKER_STARTING)
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s is %s, not running", w->id,
                                     w->state == WORKER_ENDED ? "ended" : "still starting");
        if (!w->stop_reason)
                w->stop_reason = reason;
        r = sd_bus_call_method_async(m->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit",
                                     on_stop_reply, NULL, "ss", w->unit, "replace");
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED, "Failed to ask systemd to stop %s: %s",
                                     w->unit, strerror(-r));
        if (w->state == WORKER_RUNNING) {
                w->state = WORKER_STOPPING;
                bus_worker_emit_state(w);
        }
        return 0;
}

int manager_open_channel(Manager *m, Worker *w, int *ret_fd, SbxError *error) {
        int r;

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

/* ---- start-up ----------------------------------------------------------- */

static int unit_is_gone(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *state = NULL;
        int r;

        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, SYSTEMD_DEST, path, "org.freedesktop.systemd1.Unit", "ActiveState",
                                       &e, &state);
        if (r < 0)
                return 1;
        return streq(state, "inactive") || streq(state, "failed");
}

int manager_stop_units(Manager *m, char **units) {
        size_t n = strv_length(units);

        for (size_t i = 0; i < n; i++) {
                log_struct(LOG_NOTICE, "Stopping leftover sandbox unit from an earlier run",
                           "SANDBOXD_UNIT", units[i], "SANDBOXD_REASON", "boot-wipe", NULL);
                (void) sd_bus_call_method(m->bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit",
                                          NULL, NULL, "ss", units[i], "replace");
        }
        /* Homes may only go once nothing can write to them any more. */
        for (unsigned tries = 0; tries < 200; tries++) {
                bool all_gone = true;
                for (size_t i = 0; i < n; i++)
                        if (unit_is_gone(m->bus, units[i]) == 0)
                                all_gone = false;
                if (all_gone)
                        break;
                usleep(50 * 1000);
        }
        for (size_t i = 0; i < n; i++)
                (void) sd_bus_call_method(m->bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ResetFailedUnit",
                                          NULL, NULL, "s", units[i]);
        return 0;
}

int manager_wipe_leftovers(Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **units = calloc(1, sizeof(char *));
        size_t n = 0;
        const char *name;
        int r;

        if (!units)
                return -ENOMEM;
        r = sd_bus_call_method(m->bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns",
                               &e, &reply, "asas", 0, 1, "sandbox-*");
        if (r < 0)
                return log_error_errno(r, "Failed to list leftover sandbox units: %s", e.message ?: strerror(-r));
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, NULL, NULL, NULL, NULL,
                                        NULL, NULL, NULL)) > 0) {
                char **nu = realloc(units, (n + 2) * sizeof(char *));
                if (!nu)
                        return -ENOMEM;
                units = nu;
                units[n] = strdup(name);
                units[++n] = NULL;
                if (!units[n - 1])
                        return -ENOMEM;
        }
        r = manager_stop_units(m, units);
        if (r < 0)
                return r;

        r = rm_rf_children(SBX_PRIVATE_STATE_ROOT);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_PRIVATE_STATE_ROOT ": %m");
        r = rm_rf_children(SBX_STATE_ROOT);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_STATE_ROOT ": %m");
        r = rm_rf_children(SBX_BUNDLE_ROOT);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_BUNDLE_ROOT ": %m");
        r = rm_rf_children(SBX_WORKER_STATE_DIR);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_WORKER_STATE_DIR ": %m");
        if (n > 0)
                log_info("Wiped %zu leftover sandbox units and the sessions root", n);
        return 0;
}

static const SbxCredential *lookup_credential(const char *unit, const char *name, void *userdata) {
        Manager *m = userdata;
        Worker *w = manager_find_worker_by_unit(m, unit);

        /* The proxy asks for its policy whenever socket activation (re)starts it. */
        for (Worker *e = m->workers; !w && e; e = e->next)
                if (e->egress_service && streq(e->egress_service, unit) && worker_is_alive(e))
                        return streq(name, "egress-policy") ? &e->egress_policy : NULL;

        /* Only while the unit is starting: afterwards the daemon's copy is gone. */
        if (!w || w->state != WORKER_STARTING)
                return NULL;
        if (streq(name, SBX_ENV_CREDENTIAL))
                return &w->environment;
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                if (streq(w->spec.credentials[i].name, name))
                        return &w->spec.credentials[i];
        return NULL;
}

int manager_startup(Manager *m) {
        int r;

        if (getenv("SANDBOXD_BUS_ADDRESS")) {
                r = sd_bus_new(&m->bus);
                if (r >= 0)
                        r = sd_bus_set_address(m->bus, getenv("SANDBOXD_BUS_ADDRESS"));
                if (r >= 0)
                        r = sd_bus_set_bus_client(m->bus, 1);
                if (r >= 0)
                        r = sd_bus_start(m->bus);
        } else
                r = sd_bus_open_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");

        r = sd_bus_match_signal_async(m->bus, &m->job_removed_match, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                      "JobRemoved", on_job_removed, NULL, m);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to JobRemoved: %m");
        /* Without a subscription systemd sends no unit property changes. */
        r = sd_bus_call_method(m->bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "Subscribe", NULL, NULL, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to systemd: %m");

        /* A restart re-adopts what it can account for, a boot wipes. */
        r = manager_restore(m);
        if (r < 0)
                return r;
        r = credential_server_new(&m->credentials, m->event, SBX_CREDENTIAL_SOCKET, lookup_credential, m);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on " SBX_CREDENTIAL_SOCKET ": %m");

        /* Runtimes are probed, never assumed, and before the name is taken,
         * so no request can race the first probe. */
        r = manager_probe_runtimes(m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to start runtime probes: %m");
        r = manager_probe_runtimes_wait(m, 90 * USEC_PER_SEC);
        if (r < 0)
                log_warning_errno(r, "Runtime probes did not finish: %m");
        r = manager_start_reprobe_timer(m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the runtime re-probe timer: %m");

        r = bus_manager_install(m);
        if (r < 0)
                return r;
        r = sd_bus_request_name(m->bus, "org.sandboxd1", 0);
        if (r < 0)
                return log_error_errno(r, "Failed to acquire the name org.sandboxd1: %m");
        manager_restore_announce(m);
        return 0;
}
