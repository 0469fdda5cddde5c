/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <systemd/sd-daemon.h>

#include "bus-manager.h"
#include "pool.h"
#include "bus-polkit.h"
#include "bus-subscribe.h"
#include "bus-worker-exec.h"
#include "bus-worker-files.h"
#include "bus-worker-egress.h"
#include "bus-worker.h"
#include "bus-workspace.h"
#include "manager-workspace.h"
#include "errors.h"
#include "manager.h"
#include "preflight.h"
#include "spec-bus.h"
#include "worker-log.h"
#include "worker-log-job.h"

/* Every Manager method that acts on one worker: reads its (s id) argument,
 * finds the worker as its object would be found and runs the Worker
 * object's own handler on it, after the same access check as a call on the
 * object (machined's redirect_method_to_machine()), so both ways in behave
 * and are authorized alike by construction. A worker the caller may not
 * manage is NoSuchWorker, as an ID never used (bus_worker_access()). */
static int redirect_method_to_worker(sd_bus_message *msg, Manager *m, sd_bus_error *ret_error,
                                     sd_bus_message_handler_t method) {
        const char *id;
        Worker *w = NULL;
        int r;

        r = sd_bus_message_read(msg, "s", &id);
        if (r < 0)
                return r;
        r = bus_worker_access(m, msg, id, &w);
        if (r == -ESRCH)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NO_SUCH_WORKER, "No worker with id \"%.64s\"", id);
        if (r < 0)
                return r;
        /* 0: polkit decides, and the call is dispatched here again. */
        if (r == 0)
                return 1;
        return method(msg, w, ret_error);
}

/* The spec's Workspace in the caller's names (workspace-name.h): root's
 * by key, anyone else's only among its own, so that another user's
 * workspace of that name is NoSuchWorkspace as one never made. The spec
 * then holds the key, which is what sandboxd keeps. */
