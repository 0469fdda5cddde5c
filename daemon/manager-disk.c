/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/statvfs.h>

#include "errors.h"
#include "manager.h"
#include "pool.h"
#include "worker-disk.h"
#include "worker.h"

int manager_admit_disk(Manager *m, uint64_t want, SbxError *error) {
        uint64_t committed, unwritten = 0;
        struct statvfs st;

        committed = pool_disk_held(m, &unwritten);
        for (Worker *w = m->workers; w; w = w->next) {
                if (w->state == WORKER_ENDED || w->spec.disk_max == 0)
                        continue;
                committed += w->spec.disk_max;
                unwritten += worker_disk_unwritten(w->id, w->spec.disk_max);
        }
        if (statvfs(SBX_DISK_ROOT, &st) < 0 && statvfs("/var/lib/private/sandboxd", &st) < 0)
                return sbx_error_set(error, -errno, SBX_ERROR_START_FAILED,
                                     "Cannot check the free space for worker disks in " SBX_DISK_ROOT ": %s",
                                     strerror(errno));
        return worker_disk_admit(&m->config, committed, unwritten, want, (uint64_t) st.f_bavail * st.f_frsize, error);
}
