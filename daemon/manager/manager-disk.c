/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/statvfs.h>

#include "errors.h"
#include "manager.h"
#include "manager-quota.h"
#include "pool.h"
#include "worker-disk.h"
#include "worker.h"

uint64_t manager_disks_held(Manager *m, uint64_t *ret_unwritten) {
        uint64_t committed, unwritten = 0;

        committed = pool_disk_held(&m->pool, &unwritten);
        for (Worker *w = m->workers; w; w = w->next) {
                if (w->state == WORKER_ENDED || w->spec.disk_max == 0)
                        continue;
                committed += w->spec.disk_max;
                unwritten += worker_disk_unwritten(w->id, w->spec.disk_max);
        }
        *ret_unwritten = unwritten;
        return committed;
}

int manager_admit_disk(Manager *m, uint64_t want, SbxError *error) {
        uint64_t committed, unwritten, others;
        struct statvfs st;
        int r;

        committed = manager_disks_held(m, &unwritten);
        /* Workspaces and checkpoint images on the same file system were
         * promised the same free space: counted once, here and there. */
        others = manager_quota_promised_unwritten(m, SBX_DISK_ROOT);
        unwritten = unwritten > UINT64_MAX - others ? UINT64_MAX : unwritten + others;
        r = statvfs_nearest(SBX_DISK_ROOT, &st);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_START_FAILED,
                                     "Cannot check the free space for worker disks in " SBX_DISK_ROOT ": %s",
                                     strerror(-r));
        return worker_disk_admit(&m->config, committed, unwritten, want, (uint64_t) st.f_bavail * st.f_frsize, error);
}
