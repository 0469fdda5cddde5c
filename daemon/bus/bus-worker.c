/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-polkit.h"
#include "bus-subscribe.h"
#include "bus-worker-exec.h"
#include "bus-worker-files.h"
#include "bus-worker-egress.h"
#include "bus-worker-metrics.h"
#include "bus-worker.h"
#include "errors.h"
#include "manager.h"
#include "worker-log.h"
#include "worker-suspend.h"

#define WORKER_IFACE "org.sandboxd1.Worker"
#define WORKER_PREFIX "/org/sandboxd1/worker"

int bus_reply_sbx_error(sd_bus_error *ret_error, const SbxError *e, int r) {
        if (e && e->name)
                return sd_bus_error_set(ret_error, e->name, e->message);
        return sd_bus_error_set_errno(ret_error, r);
}

static Worker *worker_from_path(Manager *m, const char *path) {
        _cleanup_free_ char *id = NULL;
        Worker *w;

        if (sd_bus_path_decode(path, WORKER_PREFIX, &id) <= 0)
                return NULL;
        w = manager_find_worker(m, id);
        return w && w->exported ? w : NULL;
}

static bool is_method_call(sd_bus_message *msg) {
        uint8_t type;
        return msg && sd_bus_message_get_type(msg, &type) >= 0 && type == SD_BUS_MESSAGE_METHOD_CALL;
}

/* Introspection, GetManagedObjects and property reads show what the caller
 * may list (bus_worker_filter() has asked polkit, if it had to); anything
 * else (no method call being handled) sees everything. */
static bool worker_visible(Manager *m, sd_bus_message *msg, uid_t caller, const Worker *w) {
        if (!is_method_call(msg))
                return true;
        return bus_authorized(m, msg, caller, SBX_ACTION_MANAGE_WORKERS, w->owner);
}

/* A worker the caller may not list is no object at all: the same
 * UnknownObject as an ID that never existed. */
int bus_worker_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error) {
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        uid_t caller = UID_INVALID;
        Worker *w = worker_from_path(userdata, path);

        if (!w)
                return 0;
        if (is_method_call(msg)) {
                (void) bus_caller_uid(msg, &caller);
                if (!worker_visible(userdata, msg, caller, w))
                        return 0;
        }
        *found = w;
        return 1;
}

/* Another user's worker and an ID never used must look the same to anyone
 * who may not manage it (org.sandboxd1(5), ACCESS): so both cases ask polkit
 * the same question (owner left out, the ID as detail), never with a
 * password (a prompt, or a rule's demand for one, would say the worker
 * exists), and a refusal, polkit gone or a caller past its cap all read as
 * "no such worker". Root and the owner are never asked. */
int bus_worker_access(Manager *m, sd_bus_message *msg, const char *id, Worker **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        uid_t caller = UID_INVALID;
        Worker *w;
        int r;

        /* No worker can have it, and saying so tells nothing. */
        if (!worker_log_id_valid(id))
                return -ESRCH;
        w = manager_find_worker(m, id);
        if (w && !w->exported)
                w = NULL;
        (void) bus_caller_uid(msg, &caller);
        if (w && authz_decide(caller, SBX_ACTION_MANAGE_WORKERS, w->owner) == AUTHZ_ALLOW) {
                *ret = w;
                return 1;
        }
        r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKERS, UID_INVALID, id, false, &refused);
        if (r == 0)
                return 0;
        /* Asked again on the second dispatch: the worker may be gone. */
        if (r < 0 || !w)
                return -ESRCH;
        *ret = w;
        return 1;
}

/* Every method call on a worker's object (its properties, Stop,
 * OpenChannel, even Introspect) comes here first: only root, the owner and
 * holders of manage-workers get through; anyone else finds no object
 * (bus_worker_find()), as for an ID never used. GetManagedObjects asks
 * polkit too, without a password, to know whether to show everyone's
 * workers. */
int bus_worker_filter(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *id = NULL;
        Manager *m = userdata;
        const char *path = sd_bus_message_get_path(msg);
        Worker *w;
        int r;

        if (!is_method_call(msg) || !path)
                return 0;
        if (sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")) {
                r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKERS, UID_INVALID, NULL, false, &refused);
                if (bus_authorize_is_over_cap(r))
                        return sd_bus_error_copy(ret_error, &refused);
                return r == 0;
        }
        /* Peer answers on any path alike and says nothing of a worker. */
        if (streq_ptr(sd_bus_message_get_interface(msg), "org.freedesktop.DBus.Peer"))
                return 0;
        /* A worker's process objects are checked as the worker's own. */
        if (sd_bus_path_decode(path, WORKER_PREFIX, &id) <= 0 && bus_process_path_worker_id(path, &id) <= 0)
                return 0;
        /* 0: polkit decides; the call comes back here with the answer. */
        return bus_worker_access(m, msg, id, &w) == 0;
}