static int resolve_workspace(Manager *m, sd_bus_message *msg, WorkerSpec *spec, Workspace **ret, SbxError *e) {
        uid_t caller = UID_INVALID;
        Workspace *ws;
        char *key;

        *ret = NULL;
        if (!spec->workspace)
                return 0;
        if (bus_caller_uid(msg, &caller) < 0)
                return sbx_error_set(e, -EPERM, SBX_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        ws = caller == 0 ? manager_find_workspace(m, spec->workspace)
                         : manager_find_own_workspace(m, caller, spec->workspace);
        if (!ws)
                return sbx_error_set(e, -ENOENT, SBX_ERROR_NO_SUCH_WORKSPACE, "No workspace named \"%.64s\"",
                                     spec->workspace);
        key = strdup(ws->name);
        if (!key)
                return -ENOMEM;
        free(spec->workspace);
        spec->workspace = key;
        *ret = ws;
        return 0;
}

static int method_create_worker(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(worker_spec_done) WorkerSpec spec;
        Manager *m = userdata;
        Workspace *ws = NULL;
        uid_t owner = UID_INVALID;
        SbxError e = {};
        int r;

        worker_spec_init(&spec);
        r = worker_spec_from_bus(&spec, msg, &e);
        if (r >= 0) {
                worker_spec_apply_defaults(&spec, &m->config);
                r = resolve_workspace(m, msg, &spec, &ws, &e);
                /* The workspace's class is a floor like the origin's. */
                if (r >= 0 && ws)
                        r = workspace_apply_class(ws, &spec, &e);
        }
        if (r >= 0)
                r = worker_spec_validate(&spec, &m->config, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        /* The class decides the action, so the spec is read first; nothing
         * has changed yet when polkit is asked. */
        r = bus_authorize(m, msg, authz_create_action(spec.class), UID_INVALID, NULL, true, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        /* Another user's workspace is theirs: only they and root run workers
         * on it. Decided without polkit, because one call cannot wait for two
         * polkit answers (the first is gone by the time the second comes). */
        if (ws) {
                uid_t caller = UID_INVALID;
                if (bus_caller_uid(msg, &caller) < 0 || (caller != 0 && caller != ws->owner))
                        return sd_bus_error_setf(ret_error, SBX_ERROR_ACCESS_DENIED,
                                                 "Workspace %s belongs to UID %u: only its owner and root may run "
                                                 "workers on it", ws->name, (unsigned) ws->owner);
        }
        r = bus_caller_uid(msg, &owner);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        r = bus_quota_exempt(m, msg, owner, ret_error);
        if (r <= 0 && !bus_quota_exempt_decided(r))
                return r < 0 ? r : 1;
        r = manager_create_worker(m, &spec, owner, r > 0, msg, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        /* The reply is sent when systemd's start job has finished. */
        return 1;
}

static int reply_worker_path(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        return sd_bus_reply_method_return(msg, "o", w->object_path);
}

static int method_get_worker(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, reply_worker_path);
}

typedef struct ListScope {
        uid_t caller;
        bool all;
} ListScope;

/* Who a listing is for: everyone's workers to root and to holders of
 * manage-workers, only their own to everyone else. Listing never fails for
 * want of a right, and never asks for a password. 1 to go on, 0 while polkit
 * is asked (the call is dispatched again with its answer), < 0 on error. */
static int list_scope(Manager *m, sd_bus_message *msg, ListScope *ret, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        int r;

        r = bus_caller_uid(msg, &ret->caller);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        /* A refusal is not an error here: the caller still sees its own. */
        r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKERS, UID_INVALID, NULL, false, &refused);
        if (r == 0)
                return 0;
        /* ... but a caller past its cap gets nothing, so a flood is answered
         * at once and costs nothing. */
        if (bus_authorize_is_over_cap(r))
                return sd_bus_error_copy(ret_error, &refused);
        ret->all = r > 0;
        return 1;
}

static bool list_scope_sees(const ListScope *scope, uid_t owner) {
        return sbx_sees_worker(scope->caller, scope->all, owner);
}

/* A listing's reply with its array of CONTENTS opened, once the scope is
 * known: list_scope's return. */
static int list_reply_open(Manager *m, sd_bus_message *msg, const char *contents, ListScope *ret_scope,
                           sd_bus_message **ret_reply, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = list_scope(m, msg, ret_scope, ret_error);
        if (r <= 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', contents);
        if (r < 0)
                return r;
        *ret_reply = TAKE_PTR(reply);
        return 1;
}

static int list_reply_send(sd_bus_message *reply) {
        int r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_workers(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        ListScope scope;
        int r;

        r = list_reply_open(m, msg, "(ssssuuo)", &scope, &reply, ret_error);
        if (r <= 0)
                return r == 0 ? 1 : r;
        for (Worker *w = m->workers; w; w = w->next) {
                if (!w->exported || !list_scope_sees(&scope, w->owner))
                        continue;
                r = sd_bus_message_append(reply, "(ssssuuo)", w->id, sbx_class_to_string(w->spec.class),
                                          worker_state_to_string(w->state), w->unit, (uint32_t) w->uid,
                                          (uint32_t) w->owner, w->object_path);
                if (r < 0)
                        return r;
        }
        return list_reply_send(reply);
}

/* ListWorkersEx's options: "States" (as), the states to list; without it the
 * workers still alive. */
static int read_list_options(sd_bus_message *msg, bool states[static _WORKER_STATE_MAX], sd_bus_error *ret_error) {
        int r;

        for (WorkerState i = 0; i < _WORKER_STATE_MAX; i++)
                states[i] = i != WORKER_ENDED;
        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                _cleanup_strv_free_ char **names = NULL;
                const char *key, *contents;

                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (!streq(key, "States"))
                        return sd_bus_error_setf(ret_error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown ListWorkersEx option \"%.64s\"", key);
                r = sd_bus_message_peek_type(msg, NULL, &contents);
                if (r < 0)
                        return r;
                if (!streq(contents, "as"))
                        return sd_bus_error_set(ret_error, SD_BUS_ERROR_INVALID_ARGS, "States must be of type as");
                r = sd_bus_message_enter_container(msg, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_read_strv(msg, &names);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
                for (WorkerState i = 0; i < _WORKER_STATE_MAX; i++)
                        states[i] = false;
                for (char **n = names; n && *n; n++) {
                        WorkerState st = worker_state_from_string(*n);
                        if (st == _WORKER_STATE_MAX)
                                return sd_bus_error_setf(ret_error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Unknown worker state \"%.64s\"", *n);
                        states[st] = true;
                }
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

static int append_live_worker(sd_bus_message *reply, const Worker *w, uint64_t now_monotonic) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}",
                                          "Id", "s", w->id,
                                          "Class", "s", sbx_class_to_string(w->spec.class),
                                          "RequestedClass", "s", sbx_class_to_string(w->spec.requested_class),
                                          "State", "s", worker_state_to_string(w->state),
                                          "Result", "s", "",
                                          "Owner", "u", (uint32_t) w->owner,
                                          "UID", "u", (uint32_t) w->uid,
                                          "Unit", "s", w->unit,
                                          "CreatedUSec", "t", w->created_realtime,
                                          "IdleUSec", "t", worker_idle_usec(w, now_monotonic),
                                          "ExitStatus", "i", (int32_t) -1);
        /* A starting worker's object is not on the bus yet. */
        if (r >= 0 && w->exported)
                r = sd_bus_message_append(reply, "{sv}", "Path", "o", w->object_path);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int append_ended_worker(sd_bus_message *reply, const EndedWorkerRecord *rec) {
        char unit[sizeof("sandbox-.service") + sizeof(rec->id)];
        int r;

        snprintf(unit, sizeof(unit), "sandbox-%s.service", rec->id);
        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}",
                                          "Id", "s", rec->id,
                                          "Class", "s", sbx_class_to_string(rec->class),
                                          "RequestedClass", "s", sbx_class_to_string(rec->requested_class),
                                          "State", "s", worker_state_to_string(WORKER_ENDED),
                                          "Result", "s", rec->result,
                                          "Owner", "u", (uint32_t) rec->owner,
                                          "UID", "u", (uint32_t) rec->uid,
                                          "Unit", "s", unit,
                                          "CreatedUSec", "t", rec->created_realtime,
                                          "EndedUSec", "t", rec->ended_realtime,
                                          "ExitStatus", "i", (int32_t) rec->exit_status);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

/* ListWorkers with more to say and ended workers too: alive ones from the
 * worker list, ended ones from the history (a lingering object is listed
 * once, from its record). The same visibility as ListWorkers. */
static int method_list_workers_ex(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        bool states[_WORKER_STATE_MAX];
        Manager *m = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        ListScope scope;
        int r;

        r = read_list_options(msg, states, ret_error);
        if (r < 0)
                return r;
        r = list_reply_open(m, msg, "a{sv}", &scope, &reply, ret_error);
        if (r <= 0)
                return r == 0 ? 1 : r;
        for (Worker *w = m->workers; w; w = w->next) {
                if (!worker_is_alive(w) || !states[w->state] || !list_scope_sees(&scope, w->owner))
                        continue;
                r = append_live_worker(reply, w, now);
                if (r < 0)
                        return r;
        }
        worker_history_prune(&m->history, now);
        for (size_t i = 0; states[WORKER_ENDED] && i < m->history.n; i++) {
                const EndedWorkerRecord *rec = &m->history.records[i];
                if (!list_scope_sees(&scope, rec->owner))
                        continue;
                r = append_ended_worker(reply, rec);
                if (r < 0)
                        return r;
        }
        return list_reply_send(reply);
}

/* Signals about workers go to the workers' subscribers (bus-subscribe.h),
 * seen as the caller's listing is: so polkit is asked here, once, as for
 * ListWorkers, and never again for this subscription. */
static int method_subscribe(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        ListScope scope;
        int r;

        r = list_scope(m, msg, &scope, ret_error);
        if (r <= 0)
                return r == 0 ? 1 : r;
        return bus_subscribe_caller(m, msg, scope.caller, scope.all, ret_error);
}

static int method_stop_worker(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, bus_worker_method_stop);
}

static int method_suspend_worker(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, bus_worker_method_suspend);
}

static int method_resume_worker(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, bus_worker_method_resume);
}

