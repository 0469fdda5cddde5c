/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pipes for splice(), reused from one tunnel to the next by the event loop
 * that owns the pool: a short tunnel then costs no pipe2(), F_GETPIPE_SZ
 * and two close() per direction. A pipe comes back into the pool only if
 * the kernel says it is empty (FIONREAD), whatever its last tunnel thought:
 * no byte of one tunnel can reach another. One pool per loop, no lock. */

#include <stddef.h>

#define PIPE_POOL_MAX 32

typedef struct PipePool {
        int fds[PIPE_POOL_MAX][2];
        size_t sizes[PIPE_POOL_MAX];
        size_t n;
} PipePool;

/* A pooled pipe or a new one (non-blocking, close-on-exec, the kernel's
 * default size); its capacity in *ret_size. */
int pipe_pool_take(PipePool *pool, int fds[2], size_t *ret_size);
/* Keeps the pipe if both ends are open, it is empty and the pool has room;
 * closes it otherwise. Always leaves fds[] at -1. size: its capacity, as
 * take reported it (a caller that grew a pipe closes it instead). */
void pipe_pool_put(PipePool *pool, int fds[2], size_t size);
/* Closes every pooled pipe. */
void pipe_pool_clear(PipePool *pool);
