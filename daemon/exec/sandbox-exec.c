/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec: the ExecStart of trusted and wasm workers. It runs as the
 * worker, inside all of the unit's walls, reads the spec's environment from
 * the unit's own credential (env-cred.h), adds it to the environment systemd
 * gave (HOME, the proxy variables, CREDENTIALS_DIRECTORY, ...) and execs the
 * command verbatim: argv[0] is the path, nothing is expanded or searched.
 * Its stderr is the worker's, which the client reads, so that is where its
 * messages go. */
#include <sys/stat.h>

#include "env-cred.h"
#include "sandbox-exec.h"
#include "util.h"

static const char usage[] =
        "Usage: sandbox-exec --id=ID [--environment] -- /ABSOLUTE/PATH [ARG...]\n"
        "       sandbox-exec --id=ID --check -- /ABSOLUTE/PATH\n"
        "       sandbox-exec --id=ID --pool-wait\n";

static int apply_environment(char **env) {
        for (char **e = env; e && *e; e++) {
                char *eq = strchr(*e, '=');
                *eq = 0;
                if (setenv(*e, eq + 1, 1) < 0)
                        return -errno;
        }
        return 0;
}

static int load_environment(const char *dir) {
        _cleanup_strv_free_erase_ char **env = NULL;
        int r;

        r = env_credential_read(dir, &env);
        if (r < 0) {
                fprintf(stderr, "sandbox-exec: cannot read the worker's environment from %s/" SBX_ENV_CREDENTIAL ": %s\n",
                        dir, r == -EBADMSG ? "malformed credential" : strerror(-r));
                return r;
        }
        r = apply_environment(env);
        if (r < 0)
                fprintf(stderr, "sandbox-exec: cannot set the worker's environment: %s\n", strerror(-r));
        return r;
}

/* --check: whether the command could be executed at all, as the worker
 * and inside its walls. An ExecStartPre= of the unit runs it, so that a
 * command that is missing fails the start (StartFailed) as it did when it was
 * the unit's own ExecStart=, instead of a worker that exits at once. */
static int check_command(const char *path) {
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                r = errno;
        else if (!S_ISREG(st.st_mode))
                r = EACCES;     /* what execve says of a directory */
        else if (access(path, X_OK) < 0)
                r = errno;
        else
                return EXIT_SUCCESS;
        fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", path, strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *dir = NULL;
        bool environment = false, check = false;
        char **cmd = NULL;
        int r;

        if (argc == 3 && startswith(argv[1], "--id=") && streq(argv[2], "--pool-wait")) {
                if (env_credential_dir(argv[1] + strlen("--id="), &dir) < 0) {
                        fprintf(stderr, "sandbox-exec: invalid worker id '%s'\n", argv[1] + strlen("--id="));
                        return SBX_EXEC_EXIT_USAGE;
                }
                return pool_wait_run(argv[1] + strlen("--id="));
        }
        /* --id=ID [--environment | --check] -- COMMAND... */
        for (int i = 2; i < argc; i++) {
                if (streq(argv[i], "--")) {
                        cmd = argv + i + 1;
                        break;
                }
                if (streq(argv[i], "--environment") && !environment && !check)
                        environment = true;
                else if (streq(argv[i], "--check") && !environment && !check)
                        check = true;
                else
                        break;
        }
        if (argc < 2 || !startswith(argv[1], "--id=") || !cmd || !cmd[0] || cmd[0][0] != '/') {
                fputs("sandbox-exec: bad command line\n", stderr);
                fputs(usage, stderr);
                return SBX_EXEC_EXIT_USAGE;
        }
        /* The unit's own directory, from the id: not $CREDENTIALS_DIRECTORY. */
        r = env_credential_dir(argv[1] + strlen("--id="), &dir);
        if (r < 0) {
                fprintf(stderr, "sandbox-exec: invalid worker id '%s'\n", argv[1] + strlen("--id="));
                return SBX_EXEC_EXIT_USAGE;
        }
        if (check)
                return check_command(cmd[0]);
        if (environment && load_environment(dir) < 0)
                return SBX_EXEC_EXIT_ENVIRONMENT;
        execv(cmd[0], cmd);
        r = errno;
        fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
}
