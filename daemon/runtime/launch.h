/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The verbs of sandbox-launch. Each returns the process exit status. */

#include <sys/types.h>

#include "launch-args.h"

#define LAUNCH_STATE_DIR "/run/sandboxd"
#define LAUNCH_BUNDLES_DIR LAUNCH_STATE_DIR "/bundles"
#define LAUNCH_RUNSC_ROOT LAUNCH_STATE_DIR "/runsc"
#define LAUNCH_KATA_ROOT LAUNCH_STATE_DIR "/kata"
#define LAUNCH_CONTAINER_PREFIX "sandbox-"
/* Checkpoint images of suspended workers: root-only, persistent across a
 * restart of sandboxd (a boot wipes them with the workers they belong to). */
#define LAUNCH_SUSPEND_ROOT "/var/lib/sandboxd/suspend"
/* Written last into an image directory, with the worker's UID: a directory
 * without it holds no complete checkpoint. */
#define LAUNCH_IMAGE_MARKER "sandboxd-uid"
/* A checkpoint can fail and leave the sandbox running; the same checkpoint
 * a moment later usually succeeds. A failed attempt whose sandbox still runs
 * is tried again, up to this many attempts in all (SBX_CHECKPOINT_ATTEMPTS).
 * runsc 0.0~20240729's "encoding error: ... nil pointer dereference" (a TCP
 * handshake in flight) is not one of those: runsc kills the sandbox after a
 * failed save, which the launcher's wait for handshakes avoids
 * (launch-suspend.c). */
#define LAUNCH_CHECKPOINT_ATTEMPTS 3
/* In a warm-pool sandbox's bundle: the claiming worker's memory limit, which
 * sandboxd (root) writes and the memory guard follows (launch-guard.h). */
#define LAUNCH_POOL_LIMIT_FILE "memory-max"

/* The launcher failed before the workload could start (a la "docker run"). */
#define LAUNCH_EXIT_SETUP 125

int launch_run(const LaunchArgs *a);
int launch_cleanup(const LaunchArgs *a);
int launch_probe(const LaunchArgs *a);
int launch_probe_guest(const LaunchArgs *a);
int launch_checkpoint(const LaunchArgs *a);

/* For run --restore: the image directory of worker ID, checked to be a
 * complete checkpoint of UID's sandbox (LAUNCH_IMAGE_MARKER); logs why not. */
int launch_restore_check(const char *id, uid_t uid, char *dir, size_t dir_size);

/* "--root=..." for the runtime, into buf. */
void runtime_root_arg(const LaunchArgs *a, char *buf, size_t size);

/* Whether the launcher's network and IPC namespaces are the unit's private
 * ones, not PID 1's; logs why not and returns -EHOSTDOWN. */
int launch_check_namespaces(const char *id);

/* Creates /run/sandboxd and its private subdirectories if needed. */
int launch_state_dirs(void);
/* Creates path with mode, or accepts an existing root-owned directory
 * without any of the forbidden mode bits. */
int mkdir_checked(const char *path, mode_t mode, mode_t forbidden);
