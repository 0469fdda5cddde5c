/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec: the ExecStart of trusted and wasm workers. It runs as the
 * worker, inside all of the unit's walls, reads the spec's environment from
 * the unit's own credential (env-cred.h), adds it to the environment systemd
 * gave (HOME, the proxy variables, CREDENTIALS_DIRECTORY, ...) and execs the
 * command verbatim: argv[0] is the path, nothing is expanded or searched.
 * Its stderr is the worker's, which the client reads, so that is where its
 * messages go. */
#include "env-cred.h"
#include "sandbox-exec.h"
#include "util.h"

static const char usage[] = "Usage: sandbox-exec --id=ID [--environment] -- /ABSOLUTE/PATH [ARG...]\n";

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

int main(int argc, char *argv[]) {
        _cleanup_free_ char *dir = NULL;
        bool environment;
        char **cmd;
        int r;

        /* --environment: the unit has the credential (its spec set an
         * Environment), so a missing one is an error, not an empty list. */
        environment = argc > 2 && streq(argv[2], "--environment");
        cmd = argv + 3 + environment;
        if (argc < 4 + environment || !startswith(argv[1], "--id=") || !streq(cmd[-1], "--") || cmd[0][0] != '/') {
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
        if (environment && load_environment(dir) < 0)
                return SBX_EXEC_EXIT_ENVIRONMENT;
        execv(cmd[0], cmd);
        r = errno;
        fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
}
