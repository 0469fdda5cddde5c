/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "channel.h"

typedef struct Fixture {
        sd_event *event;
        Channel *channel;
        int worker_in;          /* what the worker process would hold: its stdin, */
        int worker_out;         /* stdout */
        int worker_err;         /* and stderr */
        unsigned activity;
} Fixture;

static void on_activity(Channel *c, void *userdata) {
        ((Fixture *) userdata)->activity++;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        assert_int_equal(sd_event_new(&f->event), 0);
        ChannelWorkerFds fds;
        assert_int_equal(channel_new(&f->channel, f->event, &fds, on_activity, f), 0);
        f->worker_in = fds.stdin_fd;
        f->worker_out = fds.stdout_fd;
        f->worker_err = fds.stderr_fd;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        channel_free(f->channel);
        channel_worker_fds_close(&(ChannelWorkerFds) { f->worker_in, f->worker_out, f->worker_err });
        sd_event_unref(f->event);
        free(f);
        return 0;
}

static void spin(Fixture *f) {
        for (int i = 0; i < 50; i++)
                if (sd_event_run(f->event, 1000) <= 0)
                        break;
}

static ssize_t read_some(int fd, char *buf, size_t n) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 1000) <= 0)
                return -1;
        return read(fd, buf, n);
}

static void test_both_directions(void **state) {
        Fixture *f = *state;
        char buf[64];
        int client;
        uint64_t before = channel_last_activity(f->channel);

        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_true(channel_is_attached(f->channel));
        assert_int_equal(write(client, "ping", 4), 4);
        spin(f);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "ping", 4);
        assert_int_equal(write(f->worker_out, "pong!", 5), 5);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "pong!", 5);
        assert_true(f->activity >= 2);
        assert_true(channel_last_activity(f->channel) >= before);
        assert_int_equal(channel_bytes_in(f->channel), 4);
        assert_int_equal(channel_bytes_out(f->channel), 5);
        close(client);
}

static void test_output_buffered_until_attach(void **state) {
        Fixture *f = *state;
        char buf[64];
        int client;

        assert_int_equal(write(f->worker_out, "early", 5), 5);
        spin(f);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "early", 5);
        close(client);
}

static void test_second_client_busy_then_reattach(void **state) {
        Fixture *f = *state;
        int a, b;

        assert_int_equal(channel_attach(f->channel, &a), 0);
        assert_int_equal(channel_attach(f->channel, &b), -EBUSY);
        close(a);               /* a full close is a detach, not an EOF for the worker */
        spin(f);
        assert_false(channel_is_attached(f->channel));
        assert_int_equal(channel_attach(f->channel, &b), 0);
        assert_int_equal(write(b, "x", 1), 1);
        spin(f);
        {
                char c;
                assert_int_equal(read_some(f->worker_in, &c, 1), 1);
                assert_int_equal(c, 'x');
        }
        close(b);
}

/* A client killed before it read what the worker wrote: its socket closes
 * with data unread, which reads as ECONNRESET here. That is a detach like
 * any other; the worker's stdin stays open for the next client. */
static void test_client_gone_with_output_unread(void **state) {
        Fixture *f = *state;
        int a, b;
        char c;

        assert_int_equal(channel_attach(f->channel, &a), 0);
        assert_int_equal(write(f->worker_out, "unread", 6), 6);
        spin(f);
        close(a);
        spin(f);
        assert_false(channel_is_attached(f->channel));
        assert_int_equal(channel_attach(f->channel, &b), 0);
        assert_int_equal(write(b, "y", 1), 1);
        spin(f);
        assert_int_equal(read_some(f->worker_in, &c, 1), 1);
        assert_int_equal(c, 'y');
        close(b);
}

static void test_departed_client_does_not_hold_the_channel(void **state) {
        Fixture *f = *state;
        char buf[8];
        int a, b;

        /* The first client writes and goes away; the next attaches before
         * the event loop has seen the hang-up. Nothing of a is lost. */
        assert_int_equal(channel_attach(f->channel, &a), 0);
        assert_int_equal(write(a, "last", 4), 4);
        close(a);
        assert_int_equal(channel_attach(f->channel, &b), 0);
        assert_int_equal(write(b, "!", 1), 1);
        spin(f);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "last!", 5);
        /* One still there keeps it. */
        assert_int_equal(channel_attach(f->channel, &a), -EBUSY);
        close(b);
}

