/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "files-resolve.h"
#include "util.h"

/* The length of PREFIX when PATH is PREFIX itself or below it, else 0. */
static size_t below(const char *path, const char *prefix) {
        size_t n;

        if (!prefix)
                return 0;
        n = strlen(prefix);
        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (strncmp(path, prefix, n) != 0 || (path[n] != 0 && path[n] != '/'))
                return 0;
        return n;
}

int files_path_relative(const char *root_path, const char *alias, const char *path, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        if (strlen(path) >= PATH_MAX)
                return -EINVAL;
        if (path[0] == '/') {
                /* As the worker sees it: the home itself or below it. */
                size_t skip = below(path, root_path) ?: below(path, alias);
                if (skip == 0)
                        return -EXDEV;
                path += skip;
        }
        out = malloc(strlen(path) + 1);
        if (!out)
                return -ENOMEM;
        for (const char *p = path; *p; ) {
                size_t len = strcspn(p, "/");
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return -EXDEV;
                if (len > 0 && !(len == 1 && p[0] == '.')) {
                        if (len > NAME_MAX)
                                return -EINVAL;
                        if (n > 0)
                                out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                p += len;
                p += strspn(p, "/");
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static int resolve_openat2(int rootfd, const char *dir, int *ret) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int) syscall(SYS_openat2, rootfd, *dir ? dir : ".", &how, sizeof(how));

        if (fd < 0)
                return -errno;
        *ret = fd;
        return 0;
}

static int resolve_walk(int rootfd, char *dir, int *ret) {
        _cleanup_close_ int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);

        if (fd < 0)
                return -errno;
        for (char *p = dir, *slash; p && *p; p = slash ? slash + 1 : NULL) {
                slash = strchr(p, '/');
                if (slash)
                        *slash = 0;
                int next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int err = errno;
                if (next < 0 && err == ENOTDIR) {
                        /* O_PATH|O_NOFOLLOW|O_DIRECTORY on a symlink is
                         * ENOTDIR; openat2 says ELOOP, and so do we. */
                        struct stat st;
                        if (fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                                err = ELOOP;
                }
                if (slash)
                        *slash = '/';
                if (next < 0)
                        return -err;
                safe_close(fd);
                fd = next;
        }
        *ret = TAKE_FD(fd);
        return 0;
}

int files_resolve_parent(FilesRoot *root, char *rel, int *ret_dirfd, const char **ret_name) {
        char *slash = strrchr(rel, '/');
        const char *name = NULL;
        int r;

        if (*rel == 0) {
                /* The home itself: its own fd, no last component. */
                int fd = fcntl(root->fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
                *ret_dirfd = fd;
                *ret_name = NULL;
                return 0;
        }
        if (slash) {
                *slash = 0;
                name = slash + 1;
        } else
                name = rel;
        const char *dir = slash ? rel : "";
        r = -ENOSYS;
        if (root->how != RESOLVE_HOW_WALK)
                r = resolve_openat2(root->fd, dir, ret_dirfd);
        /* ENOSYS: no openat2 (gVisor 20240729); EPERM: a seccomp filter
         * that predates it (openat2 itself never says EPERM). */
        if ((r == -ENOSYS || r == -EPERM) && root->how == RESOLVE_HOW_AUTO) {
                root->how = RESOLVE_HOW_WALK;
                r = resolve_walk(root->fd, (char *) dir, ret_dirfd);
        } else if (root->how == RESOLVE_HOW_WALK)
                r = resolve_walk(root->fd, (char *) dir, ret_dirfd);
        if (slash)
                *slash = '/';
        if (r < 0)
                return r;
        *ret_name = name;
        return 0;
}
