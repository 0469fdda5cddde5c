/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The runtime's timer slack, set once the sandbox has booted.
 *
 * An idle systrap sentry wakes every 400 us; a slack of some milliseconds on
 * all of runsc's threads lets the kernel batch those wakeups (README,
 * "Density"). Set before runsc's exec it would also slow the sandbox's boot,
 * whose Go runtimes sleep and poll in steps of a millisecond or less: each
 * wait then ends up to the slack late, about 60 ms of a 280 ms cold start on
 * a quiet host (docs/benchmarks.md). So runsc starts with the kernel's slack
 * and the launcher sets the idle one on every thread of runsc and of all its
 * descendants (gofer, sentry, systrap stubs) once the sandbox had time to
 * boot; new threads and processes inherit it from their creator. Writing
 * another thread's /proc/TID/timerslack_ns needs CAP_SYS_NICE, which the
 * launcher keeps for itself only (launch_caps_limit()). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* After this long from runsc's start the sandbox has booted on a quiet host
 * (a cold start is about 0.2 s): later, its idle wakeups cost CPU for nothing;
 * earlier, its boot would wait. */
#define LAUNCH_SLACK_AFTER_USEC (500 * USEC_PER_MSEC)

/* Whether this kernel lists a task's children (/proc/PID/task/TID/children,
 * CONFIG_PROC_CHILDREN), which finding runsc's descendants needs. Without it
 * the launcher sets the slack before runsc's exec, as it used to. */
bool launch_slack_deferrable(void);

/* Sets SLACK_NS on every thread of ROOT and of all its descendants, walking
 * again until a walk finds nothing left to set (a thread cloned during a walk
 * from one not yet set). Returns the number of threads set, or a negative
 * errno (-ESRCH: ROOT is gone). */
int launch_slack_apply(pid_t root, uint64_t slack_ns);
