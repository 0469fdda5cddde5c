/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

/* mkfs of a workspace image as a child process watched by an sd-event child
 * source: the daemon answers other calls while a large image is formatted.
 * (A transient unit would cost a round trip to PID 1 and its job signals for
 * a helper that needs no walls of its own: it runs as root on a file root
 * made, with a fixed argv and environment.) SIGCHLD must be blocked. */
typedef struct WorkspaceMkfs WorkspaceMkfs;

/* R: 0 when mkfs exited 0, -EIO when it failed or could not run, another
 * negative errno when it could not be waited for. */
typedef void (*workspace_mkfs_done_t)(WorkspaceMkfs *j, int r, void *userdata);

/* Formats IMAGE (an existing file) with MKFS_PATH; DONE is called once, from
 * the event loop, never from inside this call. */
int workspace_mkfs_start(sd_event *e, const char *mkfs_path, const char *image, workspace_mkfs_done_t done,
                         void *userdata, WorkspaceMkfs **ret);
/* Kills an mkfs still running (and reaps it); DONE is not called. */
WorkspaceMkfs *workspace_mkfs_free(WorkspaceMkfs *j);