int bus_worker_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        Manager *m = userdata;
        uid_t caller = UID_INVALID;
        size_t n = 0;
        char **l;

        for (Worker *w = m->workers; w; w = w->next)
                n++;
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        n = 0;
        if (msg)
                (void) bus_caller_uid(msg, &caller);
        for (Worker *w = m->workers; w; w = w->next) {
                if (!w->exported || !worker_visible(m, msg, caller, w))
                        continue;
                l[n] = strdup(w->object_path);
                if (!l[n++]) {
                        strv_free(l);
                        return -ENOMEM;
                }
        }
        *nodes = l;
        return 1;
}

static int property_get_id(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", w->id);
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", worker_state_to_string(w->state));
}

static int property_get_result(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", w->result ?: "");
}

static int property_get_start_mode(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", streq(property, "StartMode") ? w->start.mode : w->start.mode_reason ?: "");
}

static int property_get_class(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", sbx_class_to_string(w->spec.class));
}

static int property_get_requested_class(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", sbx_class_to_string(w->spec.requested_class));
}

static int property_get_endpoint_name(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", w->spec.endpoint.name ?: "");
}

static int property_get_origin(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", w->spec.origin ?: SBX_ORIGIN_DEFAULT);
}

static int property_get_runtime(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", sbx_runtime_to_string(w->runtime));
}

static int property_get_last_activity(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "t", worker_last_activity_realtime(w));
}

static int property_get_idle_timeout(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "t", w->spec.limits.idle_timeout_usec);
}

/* bus_worker_filter() has decided already; this repeats its answer, from
 * what it left, so that no path to a handler skips the check. */
int bus_worker_check_access(sd_bus_message *msg, Worker *w, sd_bus_error *ret_error) {
        uid_t caller = UID_INVALID;

        (void) bus_caller_uid(msg, &caller);
        if (bus_authorized(w->manager, msg, caller, SBX_ACTION_MANAGE_WORKERS, w->owner))
                return 0;
        return sd_bus_error_setf(ret_error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: this needs the polkit action %s",
                                 sbx_action_to_string(SBX_ACTION_MANAGE_WORKERS));
}

