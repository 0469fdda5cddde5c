/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec: the ExecStart of trusted and wasm workers. It runs as the
 * worker, inside all of the unit's walls: checks that systemd made the
 * namespaces private and that the command can be executed, reads the spec's
 * environment from the unit's own credential (env-cred.h) and adds it to the
 * environment systemd gave (HOME, the proxy variables, CREDENTIALS_DIRECTORY,
 * ...), writes the readiness token to stdout and execs the command verbatim:
 * argv[0] is the path, nothing is expanded or searched. Its stderr is the
 * worker's, which the client reads, so that is where its messages go. */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "env-cred.h"
#include "exec-proto.h"
#include "exec-supervisor.h"
#include "ns-ident.h"
#include "parse-util.h"
#include "sandbox-exec.h"
#include "util.h"

static const char usage[] =
        "Usage: sandbox-exec --id=ID [--net=DEV:INO] [--ipc=DEV:INO] [--mnt=DEV:INO] [--environment] -- /ABSOLUTE/PATH [ARG...]\n"
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

/* Whether systemd made the namespaces it was asked
 * for (a container without the capability runs the unit in PID 1's, and
 * systemd 254+ only logs a notice). HOST holds PID 1's identities, which
 * sandboxd read; any of ours equal to one of them refuses the start. */
static int check_namespaces(const char *id, const NsIdSet *host) {
        char reason[320];
        NsIdSet own;
        int r;

        if (host->mask == 0)
                return EXIT_SUCCESS;
        log_copy_to_journal(id);
        r = ns_id_set_read("self", host->mask, &own);
        if (r < 0) {
                log_error_errno(r, "Cannot read worker %s's namespaces: %m", id);
                return SBX_EXEC_EXIT_SHARED;
        }
        if (ns_id_set_compare(&own, host, host->mask, reason, sizeof(reason)) < 0) {
                log_error("Refusing to start worker %s: %s; systemd did not make its namespaces private "
                          "(see PrivateNetwork=, PrivateIPC= and drop-ins for sandbox-*.service).", id, reason);
                return SBX_EXEC_EXIT_SHARED;
        }
        return EXIT_SUCCESS;
}

/* "--net=DEV:INO" and the like into HOST; false if ARG is none of them, or
 * names a namespace twice. */
static bool parse_host_namespace(const char *arg, NsIdSet *host) {
        for (NsKind k = 0; k < _NS_KIND_MAX; k++) {
                size_t n = strlen(ns_kind_to_string(k));

                if (!startswith(arg, "--") || strncmp(arg + 2, ns_kind_to_string(k), n) != 0 || arg[2 + n] != '=')
                        continue;
                if ((host->mask & NS_MASK(k)) || ns_id_parse(arg + 3 + n, &host->id[k]) < 0)
                        return false;
                host->mask |= NS_MASK(k);
                return true;
        }
        return false;
}

/* Whether the command could be executed at all, as the worker and inside
 * its walls, before the token: walls that are not there, or a command that
 * is missing, then fail the start (StartFailed) instead of making a worker
 * that exits at once. (This process is the unit's Type=exec main process,
 * so systemd's job is done already; the token is what sandboxd waits for.) */
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

/* One write of fewer than PIPE_BUF bytes: the token reaches a pipe whole or
 * not at all, never as a prefix followed by the workload's bytes. */
static int write_ready_token(void) {
        ssize_t n;

        do
                n = write(STDOUT_FILENO, SBX_EXEC_READY_TOKEN, SBX_EXEC_READY_TOKEN_LEN);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t) SBX_EXEC_READY_TOKEN_LEN)
                return 0;
        fprintf(stderr, "sandbox-exec: cannot tell sandboxd that the worker is ready: %s\n",
                n < 0 ? strerror(errno) : "short write");
        return -EIO;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *dir = NULL;
        bool environment = false;
        NsIdSet host = {};
        char **cmd = NULL;
        int listen_fd;
        const char *id;
        int r;

        if (argc == 3 && startswith(argv[1], "--id=") && streq(argv[2], "--pool-wait")) {
                if (env_credential_dir(argv[1] + strlen("--id="), &dir) < 0) {
                        fprintf(stderr, "sandbox-exec: invalid worker id '%s'\n", argv[1] + strlen("--id="));
                        return SBX_EXEC_EXIT_USAGE;
                }
                return pool_wait_run(argv[1] + strlen("--id="));
        }
        /* --id=ID [--net=..] [--ipc=..] [--mnt=..] [--environment] -- COMMAND... */
        for (int i = 2; i < argc; i++) {
                if (streq(argv[i], "--")) {
                        cmd = argv + i + 1;
                        break;
                }
                if (streq(argv[i], "--environment") && !environment)
                        environment = true;
                else if (!parse_host_namespace(argv[i], &host))
                        break;
        }
        if (argc < 2 || !startswith(argv[1], "--id=") || !cmd || !cmd[0] || cmd[0][0] != '/') {
                fputs("sandbox-exec: bad command line\n", stderr);
                fputs(usage, stderr);
                return SBX_EXEC_EXIT_USAGE;
        }
        id = argv[1] + strlen("--id=");
        /* The unit's own directory, from the id: not $CREDENTIALS_DIRECTORY. */
        r = env_credential_dir(id, &dir);
        if (r < 0) {
                fprintf(stderr, "sandbox-exec: invalid worker id '%s'\n", id);
                return SBX_EXEC_EXIT_USAGE;
        }
        r = check_namespaces(id, &host);
        if (r != EXIT_SUCCESS)
                return r;
        r = check_command(cmd[0]);
        if (r != EXIT_SUCCESS)
                return r;
        if (environment && load_environment(dir) < 0)
                return SBX_EXEC_EXIT_ENVIRONMENT;
        /* The exec supervisor, with the environment the workload gets, and
         * before the token: a running worker always has it. */
        listen_fd = sbx_exec_take_listen_fd();
        if (listen_fd >= 0 && exec_supervisor_start(listen_fd) < 0)
                fputs("sandbox-exec: cannot start the exec supervisor; Exec will fail for this worker\n", stderr);
        if (write_ready_token() < 0)
                return SBX_EXEC_EXIT_READY;
        execv(cmd[0], cmd);
        /* The command went between its check and here: the worker counts as
         * started, and ends at once with the status a shell would give. */
        r = errno;
        fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
}
