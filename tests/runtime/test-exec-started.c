/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exec_started_wait(): how sandbox-launch tells a `runsc exec` that ran its
 * process from one that failed to start it. The fake runsc is a child that
 * blocks on a pipe and exits when it is closed; the fake pid file is a
 * reader whose answers the tests script. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-started.h"
#include "util.h"

typedef struct {
        pid_t runsc;
        int release;            /* the write end the child waits on; -1 once closed */
        unsigned reads;
        unsigned pid_from_read; /* the read (1-based) from which the file holds a pid; 0: never */
        unsigned end_at_read;   /* the read at which runsc (the child) ends; 0: never */
} FakeRunsc;

static void fake_start(FakeRunsc *f, int exit_status) {
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        f->runsc = fork();
        assert_true(f->runsc >= 0);
        if (f->runsc == 0) {
                char c;
                close(p[1]);
                (void) !read(p[0], &c, 1);
                _exit(exit_status);
        }
        close(p[0]);
        f->release = p[1];
}

/* Ends runsc and waits until it is a zombie, still unreaped. */
static void fake_end(FakeRunsc *f) {
        siginfo_t si;

        if (f->release < 0)
                return;
        close(f->release);
        f->release = -1;
        assert_int_equal(waitid(P_PID, f->runsc, &si, WEXITED | WNOWAIT), 0);
}

static pid_t fake_read(void *userdata) {
        FakeRunsc *f = userdata;
        pid_t r;

        f->reads++;
        r = f->pid_from_read && f->reads >= f->pid_from_read ? 4242 : 0;
        if (f->end_at_read && f->reads == f->end_at_read) {
                /* The race: between this read and the next look at runsc the
                 * process runs and ends, runsc wrote its pid and exits. */
                fake_end(f);
                f->pid_from_read = f->reads + 1;
        }
        return r;
}

static void fake_cleanup(FakeRunsc *f) {
        if (f->release >= 0)
                close(f->release);
        (void) kill(f->runsc, SIGKILL);
        (void) waitpid(f->runsc, NULL, 0);
}

/* The bug this file exists for: the process ran and ended, and runsc with
 * it, right after a read found no pid. Taking that for a failed start would
 * run the command again. */
static void test_quick_process_between_looks(void **state) {
        (void) state;
        FakeRunsc f = { .end_at_read = 1 };
        int status = -1;
        bool reaped = false;

        fake_start(&f, 7);
        assert_int_equal(exec_started_wait(f.runsc, fake_read, &f, 10 * USEC_PER_SEC, &status, &reaped), 4242);
        assert_true(reaped);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 7);
}

/* The control: runsc that ends without ever writing a pid (no container
 * yet, a bad command) is a failed start, with runsc's status. */
static void test_runsc_failed(void **state) {
        (void) state;
        FakeRunsc f = {};
        int status = -1;
        bool reaped = false;

        fake_start(&f, 1);
        fake_end(&f);
        assert_int_equal(exec_started_wait(f.runsc, fake_read, &f, 10 * USEC_PER_SEC, &status, &reaped), 0);
        assert_true(reaped);
        assert_int_equal(WEXITSTATUS(status), 1);
}

/* A process that runs on: its pid, runsc still running and unreaped. */
static void test_running(void **state) {
        (void) state;
        FakeRunsc f = { .pid_from_read = 3 };
        int status = -1;
        bool reaped = true;

        fake_start(&f, 0);
        assert_int_equal(exec_started_wait(f.runsc, fake_read, &f, 10 * USEC_PER_SEC, &status, &reaped), 4242);
        assert_false(reaped);
        assert_int_equal(f.reads, 3u);
        assert_int_equal(waitpid(f.runsc, NULL, WNOHANG), 0);
        fake_cleanup(&f);
}

/* runsc that neither says nor ends: 0 at the deadline, runsc left running
 * for the caller to kill. */
static void test_timeout(void **state) {
        (void) state;
        FakeRunsc f = {};
        int status = -1;
        bool reaped = true;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);

        fake_start(&f, 0);
        assert_int_equal(exec_started_wait(f.runsc, fake_read, &f, 50 * USEC_PER_MSEC, &status, &reaped), 0);
        assert_false(reaped);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 50 * USEC_PER_MSEC);
        fake_cleanup(&f);
}

static void test_read_pid_file(void **state) {
        (void) state;
        char path[] = "/tmp/test-exec-started-XXXXXX";
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        assert_int_equal(exec_started_read_pid_file(path), 0); /* empty: runsc has not written it yet */
        assert_int_equal(write(fd, "123\n", 4), 4);
        assert_int_equal(exec_started_read_pid_file(path), 123);
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(pwrite(fd, "-5", 2, 0), 2);
        assert_int_equal(exec_started_read_pid_file(path), 0);
        close(fd);
        unlink(path);
        assert_int_equal(exec_started_read_pid_file(path), 0); /* gone */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quick_process_between_looks),
                cmocka_unit_test(test_runsc_failed),
                cmocka_unit_test(test_running),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_read_pid_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
