/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec-limits: what a gVisor worker's launcher runs through `runsc
 * exec` (launch-exec.c) before an Exec's command where the sandbox's own
 * spec is not the worker's (a warm-pool sandbox, or a TasksMax below the
 * launcher's --pids), to give it the worker's RLIMIT_NPROC (its TasksMax
 * under gVisor) and NoNewPrivs, and with --init-env the worker's own
 * environment. Then the command, as is.
 *
 * It is its own program, and a static one with nothing but libc, because
 * every Exec into gVisor pays for it: loading sandbox-exec and its ten
 * shared libraries through gVisor's syscall and page-fault path cost about
 * 55 ms per Exec in the test bed, against 1 ms on the host.
 *
 *   sandbox-exec-limits --nproc=N [--init-env] -- /ABSOLUTE/PATH [ARG...] */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sandbox-exec.h"

extern char **environ;

/* The soft RLIMIT_NPROC of the worker's first process (/proc/1/limits), or
 * 0 when it cannot be read: a claimed warm-pool sandbox's job lowered it
 * below what the launcher was told. */
static unsigned long long init_nproc(void) {
        FILE *f = fopen("/proc/1/limits", "re");
        static const char key[] = "Max processes";
        unsigned long long soft = 0;
        char line[256];

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, key, sizeof(key) - 1) == 0 && sscanf(line + sizeof(key) - 1, " %llu", &soft) == 1)
                        break;
        if (f)
                fclose(f);
        return soft;
}

/* KV, "KEY=VALUE", into the environment; anything else is passed over. */
static int put_entry(char *kv) {
        char *eq = strchr(kv, '=');

        if (!eq || eq == kv)
                return 0;
        *eq = 0;
        return setenv(kv, eq + 1, 1) < 0 ? -errno : 0;
}

/* The environment of the worker's first process (PID 1 of a gVisor sandbox:
 * the workload, or a warm-pool job's), read as the worker, with this
 * process's own entries (the request's) over it. */
static int apply_init_environment(void) {
        size_t n_own = 0, size = 0;
        char **own, *buf = NULL;
        FILE *f;
        int r = 0;

        while (environ && environ[n_own])
                n_own++;
        own = calloc(n_own + 1, sizeof(char *));
        if (!own)
                return -ENOMEM;
        for (size_t i = 0; i < n_own; i++)
                if (!(own[i] = strdup(environ[i]))) {
                        r = -ENOMEM;
                        goto out;
                }
        f = fopen("/proc/1/environ", "re");
        if (!f) {
                r = -errno;
                goto out;
        }
        for (;;) {
                char *nb = realloc(buf, size + 4096 + 1);
                if (!nb) {
                        r = -ENOMEM;
                        break;
                }
                buf = nb;
                size_t k = fread(buf + size, 1, 4096, f);
                size += k;
                if (k == 0)
                        break;
        }
        fclose(f);
        if (r < 0 || clearenv() != 0) {
                r = r < 0 ? r : -ENOMEM;
                goto out;
        }
        buf[size] = 0;
        /* The worker's entries, then the request's over them. */
        /* Each entry's length before put_entry() cuts it at its '=':
         * the rest of a value is no entry of its own. */
        for (char *p = buf; r == 0 && p < buf + size;) {
                size_t n = strlen(p);
                r = put_entry(p);
                p += n + 1;
        }
        for (size_t i = 0; r == 0 && i < n_own; i++)
                r = put_entry(own[i]);
out:
        /* The worker's secrets may be in either copy. */
        if (buf) {
                explicit_bzero(buf, size);
                free(buf);
        }
        for (size_t i = 0; i < n_own && own[i]; i++) {
                explicit_bzero(own[i], strlen(own[i]));
                free(own[i]);
        }
        free(own);
        return r;
}

int main(int argc, char *argv[]) {
        unsigned long long n;
        bool init_env = false;
        char *end, **cmd;
        int i = 1, r;

        if (i < argc && strncmp(argv[i], "--nproc=", 8) == 0) {
                errno = 0;
                n = strtoull(argv[i] + 8, &end, 10);
                i++;
        } else
                goto usage;
        if (errno != 0 || *end || n == 0 || argv[i - 1][8] < '0' || argv[i - 1][8] > '9')
                goto usage;
        if (i < argc && strcmp(argv[i], "--init-env") == 0) {
                init_env = true;
                i++;
        }
        if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc || argv[i + 1][0] != '/')
                goto usage;
        cmd = argv + i + 1;

        if (init_env) {
                unsigned long long k = init_nproc();
                if (k > 0 && k < n)
                        n = k;
                r = apply_init_environment();
                if (r < 0) {
                        fprintf(stderr, "sandbox-exec-limits: cannot read the worker's environment: %s\n", strerror(-r));
                        return SBX_EXEC_EXIT_ENVIRONMENT;
                }
        }
        struct rlimit rl = { .rlim_cur = n, .rlim_max = n };
        if (setrlimit(RLIMIT_NPROC, &rl) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                fprintf(stderr, "sandbox-exec-limits: cannot set the worker's limits: %s\n", strerror(errno));
                return SBX_EXEC_EXIT_SHARED;
        }
        execv(cmd[0], cmd);
        r = errno;
        fprintf(stderr, "sandbox-exec-limits: cannot execute %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
usage:
        fputs("Usage: sandbox-exec-limits --nproc=N [--init-env] -- /ABSOLUTE/PATH [ARG...]\n", stderr);
        return SBX_EXEC_EXIT_USAGE;
}
