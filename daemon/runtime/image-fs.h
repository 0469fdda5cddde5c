/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* The file system runsc writes a checkpoint into: a sparse ext4 image of the
 * checkpoint's budget, loop-mounted in the launcher's own mount namespace.
 * runsc writes the image itself (the sentry, through descriptors runsc
 * opened), so no limit on the launcher's process would hold: a full file
 * system does, with ENOSPC. The backing file is unlinked once mounted, so
 * nothing of it outlives the mount (the namespace dies with the launcher).
 * Once written, the image is copied out to its directory and the file
 * system goes. */

/* Moves the caller into a mount namespace of its own whose mounts do not
 * propagate back to the host's. */
int image_fs_private_namespace(void);

/* Makes BACKING (a new file: -EEXIST if there is one) of SIZE bytes, sparse,
 * and formats it with MKFS_PATH as ext4 labelled LABEL: no journal, no
 * reserved blocks, its root directory root's. On failure the caller removes
 * BACKING. */
int image_fs_format(const char *mkfs_path, const char *backing, uint64_t size, const char *label);

/* Mounts the ext4 image BACKING_FD on MNT through a free loop device with
 * mount FLAGS; the loop device goes with the last unmount. */
int image_fs_loop_mount(int backing_fd, const char *mnt, unsigned long flags);

/* Mounts the ext4 image at IMAGE on MNT, as image_fs_loop_mount(), unless
 * a loop device is still bound to it: then that one, which gives the file
 * system already mounted from it (its superblock), and returns 1. An
 * earlier mount of IMAGE outlives its unmount wherever a mount namespace
 * copied it (a sandbox's, made while it was mounted); a second loop
 * device would give a second ext4 superblock over the same blocks, each
 * writing back what it holds over the other's. */
int image_fs_loop_mount_again(const char *image, const char *mnt, unsigned long flags);

/* Makes BACKING (SIZE bytes, sparse), formats it with MKFS_PATH, mounts it
 * on MNT (created, 0700) with nosuid, nodev, noexec, and unlinks BACKING.
 * On failure nothing of it is left. */
int image_fs_mount(const char *mkfs_path, const char *backing, const char *mnt, uint64_t size);

/* Unmounts MNT (lazily: a file still open goes with its last close) and
 * removes the mount point; a path that is not mounted is only removed. */
int image_fs_unmount(const char *mnt);

/* Copies every regular file of FROM into the empty directory TO, 0600;
 * -EPERM for anything else. On failure TO may hold part of it: the caller
 * removes it. */
int image_fs_copy_out(const char *from, const char *to);
