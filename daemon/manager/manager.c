/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "adopt.h"
#include "egress-units.h"
#include "worker-broker.h"
#include "worker-gate.h"
#include "worker-secrets.h"
#include "env-cred.h"
#include "errors.h"
#include "gate.h"
#include "manager.h"
#include "worker-log-job.h"
#include "pool.h"
#include "manager-quota.h"
#include "manager-workspace.h"
#include "rmrf.h"
#include "suspend-keep.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "worker-disk.h"
#include "worker-prepare.h"
#include "worker-ready.h"
#include "worker-resume.h"
#include "worker-suspend.h"
#include "worker-view.h"
#include "worker-state-file.h"
#include "worker-unit.h"


/* ---- what a worker reports (worker.h) ------------------------------------ */

static void owner_released(Worker *w) {
        Manager *m = w->manager;

        if (m->n_alive > 0)
                m->n_alive--;
        manager_workspace_release(m, w);
}

void manager_notify_status(Manager *m) {
        if (m->listener.status_changed)
                m->listener.status_changed(m);
}

static void owner_added(Worker *w) {
        manager_add_worker(w->manager, w);
}

static void owner_status_changed(Worker *w) {
        manager_notify_status(w->manager);
}

static void owner_collect(Worker *w) {
        manager_enqueue_gc(w->manager, w);
}

static void owner_needs_probe(Worker *w, WorkerProbe what) {
        if (what == WORKER_PROBE_WALLS)
                (void) prober_probe_walls(&w->manager->prober);
        else
                (void) prober_probe_runtimes(&w->manager->prober, NULL);
}

static uint64_t owner_checkpoint_budget(Worker *w) {
        return manager_quota_checkpoint_budget(w->manager, w);
}

static void manager_worker_unit_env(Worker *w, WorkerUnitEnv *ret) {
        Manager *m = w->manager;

        *ret = (WorkerUnitEnv) {
                .config = &m->config,
                .launcher_path = m->launcher_path,
                .exec_path = m->exec_path,
                .egress_path = m->egress_path,
                .gate_path = m->gate_path,
                .mkfs_path = m->mkfs_path,
                .workspace_root = m->workspace_root,
                .host_ns = &m->runtimes.walls.host,
        };
}

/* The gate again, just before a unit is emitted: the runtime chosen must
 * still serve the class. */
static int owner_recheck_gate(Worker *w, SbxError *error) {
        Manager *m = w->manager;

        runtime_table_revalidate(&m->runtimes);
        return gate_recheck(&m->runtimes, &m->config, w->spec.class, w->runtime, error);
}

static void manager_worker_owner_init(Manager *m) {
        /* What goes to the bus (state_changed, appeared, activity, ended,
         * gone, the replies) the bus layer fills in (bus_manager_listen()). */
        m->worker_owner = (WorkerOwner) {
                .manager = m,
                .event = &m->event,
                .systemd = &m->systemd,
                .unit_stops = &m->unit_stops,
                .history = &m->history,
                .config = &m->config,
                .launcher_path = &m->launcher_path,
                .log_read_quota = &m->log_read_quota,
                .log_jobs = &m->log_jobs,
                .added = owner_added,
                .released = owner_released,
                .status_changed = owner_status_changed,
                .collect = owner_collect,
                .needs_probe = owner_needs_probe,
                .suspended = suspend_keep_after_suspend,
                .checkpoint_budget = owner_checkpoint_budget,
                .unit_env = manager_worker_unit_env,
                .recheck_gate = owner_recheck_gate,
        };
}

/* ---- what the pool asks (pool.h) ------------------------------------------ */

static void pool_owner_revalidate_runtimes(Pool *pool) {
        Manager *m = pool->userdata;
        runtime_table_revalidate(&m->runtimes);
}

static void pool_owner_probe_runtimes(Pool *pool) {
        Manager *m = pool->userdata;
        (void) prober_probe_runtimes(&m->prober, NULL);
}

static int pool_owner_admit_disk(Pool *pool, uint64_t want, SbxError *error) {
        return manager_admit_disk(pool->userdata, want, error);
}