static void test_eof_both_ways(void **state) {
        Fixture *f = *state;
        char buf[16];
        int client;

        assert_true(channel_has_pending_output(f->channel));   /* the worker's stdout is open */
        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_int_equal(write(client, "in", 2), 2);
        assert_int_equal(shutdown(client, SHUT_WR), 0);
        spin(f);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 2);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 0);     /* the worker sees EOF */
        assert_int_equal(write(f->worker_out, "out", 3), 3);
        assert_int_equal(close(f->worker_out), 0);
        f->worker_out = -1;
        assert_int_equal(close(f->worker_err), 0);
        f->worker_err = -1;
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 3);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 0);        /* the client sees EOF */
        spin(f);
        assert_false(channel_has_pending_output(f->channel));
        close(client);
}

static void test_ended_worker(void **state) {
        Fixture *f = *state;
        char buf[16];
        int client;

        /* The worker wrote and died, but systemd still holds the socket open:
         * its output is kept for a client, then the client gets EOF. */
        assert_int_equal(write(f->worker_out, "last", 4), 4);
        spin(f);
        channel_worker_ended(f->channel);
        assert_true(channel_has_pending_output(f->channel));
        assert_int_equal(channel_attach(f->channel, &client), 0);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 4);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 0);
        assert_false(channel_has_pending_output(f->channel));
        close(client);
}

static void test_ended_worker_without_output(void **state) {
        Fixture *f = *state;
        channel_worker_ended(f->channel);
        assert_false(channel_has_pending_output(f->channel));
}

static void test_backpressure(void **state) {
        Fixture *f = *state;
        static char chunk[65536];
        size_t written = 0, got = 0;
        int client;
        char buf[65536];

        assert_int_equal(fd_nonblock(f->worker_out, true), 0);
        /* With nobody attached the daemon buffers up to its cap, then stops
         * reading, so the worker's writes block rather than memory growing. */
        for (int i = 0; i < 64; i++) {
                ssize_t n = write(f->worker_out, chunk, sizeof(chunk));
                if (n > 0)
                        written += (size_t) n;
                spin(f);
        }
        assert_true(written >= CHANNEL_OUT_BUFFER);
        assert_true(written < 64 * sizeof(chunk));
        assert_int_equal(channel_bytes_out(f->channel), CHANNEL_OUT_BUFFER);
        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_int_equal(fd_nonblock(client, true), 0);
        for (int i = 0; i < 400 && got < written; i++) {
                ssize_t n;
                spin(f);
                while ((n = read(client, buf, sizeof(buf))) > 0)
                        got += (size_t) n;
        }
        assert_int_equal(got, written);
        close(client);
}

/* The regression behind the pipe pair: gVisor copies each stdio fd's flags
 * and then sets O_NONBLOCK on the host side, so stdin and stdout must not
 * share an open file description, or one flag change reaches the other. */
static void test_worker_ends_are_separate_blocking_descriptions(void **state) {
        Fixture *f = *state;
        const int fds[] = { f->worker_in, f->worker_out, f->worker_err };
        const int modes[] = { O_RDONLY, O_WRONLY, O_WRONLY };

        for (int i = 0; i < 3; i++) {
                int flags = fcntl(fds[i], F_GETFL);
                assert_int_equal(flags & O_ACCMODE, modes[i]);
                assert_int_equal(flags & O_NONBLOCK, 0);
                assert_true(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
        }
        /* what gVisor does to each fd it imports reaches no other */
        for (int i = 0; i < 3; i++) {
                assert_int_equal(fd_nonblock(fds[i], true), 0);
                for (int j = 0; j < 3; j++)
                        if (j != i)
                                assert_int_equal(fcntl(fds[j], F_GETFL) & O_NONBLOCK, 0);
                assert_int_equal(fd_nonblock(fds[i], false), 0);
        }
}

/* stderr reaches the client like stdout, and EOF only once both are closed. */
static void test_stderr_merged_and_eof_after_both(void **state) {
        Fixture *f = *state;
        char buf[16];
        int client;

        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_int_equal(write(f->worker_err, "oops", 4), 4);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "oops", 4);
        assert_int_equal(close(f->worker_out), 0);
        f->worker_out = -1;
        spin(f);
        assert_true(channel_has_pending_output(f->channel));    /* stderr is still open */
        assert_int_equal(write(f->worker_err, "late", 4), 4);
        assert_int_equal(close(f->worker_err), 0);
        f->worker_err = -1;
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "late", 4);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 0);
        assert_false(channel_has_pending_output(f->channel));
        close(client);
}

