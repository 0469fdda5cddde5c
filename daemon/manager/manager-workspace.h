/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "workspace.h"
#include "worker.h"

/* The workspaces of a Manager (m->workspaces), loaded at start-up from
 * m->workspace_root; which worker holds each is known only while it runs. */

int manager_load_workspaces(Manager *m);
/* By key (workspace-name.h): what sandboxd itself keeps (a spec's resolved
 * Workspace, records, files). */
Workspace *manager_find_workspace(Manager *m, const char *key);
/* OWNER's workspace of that NAME: what a caller other than root can name. */
Workspace *manager_find_own_workspace(Manager *m, uid_t owner, const char *name);

/* Called once when a creation ends: WS made (R 0), or not (WS NULL, R and
 * ERROR say why, and nothing of it is on disk). */
typedef void (*workspace_created_t)(Manager *m, Workspace *ws, int r, const SbxError *error, void *userdata);

/* Starts making a workspace for OWNER: checks (name, size, class, quota,
 * disk) and the sparse image now, a named error on failure; the file system
 * is made in the background (workspace-mkfs.h) and DONE is called when it is
 * there. Meanwhile the name is taken and counts against OWNER's quota, and
 * the creation against the caps on creations under way (TooManyRequests). */
int manager_create_workspace(Manager *m, const char *name, uint64_t size_max, SbxClass class, uid_t owner,
                             bool quota_exempt, workspace_created_t done, void *userdata, SbxError *error);
/* Ends the creations still running (their images removed, DONE not called). */
void manager_workspaces_abort_creations(Manager *m);
/* Wipes WS (its image and metadata) and forgets it; refused while in use. */
int manager_delete_workspace(Manager *m, Workspace *ws, SbxError *error);

/* What a worker on WS runs as: an unset class is raised to the workspace's,
 * a lower one asked for is refused (never downgraded, never silently
 * upgraded either). Pure: no state is read but WS and SPEC. */
int workspace_apply_class(const Workspace *ws, WorkerSpec *spec, SbxError *error);

/* Binds WS to W (WorkspaceBusy when another worker holds it) and records
 * its use; releasing clears that and records the time again. */
int manager_workspace_attach(Manager *m, Workspace *ws, Worker *w, SbxError *error);
void manager_workspace_release(Manager *m, Worker *w);
