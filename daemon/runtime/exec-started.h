/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* How sandbox-launch learns that `runsc exec` started the process: runsc
 * writes the process's pid inside the sandbox to --internal-pid-file once it
 * runs. A quick process (/bin/true, a rename) can run and end, and runsc with
 * it, between two looks at that file; the file is therefore read after each
 * look at runsc, so an ended runsc whose file says it ran is never taken for
 * one that failed to start, which would run the command a second time.
 *
 * Waits (at most TIMEOUT_USEC) for READ_PID (which returns the pid the file
 * holds, 0 while it holds none) to give a pid, or for RUNSC to end. Returns
 * the pid, or 0 when runsc ended without one or the time ran out. *RET_REAPED
 * says whether runsc was reaped, with its wait status in *RET_STATUS. */
typedef pid_t (*ExecStartedReadPid)(void *userdata);
pid_t exec_started_wait(pid_t runsc, ExecStartedReadPid read_pid, void *userdata, uint64_t timeout_usec,
                        int *ret_status, bool *ret_reaped);

/* The pid in PATH, runsc's --internal-pid-file (an ExecStartedReadPid). */
pid_t exec_started_read_pid_file(void *path);
