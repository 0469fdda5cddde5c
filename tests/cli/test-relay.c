/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The terminal <-> channel relay against a socketpair standing in for the
 * daemon's channel: bytes both ways, EOF propagated both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "sandboxctl-relay.h"
#include "util.h"

/* Bigger than every buffer on the way (relay, socket, pipe), so partial
 * writes and back-pressure happen. */
#define PAYLOAD_SIZE (1024 * 1024 + 123)

static uint8_t pattern_byte(size_t i) {
        return (uint8_t) ((i * 7 + i / 251) & 0xff);
}

static int temp_file_with_payload(void) {
        char path[] = "/tmp/test-sandboxctl-relay-XXXXXX";
        _cleanup_free_ uint8_t *buf = malloc(PAYLOAD_SIZE);
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        unlink(path);
        assert_non_null(buf);
        for (size_t i = 0; i < PAYLOAD_SIZE; i++)
                buf[i] = pattern_byte(i);
        assert_int_equal(write(fd, buf, PAYLOAD_SIZE), PAYLOAD_SIZE);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

static int temp_file_empty(void) {
        char path[] = "/tmp/test-sandboxctl-relay-out-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        unlink(path);
        return fd;
}

/* The fake worker: reads its stdin to EOF (which only arrives if the relay
 * half-closed the channel), then answers with every byte inverted and closes. */
static _Noreturn void worker_invert_after_eof(int fd) {
        uint8_t *data = malloc(2 * PAYLOAD_SIZE);
        size_t n = 0;
        ssize_t k;

        while ((k = read(fd, data + n, 2 * PAYLOAD_SIZE - n)) > 0)
                n += (size_t) k;
        if (k < 0)
                _exit(10);
        for (size_t i = 0; i < n; i++)
                data[i] ^= 0xff;
        for (size_t off = 0; off < n; off += (size_t) k) {
                k = write(fd, data + off, n - off);
                if (k <= 0)
                        _exit(11);
        }
        _exit(n == PAYLOAD_SIZE ? 0 : 12);
}

static void test_bytes_and_eof_both_ways(void **state) {
        _cleanup_free_ Relay *relay = malloc(sizeof(Relay));
        _cleanup_free_ uint8_t *out = malloc(PAYLOAD_SIZE + 1);
        int sv[2], in_fd, out_fd, status;
        pid_t pid;

        assert_non_null(relay);
        assert_non_null(out);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(sv[0]);
                worker_invert_after_eof(sv[1]);
        }
        close(sv[1]);

        /* Regular files on both ends: poll() must work where epoll would not. */
        in_fd = temp_file_with_payload();
        out_fd = temp_file_empty();
        assert_int_equal(relay_init(relay, in_fd, out_fd, sv[0]), 0);
        assert_int_equal(relay_run(relay), 0);
        assert_true(relay_output_done(relay));
        assert_true(relay->in_eof);
        assert_true(relay->channel_write_closed);

        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);

        assert_int_equal(pread(out_fd, out, PAYLOAD_SIZE + 1, 0), PAYLOAD_SIZE);
        for (size_t i = 0; i < PAYLOAD_SIZE; i++)
                if ((unsigned) out[i] + pattern_byte(i) != 0xffu)
                        fail_msg("byte %zu differs", i);
        close(in_fd);
        close(out_fd);
        close(sv[0]);
}

static void test_no_input_half_closes_at_once(void **state) {
        _cleanup_free_ Relay *relay = malloc(sizeof(Relay));
        int sv[2], out_pipe[2];
        char buf[16];

        assert_non_null(relay);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(out_pipe, O_CLOEXEC), 0);

        assert_int_equal(relay_init(relay, -1, out_pipe[1], sv[0]), 0);
        /* The worker sees EOF before the relay ever ran. */
        assert_int_equal(read(sv[1], buf, sizeof(buf)), 0);

        assert_int_equal(write(sv[1], "bye\n", 4), 4);
        close(sv[1]);
        assert_int_equal(relay_run(relay), 0);
        assert_int_equal(read(out_pipe[0], buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "bye\n", 4);
        close(out_pipe[0]);
        close(out_pipe[1]);
        close(sv[0]);
}