static int method_set_worker_egress(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, bus_worker_method_set_egress);
}

static int method_open_channel(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return redirect_method_to_worker(msg, userdata, ret_error, bus_worker_method_open_channel);
}

/* Who owns worker ID: the live object's owner, else the one sandboxd's own
 * journal entries recorded, so an ended worker's log stays its owner's. */
/* A worker's log, to its owner, root and holders of manage-workers. To
 * anyone else, a worker that exists and one that never did are the same
 * NoSuchWorker. A caller other than root is authorized first, before its
 * worker is even looked up: polkit is asked (never interactively: a password
 * prompt would tell them it exists) whether it holds manage-workers, and
 * only then is the worker's owner looked for, in memory and, for a worker
 * that ended, in the journal. Every journal read runs off the event loop
 * (worker-log-job.h). */
static int method_read_worker_log(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        WorkerLogRequest req = { .owner = UID_INVALID };
        const char *id, *cursor;
        uint32_t max;
        int egress, r;
        Worker *w;

        r = sd_bus_message_read(msg, "ssbu", &id, &cursor, &egress, &max);
        if (r < 0)
                return r;
        if (!worker_log_id_valid(id))
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_ARGUMENT,
                                         "\"%.64s\" is not a worker id (%d lowercase hex digits)", id, WORKER_ID_LEN);
        if (!worker_log_cursor_valid(cursor))
                return sd_bus_error_set(ret_error, SBX_ERROR_INVALID_ARGUMENT, "Malformed journal cursor");
        r = bus_caller_uid(msg, &req.caller);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");

        req.all = req.caller == 0;
        w = manager_find_worker(m, id);
        if (w)
                req.owner = w->owner;
        /* The owner of a worker sandboxd holds reads its log without asking
         * (a look-up in memory, no journal read). Anyone else asks polkit,
         * whether the worker exists or not, before anything is read. The
         * decision is not logged under the worker's id: it would land in
         * the very log being read, and every read (sandboxctl logs -f asks
         * each second) would add to it. */
        if (!req.all && !(w && w->owner == req.caller)) {
                _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
                r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKERS, UID_INVALID, NULL, false, &refused);
                if (r == 0)
                        return 1;
                /* A refusal still leaves the caller its own workers' logs. */
                if (bus_authorize_is_over_cap(r))
                        return sd_bus_error_copy(ret_error, &refused);
                req.all = r > 0;
        }
        req.id = id;
        req.cursor = cursor;
        req.egress = egress;
        req.max = max;
        r = worker_log_job_start(&m->worker_owner, msg, &req, ret_error);
        if (r < 0)
                return sd_bus_error_is_set(ret_error) ? r
                                                      : sd_bus_error_set_errnof(ret_error, -r,
                                                                                "Failed to read the journal: %s",
                                                                                strerror(-r));
        /* The reply is sent when the read is done. */
        return 1;
}

