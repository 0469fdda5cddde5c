/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Suspended workers kept across a reboot ([Suspend] KeepAcrossReboot=).
 * Everything of a suspended worker but its image and its home is in /run,
 * which a boot empties; for a worker whose home is a workspace (which
 * survives a boot anyway) sandboxd also writes its record beside its image,
 * SBX_SUSPEND_ROOT/<id>/<id> (worker-state-file.h's format, root's, 0600,
 * written atomically; no secret: workers with Credentials or an Environment
 * are never kept, as their image holds the process's memory in clear and
 * systemd's fd store, where the copy for the resume lives, ends with the
 * boot). The next start re-creates such a worker as suspended instead of
 * wiping it, once the record, its image and its workspace check out. */

#include <stdbool.h>

#include "manager.h"
#include "worker-state-file.h"

/* Why W cannot be kept across a reboot, or NULL if it can. */
const char *suspend_keep_refusal(const Worker *w);

/* At the suspend, with the option on: writes W's record beside its image,
 * or logs why it is not kept. */
void suspend_keep_after_suspend(Worker *w);

/* Whether SBX_SUSPEND_ROOT/ID holds a kept record (of any content). */
bool suspend_keep_has_record(const char *id);

/* Loads and checks the kept record of ID: it parses, names ID, is a
 * suspended gVisor worker on a workspace, without egress or secrets; its
 * image is complete and saved by the UID the record names; its workspace
 * exists and is free. 0 and *REC filled, or a negative errno and *RET_REASON
 * (the journal's SANDBOXD_REASON), logged. */
int suspend_keep_check(Manager *m, const char *id, WorkerRecord *rec, const char **ret_reason);

/* Empties SBX_SUSPEND_ROOT, except, if KEEP, the images with a kept record. */
void suspend_wipe_images(bool keep);
