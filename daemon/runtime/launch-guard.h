/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* What the unit reports when the guard killed the sandbox: what a kernel OOM
 * kill looks like (128 + SIGKILL). */
#define LAUNCH_GUARD_EXIT_OOM 137
#define LAUNCH_GUARD_EXIT_FAILED 125

/* Waits for runtime_pid ("runsc run") while holding the sandbox named
 * container to limit bytes of memory; returns the exit code the launcher
 * should exit with: the workload's, 128+signal, or LAUNCH_GUARD_EXIT_OOM. */
/* IMAGES: a resumed sandbox's checkpoint directory, removed once the sandbox
 * reports its first stats (it runs, and runsc holds what it still reads). */
int launch_guard_run(const char *runtime_path, const char *root_arg, const char *container, uint64_t limit,
                     pid_t runtime_pid, const char *images);
