/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-polkit.h"
#include "bus-subscribe.h"
#include "bus-worker.h"
#include "bus-workspace.h"
#include "errors.h"
#include "manager.h"
#include "manager-workspace.h"

#define WORKSPACE_IFACE "org.sandboxd1.Workspace"
#define WORKSPACE_PREFIX "/org/sandboxd1/workspace"

/* Root and the owner: a find callback cannot wait for polkit. */
static bool workspace_visible(Manager *m, sd_bus_message *msg, const Workspace *ws) {
        uid_t caller = UID_INVALID;

        if (!msg)
                return true;
        if (bus_caller_uid(msg, &caller) < 0)
                return false;
        return bus_authorized(m, msg, caller, SBX_ACTION_MANAGE_WORKSPACES, ws->owner);
}

static void workspace_emit_added(Manager *m, Workspace *ws);

static int read_settings(sd_bus_message *msg, uint64_t *size_max, SbxClass *class, SbxError *e) {
        bool have_size = false, have_class = false;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return sbx_error_set(e, r, SBX_ERROR_INVALID_WORKSPACE, "The settings must be of type a{sv}");
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *key, *contents, *v;

                r = sd_bus_message_read_basic(msg, 's', &key);
                if (r < 0)
                        return r;
                if (!streq(key, "SizeMax") && !streq(key, "Class"))
                        return sbx_error_set(e, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                             "Unknown workspace setting \"%.64s\"; use SizeMax or Class", key);
                if (streq(key, "SizeMax") ? have_size : have_class)
                        return sbx_error_set(e, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                             "Workspace setting %s is given more than once", key);
                r = sd_bus_message_peek_type(msg, NULL, &contents);
                if (r < 0)
                        return r;
                if (!streq(contents, streq(key, "SizeMax") ? "t" : "s"))
                        return sbx_error_set(e, -EINVAL, SBX_ERROR_WRONG_TYPE, "Workspace setting %s must be of type %s, not %s",
                                             key, streq(key, "SizeMax") ? "t" : "s", contents);
                if (streq(key, "SizeMax")) {
                        r = sd_bus_message_read(msg, "v", "t", size_max);
                        have_size = true;
                } else {
                        r = sd_bus_message_read(msg, "v", "s", &v);
                        if (r >= 0 && (*class = sbx_class_from_string(v)) < 0)
                                return sbx_error_set(e, -EINVAL, SBX_ERROR_UNKNOWN_CLASS,
                                                     "Unknown isolation class \"%.64s\"", v);
                        have_class = true;
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return sbx_error_set(e, r, SBX_ERROR_INVALID_WORKSPACE, "Malformed workspace settings");
        if (!have_size)
                return sbx_error_set(e, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "SizeMax (t, bytes) is required: a workspace always has a size cap");
        return 0;
}

static void on_workspace_created(Manager *m, Workspace *ws, int r, const SbxError *e, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (!ws) {
                (void) bus_reply_sbx_error(&error, e, r);
                (void) sd_bus_reply_method_error(msg, &error);
                return;
        }
        workspace_emit_added(m, ws);
        (void) sd_bus_reply_method_return(msg, "o", ws->object_path);
}

int bus_method_create_workspace(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        SbxClass class = SBX_CLASS_TRUSTED;
        uint64_t size_max = 0;
        uid_t owner = UID_INVALID;
        const char *name;
        SbxError e = {};
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = read_settings(msg, &size_max, &class, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        /* Whoever may create workers may make them a workspace. */
        r = bus_authorize(m, msg, SBX_ACTION_CREATE_WORKER, UID_INVALID, NULL, true, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = bus_caller_uid(msg, &owner);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        r = bus_quota_exempt(m, msg, owner, ret_error);
        if (r <= 0 && !bus_quota_exempt_decided(r))
                return r < 0 ? r : 1;
        r = manager_create_workspace(m, name, size_max, class, owner, r > 0, on_workspace_created,
                                     sd_bus_message_ref(msg), &e);
        if (r < 0) {
                sd_bus_message_unref(msg);
                return bus_reply_sbx_error(ret_error, &e, r);
        }
        /* Answered once mkfs is done: the loop serves others meanwhile. */
        return 1;
}

/* As ListWorkers: everyone's to root and holders of manage-workspaces (asked
 * without a password), the caller's own to everyone else; never refused. */
int bus_method_list_workspaces(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        Manager *m = userdata;
        uid_t caller;
        bool all;
        int r;

        r = bus_caller_uid(msg, &caller);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKSPACES, UID_INVALID, NULL, false, &refused);
        if (r == 0)
                return 1;
        if (bus_authorize_is_over_cap(r))
                return sd_bus_error_copy(ret_error, &refused);
        all = r > 0;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(susttbo)");
        for (Workspace *ws = m->workspaces; r >= 0 && ws; ws = ws->next) {
                if (ws->creating || (!all && ws->owner != caller))
                        continue;
                /* The owner's name to the owner; to root and managers the
                 * key, which is how they name another owner's. */
                r = sd_bus_message_append(reply, "(susttbo)", ws->owner == caller ? ws->label : ws->name,
                                          (uint32_t) ws->owner,
                                          sbx_class_to_string(ws->class), ws->size_max,
                                          workspace_size_used(m->workspace_root, ws), ws->worker_id != NULL,
                                          ws->object_path);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

int bus_method_delete_workspace(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error refused = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL;
        Manager *m = userdata;
        uid_t owner, caller = UID_INVALID;
        const char *name;
        Workspace *ws;
        SbxError e = {};
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        if (!workspace_key_is_valid(name))
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_WORKSPACE,
                                         "\"%.64s\" is not a workspace name", name);
        r = bus_caller_uid(msg, &caller);
        if (r < 0)
                return sd_bus_error_set(ret_error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller's UID");
        /* The caller's own, by name; another owner's only by its key, and
         * only to root and holders of manage-workspaces, asked without a
         * password before anything is looked up: to everyone else another
         * user's workspace is no more there than one never made. */
        ws = caller == 0 ? manager_find_workspace(m, name) : manager_find_own_workspace(m, caller, name);
        if (!ws && caller != 0 && strchr(name, '.')) {
                r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKSPACES, UID_INVALID, NULL, false, &refused);
                if (r == 0)
                        return 1;
                if (bus_authorize_is_over_cap(r))
                        return sd_bus_error_copy(ret_error, &refused);
                if (r > 0)
                        ws = manager_find_workspace(m, name);
        }
        if (!ws || ws->creating)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NO_SUCH_WORKSPACE, "No workspace named \"%s\"", name);
        r = bus_authorize(m, msg, SBX_ACTION_MANAGE_WORKSPACES, ws->owner, NULL, true, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        path = strdup(ws->object_path);
        if (!path)
                return -ENOMEM;
        owner = ws->owner;
        r = manager_delete_workspace(m, ws, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);
        /* The object is gone already: name its interface rather than look it up. */
        bus_emit_interfaces_removed(m, AUDIENCE_WORKSPACE, owner, path, WORKSPACE_IFACE);
        return sd_bus_reply_method_return(msg, NULL);
}

static Workspace *workspace_from_path(Manager *m, const char *path) {
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                if (streq(ws->object_path, path))
                        return ws;
        return NULL;
}

/* Someone else's workspace does not exist as far as the caller can tell:
 * its name, owner and use are the owner's business. */
static int bus_workspace_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                              sd_bus_error *error) {
        Manager *m = userdata;
        Workspace *ws = workspace_from_path(m, path);

        if (!ws || ws->creating || !workspace_visible(m, sd_bus_get_current_message(bus), ws))
                return 0;
        *found = ws;
        return 1;
}

static int bus_workspace_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        Manager *m = userdata;
        size_t n = 0;
        char **l;

        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                n++;
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        n = 0;
        for (Workspace *ws = m->workspaces; ws; ws = ws->next) {
                if (ws->creating || !workspace_visible(m, msg, ws))
                        continue;
                l[n] = strdup(ws->object_path);
                if (!l[n++]) {
                        strv_free(l);
                        return -ENOMEM;
                }
        }
        *nodes = l;
        return 1;
}

static int property_get_class(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Workspace *ws = userdata;
        return sd_bus_message_append(reply, "s", sbx_class_to_string(ws->class));
}

static int property_get_size_used(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Workspace *ws = userdata;
        Manager *m = sd_bus_slot_get_userdata(sd_bus_get_current_slot(bus));
        return sd_bus_message_append(reply, "t", workspace_size_used(m->workspace_root, ws));
}

static int property_get_in_use(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Workspace *ws = userdata;
        return sd_bus_message_append(reply, "b", ws->worker_id != NULL);
}

static int property_get_worker(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Workspace *ws = userdata;
        return sd_bus_message_append(reply, "s", ws->worker_id ?: "");
}

static const sd_bus_vtable workspace_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", NULL, offsetof(Workspace, label), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Key", "s", NULL, offsetof(Workspace, name), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Owner", "u", NULL, offsetof(Workspace, owner), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Class", "s", property_get_class, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("SizeMax", "t", NULL, offsetof(Workspace, size_max), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("SizeUsed", "t", property_get_size_used, 0, 0),
        SD_BUS_PROPERTY("CreatedUSec", "t", NULL, offsetof(Workspace, created_usec), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("LastUsedUSec", "t", NULL, offsetof(Workspace, last_used_usec), 0),
        SD_BUS_PROPERTY("InUse", "b", property_get_in_use, 0, 0),
        SD_BUS_PROPERTY("Worker", "s", property_get_worker, 0, 0),
        SD_BUS_VTABLE_END
};

/* To its owner and root only (bus-subscribe.h). */
static void workspace_emit_added(Manager *m, Workspace *ws) {
        bus_emit_interfaces_added(m, AUDIENCE_WORKSPACE, ws->owner, ws->object_path, WORKSPACE_IFACE,
                                  workspace_vtable, ws);
}

int bus_workspace_install(Manager *m) {
        int r;

        r = sd_bus_add_fallback_vtable(m->bus, NULL, WORKSPACE_PREFIX, WORKSPACE_IFACE, workspace_vtable,
                                       bus_workspace_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the workspace objects: %m");
        r = sd_bus_add_node_enumerator(m->bus, NULL, WORKSPACE_PREFIX, bus_workspace_enumerate, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the workspace enumerator: %m");
        return 0;
}