static void pool_owner_status_changed(Pool *pool) {
        manager_notify_status(pool->userdata);
}

static void manager_pool_init(Manager *m) {
        m->pool = (Pool) {
                .worker_owner = &m->worker_owner,
                .exec_path = &m->exec_path,
                .egress_path = &m->egress_path,
                .mkfs_path = &m->mkfs_path,
                .runtimes = &m->runtimes,
                .n_alive = &m->n_alive,
                .userdata = m,
                .revalidate_runtimes = pool_owner_revalidate_runtimes,
                .probe_runtimes = pool_owner_probe_runtimes,
                .admit_disk = pool_owner_admit_disk,
                .status_changed = pool_owner_status_changed,
        };
}

int manager_new(Manager **ret, const char *config_path, SbxError *error) {
        Manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        manager_worker_owner_init(m);
        manager_pool_init(m);
        m->prober = (Prober) {
                .event = &m->event,
                .systemd = &m->systemd,
                .config = &m->config,
                .runtimes = &m->runtimes,
                .launcher_path = &m->launcher_path,
                .walls_path = &m->walls_path,
        };
        prober_init(&m->prober);
        sbx_config_init_defaults(&m->config);
        runtime_table_init(&m->runtimes);
        r = sbx_config_load(&m->config, config_path, error);
        if (r < 0)
                goto fail;
        worker_history_init(&m->history, m->config.ended_workers_max, m->config.ended_workers_max_age_usec);
        caller_quota_init(&m->log_read_quota, m->config.bus_log_reads_per_user, m->config.bus_log_reads_max);
        caller_quota_init(&m->workspace_creation_quota, m->config.bus_workspace_creations_per_user,
                          m->config.bus_workspace_creations_max);
        m->launcher_path = strdup(getenv("SANDBOXD_LAUNCHER") ?: SANDBOXD_LIBEXECDIR "/sandbox-launch");
        m->exec_path = strdup(getenv("SANDBOXD_EXEC") ?: SANDBOXD_LIBEXECDIR "/sandbox-exec");
        m->egress_path = strdup(getenv("SANDBOXD_EGRESS") ?: SANDBOXD_LIBEXECDIR "/sandbox-egress");
        m->gate_path = strdup(getenv("SANDBOXD_GATE") ?: SANDBOXD_LIBEXECDIR "/sandbox-gate");
        m->walls_path = strdup(getenv("SANDBOXD_WALLS") ?: SANDBOXD_LIBEXECDIR "/sandbox-walls");
        m->workspace_root = strdup(getenv("SANDBOXD_WORKSPACE_ROOT") ?: SBX_WORKSPACE_ROOT);
        m->mkfs_path = strdup(getenv("SANDBOXD_MKFS") ?: "/sbin/mkfs.ext4");
        if (!m->launcher_path || !m->exec_path || !m->egress_path || !m->gate_path || !m->walls_path || !m->workspace_root ||
            !m->mkfs_path) {
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
        m->gc_queue = NULL;
        sd_event_source_disable_unref(m->gc_event);
        worker_history_done(&m->history);
        prober_done(&m->prober);
        pool_free_all(&m->pool);
        credential_server_free(m->credentials);
        worker_log_jobs_free(&m->worker_owner);
        caller_quota_done(&m->log_read_quota);
        strv_free(m->restore_removed);
        sd_bus_slot_unref(m->job_removed_match);
        unit_stops_free(m->unit_stops);
        sd_bus_flush_close_unref(m->systemd);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        sbx_config_done(&m->config);
        free(m->launcher_path);
        free(m->exec_path);
        free(m->egress_path);
        free(m->gate_path);
        free(m->walls_path);
        manager_workspaces_abort_creations(m);
        while (m->workspaces) {
                Workspace *ws = m->workspaces;
                m->workspaces = ws->next;
                workspace_free(ws);
        }
        /* After the creations, which give their units back. */
        caller_quota_done(&m->workspace_creation_quota);
        free(m->workspace_root);
        free(m->mkfs_path);
        free(m);
        return NULL;
}

Worker *manager_find_worker(Manager *m, const char *id) {
        assert(m);
        assert(id);
        for (Worker *w = m->workers; w; w = w->next)
                if (streq(w->id, id))
                        return w;
        return NULL;
}

Worker *manager_find_worker_by_unit(Manager *m, const char *unit) {
        assert(m);
        assert(unit);
        for (Worker *w = m->workers; w; w = w->next)
                if (streq(w->unit, unit))
                        return w;
        return NULL;
}

void manager_add_worker(Manager *m, Worker *w) {
        assert(m);
        assert(w);
        assert(worker_is_alive(w) && !w->gc.queued);
        w->next = m->workers;
        m->workers = w;
        m->n_alive++;
}

static void manager_unlink_worker(Manager *m, Worker *w) {
        for (Worker **p = &m->workers; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
}

/* ---- the deferred free ------------------------------------------------- */

static int on_gc(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        while (m->gc_queue) {
                Worker *w = m->gc_queue;
                m->gc_queue = w->gc.next;
                manager_unlink_worker(m, w);
                worker_free(w);
        }
        /* The heap of a burst of workers stays with the process unless it is
         * handed back: with none left, what sandboxd holds is what it needs
         * idle, and VmRSS after churn shows leaks, not the burst's peak. */
        if (!m->workers)
                (void) malloc_trim(0);
        return 0;
}

void manager_enqueue_gc(Manager *m, Worker *w) {
        int r;

        assert(m);
        assert(w);
        /* Only an ended worker no client can reach (worker.h). */
        assert(worker_may_gc(w));

        if (w->gc.queued)
                return;
        w->gc.queued = true;
        w->gc.next = m->gc_queue;
        m->gc_queue = w;
        if (m->gc_event) {
                r = sd_event_source_set_enabled(m->gc_event, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_error_errno(r, "Failed to schedule freeing ended workers: %m");
                return;
        }
        /* At idle priority: whatever is being dispatched, and what the bus
         * has queued behind it, still finds the worker; only then it goes. */
        r = sd_event_add_defer(m->event, &m->gc_event, on_gc, m);
        if (r >= 0) {
                (void) sd_event_source_set_description(m->gc_event, "worker-gc");
                r = sd_event_source_set_priority(m->gc_event, SD_EVENT_PRIORITY_IDLE);
        }
        if (r < 0)
                /* It stays queued, harmless and unexported, until the next try. */
                log_error_errno(r, "Failed to schedule freeing ended workers: %m");
}


/* ---- the gate ---------------------------------------------------------- */

int manager_choose_runtime(Manager *m, SbxClass class, SbxRuntime *ret, SbxError *error) {
        /* A runtime binary that vanished since its probe takes its classes with it. */
        runtime_table_revalidate(&m->runtimes);
        return gate_choose(&m->runtimes, &m->config, class, ret, error);
}

/* ---- creating a worker ------------------------------------------------- */

/* The start job's end decides a starting worker's next state. */
static void job_removed(const char *unit, const char *result, void *userdata) {
        Manager *m = userdata;
        Worker *w;

        if (pool_job_removed(&m->pool, unit, result) || worker_suspend_job_removed(m->workers, unit, result))
                return;
        w = manager_find_worker_by_unit(m, unit);
        if (!w || (w->state != WORKER_STARTING && w->state != WORKER_RESUMING))
                return;
        if (w->state == WORKER_RESUMING)
                worker_resume_job_removed(w, result);
        else if (w->start.awaits_ready)
                worker_ready_job_removed(w, result);
        else if (streq(result, "done"))
                worker_start_done(w);
        else {
                char why[256];
                worker_disk_start_job_why(w->id, w->spec.disk_max, result, why, sizeof(why));
                worker_start_failed(w, why);
        }
}

static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *job, *unit, *result;
        uint32_t id;
        size_t n;

        if (sd_bus_message_read(msg, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        if (prober_job_removed(&m->prober, unit, result))
                return 0;
        /* A failed start ends the worker or the pooled sandbox with its home
         * and bundle, a failed checkpoint deletes the image it wrote, a done
         * one has the worker suspended on that image: each only once
         * systemd, asked again, says the unit is not up (a start still
         * running or a checkpoint still writing is). A start that is done
         * only moves a worker on. */
        n = strlen(unit);
        if (startswith(unit, "sandbox-") &&
            (!streq(result, "done") || (n > strlen("-suspend.service") &&
                                        streq(unit + n - strlen("-suspend.service"), "-suspend.service")))) {
                (void) systemd_unit_confirm_async(m->systemd, NULL, unit, "JobRemoved", result,
                                                  systemd_unit_state_not_up, job_removed, m);
                return 0;
        }
        job_removed(unit, result, m);
        return 0;
}

int manager_watch_jobs(Manager *m) {
        return systemd_match_manager_signal_async(m->systemd, &m->job_removed_match, "JobRemoved", on_job_removed,
                                                  NULL, m);
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

/* A cold worker's unit is on its way (worker_prepare()): its workspace is
 * taken. */
static void manager_cold_placed(Worker *w, void *userdata) {
        Workspace *ws = userdata;

        /* Free was checked before and nothing ran in between: this cannot fail for being busy. */
        if (ws)
                (void) manager_workspace_attach(w->manager, ws, w, NULL);
}

/* What the host and the owner have room for, and what the unit will need
 * of sandboxd. */
static int manager_admit_request(Manager *m, const WorkerSpec *spec, uid_t owner, bool quota_exempt,
                                 SbxError *error) {
        int r;

        if (m->n_alive >= m->config.max_workers)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_TOO_MANY_WORKERS,
                                     "This host already runs %u workers, the configured maximum", m->n_alive);
        r = manager_quota_admit(m, owner, &(QuotaRequest) { .exempt = quota_exempt, .workers = 1 }, error);
        if (r < 0)
                return r;
        r = manager_check_home_space(error);
        if (r < 0)
                return r;
        /* systemd fetches a worker's secrets, environment and egress policy
         * from the credential socket when the unit starts; without it the
         * start fails with nothing to say why. */
        if (spec->n_credentials > 0 || strv_length(spec->environment) > 0 || worker_wants_proxy(spec)) {
                r = credential_server_reachable(m->credentials);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_START_FAILED,
                                             "The credential socket " SBX_CREDENTIAL_SOCKET
                                             " is gone (%s): a worker with secrets, an environment, egress"
                                             " or services cannot start until sandboxd is restarted",
                                             strerror(-r));
        }
        return 0;
}

/* Gate, first check: the runtime for the class, and whether it can keep
 * what the spec asks of it. */
static int manager_gate(Manager *m, const WorkerSpec *spec, SbxRuntime *ret_runtime, SbxError *error) {
        int r;

        r = manager_choose_runtime(m, spec->class, ret_runtime, error);
        if (r < 0)
                return r;
        /* IdleAction=suspend on a worker that could never be suspended would
         * only show at its first idle deadline: refused now instead. */
        if (spec->idle_suspend)
                return worker_check_suspendable(spec, *ret_runtime, error);
        return 0;
}

/* The spec's Workspace, free to be the worker's home (NULL: none asked for). */
static int manager_find_free_workspace(Manager *m, const WorkerSpec *spec, Workspace **ret, SbxError *error) {
        Workspace *ws;

        *ret = NULL;
        if (!spec->workspace)
                return 0;
        ws = manager_find_workspace(m, spec->workspace);
        if (!ws)
                return sbx_error_set(error, -ENOENT, SBX_ERROR_NO_SUCH_WORKSPACE,
                                     "No workspace named \"%.64s\"", spec->workspace);
        if (ws->worker_id)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is the home of worker %s already", ws->name, ws->worker_id);
        if (ws->creating)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is still being made", ws->name);
        *ret = ws;
        return 0;
}

/* A new unit for the worker, COLD_REASON saying why the pool did not serve it. */
static int manager_start_cold(Manager *m, WorkerSpec *spec, uid_t owner, SbxRuntime runtime, Workspace *ws,
                              sd_bus_message *request, const char *cold_reason, SbxError *error) {
        _cleanup_(worker_freep) Worker *w = NULL;
        int r;

        /* Every worker's disk is capped (worker-disk.h): its DiskMax or the
         * default (worker_spec_apply_defaults), within the total. A claim
         * admits only what it adds; a cold start adds a disk. */
        r = manager_admit_disk(m, spec->disk_max, error);
        if (r < 0)
                return r;
        pool_yield_slot(&m->pool);

        r = worker_new(&w, &m->worker_owner, spec, runtime);
        if (r < 0)
                return r;
        w->owner = owner;
        w->start.mode_reason = cold_reason;
        if (sbx_endpoint_wanted(&w->spec.endpoint)) {
                /* First come: the host's front maps the name to one socket. */
                if (w->spec.endpoint.name && worker_gate_name_taken(m->workers, w->spec.endpoint.name))
                        return sbx_error_set(error, -EADDRINUSE, SBX_ERROR_ENDPOINT_NAME_TAKEN,
                                             "Endpoint Name %s is held by another live worker; a name is free "
                                             "again when its worker ends", w->spec.endpoint.name);
                r = worker_gate_pick_port(m->workers, &m->config);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_TOO_MANY_WORKERS,
                                             "Every port of [Endpoints] PortRange=%s is held by a live worker",
                                             m->config.endpoints_port_range);
                w->gate.tcp_port = (uint16_t) r;
        }
        r = worker_prepare(w, &(WorkerPrepare) { .request = request, .placed = manager_cold_placed, .userdata = ws },
                           error);
        if (r < 0)
                return r;
        TAKE_PTR(w);
        return 0;
}

/* Admission, top to bottom: each step refuses before anything exists, and
 * what the steps chose places the worker in a waiting sandbox or a new unit. */
int manager_create_worker(Manager *m, WorkerSpec *spec, uid_t owner, bool quota_exempt, sd_bus_message *request,
                          SbxError *error) {
        const char *cold_reason = NULL;
        SbxRuntime runtime;
        Workspace *ws;
        int r;

        r = manager_admit_request(m, spec, owner, quota_exempt, error);
        if (r < 0)
                return r;
        r = manager_gate(m, spec, &runtime, error);
        if (r < 0)
                return r;
        /* Before anything exists: a command that is not there creates nothing. */
        r = manager_resolve_command(m, spec, runtime, error);
        if (r < 0)
                return r;
        r = manager_find_free_workspace(m, spec, &ws, error);
        if (r < 0)
                return r;
        /* A waiting sandbox of the class serves it if it can (pool.h). */
        if (runtime == SBX_RUNTIME_RUNSC) {
                r = pool_claim(&m->pool, spec, owner, request, &cold_reason, error);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return manager_start_cold(m, spec, owner, runtime, ws, request, cold_reason, error);
}

void manager_workspace_hold(Manager *m, Worker *w) {
        Workspace *ws;
        SbxError e = {};

        if (!w->spec.workspace)
                return;
        ws = manager_find_workspace(m, w->spec.workspace);
        if (!ws || manager_workspace_attach(m, ws, w, &e) < 0)
                log_struct(LOG_ERR, "A re-adopted worker's workspace is gone or taken",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_WORKSPACE", w->spec.workspace,
                           "SANDBOXD_REASON", ws ? e.message : "no such workspace", NULL);
}

int manager_adopt_worker(Manager *m, Worker *w, const ChannelDaemonFds *fds, uint64_t last_activity) {
        _cleanup_free_ char *state = NULL;
        ChannelDaemonFds own = *fds;
        int r;

        r = worker_adopt_channel(w, fds, last_activity);
        if (r < 0) {
                safe_close(own.stdin_fd);
                safe_close(own.stdout_fd);
                safe_close(own.stderr_fd);
                worker_free(w);
                return r;
        }
        r = worker_watch_unit(w);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        /* Adopted with its checkpoint unit named (adopt.c): a suspend was
         * under way, and the unit's end is the checkpoint's to explain. */
        if (w->suspend.unit)
                worker_restore_suspending(w);
        else
                worker_restore_running(w);
        manager_add_worker(m, w);
        manager_workspace_hold(m, w);
        /* A deadline that passed while the daemon was down fires at once. */
        r = w->state == WORKER_RUNNING ? worker_arm_idle_timer(w) : 0;
        if (r < 0)
                log_warning_errno(r, "Failed to arm the idle timer of worker %s: %m", w->id);
        log_struct(LOG_INFO, "Worker re-adopted after a restart of sandboxd",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_UNIT", w->unit,
                   "SANDBOXD_CLASS", sbx_class_to_string(w->spec.class),
                   "SANDBOXD_RUNTIME", sbx_runtime_to_string(w->runtime), NULL);
        /* The unit may have ended between the listing and the subscription;
         * systemd's limits (RuntimeMaxSec= among them) are the unit's own and
         * ran on meanwhile. */
        r = systemd_unit_get_string(m->systemd, w->unit_path, "ActiveState", NULL, &state);
        if (r < 0 || streq(state, "inactive") || streq(state, "failed")) {
                w->unit_ended = true;
                worker_unit_gone(w);
        } else if (w->state == WORKER_RUNNING && w->gate.service) {
                /* sandboxd stopped while the gate drained for a checkpoint
                 * that never started: the worker runs, and so must its
                 * gate's socket (one that listens is left as it is). */
                r = worker_gate_start(w);
                if (r < 0)
                        log_struct(LOG_ERR, "Failed to make sure the re-adopted worker's gate is there",
                                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
        }
        manager_notify_status(m);
        return 0;
}


/* ---- start-up ----------------------------------------------------------- */

static int unit_is_gone(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *state = NULL;
        int r;

        r = systemd_unit_path(unit, &path);
        if (r < 0)
                return r;
        r = systemd_unit_get_string(bus, path, "ActiveState", &e, &state);
        if (r < 0)
                return 1;
        return streq(state, "inactive") || streq(state, "failed");
}

int manager_stop_units(Manager *m, char **units) {
        size_t n = strv_length(units);

        for (size_t i = 0; i < n; i++) {
                log_struct(LOG_NOTICE, "Stopping leftover sandbox unit from an earlier run",
                           "SANDBOXD_UNIT", units[i], "SANDBOXD_REASON", "boot-wipe", NULL);
                (void) systemd_stop_unit(m->systemd, units[i], "replace");
        }
        /* Homes may only go once nothing can write to them any more. */
        for (unsigned tries = 0; tries < 200; tries++) {
                bool all_gone = true;
                for (size_t i = 0; i < n; i++)
                        if (unit_is_gone(m->systemd, units[i]) == 0)
                                all_gone = false;
                if (all_gone)
                        break;
                usleep(50 * 1000);
        }
        for (size_t i = 0; i < n; i++)
                (void) systemd_reset_failed_unit(m->systemd, units[i]);
        return 0;
}

int manager_wipe_leftovers(Manager *m) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **units = NULL;
        size_t n;
        int r;

        r = systemd_list_units_by_pattern(m->systemd, "sandbox-*", &e, &units, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to list leftover sandbox units: %s", e.message ?: strerror(-r));
        n = strv_length(units);
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
        r = rm_rf_children(SBX_DISK_ROOT);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_DISK_ROOT ": %m");
        /* Mount points only; rm_rf_children() never enters a mounted one. */
        r = rm_rf_children(SBX_DISK_MOUNT_ROOT);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_DISK_MOUNT_ROOT ": %m");
        r = rm_rf_children(SBX_WORKER_STATE_DIR);
        if (r < 0)
                log_warning_errno(r, "Failed to empty " SBX_WORKER_STATE_DIR ": %m");
        /* Suspended workers do not survive a boot: their state went with
         * /run, and an image without its worker is only a copy of its memory;
         * unless the operator keeps workspace-bound ones (suspend-keep.h). */
        suspend_wipe_images(m->config.suspend_keep_across_reboot);
        if (n > 0)
                log_info("Wiped %zu leftover sandbox units and the sessions root", n);
        return 0;
}

static int credential_found(const SbxCredential *c, const uint8_t **ret_data, size_t *ret_size) {
        *ret_data = c->data;
        *ret_size = c->size;
        return 0;
}

static int lookup_credential(const char *unit, const char *name, void *userdata, const uint8_t **ret_data,
                             size_t *ret_size) {
        Manager *m = userdata;
        Worker *w = manager_find_worker_by_unit(m, unit);

        /* The proxy asks for its policy and its broker secrets whenever
         * socket activation (re)starts it, for as long as the worker lives. */
        for (Worker *e = m->workers; !w && e; e = e->next)
                if (e->egress.service && streq(e->egress.service, unit) && worker_is_alive(e))
                        return worker_proxy_credential(e, name, ret_data, ret_size);
        /* The gate likewise: its settings and the caller's token, for as long as the worker lives. */
        for (Worker *e = m->workers; !w && e; e = e->next)
                if (e->gate.service && streq(e->gate.service, unit) && worker_is_alive(e))
                        return worker_gate_credential(e, name, ret_data, ret_size);

        /* Only while the unit is starting (or resuming, for a worker that kept
         * them): otherwise the daemon's copy is gone. */
        if (!w || !worker_secrets_servable(w))
                return -ENOENT;
        if (streq(name, SBX_ENV_CREDENTIAL))
                return credential_found(&w->environment, ret_data, ret_size);
        for (size_t i = 0; i < w->spec.n_credentials; i++)
                if (streq(w->spec.credentials[i].name, name))
                        return credential_found(&w->spec.credentials[i], ret_data, ret_size);
        return -ENOENT;
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
        /* PID 1's own socket: a signal on it can only be systemd's, so no
         * local user can end a worker by sending one to our unique name. */
        r = systemd_bus_open(getenv("SANDBOXD_BUS_ADDRESS"), m->bus, &m->systemd);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to systemd at " SYSTEMD_PRIVATE_ADDRESS ": %m");
        if (m->systemd != m->bus) {
                r = sd_bus_attach_event(m->systemd, m->event, SD_EVENT_PRIORITY_NORMAL);
                if (r < 0)
                        return log_error_errno(r, "Failed to attach the connection to systemd to the event loop: %m");
        }
        r = unit_stops_new(&m->unit_stops, m->systemd, m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the stops of units: %m");

        r = manager_watch_jobs(m);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to JobRemoved: %m");
        /* Without a subscription systemd sends no unit property changes. */
        r = systemd_subscribe(m->systemd);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to systemd: %m");

        /* Before the restore: re-adopted workers take their workspaces back. */
        r = manager_load_workspaces(m);
        if (r < 0)
                return r;
        /* A restart re-adopts what it can account for, a boot wipes. */
        r = manager_restore(m);
        if (r < 0)
                return r;
        r = credential_server_new(&m->credentials, m->event, SBX_CREDENTIAL_SOCKET, lookup_credential, m);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on " SBX_CREDENTIAL_SOCKET ": %m");

        /* Runtimes are probed, never assumed, and before the name is taken,
         * so no request can race the first probe. */
        r = prober_probe_runtimes(&m->prober, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to start runtime probes: %m");
        r = prober_probe_runtimes_wait(&m->prober, 90 * USEC_PER_SEC);
        if (r < 0)
                log_warning_errno(r, "Runtime probes did not finish: %m");
        r = prober_start_reprobe_timer(&m->prober);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the runtime re-probe timer: %m");

        return 0;
}

int manager_serve(Manager *m) {
        int r;

        r = sd_bus_request_name(m->bus, "org.sandboxd1", 0);
        if (r < 0)
                return log_error_errno(r, "Failed to acquire the name org.sandboxd1: %m");
        manager_restore_announce(m);
        return pool_start(&m->pool);
}
