/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command line of sandbox-launch: what it accepts and, above all, what
 * it refuses and with which message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "errors.h"
#include "launch-args.h"
#include "util.h"

#define ARGC(a) ((int) ELEMENTSOF(a) - 1)

static void test_run_full(void **state) {
        char *argv[] = { "sandbox-launch", "run", "--id", "abc123", "--runtime", "runsc",
                         "--runtime-path=/usr/bin/runsc", "--platform", "ptrace", "--network=veth", "--root-image", "/srv/img",
                         "--home", "/var/lib/sandboxd/workers/abc123", "--pids", "256", "--memory", "256M",
                         "--cpu-percent", "50", "--disk", "64M", "--tmp-size=16M", "--nofile", "2048",
                         "--timer-slack-usec=20000", "--setenv", "FOO=bar", "--setenv=LANG=C", "--", "/bin/sh", "-c", "--not-an-option", NULL };
        LaunchArgs a;
        SbxError e = {};

        assert_int_equal(launch_args_parse(ARGC(argv), argv, &a, &e), 0);
        assert_int_equal(a.verb, LAUNCH_RUN);
        assert_string_equal(a.id, "abc123");
        assert_int_equal(a.runtime, LAUNCH_RUNTIME_RUNSC);
        assert_string_equal(a.runtime_path, "/usr/bin/runsc");
        assert_string_equal(a.platform, "ptrace");
        assert_string_equal(a.network, "veth");
        assert_string_equal(a.root_image, "/srv/img");
        assert_string_equal(a.home, "/var/lib/sandboxd/workers/abc123");
        assert_int_equal(a.pids, 256);
        assert_int_equal(a.memory, UINT64_C(256) << 20);
        assert_int_equal(a.cpu_percent, 50);
        assert_int_equal(a.disk, UINT64_C(64) << 20);
        assert_int_equal(a.tmp_size, UINT64_C(16) << 20);
        assert_int_equal(a.nofile, 2048);
        assert_int_equal(a.timer_slack_usec, 20000);
        assert_int_equal(strv_length(a.setenv), 2);
        assert_string_equal(a.setenv[0], "FOO=bar");
        assert_string_equal(a.setenv[1], "LANG=C");
        /* everything after "--" is the workload's, options included */
        assert_int_equal(strv_length(a.argv), 3);
        assert_string_equal(a.argv[0], "/bin/sh");
        assert_string_equal(a.argv[2], "--not-an-option");
        launch_args_done(&a);
}

static void test_defaults(void **state) {
        char *run[] = { "sandbox-launch", "run", "--id", "w1", "--runtime-path", "/usr/bin/runsc", "--home", "/h",
                        "--pids", "8", "--memory", "67108864", "--cpu-percent", "100", "--", "/bin/true", NULL };
        char *cleanup[] = { "sandbox-launch", "cleanup", "--id", "w1", NULL };
        char *probe[] = { "sandbox-launch", "probe", "--runtime", "wasm", "--runtime-path", "/usr/bin/wasmtime", NULL };
        LaunchArgs a;
        SbxError e = {};

        assert_int_equal(launch_args_parse(ARGC(run), run, &a, &e), 0);
        assert_int_equal(a.runtime, LAUNCH_RUNTIME_RUNSC);
        assert_string_equal(a.platform, LAUNCH_DEFAULT_PLATFORM);
        assert_int_equal(a.timer_slack_usec, 0);        /* the kernel's own */
        assert_string_equal(a.network, "none");         /* no host network unless asked for */
        assert_null(a.root_image);
        assert_int_equal(a.disk, 0);
        assert_null(a.setenv);
        launch_args_done(&a);

        assert_int_equal(launch_args_parse(ARGC(cleanup), cleanup, &a, &e), 0);
        assert_int_equal(a.verb, LAUNCH_CLEANUP);
        assert_string_equal(a.runtime_path, LAUNCH_DEFAULT_RUNSC);
        launch_args_done(&a);

        assert_int_equal(launch_args_parse(ARGC(probe), probe, &a, &e), 0);
        assert_int_equal(a.verb, LAUNCH_PROBE);
        assert_int_equal(a.runtime, LAUNCH_RUNTIME_WASM);
        assert_null(a.platform);
        assert_int_equal(a.timeout_sec, LAUNCH_DEFAULT_PROBE_TIMEOUT_SEC);
        launch_args_done(&a);
}

