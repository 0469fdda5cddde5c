/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* What the unit reports when the guard killed the sandbox: what a kernel OOM
 * kill looks like (128 + SIGKILL). */
#define LAUNCH_GUARD_EXIT_OOM 137
#define LAUNCH_GUARD_EXIT_FAILED 125
/* What runsc exits with when it gives up itself (its Fatalf), a failed
 * restore among them. */
#define LAUNCH_RUNSC_FATAL_EXIT 128

/* Waits for runtime_pid ("runsc run") while holding the sandbox named
 * container to limit bytes of memory; returns the exit code the launcher
 * should exit with: the workload's, 128+signal, or LAUNCH_GUARD_EXIT_OOM.
 * LIMIT_PATH (a warm-pool sandbox's, else NULL): a root-only file in the
 * bundle where sandboxd writes the claiming worker's limit; once it exists
 * it replaces LIMIT. IMAGES: a resumed sandbox's checkpoint directory,
 * removed once runsc reports the sandbox running (runsc then holds what it
 * still reads), which is also when the guard tells systemd READY=1. SLACK_NS:
 * the timer slack set on runtime_pid's threads and descendants once the
 * sandbox booted (launch-slack.h); 0 for none. */
int launch_guard_run(const char *runtime_path, const char *root_arg, const char *container, uint64_t limit,
                     const char *limit_path, pid_t runtime_pid, const char *images, uint64_t slack_ns);

/* The limit in PATH: decimal bytes and a newline. -ENOENT before sandboxd
 * wrote it, -EBADMSG for anything else. */
int launch_guard_read_limit(const char *path, uint64_t *ret);
