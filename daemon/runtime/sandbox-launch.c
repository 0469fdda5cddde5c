/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-launch: runs one sandboxd worker under an OCI runtime (gVisor's
 * runsc, or Kata) from inside the worker's own systemd unit, cleans up after
 * it, and probes whether a runtime works on this host. */
#include <fcntl.h>

#include "exec-proto.h"
#include "launch-env.h"
#include "launch.h"

static const char usage[] =
        "Usage:\n"
        "  sandbox-launch run --id ID --runtime runsc|kata --runtime-path PATH [--platform systrap|ptrace]\n"
        "                     [--root-image DIR] --home DIR --pids N --memory BYTES --cpu-percent N\n"
        "                     [--disk BYTES] [--tmp-size BYTES] [--nofile N] [--setenv K=V]... -- ARGV...\n"
        "                     (the spec's environment comes from the unit's sandboxd.environment credential)\n"
        "  sandbox-launch cleanup --id ID [--runtime runsc|kata] [--runtime-path PATH]\n"
        "  sandbox-launch probe --runtime runsc|kata|wasm --runtime-path PATH [--platform P] [--timeout SEC]\n";

/* Started by systemd: an operator reads the journal, whatever stderr is. */
static bool launched_by_systemd(void) {
        return getenv("INVOCATION_ID");
}

int main(int argc, char *argv[]) {
        LaunchArgs args;
        SbxError error = {};
        int exec_fd, r;

        /* The exec channel, before the environment that names it goes. */
        exec_fd = sbx_exec_take_listen_fd();
        if (exec_fd >= 0)
                (void) fcntl(exec_fd, F_SETFD, FD_CLOEXEC);
        /* First, before anything could read or pass on what it was given. */
        r = launch_env_reset();
        if (r < 0) {
                fprintf(stderr, "sandbox-launch: cannot reset the environment: %s\n", strerror(-r));
                return argc >= 2 && streq(argv[1], "run") ? LAUNCH_EXIT_SETUP : EXIT_FAILURE;
        }
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                fputs(usage, stdout);
                return EXIT_SUCCESS;
        }
        r = launch_args_parse(argc, argv, &args, &error);
        if (r < 0) {
                /* In a unit, a bad command line is sandboxd's bug: the operator must see it. */
                if (launched_by_systemd())
                        log_copy_to_journal(NULL);
                log_error("sandbox-launch: %s", error.name ? error.message : strerror(-r));
                fputs(usage, stderr);
                /* A probe's caller reads stdout: keep its one-line contract. */
                if (argc >= 2 && streq(argv[1], "probe")) {
                        printf("unavailable bad probe arguments: %s\n", error.name ? error.message : strerror(-r));
                        return EXIT_FAILURE;
                }
                return argc >= 2 && streq(argv[1], "run") ? LAUNCH_EXIT_SETUP : 2;
        }
        /* Inside a worker's unit, run's and cleanup's stderr is the worker's
         * stderr: the client reads it, the operator does not. The journal
         * gets every message, tagged with the worker (once: where stderr is
         * the journal, as in sandboxd's late-cleanup unit, it is the only sink). */
        if ((args.verb == LAUNCH_RUN || args.verb == LAUNCH_CLEANUP || args.verb == LAUNCH_CHECKPOINT) &&
            launched_by_systemd())
                log_copy_to_journal(args.id);
        args.exec_fd = args.verb == LAUNCH_RUN ? exec_fd : safe_close(exec_fd);
        switch (args.verb) {
        case LAUNCH_RUN:
                r = launch_run(&args);
                break;
        case LAUNCH_CLEANUP:
                r = launch_cleanup(&args);
                break;
        case LAUNCH_PROBE:
                r = launch_probe(&args);
                break;
        case LAUNCH_PROBE_GUEST:
                r = launch_probe_guest(&args);
                break;
        case LAUNCH_CHECKPOINT:
                r = launch_checkpoint(&args);
                break;
        default:
                r = 2;
        }
        launch_args_done(&args);
        return r;
}
