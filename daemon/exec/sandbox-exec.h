/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Exit statuses of sandbox-exec when it fails before the workload runs.
 * 126 and 127 are what shells and env(1) use for the same cases. */
#define SBX_EXEC_EXIT_ENVIRONMENT 122   /* the environment credential is unreadable or malformed */
#define SBX_EXEC_EXIT_USAGE 123         /* a bad command line: sandboxd's bug */
#define SBX_EXEC_EXIT_SHARED 125        /* --check: a namespace is PID 1's, the walls are not there */
#define SBX_EXEC_EXIT_CANNOT_EXEC 126   /* the command exists but could not be executed */
#define SBX_EXEC_EXIT_NOT_FOUND 127     /* the command does not exist */

/* --pool-wait: wait on stdin for a warm-pool job (pool-job.h) and become it.
 * Returns only on failure (an exit status above), or 0 when stdin closed
 * before any job came. */
int pool_wait_run(const char *id);
