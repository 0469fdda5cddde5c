/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The readiness token on a worker's stdout (channel.h, exec/sandbox-exec.h):
 * read aside, never relayed, whatever the reads it arrives in; anything
 * else first is a failed start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "channel.h"
#include "sandbox-exec.h"

typedef struct Fixture {
        sd_event *event;
        Channel *channel;
        ChannelWorkerFds worker;        /* what the worker process would hold */
        unsigned calls;
        int result;
} Fixture;

static void on_ready(Channel *c, int result, void *userdata) {
        Fixture *f = userdata;

        f->calls++;
        f->result = result;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(channel_new(&f->channel, f->event, &f->worker, NULL, f), 0);
        channel_expect_token(f->channel, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN, on_ready);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        channel_free(f->channel);
        channel_worker_fds_close(&f->worker);
        sd_event_unref(f->event);
        free(f);
        return 0;
}

static void spin(Fixture *f) {
        for (int i = 0; i < 50; i++)
                if (sd_event_run(f->event, 1000) <= 0)
                        break;
}

static void put(int fd, const char *bytes, size_t n) {
        assert_int_equal(write(fd, bytes, n), (ssize_t) n);
}

/* Everything the client gets until the worker's EOF, or what came in a second. */
static size_t client_read(Fixture *f, int client, char *buf, size_t size) {
        size_t got = 0;

        for (int i = 0; i < 100 && got < size; i++) {
                struct pollfd p = { .fd = client, .events = POLLIN };
                ssize_t n;

                spin(f);
                if (poll(&p, 1, 10) <= 0)
                        continue;
                n = read(client, buf + got, size - got);
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        return got;
}

static void test_token_split_over_reads(void **state) {
        Fixture *f = *state;
        const char *t = SBX_EXEC_READY_TOKEN;
        char buf[64];
        int client;

        for (size_t i = 0; i < SBX_EXEC_READY_TOKEN_LEN; i++) {
                assert_true(channel_token_pending(f->channel));
                assert_int_equal(f->calls, 0);
                put(f->worker.stdout_fd, t + i, 1);
                spin(f);
        }
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, 0);
        assert_false(channel_token_pending(f->channel));
        put(f->worker.stdout_fd, "after", 5);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        f->worker.stdout_fd = safe_close(f->worker.stdout_fd);
        f->worker.stderr_fd = safe_close(f->worker.stderr_fd);
        assert_int_equal(client_read(f, client, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "after", 5);
        /* Not counted as the worker's output: it never reached a client. */
        assert_int_equal(channel_bytes_out(f->channel), 5);
        assert_int_equal(f->calls, 1);
        close(client);
}

/* The token and the workload's first bytes in one read: what follows the
 * token is relayed byte for byte, even bytes that look like the token. */
static void test_token_then_data_intact(void **state) {
        Fixture *f = *state;
        char data[] = "sandbox-exec: rea\0\xff\n";
        char out[sizeof(SBX_EXEC_READY_TOKEN) + sizeof(data)], buf[128];
        int client;

        memcpy(out, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN);
        memcpy(out + SBX_EXEC_READY_TOKEN_LEN, data, sizeof(data) - 1);
        put(f->worker.stdout_fd, out, SBX_EXEC_READY_TOKEN_LEN + sizeof(data) - 1);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, 0);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        f->worker.stdout_fd = safe_close(f->worker.stdout_fd);
        f->worker.stderr_fd = safe_close(f->worker.stderr_fd);
        assert_int_equal(client_read(f, client, buf, sizeof(buf)), sizeof(data) - 1);
        assert_memory_equal(buf, data, sizeof(data) - 1);
        close(client);
}

static void test_wrong_first_bytes(void **state) {
        Fixture *f = *state;

        put(f->worker.stdout_fd, "sandbox-", 8);
        spin(f);
        assert_int_equal(f->calls, 0);
        put(f->worker.stdout_fd, "EXEC: ready\n", 12);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, -EBADMSG);
        assert_false(channel_token_pending(f->channel));
}

/* A workload's own first byte where the token belongs is refused at once. */
static void test_wrong_first_byte(void **state) {
        Fixture *f = *state;

        put(f->worker.stdout_fd, "\0", 1);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, -EBADMSG);
}

static void test_eof_before_token(void **state) {
        Fixture *f = *state;

        put(f->worker.stdout_fd, "sandbox", 7);
        spin(f);
        assert_int_equal(f->calls, 0);
        f->worker.stdout_fd = safe_close(f->worker.stdout_fd);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, -EPIPE);
}

static void test_eof_without_any_byte(void **state) {
        Fixture *f = *state;

        f->worker.stdout_fd = safe_close(f->worker.stdout_fd);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, -EPIPE);
}

/* The worker's processes are gone but systemd's copy of the write end
 * keeps the pipe open: what is in it is all, and a short token is no token. */
static void test_gone_before_token(void **state) {
        Fixture *f = *state;

        put(f->worker.stdout_fd, "sand", 4);
        channel_read_token(f->channel, false);
        assert_int_equal(f->calls, 0);
        channel_read_token(f->channel, true);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, -EPIPE);
}

/* A quick workload: token and output in the pipe, the unit gone before the
 * loop read any of it. The token still counts, and the output is relayed. */
static void test_gone_after_token(void **state) {
        Fixture *f = *state;
        char buf[64];
        int client;

        put(f->worker.stdout_fd, SBX_EXEC_READY_TOKEN "bye\n", SBX_EXEC_READY_TOKEN_LEN + 4);
        channel_worker_ended(f->channel);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, 0);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_int_equal(client_read(f, client, buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "bye\n", 4);
        close(client);
}

/* stderr is not the readiness path: relayed while the token is awaited, and
 * a token there counts for nothing. */
static void test_stderr_relayed_meanwhile(void **state) {
        Fixture *f = *state;
        char buf[64];
        int client;

        put(f->worker.stderr_fd, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        spin(f);
        assert_int_equal(f->calls, 0);
        assert_true(channel_token_pending(f->channel));
        f->worker.stderr_fd = safe_close(f->worker.stderr_fd);
        assert_int_equal(client_read(f, client, buf, SBX_EXEC_READY_TOKEN_LEN), SBX_EXEC_READY_TOKEN_LEN);
        assert_memory_equal(buf, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN);
        close(client);
}

/* A full relay buffer (stderr's) does not hold the token up. */
static void test_token_read_with_full_buffer(void **state) {
        Fixture *f = *state;
        static char chunk[4096];

        assert_int_equal(fcntl(f->worker.stderr_fd, F_SETFL, O_NONBLOCK), 0);
        memset(chunk, 'e', sizeof(chunk));
        for (size_t sent = 0; sent < CHANNEL_OUT_BUFFER + sizeof(chunk);) {
                ssize_t n = write(f->worker.stderr_fd, chunk, sizeof(chunk));
                if (n < 0) {
                        assert_int_equal(errno, EAGAIN);
                        spin(f);
                        continue;
                }
                sent += (size_t) n;
        }
        spin(f);
        put(f->worker.stdout_fd, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN);
        spin(f);
        assert_int_equal(f->calls, 1);
        assert_int_equal(f->result, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_token_split_over_reads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_token_then_data_intact, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_first_bytes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_first_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_eof_before_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_eof_without_any_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_before_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_after_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stderr_relayed_meanwhile, setup, teardown),
                cmocka_unit_test_setup_teardown(test_token_read_with_full_buffer, setup, teardown),
        };
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
