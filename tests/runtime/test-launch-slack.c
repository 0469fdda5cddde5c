/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* launch_slack_apply() on a real process tree: a child with threads and a
 * grandchild with threads, as runsc run, its sentry and the sentry's stubs
 * are. Setting another process's slack needs CAP_SYS_NICE: as another user
 * the tests are skipped. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "launch-slack.h"
#include "util.h"

#define SLACK_NS UINT64_C(20000000)
#define THREADS 3

static void *park(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* A thread that, once told through PIPE, clones one more thread: a thread
 * born from one set after the walk looked at its parent's list. */
static int spawn_pipe[2];
static void *late_parent(void *arg) {
        pthread_t t;
        char c;

        (void) arg;
        if (read(spawn_pipe[0], &c, 1) == 1)
                (void) pthread_create(&t, NULL, park, NULL);
        return park(NULL);
}

/* Threads, then READY written on fd and parked for good. */
static _Noreturn void threaded(int ready_fd, bool late) {
        pthread_t t;

        for (int i = 0; i < THREADS; i++)
                if (pthread_create(&t, NULL, park, NULL) != 0)
                        _exit(1);
        if (late && pthread_create(&t, NULL, late_parent, NULL) != 0)
                _exit(1);
        if (write(ready_fd, "x", 1) != 1)
                _exit(1);
        park(NULL);
        _exit(0);
}

static uint64_t slack_of(pid_t tid) {
        char path[64], buf[32] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/timerslack_ns", tid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        return strtoull(buf, NULL, 10);
}

/* Every thread of PID has SLACK; returns how many it has. */
static int all_threads_have(pid_t pid, uint64_t slack) {
        char path[64];
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        DIR *d = opendir(path);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                assert_int_equal(slack_of(atoi(de->d_name)), slack);
                n++;
        }
        closedir(d);
        return n;
}

static bool can_set_others(void) {
        return geteuid() == 0;
}

static void kill_wait(pid_t pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

static void test_tree_gets_the_slack(void **state) {
        int ready[2];
        char c;
        pid_t child, grandchild, bystander;

        (void) state;
        if (!can_set_others() || !launch_slack_deferrable())
                skip();
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(spawn_pipe), 0);
        /* The control: a process outside the tree keeps the kernel's slack. */
        bystander = fork();
        assert_true(bystander >= 0);
        if (bystander == 0)
                threaded(ready[1], false);
        assert_int_equal(read(ready[0], &c, 1), 1);

        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                /* The grandchild's pid goes up the same pipe, after its "x". */
                pid_t g = fork();
                if (g == 0)
                        threaded(ready[1], true);
                if (g < 0 || write(ready[1], &g, sizeof(g)) != sizeof(g))
                        _exit(1);
                threaded(ready[1], false);
        }
        /* Two "x" (the child's and the grandchild's) and the grandchild's pid,
         * in whatever order. */
        uint8_t got[2 + sizeof(pid_t)];
        size_t have = 0;
        grandchild = 0;
        while (have < sizeof(got)) {
                ssize_t n = read(ready[0], got + have, sizeof(got) - have);
                assert_true(n > 0);
                have += (size_t) n;
        }
        /* The pid was written in one piece before or after the markers. */
        if (got[0] == 'x' && got[1] == 'x')
                memcpy(&grandchild, got + 2, sizeof(pid_t));
        else if (got[0] == 'x')
                memcpy(&grandchild, got + 1, sizeof(pid_t));
        else
                memcpy(&grandchild, got, sizeof(pid_t));
        assert_true(grandchild > 0);

        uint64_t before = slack_of(bystander);
        assert_true(before != SLACK_NS);
        assert_int_equal(all_threads_have(child, before), THREADS + 1);

        int set = launch_slack_apply(child, SLACK_NS);
        /* child: 1 + THREADS; grandchild: 1 + THREADS + the late parent. */
        assert_int_equal(set, 2 * (THREADS + 1) + 1);
        assert_int_equal(all_threads_have(child, SLACK_NS), THREADS + 1);
        assert_int_equal(all_threads_have(grandchild, SLACK_NS), THREADS + 2);
        /* A thread cloned afterwards inherits it from its creator. */
        assert_int_equal(write(spawn_pipe[1], "x", 1), 1);
        for (int i = 0; i < 200 && all_threads_have(grandchild, SLACK_NS) < THREADS + 3; i++)
                usleep(10000);
        assert_int_equal(all_threads_have(grandchild, SLACK_NS), THREADS + 3);
        /* Applied again, nothing is left to set. */
        assert_int_equal(launch_slack_apply(child, SLACK_NS), 0);
        /* The control is untouched, and so is this process. */
        assert_int_equal(all_threads_have(bystander, before), THREADS + 1);
        assert_int_equal(slack_of(getpid()), before);

        kill_wait(child);
        kill_wait(grandchild);
        kill_wait(bystander);
        close(ready[0]);
        close(ready[1]);
        close(spawn_pipe[0]);
        close(spawn_pipe[1]);
}

static void test_gone_root_is_esrch(void **state) {
        pid_t child;

        (void) state;
        if (!can_set_others())
                skip();
        child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, NULL, 0), child);
        assert_int_equal(launch_slack_apply(child, SLACK_NS), -ESRCH);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tree_gets_the_slack),
                cmocka_unit_test(test_gone_root_is_esrch),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
