/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "fd-copy.h"
#include "util.h"

#define SPLICE_CHUNK (1U << 20)
/* How much a durable copy writes before it starts that much's writeback. */
#define WRITEBACK_STEP (UINT64_C(8) << 20)

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

/* Starts the writeback of each step as it is written, so the device works
 * while the copy goes on and the fsync at the end finds little left. Only
 * started, never waited for: gVisor makes a wait a whole fsync (and does
 * nothing for a start). Failures are not ours to report: a file system
 * without it has nothing to flush, and a writeback error stays for the
 * fsync. */
static void writeback(int out, uint64_t *flushed, uint64_t moved) {
        while (moved - *flushed >= WRITEBACK_STEP) {
                (void) sync_file_range(out, (off64_t) *flushed, WRITEBACK_STEP, SYNC_FILE_RANGE_WRITE);
                *flushed += WRITEBACK_STEP;
        }
}

static int copy_all(int in, int out, bool durable, uint64_t *moved) {
        uint64_t flushed = 0;
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
                        /* As much as a transfer's pipe holds: gVisor (whose
                         * splice takes no host pipe) pays a sentry trip to
                         * the host per read and per write. */
                        if (!buf && !(buf = malloc(SPLICE_CHUNK))) {
                                r = -ENOMEM;
                                break;
                        }
                        n = read(in, buf, SPLICE_CHUNK);
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
                if (durable)
                        writeback(out, &flushed, *moved);
        }
        free(buf);
        return r;
}

int fd_copy_all(int in, int out, uint64_t *moved) {
        return copy_all(in, out, false, moved);
}

int fd_copy_all_durable(int in, int out, uint64_t *moved) {
        return copy_all(in, out, true, moved);
}
