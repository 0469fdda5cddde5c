/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memory guard: the sandbox's own memory accounting, enforced.
 *
 * Memory a gVisor workload allocates is the sentry's memory, so on a host
 * where the unit's MemoryMax works it bounds the sandbox too. It does not
 * always work (nested containers with read-only cgroup controllers, as on the
 * test bed, enforce nothing), and RLIMIT_AS would break runtimes that reserve
 * address space (V8 reserves gigabytes). So the launcher stays the unit's main
 * process, runs the runtime as its child, follows the sentry's usage through
 * "runsc events --interval=1" and kills the sandbox when usage passes the
 * limit. The check is once a second, so a burst can overshoot for that long. */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <json-c/json.h>

#include "launch-env.h"
#include "launch-guard.h"
#include "parse-util.h"
#include "spawn.h"

#define KILL_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define EVENTS_RESTART_USEC (250 * USEC_PER_MSEC)
#define EVENTS_FIRST_START_USEC (500 * USEC_PER_MSEC)

typedef struct Guard {
        const char *runtime_path;
        const char *root_arg;
        const char *container;
        uint64_t limit;
        const char *limit_path;
        bool limit_from_file;
        pid_t events_pid;
        int events_fd;
        char line[8192];
        size_t line_len;
        uint64_t restart_at;
        bool killed;
} Guard;

static void events_stop(Guard *g) {
        if (g->events_pid > 0) {
                (void) kill(-g->events_pid, SIGKILL);
                (void) kill(g->events_pid, SIGKILL);
                while (waitpid(g->events_pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        g->events_pid = 0;
        g->events_fd = safe_close(g->events_fd);
        g->line_len = 0;
}

static int events_start(Guard *g) {
        int pipefd[2];
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                safe_close(pipefd[0]);
                safe_close(pipefd[1]);
                return -errno;
        }
        if (pid == 0) {
                int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                (void) setpgid(0, 0);
                /* Never the worker's stdin/stdout: those are its channel. */
                if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(pipefd[1], STDOUT_FILENO) < 0 ||
                    dup2(null_fd, STDERR_FILENO) < 0)
                        _exit(127);
                execle(g->runtime_path, g->runtime_path, g->root_arg, "events", "--interval=1", g->container,
                       (char *) NULL, launch_runtime_environment);
                _exit(127);
        }
        safe_close(pipefd[1]);
        g->events_pid = pid;
        g->events_fd = pipefd[0];
        return 0;
}

static void kill_sandbox(Guard *g, uint64_t usage) {
        char out[512];
        char *argv[] = { (char *) g->runtime_path, (char *) g->root_arg, (char *) "kill", (char *) "--all",
                         (char *) g->container, (char *) "KILL", NULL };

        char message[256];

        snprintf(message, sizeof(message), "%s exceeded its memory limit (%" PRIu64 " > %" PRIu64 " bytes); "
                 "killing its sandbox.", g->container, usage, g->limit);
        log_struct(LOG_WARNING, message, "SANDBOXD_CONTAINER", g->container, NULL);
        g->killed = true;
        (void) spawn_capture(argv, KILL_TIMEOUT_USEC, out, sizeof(out), NULL);
}

int launch_guard_read_limit(const char *path, uint64_t *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char buf[32];
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 1 || buf[n - 1] != '\n')
                return -EBADMSG;
        buf[n - 1] = 0;
        return parse_uint64(buf, ret) < 0 || *ret == 0 ? -EBADMSG : 0;
}

/* A pooled sandbox waits under the pool's share; its claim brings the
 * worker's own limit, which applies from then on. Read until it is there. */
static void refresh_limit(Guard *g) {
        uint64_t v;

        if (!g->limit_path || g->limit_from_file)
                return;
        if (launch_guard_read_limit(g->limit_path, &v) < 0)
                return;
        g->limit = v;
        g->limit_from_file = true;
}

/* One line of "runsc events": {"type":"stats","data":{"memory":{"usage":{"usage":N}}}} */
static void handle_line(Guard *g, const char *line) {
        struct json_object *o = json_tokener_parse(line), *v = o;
        static const char * const path[] = { "data", "memory", "usage", "usage" };

        for (size_t i = 0; v && i < ELEMENTSOF(path); i++)
                if (!json_object_object_get_ex(v, path[i], &v))
                        v = NULL;
        refresh_limit(g);
        if (v && json_object_is_type(v, json_type_int)) {
                uint64_t usage = json_object_get_uint64(v);
                if (usage > g->limit && !g->killed)
                        kill_sandbox(g, usage);
        }
        if (o)
                json_object_put(o);
}

static void events_read(Guard *g) {
        ssize_t n = read(g->events_fd, g->line + g->line_len, sizeof(g->line) - 1 - g->line_len);

        if (n < 0 && errno == EINTR)
                return;
        if (n <= 0) {
                /* "runsc events" gives up while the container is not created
                 * yet; follow it again shortly. */
                events_stop(g);
                g->restart_at = now_usec(CLOCK_MONOTONIC) + EVENTS_RESTART_USEC;
                return;
        }
        g->line_len += (size_t) n;
        g->line[g->line_len] = 0;
        for (char *nl; (nl = strchr(g->line, '\n'));) {
                *nl = 0;
                handle_line(g, g->line);
                g->line_len -= (size_t) (nl + 1 - g->line);
                memmove(g->line, nl + 1, g->line_len + 1);
        }
        if (g->line_len == sizeof(g->line) - 1)
                g->line_len = 0;        /* a line that long is not stats: drop it */
}

static int exit_code(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return LAUNCH_GUARD_EXIT_FAILED;
}

int launch_guard_run(const char *runtime_path, const char *root_arg, const char *container, uint64_t limit,
                     const char *limit_path, pid_t runtime_pid) {
        Guard g = {
                .runtime_path = runtime_path,
                .root_arg = root_arg,
                .container = container,
                .limit = limit,
                .limit_path = limit_path,
                .events_fd = -1,
                /* Let the sandbox boot first: a second runsc competing for
                 * the CPU would delay the worker's first byte, and there is
                 * nothing to follow before the container exists. */
                .restart_at = now_usec(CLOCK_MONOTONIC) + EVENTS_FIRST_START_USEC,
        };
        int status;

        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, runtime_pid, 0);
        if (pidfd < 0)
                return LAUNCH_GUARD_EXIT_FAILED;
        (void) signal(SIGPIPE, SIG_IGN);
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = pidfd, .events = POLLIN },
                        { .fd = g.events_fd, .events = POLLIN },
                };
                if (g.events_fd < 0 && now_usec(CLOCK_MONOTONIC) >= g.restart_at && events_start(&g) < 0)
                        g.restart_at = now_usec(CLOCK_MONOTONIC) + EVENTS_RESTART_USEC;
                p[1].fd = g.events_fd;
                int n = poll(p, 2, g.events_fd >= 0 ? -1 : (int) (EVENTS_RESTART_USEC / USEC_PER_MSEC));
                if (n < 0 && errno != EINTR)
                        break;
                if (n > 0 && p[0].revents)
                        break;
                if (n > 0 && p[1].revents)
                        events_read(&g);
        }
        while (waitpid(runtime_pid, &status, 0) < 0)
                if (errno != EINTR) {
                        events_stop(&g);
                        return LAUNCH_GUARD_EXIT_FAILED;
                }
        events_stop(&g);
        if (g.killed) {
                log_error("%s was killed for exceeding its memory limit of %" PRIu64 " bytes.", container, g.limit);
                return LAUNCH_GUARD_EXIT_OOM;
        }
        return exit_code(status);
}
