/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Asking runsc about a sandbox that it is still booting or restoring.
 *
 * "runsc events" on a sandbox whose restore has not finished ends that
 * restore: runsc restore exits 128 and the worker is lost (seen with
 * 0.0~20240729 on a loaded test bed, where a restore takes seconds; a suspend
 * sent the moment its resume answered ran into it). "runsc state" only reads
 * the container's state file, and is what these ask; nothing else may ask a
 * sandbox anything before it reports "running". */

/* Whether runsc reports CONTAINER as running: 1 if it does, 0 if it reports
 * anything else (creating, created, stopped) or knows no such container, or a
 * negative errno if runsc could not be run. */
int launch_container_running(const char *runtime_path, const char *root_arg, const char *container);

/* The status runsc reports for CONTAINER ("running", "paused", "stopped",
 * ...) into buf, "" if it knows no such container: 0, or a negative errno if
 * runsc could not be run. */
int launch_container_status(const char *runtime_path, const char *root_arg, const char *container, char *buf,
                            size_t size);

/* Asks every LAUNCH_STATE_POLL_USEC until CONTAINER runs: 0 once it does,
 * -ETIMEDOUT after timeout_usec. */
#define LAUNCH_STATE_POLL_USEC (250 * USEC_PER_MSEC)
int launch_wait_container_running(const char *runtime_path, const char *root_arg, const char *container,
                                  uint64_t timeout_usec);
