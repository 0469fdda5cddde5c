/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-worker.h"
#include "errors.h"
#include "manager.h"

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

int bus_worker_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error) {
        Worker *w = worker_from_path(userdata, path);
        if (!w)
                return 0;
        *found = w;
        return 1;
}

int bus_worker_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = userdata;
        size_t n = 0;
        char **l;

        for (Worker *w = m->workers; w; w = w->next)
                n++;
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        n = 0;
        for (Worker *w = m->workers; w; w = w->next) {
                if (!w->exported)
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

static int property_get_class(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Worker *w = userdata;
        return sd_bus_message_append(reply, "s", sbx_class_to_string(w->spec.class));
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

static int method_stop(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        SbxError e = {};
        int r = manager_stop_worker(w->manager, w, "stopped", &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_open_channel(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        _cleanup_close_ int fd = -1;
        SbxError e = {};
        int r = manager_open_channel(w->manager, w, &fd, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        return sd_bus_reply_method_return(msg, "h", fd);
}

const sd_bus_vtable worker_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "s", property_get_id, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Class", "s", property_get_class, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Runtime", "s", property_get_runtime, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Unit", "s", NULL, offsetof(Worker, unit), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("UID", "u", NULL, offsetof(Worker, uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Home", "s", NULL, offsetof(Worker, home), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CreatedUSec", "t", NULL, offsetof(Worker, created_realtime), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("LastActivityUSec", "t", property_get_last_activity, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IdleTimeoutUSec", "t", property_get_idle_timeout, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ExitStatus", "i", NULL, offsetof(Worker, exit_status), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD("Stop", NULL, NULL, method_stop, 0),
        SD_BUS_METHOD_WITH_ARGS("OpenChannel", SD_BUS_NO_ARGS, SD_BUS_RESULT("h", channel),
                                method_open_channel, 0),
        SD_BUS_VTABLE_END
};

void bus_worker_emit_new(Worker *w) {
        sd_bus *bus = w->manager->bus;
        (void) sd_bus_emit_object_added(bus, w->object_path);
        (void) sd_bus_emit_signal(bus, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerNew", "so",
                                  w->id, w->object_path);
}

void bus_worker_emit_state(Worker *w) {
        if (w->exported)
                (void) sd_bus_emit_properties_changed(w->manager->bus, w->object_path, WORKER_IFACE, "State", NULL);
}

void bus_worker_emit_activity(Worker *w) {
        if (w->exported)
                (void) sd_bus_emit_properties_changed(w->manager->bus, w->object_path, WORKER_IFACE,
                                                      "LastActivityUSec", NULL);
}

void bus_worker_emit_ended(Worker *w) {
        sd_bus *bus = w->manager->bus;
        (void) sd_bus_emit_properties_changed(bus, w->object_path, WORKER_IFACE, "State", "ExitStatus", NULL);
        (void) sd_bus_emit_signal(bus, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved", "sos",
                                  w->id, w->object_path, w->end_reason ?: "exited");
        (void) sd_bus_emit_properties_changed(bus, "/org/sandboxd1", "org.sandboxd1.Manager", "NWorkers", NULL);
}

void bus_worker_emit_gone(Worker *w) {
        if (w->exported)
                (void) sd_bus_emit_object_removed(w->manager->bus, w->object_path);
        w->exported = false;
}
