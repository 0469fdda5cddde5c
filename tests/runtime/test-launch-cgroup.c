/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How the launcher's cleanup finds its unit's processes and waits for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch-cgroup.h"
#include "util.h"

#define UNIT "sandbox-abc123.service"

static void parse(const char *text, const char *unified, const char *systemd) {
        _cleanup_free_ char *u = NULL, *s = NULL;

        assert_int_equal(launch_cgroup_paths_parse(text, &u, &s), 0);
        if (unified)
                assert_string_equal(u, unified);
        else
                assert_null(u);
        if (systemd)
                assert_string_equal(s, systemd);
        else
                assert_null(s);
}

static void test_paths_parse(void **state) {
        /* cgroup v2 only (a Debian 12 host) */
        parse("0::/system.slice/" UNIT "\n", "/system.slice/" UNIT, NULL);
        /* hybrid, as in the test bed; the legacy controllers are ignored */
        parse("9:name=systemd:/system.slice/" UNIT "\n8:pids:/system.slice/" UNIT "\n"
              "4:memory:/x\n0::/system.slice/" UNIT "\n",
              "/system.slice/" UNIT, "/system.slice/" UNIT);
        /* legacy only, no trailing newline, a ':' inside the path */
        parse("1:name=systemd:/a:b/" UNIT, NULL, "/a:b/" UNIT);
}

static void test_paths_parse_refuses(void **state) {
        char *u = (char *) 1, *s = (char *) 1;

        assert_int_equal(launch_cgroup_paths_parse("", &u, &s), -EINVAL);
        assert_int_equal(launch_cgroup_paths_parse("4:memory:/x\n3:cpu:/y\n", &u, &s), -EINVAL);
        assert_int_equal(launch_cgroup_paths_parse("garbage\n0:/no-controllers-field\n", &u, &s), -EINVAL);
        /* nothing was handed out on failure */
        assert_ptr_equal(u, (char *) 1);
        assert_ptr_equal(s, (char *) 1);
}

static void test_is_unit(void **state) {
        assert_true(launch_cgroup_is_unit("/system.slice/" UNIT, UNIT));
        assert_true(launch_cgroup_is_unit("/sandbox.slice/" UNIT, UNIT));
        assert_false(launch_cgroup_is_unit("/system.slice/sandbox-abc123-cleanup.service", UNIT));
        assert_false(launch_cgroup_is_unit("/user.slice/user-0.slice/session-1.scope", UNIT));
        assert_false(launch_cgroup_is_unit("/system.slice/x" UNIT, UNIT));
        assert_false(launch_cgroup_is_unit(UNIT, UNIT));
}

/* Outside a sandbox-*.service (here, the test's own cgroup) there is nothing
 * to wait for, and above all nothing to kill. */
static void test_own_procs_outside_the_unit(void **state) {
        char buf[4096];

        assert_int_not_equal(launch_cgroup_own_procs(UNIT, buf, sizeof(buf)), 0);
}

/* The cgroup.procs of a cgroup holding the waiting process and maybe another. */
static void write_procs(const char *path, pid_t waiter, pid_t other) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fprintf(f, "%d\n", (int) waiter);
        if (other > 0)
                fprintf(f, "%d\n", (int) other);
        assert_int_equal(fclose(f), 0);
}

/* A temporary file standing in for a cgroup.procs; path is a mkstemp template. */
static void make_procs_file(char *path) {
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        close(fd);
}

static void test_wait_alone_returns_at_once_when_alone(void **state) {
        char path[] = "/tmp/test-launch-cgroup-XXXXXX";

        make_procs_file(path);
        write_procs(path, getpid(), 0);
        assert_int_equal(launch_cgroup_wait_alone(path, 5 * USEC_PER_SEC), 0);
        unlink(path);
        /* a cgroup already removed is empty too */
        assert_int_equal(launch_cgroup_wait_alone(path, 5 * USEC_PER_SEC), 0);
}

/* Forks a child running child_main, and lists it with this process in a
 * fresh stand-in for cgroup.procs at path before the child starts. */
static pid_t fork_listed(char *path, void (*child_main)(const char *path)) {
        int ready[2];
        pid_t other;
        char c;

        make_procs_file(path);
        assert_int_equal(pipe(ready), 0);
        other = fork();
        assert_true(other >= 0);
        if (other == 0) {
                close(ready[1]);
                if (read(ready[0], &c, 1) != 1)
                        _exit(1);
                child_main(path);
                _exit(0);
        }
        close(ready[0]);
        write_procs(path, getpid(), other);
        assert_int_equal(write(ready[1], "x", 1), 1);
        close(ready[1]);
        return other;
}

/* "Exits" from the cgroup's list after 100 ms. */
static void leave_the_list(const char *path) {
        usleep(100 * 1000);
        write_procs(path, getppid(), 0);
}

static void ignore_sigterm_forever(const char *path) {
        signal(SIGTERM, SIG_IGN);
        for (;;)
                pause();
}

/* Reaps pid within 10 s; a child still there is killed and reported as
 * status -1, so a wait that forgot to kill fails instead of hanging. */
static int reap_within_10s(pid_t pid) {
        int status;

        for (int i = 0; i < 1000; i++) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid)
                        return status;
                assert_int_equal(r, 0);
                usleep(10 * 1000);
        }
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, &status, 0);
        return -1;
}

static void test_wait_alone_waits_for_an_ending_process(void **state) {
        char path[] = "/tmp/test-launch-cgroup-XXXXXX";
        pid_t other = fork_listed(path, leave_the_list);
        int status;

        /* The grace is long enough that even a descheduled child leaves in time. */
        assert_int_equal(launch_cgroup_wait_alone(path, 30 * USEC_PER_SEC), 0);
        status = reap_within_10s(other);
        assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        unlink(path);
}

static void test_wait_alone_kills_what_ignores_sigterm(void **state) {
        char path[] = "/tmp/test-launch-cgroup-XXXXXX";
        pid_t other = fork_listed(path, ignore_sigterm_forever);
        int status;

        /* The list never shrinks (a file, not a cgroup): after the grace the
         * process gets SIGKILL, a grace after the kill the wait gives up. A
         * short grace also checks that a wait which overran both graces
         * (a loaded host) still kills before it gives up. */
        assert_int_equal(launch_cgroup_wait_alone(path, 50 * USEC_PER_MSEC), -ETIMEDOUT);
        status = reap_within_10s(other);
        assert_true(status != -1 && WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);
        unlink(path);
}

/* A wait that finds itself past both graces at its first look (a launcher
 * descheduled that long) must still kill before it gives up. */
static void test_wait_alone_kills_before_giving_up(void **state) {
        char path[] = "/tmp/test-launch-cgroup-XXXXXX";
        pid_t other = fork_listed(path, ignore_sigterm_forever);
        int status;

        assert_int_equal(launch_cgroup_wait_alone(path, 0), -ETIMEDOUT);
        status = reap_within_10s(other);
        assert_true(status != -1 && WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_paths_parse),
                cmocka_unit_test(test_paths_parse_refuses),
                cmocka_unit_test(test_is_unit),
                cmocka_unit_test(test_own_procs_outside_the_unit),
                cmocka_unit_test(test_wait_alone_returns_at_once_when_alone),
                cmocka_unit_test(test_wait_alone_waits_for_an_ending_process),
                cmocka_unit_test(test_wait_alone_kills_what_ignores_sigterm),
                cmocka_unit_test(test_wait_alone_kills_before_giving_up),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
