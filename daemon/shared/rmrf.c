/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "rmrf.h"
#include "util.h"

static int rm_rf_children_fd(int dfd, dev_t dev, unsigned depth);

static int rm_rf_at(int dfd, const char *name, dev_t dev, unsigned depth) {
        struct stat st;
        int fd, r;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        /* A mount point inside a worker's home is not ours to walk into. */
        if (st.st_dev != dev)
                return -EXDEV;
        if (depth > 256)
                return -ELOOP;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = rm_rf_children_fd(fd, dev, depth + 1);
        close(fd);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r >= 0)
                r = -errno;
        return r;
}

/* Takes ownership of nothing: DFD stays open for the caller. */
static int rm_rf_children_fd(int dfd, dev_t dev, unsigned depth) {
        int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        DIR *d;
        int ret = 0;

        if (dup_fd < 0)
                return -errno;
        d = fdopendir(dup_fd);
        if (!d) {
                close(dup_fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d)); ) {
                int r;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = rm_rf_at(dfd, de->d_name, dev, depth);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        closedir(d);
        return ret;
}

int rm_rf_children(const char *dir) {
        struct stat st;
        int fd, r;

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        r = rm_rf_children_fd(fd, st.st_dev, 0);
        close(fd);
        return r;
}

int rm_rf(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        struct stat st, parent;
        char *slash;
        int dfd, r;

        if (!copy)
                return -ENOMEM;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        slash = strrchr(copy, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *slash = 0;
        dfd = open(slash == copy ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        /* The parent's file system, not PATH's: a home that is still a mount
         * point (a workspace the unit failed to unmount) is left alone. */
        if (fstat(dfd, &parent) < 0) {
                r = -errno;
                close(dfd);
                return r;
        }
        r = rm_rf_at(dfd, slash + 1, parent.st_dev, 0);
        close(dfd);
        return r;
}

int rm_rf_at_fd(int dfd, const char *name) {
        struct stat parent;

        if (fstat(dfd, &parent) < 0)
                return -errno;
        return rm_rf_at(dfd, name, parent.st_dev, 0);
}
