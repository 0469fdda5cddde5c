/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Exit statuses of sandbox-exec when it fails before the workload runs.
 * 126 and 127 are what shells and env(1) use for the same cases. */
#define SBX_EXEC_EXIT_ENVIRONMENT 122   /* the environment credential is unreadable or malformed */
#define SBX_EXEC_EXIT_USAGE 123         /* a bad command line: sandboxd's bug */
#define SBX_EXEC_EXIT_READY 124         /* the readiness token could not be written to stdout */
#define SBX_EXEC_EXIT_SHARED 125        /* a namespace is PID 1's, the walls are not there */
#define SBX_EXEC_EXIT_CANNOT_EXEC 126   /* the command exists but could not be executed */
#define SBX_EXEC_EXIT_NOT_FOUND 127     /* the command does not exist */

/* What sandbox-exec writes to its stdout, the worker's channel, once every
 * check passed and just before it execs the workload: sandboxd counts the
 * start as done only when these are the first bytes it reads from the
 * worker's stdout (channel.h), and strips them. The workload cannot forge or
 * pre-empt it: it is this very process after the execve, so it runs only
 * once the token is in the pipe, and nothing else holds the pipe's write end
 * but systemd. One write() below PIPE_BUF: it reaches the pipe whole. */
#define SBX_EXEC_READY_TOKEN "sandbox-exec: ready\n"
#define SBX_EXEC_READY_TOKEN_LEN (sizeof(SBX_EXEC_READY_TOKEN) - 1)

/* --pool-wait: wait on stdin for a warm-pool job (pool-job.h) and become it.
 * Returns only on failure (an exit status above), or 0 when stdin closed
 * before any job came. */
int pool_wait_run(const char *id);