static int method_preflight(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        /* Re-probes every runtime; the reply follows when all have answered. */
        int r = prober_probe_runtimes(&m->prober, msg);
        if (r < 0)
                return sd_bus_error_set_errnof(ret_error, -r, "Failed to start runtime probes: %s", strerror(-r));
        return 1;
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", SANDBOXD_VERSION);
}

static int property_get_default_idle(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->config.defaults.idle_timeout_usec);
}

/* Waiting sandboxes of the warm pool, ready to be claimed (pool.h). */
static int property_get_pooled(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", (uint32_t) pool_n_ready(&((Manager *) userdata)->pool));
}

static int property_get_n_workers(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "u", (uint32_t) m->n_alive);
}

/* The last probe's answer, not a new one: Preflight re-probes and is root's,
 * this is for everyone's cheap questions. No PropertiesChanged: a probe
 * finishing is not worth a signal to every client. */
static int property_get_classes(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        /* A runtime binary that vanished since its probe takes its classes
         * with it, as CreateWorker would find. */
        runtime_table_revalidate(&m->runtimes);
        return preflight_append_classes(reply, &m->runtimes, &m->config);
}

/* The operator's floor is policy, not a secret: any worker learns it from
 * its proxy's refusals (outside-operator-floor). Clients read it to warn
 * that, empty, it refuses every EgressAllow. */
