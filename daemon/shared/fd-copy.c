/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "fd-copy.h"
#include "util.h"

#define SPLICE_CHUNK (1U << 20)

static int write_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, buf, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                buf += w;
                n -= (size_t) w;
        }
        return 0;
}

int fd_copy_all(int in, int out, uint64_t *moved) {
        bool use_splice = true;
        char *buf = NULL;
        int r = 0;

        *moved = 0;
        for (;;) {
                ssize_t n;
                if (use_splice) {
                        n = splice(in, NULL, out, NULL, SPLICE_CHUNK, SPLICE_F_MOVE);
                        /* Neither side a pipe, or a file system (gVisor's
                         * host files) without splice: the plain way, once. */
                        if (n < 0 && (errno == EINVAL || errno == ENOSYS) && *moved == 0) {
                                use_splice = false;
                                continue;
                        }
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0) {
                                r = -errno;
                                break;
                        }
                } else {
                        if (!buf && !(buf = malloc(128 * 1024))) {
                                r = -ENOMEM;
                                break;
                        }
                        n = read(in, buf, 128 * 1024);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0) {
                                r = -errno;
                                break;
                        }
                        if (n > 0) {
                                r = write_all(out, buf, (size_t) n);
                                if (r < 0)
                                        break;
                        }
                }
                if (n == 0)
                        break;
                *moved += (uint64_t) n;
        }
        free(buf);
        return r;
}
