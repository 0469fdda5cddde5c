/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandbox-launch runs as root with full capabilities, as the ExecStart=+ and
 * ExecStopPost=+ of a worker's unit and in sandboxd's probe units. Whatever
 * environment it was given (the unit's Environment=, the manager's) is not
 * trusted: it keeps only what it needs and runs the runtimes with a fixed
 * environment of their own, so nothing a worker's spec says (LD_DEBUG_OUTPUT,
 * GLIBC_TUNABLES, TMPDIR, GODEBUG, ...) reaches root. */

#define LAUNCH_FIXED_PATH "/usr/sbin:/usr/bin:/sbin:/bin"

/* What runsc, kata-runtime and the probes' programs get: PATH and nothing else. */
extern char * const launch_runtime_environment[];

/* Clears the process environment, then sets PATH to LAUNCH_FIXED_PATH and
 * keeps INVOCATION_ID and JOURNAL_STREAM, which decide where the launcher's
 * messages go, and NOTIFY_SOCKET, where a restore says it runs (each read
 * first, and only when it has systemd's format). */
int launch_env_reset(void);
