/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>

#include "errors.h"
#include "manager.h"
#include "manager-workspace.h"

static size_t manager_n_workspaces(Manager *m) {
        size_t n = 0;
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                n++;
        return n;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

int manager_load_workspaces(Manager *m) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        /* Root's alone: names, owners and the images themselves. */
        if (mkdir(m->workspace_root, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", m->workspace_root);
        d = opendir(m->workspace_root);
        if (!d)
                return log_error_errno(-errno, "Failed to open %s: %m", m->workspace_root);
        for (struct dirent *de; (de = readdir(d)); ) {
                _cleanup_free_ char *name = NULL;
                Workspace *ws = NULL;
                size_t n = strlen(de->d_name);

                if (n <= 5 || !streq(de->d_name + n - 5, ".meta"))
                        continue;
                name = strndup(de->d_name, n - 5);
                if (!name)
                        return -ENOMEM;
                r = workspace_load(m->workspace_root, name, &ws);
                if (r < 0) {
                        log_struct(LOG_ERR, "Ignoring a workspace whose metadata cannot be read",
                                   "SANDBOXD_WORKSPACE", name, "SANDBOXD_REASON", strerror(-r), NULL);
                        continue;
                }
                ws->next = m->workspaces;
                m->workspaces = ws;
        }
        return 0;
}

Workspace *manager_find_workspace(Manager *m, const char *name) {
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                if (streq(ws->name, name))
                        return ws;
        return NULL;
}

int manager_create_workspace(Manager *m, const char *name, uint64_t size_max, SbxClass class, uid_t owner,
                             Workspace **ret, SbxError *error) {
        _cleanup_(workspace_freep) Workspace *ws = NULL;
        char uid[16];
        int r;

        if (!workspace_name_is_valid(name))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "\"%.64s\" is not a workspace name: use 1-%d characters of [a-z0-9_-], "
                                     "starting with a letter or digit", name, SBX_WORKSPACE_NAME_MAX);
        if (size_max < SBX_WORKSPACE_SIZE_MIN || size_max > SBX_WORKSPACE_SIZE_MAX)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_INVALID_WORKSPACE,
                                     "SizeMax must be between %" PRIu64 " MiB and %" PRIu64 " GiB",
                                     SBX_WORKSPACE_SIZE_MIN >> 20, SBX_WORKSPACE_SIZE_MAX >> 30);
        if (!workspace_class_is_valid(class))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "A workspace's Class must be trusted, standard, devcontainer or untrusted");
        if (manager_find_workspace(m, name))
                return sbx_error_set(error, -EEXIST, SBX_ERROR_WORKSPACE_EXISTS, "Workspace %s exists already", name);
        if (manager_n_workspaces(m) >= SBX_WORKSPACES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "This host has %d workspaces, the maximum", SBX_WORKSPACES_MAX);
        r = workspace_new(&ws, name);
        if (r < 0)
                return r;
        ws->owner = owner;
        ws->size_max = size_max;
        ws->class = class;
        ws->created_usec = ws->last_used_usec = now_usec(CLOCK_REALTIME);
        r = workspace_create(m->workspace_root, ws, m->mkfs_path);
        if (r == -EEXIST)
                return sbx_error_set(error, r, SBX_ERROR_WORKSPACE_EXISTS,
                                     "Workspace %s has files in %s already", name, m->workspace_root);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_WORKSPACE,
                                     "Cannot make workspace %s of %" PRIu64 " bytes: %s", name, size_max,
                                     r == -EIO ? "mkfs.ext4 failed" : strerror(-r));
        snprintf(uid, sizeof(uid), "%u", (unsigned) owner);
        log_struct(LOG_INFO, "Workspace created", "SANDBOXD_WORKSPACE", name, "SANDBOXD_OWNER_UID", uid,
                   "SANDBOXD_EVENT", "workspace-created", NULL);
        ws->next = m->workspaces;
        m->workspaces = ws;
        *ret = TAKE_PTR(ws);
        return 0;
}

int manager_delete_workspace(Manager *m, Workspace *ws, SbxError *error) {
        int r;

        if (ws->worker_id)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is the home of worker %s; stop it first", ws->name, ws->worker_id);
        r = workspace_remove(m->workspace_root, ws->name);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_WORKSPACE, "Cannot remove workspace %s: %s",
                                     ws->name, strerror(-r));
        log_struct(LOG_INFO, "Workspace deleted", "SANDBOXD_WORKSPACE", ws->name,
                   "SANDBOXD_EVENT", "workspace-deleted", NULL);
        for (Workspace **p = &m->workspaces; *p; p = &(*p)->next)
                if (*p == ws) {
                        *p = ws->next;
                        break;
                }
        workspace_free(ws);
        return 0;
}

int workspace_apply_class(const Workspace *ws, WorkerSpec *spec, SbxError *error) {
        if (!(spec->set & SPEC_HAS_CLASS)) {
                if (spec->class < ws->class)
                        spec->class = ws->class;
                return 0;
        }
        if (spec->requested_class < ws->class)
                return sbx_error_set(error, -EPERM, SBX_ERROR_INVALID_WORKSPACE,
                                     "Workspace %s needs class %s or above, not %s", ws->name,
                                     sbx_class_to_string(ws->class), sbx_class_to_string(spec->requested_class));
        return 0;
}

static void workspace_touch(Manager *m, Workspace *ws) {
        int r;

        ws->last_used_usec = now_usec(CLOCK_REALTIME);
        r = workspace_save(m->workspace_root, ws);
        if (r < 0)
                log_struct(LOG_WARNING, "Failed to record a workspace's last use", "SANDBOXD_WORKSPACE", ws->name,
                           "SANDBOXD_REASON", strerror(-r), NULL);
}

int manager_workspace_attach(Manager *m, Workspace *ws, Worker *w, SbxError *error) {
        if (ws->worker_id && !streq(ws->worker_id, w->id))
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is the home of worker %s already", ws->name, ws->worker_id);
        if (!ws->worker_id) {
                ws->worker_id = strdup(w->id);
                if (!ws->worker_id)
                        return -ENOMEM;
        }
        workspace_touch(m, ws);
        return 0;
}

void manager_workspace_release(Manager *m, Worker *w) {
        Workspace *ws = w->spec.workspace ? manager_find_workspace(m, w->spec.workspace) : NULL;

        if (!ws || !streq_ptr(ws->worker_id, w->id))
                return;
        free(ws->worker_id);
        ws->worker_id = NULL;
        workspace_touch(m, ws);
}
