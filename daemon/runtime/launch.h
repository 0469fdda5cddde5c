/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The verbs of sandbox-launch. Each returns the process exit status. */

#include "launch-args.h"

#define LAUNCH_STATE_DIR "/run/sandboxd"
#define LAUNCH_BUNDLES_DIR LAUNCH_STATE_DIR "/bundles"
#define LAUNCH_RUNSC_ROOT LAUNCH_STATE_DIR "/runsc"
#define LAUNCH_KATA_ROOT LAUNCH_STATE_DIR "/kata"
#define LAUNCH_CONTAINER_PREFIX "sandbox-"
/* In a warm-pool sandbox's bundle: the claiming worker's memory limit, which
 * sandboxd (root) writes and the memory guard follows (launch-guard.h). */
#define LAUNCH_POOL_LIMIT_FILE "memory-max"

/* The launcher failed before the workload could start (a la "docker run"). */
#define LAUNCH_EXIT_SETUP 125

int launch_run(const LaunchArgs *a);
int launch_cleanup(const LaunchArgs *a);
int launch_probe(const LaunchArgs *a);
int launch_probe_guest(const LaunchArgs *a);

/* Whether the launcher's network and IPC namespaces are the unit's private
 * ones, not PID 1's; logs why not and returns -EHOSTDOWN. */
int launch_check_namespaces(const char *id);

/* Creates /run/sandboxd and its private subdirectories if needed. */
int launch_state_dirs(void);