static int property_get_egress_floor(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append_strv(reply, m->config.egress_floor);
}

/* The bus policy lets anyone call; each handler decides from the caller's
 * credentials and polkit (bus-polkit.h), hence SD_BUS_VTABLE_UNPRIVILEGED.
 * Preflight re-probes every runtime and stays root's: without the flag
 * sd-bus refuses other callers before the handler runs. */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("DefaultIdleTimeoutUSec", "t", property_get_default_idle, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EgressFloor", "as", property_get_egress_floor, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("NWorkers", "u", property_get_n_workers, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PooledSandboxes", "u", property_get_pooled, 0, 0),
        SD_BUS_PROPERTY("Classes", "a(sb)", property_get_classes, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("CreateWorker", SD_BUS_ARGS("a{sv}", spec), SD_BUS_RESULT("s", id, "o", worker),
                                method_create_worker, SD_BUS_VTABLE_SENSITIVE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetWorker", SD_BUS_ARGS("s", id), SD_BUS_RESULT("o", worker),
                                method_get_worker, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWorkers", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ssssuuo)", workers),
                                method_list_workers, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWorkersEx", SD_BUS_ARGS("a{sv}", options), SD_BUS_RESULT("aa{sv}", workers),
                                method_list_workers_ex, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("StopWorker", SD_BUS_ARGS("s", id), SD_BUS_NO_RESULT, method_stop_worker,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenChannel", SD_BUS_ARGS("s", id), SD_BUS_RESULT("h", channel),
                                method_open_channel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SuspendWorker", SD_BUS_ARGS("s", id), SD_BUS_NO_RESULT, method_suspend_worker,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResumeWorker", SD_BUS_ARGS("s", id), SD_BUS_NO_RESULT, method_resume_worker,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetWorkerEgress", SD_BUS_ARGS("s", id, "a{sv}", policy), SD_BUS_NO_RESULT,
                                method_set_worker_egress, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReadWorkerLog",
                                SD_BUS_ARGS("s", id, "s", after_cursor, "b", egress, "u", max_entries),
                                SD_BUS_RESULT("a(tsuss)", entries, "s", next_cursor),
                                method_read_worker_log, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Preflight", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssbs)", runtimes, "a(sbs)", walls),
                                method_preflight, 0),
        SD_BUS_METHOD_WITH_ARGS("CreateWorkspace", SD_BUS_ARGS("s", name, "a{sv}", settings),
                                SD_BUS_RESULT("o", workspace), bus_method_create_workspace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWorkspaces", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(susttbo)", workspaces),
                                bus_method_list_workspaces, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("DeleteWorkspace", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                bus_method_delete_workspace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Subscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_subscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unsubscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, bus_method_unsubscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("WorkerNew", SD_BUS_ARGS("s", id, "o", worker), 0),
        SD_BUS_SIGNAL_WITH_ARGS("WorkerRemoved", SD_BUS_ARGS("s", id, "o", worker, "s", reason), 0),
        SD_BUS_VTABLE_END
};

