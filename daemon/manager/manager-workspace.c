/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>

#include "caller-quota.h"
#include "errors.h"
#include "manager.h"
#include "manager-quota.h"
#include "manager-workspace.h"
#include "workspace-mkfs.h"

static size_t manager_n_workspaces(Manager *m) {
        size_t n = 0;
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                n++;
        return n;
}

/* An image without metadata is a creation that a crash or a stop of
 * sandboxd cut short (the metadata is written last): nobody was told it
 * exists, and left alone it would hold its name and its blocks forever. */
static void workspace_drop_orphan_image(DIR *d, const char *img) {
        _cleanup_free_ char *meta = NULL;
        size_t n = strlen(img) - 4;

        if (asprintf(&meta, "%.*s.meta", (int) n, img) < 0 || faccessat(dirfd(d), meta, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return;
        if (unlinkat(dirfd(d), img, 0) < 0)
                return;
        log_struct(LOG_WARNING, "Removed the image of a workspace whose creation was cut short",
                   "SANDBOXD_WORKSPACE_IMAGE", img, "SANDBOXD_EVENT", "workspace-orphan-removed", NULL);
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

                if (n > 4 && streq(de->d_name + n - 4, ".img")) {
                        workspace_drop_orphan_image(d, de->d_name);
                        continue;
                }
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

Workspace *manager_find_workspace(Manager *m, const char *key) {
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                if (streq(ws->name, key))
                        return ws;
        return NULL;
}

Workspace *manager_find_own_workspace(Manager *m, uid_t owner, const char *name) {
        for (Workspace *ws = m->workspaces; ws; ws = ws->next)
                if (ws->owner == owner && streq(ws->label, name))
                        return ws;
        return NULL;
}

struct WorkspaceCreation {
        Manager *manager;
        Workspace *workspace;
        WorkspaceMkfs *mkfs;
        workspace_created_t done;
        void *userdata;
};

static void manager_unlink_workspace(Manager *m, Workspace *ws) {
        for (Workspace **p = &m->workspaces; *p; p = &(*p)->next)
                if (*p == ws) {
                        *p = ws->next;
                        break;
                }
}

/* The creation is over, one way or another: its mkfs is gone and its
 * owner's place under the caps on creations is free again. */
static void workspace_creation_end(Workspace *ws) {
        struct WorkspaceCreation *c = ws->creating;

        workspace_mkfs_free(c->mkfs);
        caller_quota_release(&c->manager->workspace_creation_quota, ws->owner);
        free(c);
        ws->creating = NULL;
}

/* Forgets a creation that did not complete, and its image. */
static void workspace_creation_abort(Workspace *ws) {
        Manager *m = ws->creating->manager;
        _cleanup_free_ char *img = NULL;

        workspace_creation_end(ws);
        if (workspace_image_path(m->workspace_root, ws->name, &img) >= 0)
                (void) unlink(img);
        manager_unlink_workspace(m, ws);
        workspace_free(ws);
}

static void on_workspace_mkfs_done(WorkspaceMkfs *j, int r, void *userdata) {
        Workspace *ws = userdata;
        struct WorkspaceCreation *c = ws->creating;
        Manager *m = c->manager;
        workspace_created_t done = c->done;
        void *done_userdata = c->userdata;
        SbxError e = {};
        char uid[16];

        if (r >= 0)
                r = workspace_save(m->workspace_root, ws);
        if (r < 0) {
                sbx_error_set(&e, r, SBX_ERROR_INVALID_WORKSPACE, "Cannot make workspace %s of %" PRIu64 " bytes: %s",
                              ws->name, ws->size_max, r == -EIO ? "mkfs.ext4 failed" : strerror(-r));
                log_struct(LOG_ERR, "Failed to make a workspace", "SANDBOXD_WORKSPACE", ws->name,
                           "SANDBOXD_REASON", e.message, "SANDBOXD_EVENT", "workspace-create-failed", NULL);
                workspace_creation_abort(ws);
                done(m, NULL, r, &e, done_userdata);
                return;
        }
        workspace_creation_end(ws);
        snprintf(uid, sizeof(uid), "%u", (unsigned) ws->owner);
        log_struct(LOG_INFO, "Workspace created", "SANDBOXD_WORKSPACE", ws->name, "SANDBOXD_OWNER_UID", uid,
                   "SANDBOXD_EVENT", "workspace-created", NULL);
        done(m, ws, 0, NULL, done_userdata);
}

/* Each creation runs mkfs.ext4 as root in sandboxd's own cgroup until it is
 * done: how many run at once is capped per owner and in total
 * (Bus:WorkspaceCreationsPerUser, Bus:WorkspaceCreationsMax), as journal
 * reads are. Root meets only its own cap: users cannot lock it out, and
 * what runs stays bounded all the same. Takes one unit for OWNER. */
static int workspace_creation_admit(Manager *m, uid_t owner, SbxError *error) {
        static const CallerQuotaWords words = {
                "workspaces are being made", "WorkspaceCreationsPerUser", "WorkspaceCreationsMax", "done" };
        int r;

        r = owner == 0 ? caller_quota_acquire_reserved(&m->workspace_creation_quota, 0)
                       : caller_quota_acquire(&m->workspace_creation_quota, owner);
        if (r != -EUSERS && r != -ENOBUFS)
                return r;
        return caller_quota_refusal(&m->workspace_creation_quota, r, &words, error);
}

int manager_create_workspace(Manager *m, const char *name, uint64_t size_max, SbxClass class, uid_t owner,
                             bool quota_exempt, workspace_created_t done, void *userdata, SbxError *error) {
        _cleanup_(workspace_freep) Workspace *ws = NULL;
        _cleanup_free_ char *img = NULL, *key = NULL;
        struct WorkspaceCreation *c;
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
        /* Names are the owner's: only the owner's own can be in the way
         * (and, for root, one made before names were per owner, which root
         * sees anyway). Another user's of the same name is neither. */
        r = workspace_key_make(name, owner, &key);
        if (r < 0)
                return r;
        if (manager_find_own_workspace(m, owner, name) || manager_find_workspace(m, key))
                return sbx_error_set(error, -EEXIST, SBX_ERROR_WORKSPACE_EXISTS, "Workspace %s exists already", name);
        if (manager_n_workspaces(m) >= SBX_WORKSPACES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "This host has %d workspaces, the maximum", SBX_WORKSPACES_MAX);
        r = manager_quota_admit(m, owner, &(QuotaRequest) { .exempt = quota_exempt, .workspaces = 1,
                                                           .workspace_bytes = size_max }, error);
        if (r < 0)
                return r;
        r = workspace_creation_admit(m, owner, error);
        if (r < 0)
                return r;
        r = workspace_new(&ws, key);
        if (r < 0)
                goto fail;
        ws->owner = owner;
        ws->size_max = size_max;
        ws->class = class;
        ws->created_usec = ws->last_used_usec = now_usec(CLOCK_REALTIME);
        r = workspace_image_create(m->workspace_root, ws);
        if (r == -EEXIST) {
                sbx_error_set(error, r, SBX_ERROR_WORKSPACE_EXISTS,
                              "Workspace %s has files in %s already", name, m->workspace_root);
                goto fail;
        }
        if (r < 0) {
                sbx_error_set(error, r, SBX_ERROR_INVALID_WORKSPACE,
                              "Cannot make workspace %s of %" PRIu64 " bytes: %s", name, size_max, strerror(-r));
                goto fail;
        }
        c = calloc(1, sizeof(*c));
        if (!c || workspace_image_path(m->workspace_root, key, &img) < 0) {
                free(c);
                (void) workspace_remove(m->workspace_root, key);
                r = -ENOMEM;
                goto fail;
        }
        *c = (struct WorkspaceCreation) { .manager = m, .workspace = ws, .done = done, .userdata = userdata };
        r = workspace_mkfs_start(m->event, m->mkfs_path, img, on_workspace_mkfs_done, ws, &c->mkfs);
        if (r < 0) {
                free(c);
                (void) unlink(img);
                sbx_error_set(error, r, SBX_ERROR_INVALID_WORKSPACE, "Cannot run mkfs for workspace %s: %s",
                              name, strerror(-r));
                goto fail;
        }
        /* Listed from now on: the name is taken and the bytes count. */
        ws->creating = c;
        ws->next = m->workspaces;
        m->workspaces = TAKE_PTR(ws);
        return 0;
fail:
        caller_quota_release(&m->workspace_creation_quota, owner);
        return r;
}

void manager_workspaces_abort_creations(Manager *m) {
        for (Workspace *ws = m->workspaces, *next; ws; ws = next) {
                next = ws->next;
                if (ws->creating)
                        workspace_creation_abort(ws);
        }
}

int manager_delete_workspace(Manager *m, Workspace *ws, SbxError *error) {
        int r;

        if (ws->worker_id)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is the home of worker %s; stop it first", ws->name, ws->worker_id);
        if (ws->creating)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is still being made", ws->name);
        r = workspace_remove(m->workspace_root, ws->name);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_WORKSPACE, "Cannot remove workspace %s: %s",
                                     ws->name, strerror(-r));
        log_struct(LOG_INFO, "Workspace deleted", "SANDBOXD_WORKSPACE", ws->name,
                   "SANDBOXD_EVENT", "workspace-deleted", NULL);
        manager_unlink_workspace(m, ws);
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
        if (ws->creating)
                return sbx_error_set(error, -EBUSY, SBX_ERROR_WORKSPACE_BUSY,
                                     "Workspace %s is still being made", ws->name);
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
