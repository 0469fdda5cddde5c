/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>

#include "errors.h"
#include "quota.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

void quota_config_init_defaults(SbxQuotaConfig *q) {
        *q = (SbxQuotaConfig) {
                /* A quarter of the default MaxWorkers: four users can fill the host, one cannot. */
                .workers_per_owner = 64,
                .workspaces_per_owner = 32,
                .workspace_bytes_per_owner = 64 * GiB,
                /* Two suspended workers at the default SuspendImageMax; the
                 * total is promised on the disk before any workspace is, so
                 * it stays modest for small hosts. */
                .checkpoint_bytes_per_owner = 2 * GiB,
                .checkpoint_bytes_total = 4 * GiB,
                /* Room for journald, dpkg and the rest of /var. */
                .reserve_bytes = 1 * GiB,
                .overcommit = false,
                .exempt_root = true,
                .exempt_managers = false,
        };
}

/* USED + ADD > LIMIT without overflow; LIMIT 0 is none. */
static bool over(uint64_t limit, uint64_t used, uint64_t add) {
        return limit > 0 && (used > limit || add > limit - used);
}

int quota_check_owner(const SbxQuotaConfig *q, uid_t owner, const QuotaUsage *usage, const QuotaRequest *req,
                      SbxError *error) {
        assert(q && usage && req);

        if (req->workers > 0 && over(q->workers_per_owner, usage->workers, req->workers))
                return sbx_error_set(error, -EDQUOT, SBX_ERROR_QUOTA_EXCEEDED,
                                     "UID %u has %u workers, the most one owner may have (Quota:WorkersPerOwner=%u)",
                                     (unsigned) owner, usage->workers, q->workers_per_owner);
        if (req->workspaces > 0 && over(q->workspaces_per_owner, usage->workspaces, req->workspaces))
                return sbx_error_set(error, -EDQUOT, SBX_ERROR_QUOTA_EXCEEDED,
                                     "UID %u has %u workspaces, the most one owner may have "
                                     "(Quota:WorkspacesPerOwner=%u)", (unsigned) owner, usage->workspaces,
                                     q->workspaces_per_owner);
        if (req->workspace_bytes > 0 && over(q->workspace_bytes_per_owner, usage->workspace_bytes, req->workspace_bytes))
                return sbx_error_set(error, -EDQUOT, SBX_ERROR_QUOTA_EXCEEDED,
                                     "UID %u's workspaces have %" PRIu64 " MiB of SizeMax; %" PRIu64 " MiB more would "
                                     "pass Quota:WorkspaceBytesPerOwner=%" PRIu64 " MiB", (unsigned) owner,
                                     usage->workspace_bytes / MiB, req->workspace_bytes / MiB,
                                     q->workspace_bytes_per_owner / MiB);
        if (req->checkpoint_bytes > 0 &&
            over(q->checkpoint_bytes_per_owner, usage->checkpoint_bytes, req->checkpoint_bytes))
                return sbx_error_set(error, -EDQUOT, SBX_ERROR_QUOTA_EXCEEDED,
                                     "UID %u's checkpoint images take %" PRIu64 " MiB; %" PRIu64 " MiB more would "
                                     "pass Quota:CheckpointBytesPerOwner=%" PRIu64 " MiB", (unsigned) owner,
                                     usage->checkpoint_bytes / MiB, req->checkpoint_bytes / MiB,
                                     q->checkpoint_bytes_per_owner / MiB);
        return 0;
}

int quota_check_disk(const SbxQuotaConfig *q, const QuotaDisk *disk, uint64_t bytes, SbxError *error) {
        uint64_t need;

        assert(q && disk);

        if (q->overcommit)
                return 0;
        /* Saturating: promises are capped per owner, but not their sum. */
        need = disk->promised_unwritten;
        need = need > UINT64_MAX - disk->checkpoint_unwritten ? UINT64_MAX : need + disk->checkpoint_unwritten;
        need = need > UINT64_MAX - q->reserve_bytes ? UINT64_MAX : need + q->reserve_bytes;
        if (need <= disk->available && bytes <= disk->available - need)
                return 0;
        return sbx_error_set(error, -ENOSPC, SBX_ERROR_INSUFFICIENT_SPACE,
                             "%" PRIu64 " MiB more cannot be promised: the file system has %" PRIu64 " MiB free, of "
                             "which %" PRIu64 " MiB are promised to workspaces and worker disks, %" PRIu64 " MiB to checkpoint "
                             "images (Quota:CheckpointBytesTotal) and %" PRIu64 " MiB kept free (Quota:Reserve); "
                             "Quota:Overcommit=yes lifts this", bytes / MiB, disk->available / MiB,
                             disk->promised_unwritten / MiB, disk->checkpoint_unwritten / MiB,
                             q->reserve_bytes / MiB);
}

uint64_t quota_checkpoint_budget(const SbxQuotaConfig *q, bool exempt, uint64_t image_max, uint64_t used,
                                 uint64_t total_used) {
        uint64_t budget = image_max;

        assert(q);

        if (!exempt && q->checkpoint_bytes_per_owner > 0)
                budget = MIN(budget, used >= q->checkpoint_bytes_per_owner
                                             ? 0 : (q->checkpoint_bytes_per_owner - used) / QUOTA_CHECKPOINT_COPIES);
        /* The host's budget holds for everyone: it is what the disk promised. */
        if (q->checkpoint_bytes_total > 0)
                budget = MIN(budget, total_used >= q->checkpoint_bytes_total
                                             ? 0 : (q->checkpoint_bytes_total - total_used) / QUOTA_CHECKPOINT_COPIES);
        return budget;
}
