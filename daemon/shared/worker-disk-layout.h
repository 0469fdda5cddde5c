/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a worker's disk (daemon/worker/worker-disk.h) lives, shared by
 * sandboxd, sandbox-disk and the launcher:
 *   SBX_DISK_ROOT/<id>/image         the sparse ext4 image, sized to the cap
 *   SBX_DISK_MOUNT_ROOT/<id>         where it is mounted (loop), 0700
 *   SBX_DISK_MOUNT_ROOT/<id>/home    the worker's home
 *   SBX_DISK_MOUNT_ROOT/<id>/tmp     a shared-kernel worker's /tmp
 * The mounts stay out of /var/lib/private and /run: systemd mounts a tmpfs
 * over /var/lib/private in every DynamicUser unit's namespace (over /run in a
 * trusted worker's) and first unmounts what is below it, one mount at a time,
 * reading the whole mount table again after each (umount_recursive()). Each
 * worker's mounts there made every later unit's start slower by all of them:
 * 29 ms of a gVisor unit's set-up with no other disk, 114 ms beside 30, 328 ms
 * beside 60. The mount root is 0700 root: a trusted worker, which shares the
 * host's file system view read-only, cannot walk into a sibling's home or /tmp. */
#define SBX_DISK_ROOT "/var/lib/private/sandboxd/disks"
#define SBX_DISK_MOUNT_ROOT "/var/lib/sandboxd/disks"
#define SBX_DISK_HOME "home"
#define SBX_DISK_TMP "tmp"
