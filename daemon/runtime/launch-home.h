/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

/* A gVisor or Kata worker with a disk (daemon/shared/worker-disk-layout.h):
 * its disk unit mounted the image on the host, outside the worker's home, and
 * the launcher binds the disk's home on HOME (its real path) in its own mount
 * namespace, which runsc and its gofer inherit. The host's table then holds
 * one mount per such worker, in no place systemd unmounts below when it sets
 * up a unit. The disk must be mounted at its place and its home be on it; a
 * fresh home (root's) becomes UID:GID's, one already UID's stays, any other
 * owner is refused (a kept disk is only ever resumed, under its own UID), and
 * so is a launcher in PID 1's mount namespace (-EHOSTDOWN): its bind would be
 * the host's.
 * MOUNT_ROOT is SBX_DISK_MOUNT_ROOT and HOST_PROC "1" (the /proc entry of a
 * process in the host's mount namespace) but in tests. Logs why it refuses;
 * a negative errno. */
int launch_home_disk(const char *mount_root, const char *host_proc, const char *id, uid_t uid, gid_t gid,
                     const char *home);

/* The checks and the ownership of launch_home_disk(), without the bind: for a
 * shared-kernel worker, whose unit binds the disk's home itself (BindPaths=,
 * worker-disk.h) and whose ExecStartPre=+ (sandbox-disk own) calls this once
 * systemd has the worker's dynamic UID. UID or GID 0 is refused. Returns the
 * home, open (O_DIRECTORY), its stat in *RET_ST (if not NULL) as it was
 * before the chown, or a negative errno, logged. */
int launch_home_disk_claim(const char *mount_root, const char *id, uid_t uid, gid_t gid, struct stat *ret_st);
