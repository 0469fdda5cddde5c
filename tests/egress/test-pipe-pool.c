/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pipe-pool.h"

static bool fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

/* What a tunnel that takes this pipe would read first: nothing at all. */
static void assert_pipe_empty(int fds[2]) {
        char c;
        assert_int_equal(read(fds[0], &c, 1), -1);
        assert_int_equal(errno, EAGAIN);
}

static void test_new_pipe(void **state) {
        PipePool pool = {};
        int fds[2];
        size_t size = 0;

        assert_int_equal(pipe_pool_take(&pool, fds, &size), 0);
        assert_int_equal((size_t) fcntl(fds[1], F_GETPIPE_SZ), size);
        for (int i = 0; i < 2; i++) {
                assert_true(fcntl(fds[i], F_GETFL) & O_NONBLOCK);
                assert_true(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
        }
        assert_pipe_empty(fds);
        pipe_pool_put(&pool, fds, size);
        pipe_pool_clear(&pool);
}

static void test_drained_pipe_is_reused(void **state) {
        PipePool pool = {};
        int fds[2], again[2], first[2];
        size_t size, size2;
        char buf[8];

        assert_int_equal(pipe_pool_take(&pool, fds, &size), 0);
        memcpy(first, fds, sizeof(first));
        /* A tunnel moved its bytes through and drained it. */
        assert_int_equal(write(fds[1], "hello", 5), 5);
        assert_int_equal(read(fds[0], buf, sizeof(buf)), 5);
        pipe_pool_put(&pool, fds, size);
        assert_int_equal(fds[0], -1);
        assert_int_equal(fds[1], -1);
        assert_int_equal(pool.n, 1);
        assert_int_equal(pipe_pool_take(&pool, again, &size2), 0);
        assert_memory_equal(again, first, sizeof(first));
        assert_int_equal(size2, size);
        assert_int_equal(pool.n, 0);
        assert_pipe_empty(again);
        pipe_pool_put(&pool, again, size2);
        pipe_pool_clear(&pool);
        assert_false(fd_open(first[0]));
        assert_false(fd_open(first[1]));
}

/* The tunnel closed with bytes still in its pipe, and its caller put the
 * pipe back all the same (as a wrong byte count would): the pool closes
 * it, and the next tunnel's pipe holds nothing of the first one's. */
static void test_leftover_bytes_never_reach_next_tunnel(void **state) {
        static const char secret[] = "tunnel A's bytes";
        PipePool pool = {};
        int fds[2], old[2], next[2];
        size_t size;
        char buf[64];

        assert_int_equal(pipe_pool_take(&pool, fds, &size), 0);
        memcpy(old, fds, sizeof(old));
        assert_int_equal(write(fds[1], secret, sizeof(secret)), (ssize_t) sizeof(secret));
        pipe_pool_put(&pool, fds, size);
        assert_int_equal(fds[0], -1);
        assert_int_equal(pool.n, 0);
        assert_false(fd_open(old[0]));
        assert_false(fd_open(old[1]));

        assert_int_equal(pipe_pool_take(&pool, next, &size), 0);
        assert_pipe_empty(next);
        assert_int_equal(write(next[1], "B", 1), 1);
        assert_int_equal(read(next[0], buf, sizeof(buf)), 1);
        assert_int_equal(buf[0], 'B');
        pipe_pool_put(&pool, next, size);
        pipe_pool_clear(&pool);
}

/* Part read, part left: still not empty, still closed. */
static void test_partly_drained_pipe_is_closed(void **state) {
        PipePool pool = {};
        int fds[2], old[2];
        size_t size;
        char buf[4];

        assert_int_equal(pipe_pool_take(&pool, fds, &size), 0);
        memcpy(old, fds, sizeof(old));
        assert_int_equal(write(fds[1], "0123456789", 10), 10);
        assert_int_equal(read(fds[0], buf, sizeof(buf)), 4);
        pipe_pool_put(&pool, fds, size);
        assert_int_equal(pool.n, 0);
        assert_false(fd_open(old[0]));
        assert_false(fd_open(old[1]));
}

static void test_half_closed_pipe_is_closed(void **state) {
        PipePool pool = {};
        int fds[2], old;
        size_t size;

        assert_int_equal(pipe_pool_take(&pool, fds, &size), 0);
        old = fds[1];
        assert_int_equal(close(fds[0]), 0);
        fds[0] = -1;
        pipe_pool_put(&pool, fds, size);
        assert_int_equal(pool.n, 0);
        assert_int_equal(fds[1], -1);
        assert_false(fd_open(old));
}

static void test_full_pool_closes_the_rest(void **state) {
        PipePool pool = {};
        int fds[PIPE_POOL_MAX + 1][2], last[2];
        size_t size;

        for (int i = 0; i <= PIPE_POOL_MAX; i++)
                assert_int_equal(pipe_pool_take(&pool, fds[i], &size), 0);
        memcpy(last, fds[PIPE_POOL_MAX], sizeof(last));
        for (int i = 0; i <= PIPE_POOL_MAX; i++)
                pipe_pool_put(&pool, fds[i], size);
        assert_int_equal(pool.n, PIPE_POOL_MAX);
        assert_false(fd_open(last[0]));
        assert_false(fd_open(last[1]));
        pipe_pool_clear(&pool);
        assert_int_equal(pool.n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_pipe),
                cmocka_unit_test(test_drained_pipe_is_reused),
                cmocka_unit_test(test_leftover_bytes_never_reach_next_tunnel),
                cmocka_unit_test(test_partly_drained_pipe_is_closed),
                cmocka_unit_test(test_half_closed_pipe_is_closed),
                cmocka_unit_test(test_full_pool_closes_the_rest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