static void test_pipes_step_by_step(void **state) {
        _cleanup_free_ Relay *relay = malloc(sizeof(Relay));
        int sv[2], in_pipe[2], out_pipe[2];
        char buf[64];

        assert_non_null(relay);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(in_pipe, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out_pipe, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(relay_init(relay, in_pipe[0], out_pipe[1], sv[0]), 0);

        /* Input and output interleave; nothing waits for EOF. */
        assert_int_equal(write(in_pipe[1], "question\n", 9), 9);
        assert_int_equal(write(sv[1], "answer\n", 7), 7);
        for (int i = 0; i < 10; i++) {
                struct pollfd pfd[RELAY_N_POLLFDS];
                relay_fill_pollfds(relay, pfd);
                assert_true(poll(pfd, RELAY_N_POLLFDS, 100) >= 0);
                assert_int_equal(relay_dispatch(relay, pfd), 0);
        }
        assert_int_equal(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), 9);
        assert_memory_equal(buf, "question\n", 9);
        assert_int_equal(read(out_pipe[0], buf, sizeof(buf)), 7);
        assert_memory_equal(buf, "answer\n", 7);
        assert_false(relay->channel_write_closed);
        assert_false(relay_output_done(relay));

        /* Closing the input passes EOF on; the channel stays open for output. */
        close(in_pipe[1]);
        for (int i = 0; i < 5 && !relay->channel_write_closed; i++) {
                struct pollfd pfd[RELAY_N_POLLFDS];
                relay_fill_pollfds(relay, pfd);
                assert_true(poll(pfd, RELAY_N_POLLFDS, 100) >= 0);
                assert_int_equal(relay_dispatch(relay, pfd), 0);
        }
        assert_true(relay->channel_write_closed);
        assert_int_equal(recv(sv[1], buf, sizeof(buf), 0), 0);
        assert_int_equal(write(sv[1], "late\n", 5), 5);
        shutdown(sv[1], SHUT_WR);
        assert_int_equal(relay_run(relay), 0);
        assert_int_equal(read(out_pipe[0], buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "late\n", 5);

        close(in_pipe[0]);
        close(out_pipe[0]);
        close(out_pipe[1]);
        close(sv[0]);
        close(sv[1]);
}

static void test_closed_output_keeps_draining(void **state) {
        _cleanup_free_ Relay *relay = malloc(sizeof(Relay));
        _cleanup_free_ uint8_t *big = calloc(1, PAYLOAD_SIZE);
        int sv[2], out_pipe[2], status;
        pid_t pid;

        assert_non_null(relay);
        assert_non_null(big);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(out_pipe, O_CLOEXEC), 0);
        close(out_pipe[0]); /* like `sandboxctl run ... | head -c0` */

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* A worker that writes a lot must not be blocked by our dead stdout. */
                close(sv[0]);
                for (size_t off = 0; off < PAYLOAD_SIZE;) {
                        ssize_t k = write(sv[1], big + off, PAYLOAD_SIZE - off);
                        if (k <= 0)
                                _exit(1);
                        off += (size_t) k;
                }
                _exit(0);
        }
        close(sv[1]);
        assert_int_equal(relay_init(relay, -1, out_pipe[1], sv[0]), 0);
        assert_int_equal(relay_run(relay), 0);
        assert_true(relay->out_broken);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        close(out_pipe[1]);
        close(sv[0]);
}

static void test_worker_gone_while_sending(void **state) {
        _cleanup_free_ Relay *relay = malloc(sizeof(Relay));
        int sv[2], in_fd, out_fd;

        assert_non_null(relay);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        close(sv[1]); /* the worker closed its end before reading anything */

        in_fd = temp_file_with_payload();
        out_fd = temp_file_empty();
        assert_int_equal(relay_init(relay, in_fd, out_fd, sv[0]), 0);
        assert_int_equal(relay_run(relay), 0);
        assert_true(relay_output_done(relay));
        close(in_fd);
        close(out_fd);
        close(sv[0]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bytes_and_eof_both_ways),
                cmocka_unit_test(test_no_input_half_closes_at_once),
                cmocka_unit_test(test_pipes_step_by_step),
                cmocka_unit_test(test_closed_output_keeps_draining),
                cmocka_unit_test(test_worker_gone_while_sending),
        };

        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
