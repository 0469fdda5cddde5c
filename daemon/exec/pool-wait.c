/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec --pool-wait: the process a warm-pool sandbox runs until it is
 * claimed (daemon/shared/pool-job.h). It is already the worker, inside gVisor:
 * the job it reads from stdin, which only sandboxd writes, becomes the
 * workload by execve(), in this very sandbox, with nothing else in it. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "env-cred.h"
#include "pool-job.h"
#include "sandbox-exec.h"
#include "util.h"

/* Byte-exact: whatever follows the frame is the workload's stdin. An end
 * of file before N bytes is -EPIPE: the pool let the sandbox go. */
static int read_exact(int fd, uint8_t *p, size_t n) {
        ssize_t k = read_full(fd, p, n);

        if (k < 0)
                return (int) k;
        return (size_t) k < n ? -EPIPE : 0;
}

static int read_job(PoolJob *ret) {
        uint8_t header[POOL_JOB_HEADER_SIZE];
        uint8_t *payload;
        size_t size;
        int r;

        r = read_exact(STDIN_FILENO, header, sizeof(header));
        if (r < 0)
                return r;
        r = pool_job_header_parse(header, &size);
        if (r < 0)
                return r;
        payload = malloc(size ?: 1);
        if (!payload)
                return -ENOMEM;
        r = read_exact(STDIN_FILENO, payload, size);
        if (r >= 0)
                r = pool_job_decode(payload, size, ret);
        erase_and_free(payload, size);
        return r;
}

static int write_credential(int dir_fd, const SbxCredential *c) {
        _cleanup_close_ int fd = openat(dir_fd, c->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);

        if (fd < 0)
                return -errno;
        return loop_write(fd, c->data, c->size);
}

/* The launcher mounted an empty tmpfs owned by the worker where a cold
 * worker's credentials would be bound; they go there, 0400 as systemd makes
 * them, and the directory is made read-only (as systemd's is; the workload
 * owns it, as it owns its own secrets). */
static int write_credentials(const char *id, const PoolJob *j) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dir_fd = -1;
        int r;

        if (j->n_credentials == 0)
                return 0;
        r = env_credential_dir(id, &dir);
        if (r < 0)
                return r;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0)
                return -errno;
        for (size_t i = 0; i < j->n_credentials; i++) {
                r = write_credential(dir_fd, &j->credentials[i]);
                if (r < 0)
                        return r;
        }
        return fchmod(dir_fd, 0500) < 0 ? -errno : 0;
}

int pool_wait_run(const char *id) {
        _cleanup_(pool_job_done) PoolJob job = {};
        struct rlimit rl;
        int r;

        {
                char ready = POOL_WAITER_READY;
                if (write(STDOUT_FILENO, &ready, 1) != 1) {
                        fprintf(stderr, "sandbox-exec: cannot signal that the pooled sandbox is ready: %s\n",
                                strerror(errno));
                        return SBX_EXEC_EXIT_ENVIRONMENT;
                }
        }
        r = read_job(&job);
        if (r == -EPIPE)
                /* Never claimed: the pool let it go. */
                return EXIT_SUCCESS;
        if (r < 0) {
                fprintf(stderr, "sandbox-exec: cannot read the worker's job: %s\n",
                        r == -EBADMSG ? "malformed frame" : strerror(-r));
                return SBX_EXEC_EXIT_ENVIRONMENT;
        }
        r = write_credentials(id, &job);
        if (r < 0) {
                fprintf(stderr, "sandbox-exec: cannot write the worker's credentials: %s\n", strerror(-r));
                return SBX_EXEC_EXIT_ENVIRONMENT;
        }
        /* The sandbox started with the operator's maximum; a claim only lowers it. */
        if (getrlimit(RLIMIT_NPROC, &rl) == 0 && job.nproc < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max = job.nproc;
                if (setrlimit(RLIMIT_NPROC, &rl) < 0) {
                        fprintf(stderr, "sandbox-exec: cannot limit the worker's processes: %s\n", strerror(errno));
                        return SBX_EXEC_EXIT_ENVIRONMENT;
                }
        }
        for (size_t i = 0; i < job.n_credentials; i++)
                explicit_bzero(job.credentials[i].data, job.credentials[i].size);
        execve(job.argv[0], job.argv, job.environment ?: (char *[]) { NULL });
        r = errno;
        fprintf(stderr, "sandbox-exec: cannot execute %s: %s\n", job.argv[0], strerror(r));
        return r == ENOENT ? SBX_EXEC_EXIT_NOT_FOUND : SBX_EXEC_EXIT_CANNOT_EXEC;
}
