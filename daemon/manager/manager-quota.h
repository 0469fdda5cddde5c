/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "quota.h"

typedef struct Manager Manager;
typedef struct Worker Worker;

/* What OWNER holds: alive workers, workspaces (those being made too), their
 * SizeMax, and checkpoint images (a checkpoint being written counts with its
 * whole budget). */
void manager_quota_usage(Manager *m, uid_t owner, QuotaUsage *ret);

/* The one admission check for what an owner may hold ([Quota]): OWNER's
 * quota unless exempt, and for workspace bytes the host's promise on the
 * workspaces' file system, which binds everyone. QuotaExceeded or
 * InsufficientSpace, changing nothing; 0 when REQ fits. */
int manager_quota_admit(Manager *m, uid_t owner, const QuotaRequest *req, SbxError *error);

/* The most W's next checkpoint image may take (quota.h), 0 for none. */
uint64_t manager_quota_checkpoint_budget(Manager *m, const Worker *w);

/* What workspaces and the checkpoint budget were promised and have not
 * written yet, counting only those on the file system that holds PATH:
 * the worker disks' admission adds it to their own. */
uint64_t manager_quota_promised_unwritten(Manager *m, const char *path);
