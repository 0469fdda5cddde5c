/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "worker.h"

/* A shared-kernel worker (trusted, wasm) is started by sandbox-exec, its
 * unit's Type=exec main process, which checks its walls and command and
 * then writes a readiness token to the worker's stdout before it execs the
 * workload (shared/sandbox-exec.h). systemd's start job is done as soon as
 * sandbox-exec runs, so the worker stays starting until the token came too:
 * only then is CreateWorker answered and the worker running. A unit that
 * ends first, an EOF or other bytes first, or no token within
 * WORKER_READY_TIMEOUT_USEC of the job's end is a failed start, cleaned up
 * as any other (worker_start_failed()).
 *
 * Across a restart of sandboxd nothing is awaited: a worker is persisted
 * (adopt.h) only once it is running, so one that was still waiting has no
 * state file, and the next daemon stops its unit and removes its home as
 * state it cannot account for. Its client's CreateWorker call ended with
 * the old daemon. */

/* systemd's own DefaultTimeoutStartSec, which bounded the check when it was
 * an ExecStartPre=. */
#define WORKER_READY_TIMEOUT_USEC (90 * USEC_PER_SEC)

/* Right after the channel is made, before the unit is asked for. */
void worker_ready_expect(Worker *w);
/* The start job is done: running once the token is there too. */
void worker_ready_job_done(Worker *w);
/* systemd's JobRemoved for its start job, with RESULT. A workload that ends
 * at once can end before systemd has seen sandbox-exec's exec: the job then
 * fails ("failed") though the workload ran, and the token in the pipe tells
 * which it was, the unit's exit status why not. Any other result that is
 * not "done" (dependency, canceled, timeout) fails the start. */
void worker_ready_job_removed(Worker *w, const char *result);
/* The unit ended while the worker was starting. */
void worker_ready_unit_ended(Worker *w);

/* Why a start failed when sandbox-exec ended without its token, from
 * systemd's ExecMainCode and ExecMainStatus of the unit. */
void worker_ready_failure_reason(int exec_main_code, int exec_main_status, char *buf, size_t size);
