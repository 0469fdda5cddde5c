/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Suspend and resume of a gVisor worker. Suspend checkpoints its sandbox
 * (sandbox-launch checkpoint, from a oneshot unit of its own, as root) into
 * SBX_SUSPEND_ROOT/<id>; the sandbox exits once saved and its unit ends,
 * which releases its memory, while the worker stays listed as suspended with
 * its id, home and spec. Resume starts a unit of the same name whose
 * launcher restores the sandbox from the image ("run --restore=yes") and
 * removes the image once the sandbox runs; a resume that fails before that
 * keeps the worker suspended (worker-resume.h). */

#include <stdbool.h>

#include "errors.h"
#include "unit-drop.h"
#include "worker.h"

#define SBX_SUSPEND_ROOT "/var/lib/sandboxd/suspend"
#define SBX_IMAGE_MARKER "sandboxd-uid"         /* the launcher writes it last (launch.h) */
#define SBX_CHECKPOINT_ATTEMPTS 3               /* the launcher's, while the sandbox runs on (launch.h) */

/* Whether W's class and setup can be suspended at all: NotSupported with the
 * reason otherwise. Its state is not looked at. */
int worker_check_suspendable(const WorkerSpec *spec, SbxRuntime runtime, SbxError *error);

/* Starts the checkpoint of a running worker. REQUEST (NULL for the idle
 * reaper) is answered when the worker is suspended, or with the error. */
int worker_suspend(Worker *w, sd_bus_message *request, SbxError *error);
/* Starts the unit that restores a suspended worker; REQUEST (a Resume or an
 * OpenChannel) is answered once it runs. While it is resuming, further
 * requests wait for the same end. */
int worker_resume(Worker *w, sd_bus_message *request, SbxError *error);

/* A JobRemoved for the checkpoint unit of one of WORKERS (a list linked by
 * next): true if UNIT was one. */
bool worker_suspend_job_removed(Worker *workers, const char *unit, const char *result);
/* The unit of a suspending worker is gone. */
void worker_suspend_unit_gone(Worker *w);
/* The resumed sandbox runs (worker-resume.h decides when). */
void worker_resume_done(Worker *w);
/* Whether W's image is complete: its marker is there. */
bool worker_image_complete(const Worker *w);

/* Answers every waiting call with error NAME, MESSAGE. */
void worker_waiters_fail(Worker *w, const char *name, const char *message);
/* Removes SBX_SUSPEND_ROOT/<id>. */
void worker_delete_images(Worker *w);

/* Stops and waits for systemd to drop the worker's unit, its proxy pair and
 * its workspace's mount unit, which a resume makes again under the same
 * names (unit-drop.h); DONE gets the worker. */
int worker_drop_units(Worker *w, uint64_t timeout_usec, unit_drop_done_t done, UnitDrop **ret);
/* Bytes the image directory of W takes on disk (0 when there is none). */
uint64_t worker_image_bytes(const Worker *w);