/* A worker that stops reading costs the client its unread input, never the
 * channel: its output still flows. */
static void test_worker_closed_stdin(void **state) {
        Fixture *f = *state;
        char buf[16];
        int client;

        assert_int_equal(channel_attach(f->channel, &client), 0);
        assert_int_equal(close(f->worker_in), 0);
        f->worker_in = -1;
        assert_int_equal(write(client, "lost", 4), 4);
        spin(f);
        assert_int_equal(write(f->worker_out, "still", 5), 5);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "still", 5);
        assert_true(channel_is_attached(f->channel));
        close(client);
}

static void on_stdin_closed(Channel *c, void *userdata) {
        ((Fixture *) userdata)->activity += 1000;
}

/* A channel rebuilt from the daemon's ends after a restart: what the worker
 * wrote meanwhile reaches the next client, the idle clock is the one given,
 * input reaches the worker, and closing its stdin is reported once. */
static void test_new_from_fds(void **state) {
        Fixture *f = *state;
        ChannelDaemonFds daemon = channel_daemon_fds(f->channel);
        ChannelDaemonFds kept = { dup(daemon.stdin_fd), dup(daemon.stdout_fd), dup(daemon.stderr_fd) };
        Channel *c = NULL;
        char buf[64];
        int client;

        /* The old daemon goes away; its copies with it. */
        f->channel = channel_free(f->channel);
        assert_int_equal(write(f->worker_out, "while down\n", 11), 11);
        assert_int_equal(channel_new_from_fds(&c, f->event, &kept, 12345, on_activity, f), 0);
        f->channel = c;
        channel_set_stdin_closed_callback(c, on_stdin_closed);
        assert_int_equal(channel_last_activity(c), 12345);
        assert_int_equal(channel_daemon_fds(c).stdout_fd, kept.stdout_fd);

        assert_int_equal(channel_attach(c, &client), 0);
        spin(f);
        assert_int_equal(read_some(client, buf, sizeof(buf)), 11);
        assert_memory_equal(buf, "while down\n", 11);
        assert_true(channel_last_activity(c) > 12345);
        assert_int_equal(write(client, "in", 2), 2);
        spin(f);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 2);
        f->activity = 0;
        assert_int_equal(shutdown(client, SHUT_WR), 0);
        spin(f);
        assert_int_equal(f->activity / 1000, 1);
        assert_int_equal(channel_daemon_fds(c).stdin_fd, -1);
        assert_int_equal(read_some(f->worker_in, buf, sizeof(buf)), 0);
        close(client);
}

/* Without its stdout or stderr there is nothing to relay: refused, and the
 * fds stay the caller's. */
static void test_new_from_fds_refuses_missing_output(void **state) {
        Fixture *f = *state;
        ChannelDaemonFds fds = { -1, -1, dup(channel_daemon_fds(f->channel).stderr_fd) };
        Channel *c = NULL;

        assert_int_equal(channel_new_from_fds(&c, f->event, &fds, 1, NULL, NULL), -EBADF);
        assert_null(c);
        assert_int_equal(fcntl(fds.stderr_fd, F_GETFD) >= 0, 1);
        close(fds.stderr_fd);
}

int main(void) {
        /* as the daemon does: a closed stdin pipe is EPIPE, not a signal */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_worker_ends_are_separate_blocking_descriptions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_worker_closed_stdin, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_from_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_from_fds_refuses_missing_output, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stderr_merged_and_eof_after_both, setup, teardown),
                cmocka_unit_test_setup_teardown(test_both_directions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_output_buffered_until_attach, setup, teardown),
                cmocka_unit_test_setup_teardown(test_second_client_busy_then_reattach, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client_gone_with_output_unread, setup, teardown),
                cmocka_unit_test_setup_teardown(test_departed_client_does_not_hold_the_channel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_eof_both_ways, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ended_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ended_worker_without_output, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