/* Each case: the arguments after "sandbox-launch", the error name, and a
 * piece of the message that tells the caller what to fix. */
typedef struct BadCase {
        const char *args[24];
        const char *error;
        const char *message;
} BadCase;

#define RUN_OK "--id", "w1", "--runtime-path", "/usr/bin/runsc", "--home", "/h", "--pids", "8", \
               "--memory", "64M", "--cpu-percent", "50"

static const BadCase bad_cases[] = {
        { { NULL }, SBX_ERROR_INVALID_SPEC, "verb is required" },
        { { "start" }, SBX_ERROR_INVALID_SPEC, "Unknown verb 'start'" },
        { { "run", RUN_OK, "--bogus", "1", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "Unknown option '--bogus'" },
        { { "probe", "--runtime-path", "/x", "--home", "/h" }, SBX_ERROR_INVALID_SPEC, "Unknown option '--home' for 'probe'" },
        { { "run", RUN_OK, "--", }, SBX_ERROR_MISSING_ARGV, "command is missing" },
        { { "run", RUN_OK, "/bin/true" }, SBX_ERROR_INVALID_SPEC, "goes after '--'" },
        { { "run", RUN_OK, "--", "true" }, SBX_ERROR_INVALID_SPEC, "absolute path" },
        { { "run", RUN_OK, "--pids" }, SBX_ERROR_INVALID_SPEC, "--pids needs a value" },
        { { "run", "--runtime-path", "/usr/bin/runsc", "--home", "/h", "--pids", "8", "--memory", "64M",
            "--cpu-percent", "50", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--id is required" },
        { { "run", "--id", "w1", "--runtime-path", "/usr/bin/runsc", "--pids", "8", "--memory", "64M",
            "--cpu-percent", "50", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--home is required" },
        { { "run", "--id", "w1", "--runtime-path", "/usr/bin/runsc", "--home", "/h", "--memory", "64M",
            "--cpu-percent", "50", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "must be positive" },
        { { "run", RUN_OK, "--pids", "0", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "must be positive" },
        { { "run", "--id", "w1", "--home", "/h", "--pids", "8", "--memory", "64M", "--cpu-percent", "50", "--",
            "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--runtime-path is required" },
        { { "run", RUN_OK, "--id", "a/b", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--id must be" },
        { { "run", RUN_OK, "--id", "a-very-long-worker-id-0123", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--id must be" },
        { { "run", RUN_OK, "--id=", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--id needs a value" },
        { { "run", RUN_OK, "--runtime", "runc", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "runsc, kata or wasm" },
        { { "run", RUN_OK, "--runtime", "wasm", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "runsc or kata for run" },
        { { "run", RUN_OK, "--platform", "kvm", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "systrap or ptrace" },
        { { "run", RUN_OK, "--network", "sandbox", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "none or veth" },
        /* The host network (hostinet) cannot be checkpointed: no longer offered. */
        { { "run", RUN_OK, "--network", "host", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "none or veth" },
        { { "run", RUN_OK, "--runtime", "kata", "--network", "veth", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC,
          "--network is for runsc only" },
        { { "run", RUN_OK, "--runtime", "kata", "--platform", "ptrace", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC,
          "for runsc only" },
        { { "run", RUN_OK, "--timer-slack-usec", "1000001", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE,
          "--timer-slack-usec must be at most 1000000" },
        { { "run", RUN_OK, "--timer-slack-usec", "soon", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE,
          "--timer-slack-usec needs a number" },
        { { "run", RUN_OK, "--runtime", "kata", "--timer-slack-usec", "20000", "--", "/bin/true" },
          SBX_ERROR_INVALID_SPEC, "--timer-slack-usec is for runsc only" },
        { { "probe", "--runtime-path", "/usr/bin/runsc", "--timer-slack-usec", "20000" }, SBX_ERROR_INVALID_SPEC,
          "timer-slack-usec" },
        { { "run", RUN_OK, "--runtime-path", "runsc", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "absolute path" },
        { { "run", RUN_OK, "--home", "home", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--home must be an absolute" },
        { { "run", RUN_OK, "--root-image", "img", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--root-image must be" },
        { { "run", RUN_OK, "--memory", "lots", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--memory needs a number" },
        { { "run", RUN_OK, "--memory", "12X", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--memory needs a number" },
        { { "run", RUN_OK, "--memory", "-5", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--memory needs a number" },
        { { "run", RUN_OK, "--disk", "99999999999999999999", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--disk" },
        { { "run", RUN_OK, "--disk", "99999999999T", "--", "/bin/true" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--disk" },
        { { "run", RUN_OK, "--setenv", "NOEQUALS", "--", "/bin/true" }, SBX_ERROR_INVALID_ENVIRONMENT, "NAME=VALUE" },
        { { "run", RUN_OK, "--setenv", "=x", "--", "/bin/true" }, SBX_ERROR_INVALID_ENVIRONMENT, "NAME=VALUE" },
        { { "cleanup", "--id", "w1", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "takes no command" },
        { { "cleanup", "--runtime-path", "/usr/bin/runsc" }, SBX_ERROR_INVALID_SPEC, "--id is required" },
        { { "cleanup", "--id", "w1", "--runtime", "kata" }, SBX_ERROR_INVALID_SPEC, "--runtime-path is required" },
        { { "probe", "--runtime", "runsc" }, SBX_ERROR_INVALID_SPEC, "--runtime-path is required" },
        { { "probe", "--runtime-path", "/usr/bin/runsc", "--timeout", "0" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--timeout" },
        { { "probe", "--runtime-path", "/usr/bin/runsc", "--timeout", "601" }, SBX_ERROR_LIMIT_OUT_OF_RANGE, "--timeout" },
        { { "probe-guest" }, SBX_ERROR_INVALID_SPEC, "--nonce is required" },
        { { "run", RUN_OK, "--restore", "maybe", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC, "--restore must be yes or no" },
        { { "run", RUN_OK, "--runtime", "kata", "--restore=yes", "--", "/bin/true" }, SBX_ERROR_INVALID_SPEC,
          "--restore is for runsc only" },
        { { "checkpoint", "--id", "w1", "--runtime-path", "/usr/bin/runsc" }, SBX_ERROR_LIMIT_OUT_OF_RANGE,
          "--image-max is required" },
        { { "checkpoint", "--id", "w1", "--image-max", "1G", "--runtime", "kata", "--runtime-path", "/k" },
          SBX_ERROR_INVALID_SPEC, "runsc for checkpoint" },
        { { "checkpoint", "--image-max", "1G", "--runtime-path", "/usr/bin/runsc" }, SBX_ERROR_INVALID_SPEC,
          "--id is required" },
        { { "checkpoint", "--id", "../x", "--image-max", "1G", "--runtime-path", "/usr/bin/runsc" },
          SBX_ERROR_INVALID_SPEC, "--id must be" },
        { { "checkpoint", "--id", "w1", "--image-max", "1G", "--runtime-path", "/usr/bin/runsc", "--home", "/h" },
          SBX_ERROR_INVALID_SPEC, "Unknown option '--home' for 'checkpoint'" },
        { { "checkpoint", "--id", "w1", "--image-max", "1G", "--runtime-path", "/usr/bin/runsc", "--", "/bin/true" },
          SBX_ERROR_INVALID_SPEC, "takes no command" },
        { { "cleanup", "--id", "w1", "--restore=yes" }, SBX_ERROR_INVALID_SPEC, "Unknown option '--restore=yes' for 'cleanup'" },
};

static void test_checkpoint_and_restore(void **state) {
        char *ck[] = { "sandbox-launch", "checkpoint", "--id=w1", "--runtime-path=/usr/bin/runsc", "--image-max=1G", NULL };
        char *run[] = { "sandbox-launch", "run", RUN_OK, "--restore=yes", "--", "/bin/true", NULL };
        LaunchArgs a;
        SbxError e = {};

        assert_int_equal(launch_args_parse(ARGC(ck), ck, &a, &e), 0);
        assert_int_equal(a.verb, LAUNCH_CHECKPOINT);
        assert_string_equal(a.id, "w1");
        assert_int_equal(a.image_max, UINT64_C(1) << 30);
        assert_string_equal(a.platform, LAUNCH_DEFAULT_PLATFORM);
        assert_null(a.argv);
        launch_args_done(&a);

        assert_int_equal(launch_args_parse(ARGC(run), run, &a, &e), 0);
        assert_true(a.restore);
        launch_args_done(&a);
        run[ARGC(run) - 3] = (char *) "--restore=no";
        assert_int_equal(launch_args_parse(ARGC(run), run, &a, &e), 0);
        assert_false(a.restore);
        launch_args_done(&a);
}

static void test_bad_arguments(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
                char *argv[32] = { "sandbox-launch" };
                int argc = 1;
                LaunchArgs a;
                SbxError e = {};

                for (size_t j = 0; bad_cases[i].args[j]; j++)
                        argv[argc++] = (char *) bad_cases[i].args[j];
                argv[argc] = NULL;
                if (launch_args_parse(argc, argv, &a, &e) != -EINVAL)
                        fail_msg("case %zu (%s ...) was accepted", i, argv[1] ?: "");
                assert_non_null(e.name);
                if (!streq(e.name, bad_cases[i].error) || !strstr(e.message, bad_cases[i].message))
                        fail_msg("case %zu: got %s \"%s\", expected %s containing \"%s\"", i, e.name, e.message,
                                 bad_cases[i].error, bad_cases[i].message);
                /* a refused command line owns nothing */
                assert_null(a.argv);
                assert_null(a.setenv);
                assert_int_equal(a.verb, _LAUNCH_VERB_INVALID);
        }
}

static void test_ids_and_names(void **state) {
        assert_true(launch_id_valid("0123456789ab"));
        assert_true(launch_id_valid("t1"));
        assert_true(launch_id_valid("a_b-c"));
        assert_true(launch_id_valid("abcdefghijklmnopqrstuvw"));       /* 23 */
        assert_false(launch_id_valid("abcdefghijklmnopqrstuvwx"));     /* 24 */
        assert_false(launch_id_valid(""));
        assert_false(launch_id_valid(NULL));
        assert_false(launch_id_valid("a.b"));
        assert_false(launch_id_valid("a b"));
        assert_false(launch_id_valid("../x"));
        assert_int_equal(launch_verb_from_string("cleanup"), LAUNCH_CLEANUP);
        assert_int_equal(launch_verb_from_string("stop"), _LAUNCH_VERB_INVALID);
        assert_int_equal(launch_runtime_from_string("kata"), LAUNCH_RUNTIME_KATA);
        assert_int_equal(launch_runtime_from_string("runc"), _LAUNCH_RUNTIME_INVALID);
        assert_string_equal(launch_runtime_to_string(LAUNCH_RUNTIME_WASM), "wasm");
        assert_string_equal(launch_verb_to_string(LAUNCH_PROBE), "probe");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_run_full),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_ids_and_names),
                cmocka_unit_test(test_checkpoint_and_restore),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