int bus_worker_method_stop(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SbxError e = {};
        int r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = worker_stop(w, "stopped", &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return sd_bus_reply_method_return(msg, NULL);
}

int bus_worker_method_suspend(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SbxError e = {};
        int r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        /* Answered once the image is written and the unit is gone. */
        r = worker_suspend(w, msg, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return 1;
}

int bus_worker_method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SbxError e = {};
        int r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = worker_resume(w, msg, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        if (r > 0)
                return sd_bus_reply_method_return(msg, NULL);
        return 1;
}

/* A call that waited for a suspend or a resume to end (worker-suspend.h). */
void bus_worker_reply_waiter(sd_bus_message *msg, Worker *w, const char *error_name, const char *error_message) {
        _cleanup_close_ int fd = -1;
        SbxError e = {};
        int r;

        if (error_name) {
                (void) sd_bus_reply_method_errorf(msg, error_name, "%s", error_message ?: error_name);
                return;
        }
        if (!streq(sd_bus_message_get_member(msg) ?: "", "OpenChannel")) {
                (void) sd_bus_reply_method_return(msg, NULL);
                return;
        }
        r = worker_open_channel(w, &fd, &e);
        if (r < 0)
                (void) sd_bus_reply_method_errorf(msg, e.name ?: SBX_ERROR_NOT_RUNNING, "%s",
                                                  e.name ? e.message : strerror(-r));
        else
                (void) sd_bus_reply_method_return(msg, "h", fd);
}

void bus_worker_reply_created(Worker *w, sd_bus_message *request, const char *why) {
        int r;

        if (why) {
                (void) sd_bus_reply_method_errorf(request, SBX_ERROR_START_FAILED,
                                                  "Worker unit %s failed to start (%s); see journalctl -u %s",
                                                  w->unit, why, w->unit);
                return;
        }
        r = sd_bus_reply_method_return(request, "so", w->id, w->object_path);
        if (r < 0)
                log_warning_errno(r, "Failed to reply to CreateWorker for %s: %m", w->id);
}

int bus_worker_method_open_channel(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        _cleanup_close_ int fd = -1;
        SbxError e = {};
        int r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        /* The next request wakes a suspended worker: answered once it runs. */
        if (w->state == WORKER_SUSPENDED || w->state == WORKER_SUSPENDING || w->state == WORKER_RESUMING) {
                r = worker_resume(w, msg, &e);
                if (r < 0)
                        return bus_reply_sbx_error(ret_error, &e, r);
                return 1;
        }
        r = worker_open_channel(w, &fd, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return sd_bus_reply_method_return(msg, "h", fd);
}

const sd_bus_vtable worker_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "s", property_get_id, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Class", "s", property_get_class, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("RequestedClass", "s", property_get_requested_class, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Origin", "s", property_get_origin, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("EndpointName", "s", property_get_endpoint_name, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Owner", "u", NULL, offsetof(Worker, owner), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Runtime", "s", property_get_runtime, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StartMode", "s", property_get_start_mode, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StartModeReason", "s", property_get_start_mode, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Unit", "s", NULL, offsetof(Worker, unit), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("UID", "u", NULL, offsetof(Worker, uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Home", "s", NULL, offsetof(Worker, home), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CreatedUSec", "t", NULL, offsetof(Worker, created_realtime), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("LastActivityUSec", "t", property_get_last_activity, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IdleTimeoutUSec", "t", property_get_idle_timeout, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ExitStatus", "i", NULL, offsetof(Worker, exit_status), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Result", "s", property_get_result, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("EndedUSec", "t", NULL, offsetof(Worker, ended_realtime), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        BUS_WORKER_METRICS_PROPERTIES,
        BUS_WORKER_EGRESS_PROPERTIES,
        SD_BUS_METHOD("Stop", NULL, NULL, bus_worker_method_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Suspend", NULL, NULL, bus_worker_method_suspend, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Resume", NULL, NULL, bus_worker_method_resume, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenChannel", SD_BUS_NO_ARGS, SD_BUS_RESULT("h", channel),
                                bus_worker_method_open_channel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Exec", SD_BUS_ARGS("as", argv, "a{sv}", options),
                                SD_BUS_RESULT("o", process, "ah", stdio), bus_worker_method_exec,
                                SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_SENSITIVE),
        BUS_WORKER_FILES_VTABLE,
        BUS_WORKER_EGRESS_METHODS,
        SD_BUS_VTABLE_END
};

static void emit_changed(Worker *w, char **names) {
        bus_emit_properties_changed(w->manager, AUDIENCE_WORKER, w->owner, w->object_path, WORKER_IFACE,
                                    worker_vtable, w, names);
}

static int build_worker_new(sd_bus_message *m, void *userdata) {
        Worker *w = userdata;
        return sd_bus_message_append(m, "so", w->id, w->object_path);
}

void bus_worker_emit_new(Worker *w) {
        bus_emit_interfaces_added(w->manager, AUDIENCE_WORKER, w->owner, w->object_path, WORKER_IFACE,
                                  worker_vtable, w);
        bus_emit_to_subscribers(w->manager, AUDIENCE_WORKER, w->owner, "/org/sandboxd1", "org.sandboxd1.Manager",
                                "WorkerNew", build_worker_new, w);
}

void bus_worker_emit_state(Worker *w) {
        if (w->exported)
                emit_changed(w, (char *[]) { (char *) "State", NULL });
}

void bus_worker_emit_activity(Worker *w) {
        if (w->exported)
                emit_changed(w, (char *[]) { (char *) "LastActivityUSec", NULL });
}

typedef struct Removed {
        const char *id;
        const char *reason;
} Removed;

static int build_worker_removed(sd_bus_message *m, void *userdata) {
        const Removed *x = userdata;
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, WORKER_PREFIX "/%s", x->id) < 0)
                return -ENOMEM;
        return sd_bus_message_append(m, "sos", x->id, path, x->reason);
}

void bus_worker_emit_removed(Manager *m, const char *id, uid_t owner, const char *reason) {
        Removed x = { id, reason };
        bus_emit_to_subscribers(m, AUDIENCE_WORKER, owner, "/org/sandboxd1", "org.sandboxd1.Manager",
                                "WorkerRemoved", build_worker_removed, &x);
}

void bus_worker_announce_lost(Manager *m, const Subscriber *only) {
        for (char **id = m->restore_removed; id && *id; id++) {
                Removed x = { *id, "lost" };
                if (only)
                        bus_emit_to_subscriber(m, only, AUDIENCE_WORKER, UID_INVALID, "/org/sandboxd1",
                                               "org.sandboxd1.Manager", "WorkerRemoved", build_worker_removed, &x);
                else
                        bus_worker_emit_removed(m, *id, UID_INVALID, "lost");
        }
}

/* NWorkers follows from worker_set_state()'s bus_manager_notify_status(). */
void bus_worker_emit_ended(Worker *w) {
        emit_changed(w, (char *[]) { (char *) "State", (char *) "ExitStatus", (char *) "Result",
                                     (char *) "EndedUSec", NULL });
        bus_worker_emit_removed(w->manager, w->id, w->owner, w->end_reason ?: "exited");
}

void bus_worker_emit_gone(Worker *w) {
        bus_worker_exec_forget(w);
        bus_worker_files_drop(w);
        if (w->exported)
                bus_emit_interfaces_removed(w->manager, AUDIENCE_WORKER, w->owner, w->object_path, WORKER_IFACE);
        w->exported = false;
}
