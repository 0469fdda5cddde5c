/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pipe-pool.h"

static void close_pair(int fds[2]) {
        for (int i = 0; i < 2; i++)
                if (fds[i] >= 0)
                        (void) close(fds[i]);
        fds[0] = fds[1] = -1;
}

int pipe_pool_take(PipePool *pool, int fds[2], size_t *ret_size) {
        assert(pool);
        assert(ret_size);
        if (pool->n > 0) {
                pool->n--;
                fds[0] = pool->fds[pool->n][0];
                fds[1] = pool->fds[pool->n][1];
                *ret_size = pool->sizes[pool->n];
                return 0;
        }
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
                fds[0] = fds[1] = -1;
                return -errno;
        }
        int size = fcntl(fds[1], F_GETPIPE_SZ);
        if (size <= 0) {
                int r = size < 0 ? -errno : -EIO;
                close_pair(fds);
                return r;
        }
        *ret_size = (size_t) size;
        return 0;
}

void pipe_pool_put(PipePool *pool, int fds[2], size_t size) {
        int queued = -1;

        assert(pool);
        if (fds[0] >= 0 && fds[1] >= 0 && pool->n < PIPE_POOL_MAX &&
            ioctl(fds[0], FIONREAD, &queued) == 0 && queued == 0) {
                pool->fds[pool->n][0] = fds[0];
                pool->fds[pool->n][1] = fds[1];
                pool->sizes[pool->n] = size;
                pool->n++;
                fds[0] = fds[1] = -1;
                return;
        }
        close_pair(fds);
}

void pipe_pool_clear(PipePool *pool) {
        assert(pool);
        while (pool->n > 0)
                close_pair(pool->fds[--pool->n]);
}