static void on_workers_lost(Manager *m) {
        bus_worker_announce_lost(m, NULL);
}

static void on_reply_waiter(Worker *w, sd_bus_message *msg, const char *error_name, const char *error_message) {
        bus_worker_reply_waiter(msg, w, error_name, error_message);
}

int bus_manager_listen(Manager *m) {
        assert(m);
        assert(!m->bus_state);

        m->bus_state = calloc(1, sizeof(*m->bus_state));
        if (!m->bus_state)
                return -ENOMEM;
        caller_quota_init(&m->bus_state->polkit_quota, m->config.bus_authorizations_per_user,
                          m->config.bus_authorizations_max);
        m->listener = (ManagerListener) {
                .status_changed = bus_manager_notify_status,
                .workers_lost = on_workers_lost,
        };
        m->worker_owner.state_changed = bus_worker_emit_state;
        m->worker_owner.appeared = bus_worker_emit_new;
        m->worker_owner.activity = bus_worker_emit_activity;
        m->worker_owner.ended = bus_worker_emit_ended;
        m->worker_owner.gone = bus_worker_emit_gone;
        m->worker_owner.reply_created = bus_worker_reply_created;
        m->worker_owner.reply_waiter = on_reply_waiter;
        return 0;
}

void bus_manager_free(Manager *m) {
        if (!m || !m->bus_state)
                return;
        bus_worker_exec_free_all(m);
        bus_polkit_queries_free(m);
        bus_worker_files_free_all(m);
        caller_quota_done(&m->bus_state->polkit_quota);
        sd_bus_slot_unref(m->bus_state->worker_filter);
        sd_bus_slot_unref(m->bus_state->polkit_filter);
        sd_bus_slot_unref(m->bus_state->name_lost_match);
        subscribers_done(&m->subscribers);
        free(m->bus_state);
        m->bus_state = NULL;
}

int bus_manager_install(Manager *m) {
        int r;

        r = bus_subscribe_install(m);
        if (r < 0)
                return r;
        /* Before any vtable: every call on a worker's object is checked here. */
        r = sd_bus_add_filter(m->bus, &m->bus_state->worker_filter, bus_worker_filter, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the worker access filter: %m");
        r = sd_bus_add_object_vtable(m->bus, NULL, "/org/sandboxd1", "org.sandboxd1.Manager", manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the manager object: %m");
        r = sd_bus_add_fallback_vtable(m->bus, NULL, "/org/sandboxd1/worker", "org.sandboxd1.Worker",
                                       worker_vtable, bus_worker_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the worker objects: %m");
        r = sd_bus_add_node_enumerator(m->bus, NULL, "/org/sandboxd1/worker", bus_worker_enumerate, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the worker enumerator: %m");
        r = sd_bus_add_fallback_vtable(m->bus, NULL, "/org/sandboxd1/worker", "org.sandboxd1.Process",
                                       process_vtable, bus_process_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(m->bus, NULL, "/org/sandboxd1/worker", bus_process_enumerate, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the process objects: %m");
        r = bus_workspace_install(m);
        if (r < 0)
                return r;
        r = sd_bus_add_object_manager(m->bus, NULL, "/org/sandboxd1");
        if (r < 0)
                return log_error_errno(r, "Failed to add the object manager: %m");
        /* The last filter: it runs first (bus-polkit.h). */
        return bus_polkit_install(m);
}

void bus_manager_notify_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=%u worker(s) running", m->n_alive);
        /* A count anyone may read (Get), naming no worker: to every subscriber. */
        bus_emit_properties_changed(m, AUDIENCE_EVERYONE, UID_INVALID, "/org/sandboxd1", "org.sandboxd1.Manager",
                                    manager_vtable, m, (char *[]) { (char *) "NWorkers", NULL });
}
