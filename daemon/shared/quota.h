/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* What one owner may hold, and what the host promises in total ([Quota] in
 * sandboxd.conf). A per-owner value of 0 means no limit. Pure: nothing here
 * reads the manager or the disk; manager-quota.h gathers the numbers. */
typedef struct SbxQuotaConfig {
        unsigned workers_per_owner;             /* alive workers (running, suspended, starting) */
        unsigned workspaces_per_owner;
        uint64_t workspace_bytes_per_owner;     /* sum of the owner's workspaces' SizeMax */
        uint64_t checkpoint_bytes_per_owner;    /* sum of the owner's checkpoint images */
        uint64_t checkpoint_bytes_total;        /* every image together: the checkpoint budget */
        uint64_t reserve_bytes;                 /* of the file system, never promised to anyone */
        bool overcommit;                        /* promise workspaces beyond the free space */
        bool exempt_root;                       /* root's workers and workspaces are not counted */
        bool exempt_managers;                   /* nor those a holder of manage-workers creates */
} SbxQuotaConfig;

/* Below this a checkpoint is not tried: a gVisor image is tens of MiB at least. */
#define SBX_CHECKPOINT_BUDGET_MIN (UINT64_C(16) << 20)

/* What an owner holds now. */
typedef struct QuotaUsage {
        unsigned workers;
        unsigned workspaces;
        uint64_t workspace_bytes;
        uint64_t checkpoint_bytes;
} QuotaUsage;

/* What a call would add. */
typedef struct QuotaRequest {
        bool exempt;                    /* the caller holds manage-workers and Quota:ExemptManagers=yes */
        unsigned workers;
        unsigned workspaces;
        uint64_t workspace_bytes;
        uint64_t checkpoint_bytes;
} QuotaRequest;

void quota_config_init_defaults(SbxQuotaConfig *q);

/* QuotaExceeded naming the first limit USAGE + REQ would pass, or 0. */
int quota_check_owner(const SbxQuotaConfig *q, uid_t owner, const QuotaUsage *usage, const QuotaRequest *req,
                      SbxError *error);

/* What the host has promised and not yet written, against what is free. */
typedef struct QuotaDisk {
        uint64_t available;             /* statvfs f_bavail * f_frsize */
        uint64_t promised_unwritten;    /* every workspace's SizeMax minus what its image holds */
        uint64_t checkpoint_unwritten;  /* checkpoint_bytes_total minus every image's bytes, when on the same fs */
} QuotaDisk;

/* A new promise of BYTES fits when the unwritten promises and BYTES leave
 * the reserve free; with overcommit it always does. InsufficientSpace or 0. */
int quota_check_disk(const SbxQuotaConfig *q, const QuotaDisk *disk, uint64_t bytes, SbxError *error);

/* The most a new checkpoint image of an owner holding USED may take: the
 * smaller of IMAGE_MAX and half the owner's remaining budget and half the
 * host's (TOTAL_USED by every image). Half: while it is made an image takes
 * its room twice, in the launcher's file system that runsc writes and in
 * its copy in the image directory (QUOTA_CHECKPOINT_COPIES). 0: no room. */
#define QUOTA_CHECKPOINT_COPIES 2
uint64_t quota_checkpoint_budget(const SbxQuotaConfig *q, bool exempt, uint64_t image_max, uint64_t used,
                                 uint64_t total_used);
