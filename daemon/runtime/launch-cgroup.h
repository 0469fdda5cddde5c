/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The worker unit's own processes, seen from its ExecStopPost= cleanup.
 * systemd runs ExecStopPost= once the main process has exited; it waits for
 * the rest of the unit's processes first only where it can trust cgroup-empty
 * events (a unified hierarchy, or a legacy one outside a container). Inside a
 * container on a legacy hierarchy, as in the test bed, runsc's sandbox and
 * gofer may still be dying, holding the container's state, when the cleanup
 * starts. The cleanup waits for them. */

#include <stdbool.h>
#include <stdint.h>

/* From the text of /proc/self/cgroup: the path in the unified hierarchy
 * ("0::PATH") and in the legacy name=systemd one, each NULL when absent. The
 * caller frees both. Returns 0, or -EINVAL when the text has neither. */
int launch_cgroup_paths_parse(const char *text, char **ret_unified, char **ret_systemd);

/* Whether the cgroup PATH is the unit's own: its last component is unit. */
bool launch_cgroup_is_unit(const char *path, const char *unit);

/* The cgroup.procs file of this process's cgroup, if that cgroup is unit's;
 * -ENOENT when it is not (a shell, another unit): nothing there is ours. */
int launch_cgroup_own_procs(const char *unit, char *buf, size_t size);

/* Waits until procs_path lists no process but this one. What is still there
 * after grace_usec (systemd has already sent SIGTERM) is sent SIGKILL; a
 * grace_usec after the kill it gives up with -ETIMEDOUT. Returns the number of
 * processes it had to kill. */
int launch_cgroup_wait_alone(const char *procs_path, uint64_t grace_usec);
