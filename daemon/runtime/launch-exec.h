/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "launch-args.h"

/* Serves the worker's exec channel (exec-proto.h) on LISTEN_FD, which
 * systemd passed (-1: none, nothing to do): a child process, killed with
 * the launcher, that runs `runsc exec` into A's sandbox for each request.
 * Closes LISTEN_FD in the caller. 0 or a negative errno. */
int launch_exec_start(const LaunchArgs *a, int listen_fd);
