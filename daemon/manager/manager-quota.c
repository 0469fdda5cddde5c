/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "manager.h"
#include "manager-quota.h"
#include "manager-workspace.h"
#include "worker-disk.h"
#include "worker-suspend.h"

static bool quota_exempt(const Manager *m, uid_t owner) {
        return owner == 0 && m->config.quota.exempt_root;
}

/* Bytes W's image holds or, while it is written, may come to hold: runsc
 * writes it into the launcher's file system of the budget's size, which is
 * then copied into the image directory, so until the copy is done it may
 * take its budget twice (quota_checkpoint_budget() hands out half of what
 * is left for that). */
static uint64_t worker_checkpoint_bytes(const Worker *w) {
        uint64_t bytes;

        if (w->state != WORKER_SUSPENDING && w->state != WORKER_SUSPENDED && w->state != WORKER_RESUMING)
                return 0;
        bytes = worker_image_bytes(w);
        if (w->state == WORKER_SUSPENDING)
                bytes = MAX(bytes, w->suspend.budget * QUOTA_CHECKPOINT_COPIES);
        return bytes;
}

void manager_quota_usage(Manager *m, uid_t owner, QuotaUsage *ret) {
        QuotaUsage u = {};

        for (Worker *w = m->workers; w; w = w->next) {
                if (w->owner != owner || w->state == WORKER_ENDED)
                        continue;
                u.workers++;
                u.checkpoint_bytes += worker_checkpoint_bytes(w);
        }
        for (Workspace *ws = m->workspaces; ws; ws = ws->next) {
                if (ws->owner != owner)
                        continue;
                u.workspaces++;
                u.workspace_bytes += ws->size_max;
        }
        *ret = u;
}

static uint64_t manager_checkpoint_bytes_total(Manager *m) {
        uint64_t total = 0;

        for (Worker *w = m->workers; w; w = w->next)
                if (w->state != WORKER_ENDED)
                        total += worker_checkpoint_bytes(w);
        return total;
}

/* The image and disk roots may not exist before their first use: what
 * counts is the file system they will be made on. */
static bool same_file_system(const char *a, const char *b) {
        struct stat sa, sb;

        return stat_nearest(a, &sa) == 0 && stat_nearest(b, &sb) == 0 && sa.st_dev == sb.st_dev;
}

/* A sparse image takes blocks as it is written: what it may still take is
 * its SizeMax less what it holds. */
static uint64_t workspaces_unwritten(Manager *m) {
        uint64_t sum = 0;

        for (Workspace *ws = m->workspaces; ws; ws = ws->next) {
                uint64_t used = workspace_size_used(m->workspace_root, ws);
                sum += ws->size_max > used ? ws->size_max - used : 0;
        }
        return sum;
}

static uint64_t checkpoint_unwritten(Manager *m) {
        uint64_t images = manager_checkpoint_bytes_total(m), total = m->config.quota.checkpoint_bytes_total;
        return total > images ? total - images : 0;
}

static uint64_t add_saturating(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int manager_quota_disk(Manager *m, QuotaDisk *ret, SbxError *error) {
        QuotaDisk d = {};
        struct statvfs st;

        if (statvfs(m->workspace_root, &st) < 0)
                return sbx_error_set(error, -errno, SBX_ERROR_INSUFFICIENT_SPACE,
                                     "Cannot read the free space of %s: %s", m->workspace_root, strerror(errno));
        d.available = (uint64_t) st.f_bavail * st.f_frsize;
        d.promised_unwritten = workspaces_unwritten(m);
        if (same_file_system(m->workspace_root, SBX_SUSPEND_ROOT))
                d.checkpoint_unwritten = checkpoint_unwritten(m);
        /* Worker disks on the same file system take from the same free space. */
        if (same_file_system(m->workspace_root, SBX_DISK_ROOT)) {
                uint64_t disks;
                (void) manager_disks_held(m, &disks);
                d.promised_unwritten = add_saturating(d.promised_unwritten, disks);
        }
        *ret = d;
        return 0;
}

uint64_t manager_quota_promised_unwritten(Manager *m, const char *path) {
        uint64_t sum = 0;

        if (same_file_system(m->workspace_root, path))
                sum = workspaces_unwritten(m);
        if (same_file_system(path, SBX_SUSPEND_ROOT))
                sum = add_saturating(sum, checkpoint_unwritten(m));
        return sum;
}

int manager_quota_admit(Manager *m, uid_t owner, const QuotaRequest *req, SbxError *error) {
        QuotaUsage usage;
        int r;

        if (!req->exempt && !quota_exempt(m, owner)) {
                manager_quota_usage(m, owner, &usage);
                r = quota_check_owner(&m->config.quota, owner, &usage, req, error);
                if (r < 0)
                        goto refused;
        }
        if (req->workspace_bytes > 0) {
                QuotaDisk disk;

                r = manager_quota_disk(m, &disk, error);
                if (r >= 0)
                        r = quota_check_disk(&m->config.quota, &disk, req->workspace_bytes, error);
                if (r < 0)
                        goto refused;
        }
        return 0;
refused: {
        char uid[16];

        snprintf(uid, sizeof(uid), "%u", (unsigned) owner);
        log_struct(LOG_NOTICE, "Refused over quota", "SANDBOXD_OWNER_UID", uid, "SANDBOXD_EVENT", "quota-exceeded",
                   "SANDBOXD_REASON", error ? error->message : strerror(-r), NULL);
        return r;
}
}

uint64_t manager_quota_checkpoint_budget(Manager *m, const Worker *w) {
        QuotaUsage usage;
        uint64_t total = manager_checkpoint_bytes_total(m);

        manager_quota_usage(m, w->owner, &usage);
        /* W's own image, if a complete one is still there, is replaced. */
        if (w->state != WORKER_SUSPENDING) {
                uint64_t own = worker_checkpoint_bytes(w);
                usage.checkpoint_bytes -= MIN(own, usage.checkpoint_bytes);
                total -= MIN(own, total);
        }
        return quota_checkpoint_budget(&m->config.quota, quota_exempt(m, w->owner), m->config.suspend_image_max,
                                       usage.checkpoint_bytes, total);
}
