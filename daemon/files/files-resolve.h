/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Path resolution inside a worker's home for sandbox-files: a path names a
 * place below the home and never leaves it. ".." is refused wherever it
 * stands and no symlink is followed in any component (one planted at
 * /etc/shadow or at a sibling's home would lead out; one that stays inside
 * is refused all the same, so the rule needs no knowledge of where a link
 * points). The last component is the caller's to open, with O_NOFOLLOW or
 * AT_SYMLINK_NOFOLLOW. openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
 * RESOLVE_NO_MAGICLINKS) where the kernel has it, else (gVisor before
 * 2026-09, kernels before 5.6) one openat(O_NOFOLLOW|O_DIRECTORY) per
 * component: the same answer either way. */

typedef enum ResolveHow {
        RESOLVE_HOW_AUTO,       /* openat2, the walk where it is ENOSYS (or EPERM: a seccomp filter) */
        RESOLVE_HOW_OPENAT2,
        RESOLVE_HOW_WALK,
} ResolveHow;

typedef struct FilesRoot {
        const char *path;       /* the home as the worker sees it */
        const char *alias;      /* another absolute name of it (the Home property's), or NULL */
        int fd;                 /* the home, O_PATH|O_DIRECTORY */
        ResolveHow how;
} FilesRoot;

/* PATH relative to the home (or absolute, inside ROOT_PATH or ALIAS) as
 * "a/b/c" with "." and empty components dropped; "" is the home itself.
 * -EXDEV for a ".." or an absolute path outside the home, -EINVAL for a
 * path that is too long. ALIAS may be NULL. */
int files_path_relative(const char *root_path, const char *alias, const char *path, char **ret);

/* Resolves all but the last component of the relative REL: *RET_DIRFD is
 * that directory (O_PATH), *RET_NAME points into REL at the last component,
 * NULL when REL is the home itself. -ELOOP for a symlink on the way,
 * -ENOTDIR, -ENOENT, -EACCES as the kernel says. */
int files_resolve_parent(FilesRoot *root, char *rel, int *ret_dirfd, const char **ret_name);
