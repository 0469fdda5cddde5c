/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Forks the worker's exec supervisor (exec-proto.h) on LISTEN_FD, the
 * channel systemd passed, and closes LISTEN_FD in the caller. The
 * supervisor is a grandchild: once this returns 0 it runs, and the caller,
 * the unit's main process, has no child left (its execve() of the workload
 * leaves nothing for the workload to wait for). A negative errno when it
 * could not be started. */
int exec_supervisor_start(int listen_fd);
