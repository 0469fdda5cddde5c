/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "adopt.h"
#include "egress-policy.h"
#include "manager-workspace.h"
#include "rmrf.h"
#include "suspend-keep.h"
#include "worker-secrets.h"
#include "worker-suspend.h"

const char *suspend_keep_refusal(const Worker *w) {
        if (!w->spec.workspace)
                return "it has no workspace: a home of its own does not survive a boot";
        if (w->secrets.keep || worker_secrets_missing(w))
                return "it has Credentials or an Environment: its image holds them in clear, and the copy its "
                       "resume needs lives in systemd's fd store, which a boot empties";
        /* A plain proxy is made again at the resume from the policy in the
         * record; a broker's secrets are not in it. */
        if (w->spec.n_services > 0)
                return "it has Services, whose secrets live in systemd's fd store, which a boot empties";
        return NULL;
}

/* Whether a kept record's proxy policy (if any) names Services. */
static bool record_has_services(const WorkerRecord *rec) {
        _cleanup_egress_policy_ EgressPolicy *p = NULL;

        if (!rec->egress_policy)
                return false;
        return egress_policy_from_json(rec->egress_policy, &p) < 0 || p->n_services > 0;
}

static int image_dir(const char *id, char **ret) {
        return asprintf(ret, SBX_SUSPEND_ROOT "/%s", id) < 0 ? -ENOMEM : 0;
}

void suspend_keep_after_suspend(Worker *w) {
        _cleanup_free_ char *dir = NULL;
        const char *why;
        int r;

        if (!w->manager->config.suspend_keep_across_reboot)
                return;
        why = suspend_keep_refusal(w);
        if (why) {
                log_struct(LOG_NOTICE, "Suspended worker is not kept across a reboot", "SANDBOXD_WORKER_ID", w->id,
                           "SANDBOXD_REASON", why, "SANDBOXD_EVENT", "not-kept-across-reboot", NULL);
                return;
        }
        r = image_dir(w->id, &dir);
        if (r >= 0)
                r = worker_save_state_in(w, dir);
        if (r < 0) {
                log_struct(LOG_ERR, "Failed to write the record that keeps a suspended worker across a reboot",
                           "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_REASON", strerror(-r), NULL);
                return;
        }
        log_struct(LOG_INFO, "Suspended worker is kept across a reboot", "SANDBOXD_WORKER_ID", w->id,
                   "SANDBOXD_WORKSPACE", w->spec.workspace, "SANDBOXD_EVENT", "kept-across-reboot", NULL);
}

bool suspend_keep_has_record(const char *id) {
        _cleanup_free_ char *path = NULL;

        if (!worker_id_is_valid(id) || asprintf(&path, SBX_SUSPEND_ROOT "/%s/%s", id, id) < 0)
                return false;
        return access(path, F_OK) == 0;
}

/* The UID the launcher wrote last into the image, or -1. */
static long image_uid(const char *dir) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char line[32];
        char *end;
        long uid;

        if (asprintf(&path, "%s/" SBX_IMAGE_MARKER, dir) < 0)
                return -1;
        f = fopen(path, "re");
        if (!f || !fgets(line, sizeof(line), f))
                return -1;
        errno = 0;
        uid = strtol(line, &end, 10);
        if (errno != 0 || end == line || (*end && *end != '\n') || uid <= 0)
                return -1;
        return uid;
}

static int refuse(const char *id, const char *reason, const char *detail, int r) {
        log_struct(LOG_WARNING, "Refusing a suspended worker kept across a reboot; removing its image",
                   "SANDBOXD_WORKER_ID", id, "SANDBOXD_REASON", reason, "SANDBOXD_DETAIL", detail,
                   "SANDBOXD_EVENT", "kept-refused", NULL);
        return r;
}

int suspend_keep_check(Manager *m, const char *id, WorkerRecord *rec, const char **ret_reason) {
        _cleanup_free_ char *dir = NULL, *checkpoint = NULL;
        char why[256] = "";
        Workspace *ws;
        struct stat st;
        int r;

        r = image_dir(id, &dir);
        if (r < 0)
                return r;
        r = worker_record_load(dir, id, rec, why, sizeof(why));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return refuse(id, *ret_reason = "record-unreadable", why[0] ? why : strerror(-r), r);
        if (!streq(rec->id, id) || !rec->suspended || !rec->workspace || rec->runtime != SBX_RUNTIME_RUNSC ||
            rec->kept_secrets || record_has_services(rec))
                return refuse(id, *ret_reason = "record-refused",
                              "not a suspended gVisor worker of that id on a workspace, without secrets or Services",
                              -EBADMSG);
        if (asprintf(&checkpoint, "%s/checkpoint.img", dir) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0 || st.st_uid != 0 || (st.st_mode & 0077) != 0 || access(checkpoint, F_OK) < 0)
                return refuse(id, *ret_reason = "image-missing", "no complete root-only checkpoint image", -ENOENT);
        if (image_uid(dir) != (long) rec->uid)
                return refuse(id, *ret_reason = "image-mismatch",
                              "the image was saved by another UID than the record names", -EBADMSG);
        ws = manager_find_workspace(m, rec->workspace);
        if (!ws)
                return refuse(id, *ret_reason = "workspace-missing", rec->workspace, -ENOENT);
        if (ws->worker_id)
                return refuse(id, *ret_reason = "workspace-busy", ws->worker_id, -EBUSY);
        return 0;
}

void suspend_wipe_images(bool keep) {
        DIR *d = opendir(SBX_SUSPEND_ROOT);
        struct dirent *de;

        if (!d) {
                if (errno != ENOENT)
                        log_warning_errno(errno, "Failed to empty " SBX_SUSPEND_ROOT ": %m");
                return;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                int r;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                /* Checked at the next start, which removes what does not hold. */
                if (keep && suspend_keep_has_record(de->d_name))
                        continue;
                if (image_dir(de->d_name, &path) < 0)
                        break;
                r = rm_rf(path);
                if (r < 0)
                        log_warning_errno(r, "Failed to remove %s: %m", path);
        }
        closedir(d);
}
