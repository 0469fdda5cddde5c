/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/wait.h>

#include "launch-env.h"
#include "spawn.h"
#include "util.h"

extern char **environ;

static size_t environ_length(void) {
        size_t n = 0;
        while (environ && environ[n])
                n++;
        return n;
}

/* What a worker's spec could have put into the launcher's environment
 * before sandboxd stopped putting it there, and what systemd sets. */
static void set_hostile(void) {
        assert_int_equal(setenv("LD_DEBUG", "libs", 1), 0);
        assert_int_equal(setenv("LD_DEBUG_OUTPUT", "/var/tmp/x", 1), 0);
        assert_int_equal(setenv("GLIBC_TUNABLES", "glibc.malloc.check=3", 1), 0);
        assert_int_equal(setenv("TMPDIR", "/home/evil", 1), 0);
        assert_int_equal(setenv("GODEBUG", "x=1", 1), 0);
        assert_int_equal(setenv("CREDENTIALS_DIRECTORY", "/home/evil/creds", 1), 0);
        assert_int_equal(setenv("PATH", "/home/evil/bin:/usr/bin", 1), 0);
}

static void test_reset_keeps_only_fixed(void **state) {
        set_hostile();
        assert_int_equal(setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef", 1), 0);
        assert_int_equal(setenv("JOURNAL_STREAM", "8:12345", 1), 0);
        assert_int_equal(setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1), 0);
        assert_int_equal(launch_env_reset(), 0);
        assert_int_equal(environ_length(), 4);
        assert_string_equal(getenv("PATH"), LAUNCH_FIXED_PATH);
        assert_string_equal(getenv("INVOCATION_ID"), "0123456789abcdef0123456789abcdef");
        assert_string_equal(getenv("JOURNAL_STREAM"), "8:12345");
        /* A restore's READY=1 goes there (launch-guard.c). */
        assert_string_equal(getenv("NOTIFY_SOCKET"), "/run/systemd/notify");
        assert_null(getenv("LD_DEBUG"));
        assert_null(getenv("CREDENTIALS_DIRECTORY"));
}

static void test_reset_drops_malformed(void **state) {
        set_hostile();
        assert_int_equal(setenv("INVOCATION_ID", "not-an-id", 1), 0);
        assert_int_equal(setenv("JOURNAL_STREAM", "8:1\nLD_DEBUG=all", 1), 0);
        assert_int_equal(setenv("NOTIFY_SOCKET", "relative/notify", 1), 0);
        assert_int_equal(launch_env_reset(), 0);
        assert_int_equal(environ_length(), 1);
        assert_string_equal(getenv("PATH"), LAUNCH_FIXED_PATH);

        assert_int_equal(setenv("NOTIFY_SOCKET", "/run/notify\nLD_DEBUG=all", 1), 0);
        assert_int_equal(launch_env_reset(), 0);
        assert_null(getenv("NOTIFY_SOCKET"));
}

/* The runtimes (and every other program the launcher runs) get PATH only,
 * whatever the launcher's own environment holds. */
static void test_spawned_programs_get_fixed_environment(void **state) {
        char out[4096] = "";
        int status;

        set_hostile();
        assert_int_equal(setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1), 0);
        char *argv[] = { (char *) "/usr/bin/env", NULL };
        assert_int_equal(spawn_capture(argv, 10 * USEC_PER_SEC, out, sizeof(out), &status), 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_string_equal(out, "PATH=" LAUNCH_FIXED_PATH "\n");
        assert_string_equal(launch_runtime_environment[0], "PATH=" LAUNCH_FIXED_PATH);
        assert_null(launch_runtime_environment[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reset_keeps_only_fixed),
                cmocka_unit_test(test_reset_drops_malformed),
                cmocka_unit_test(test_spawned_programs_get_fixed_environment),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
