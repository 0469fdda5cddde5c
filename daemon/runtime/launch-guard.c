/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memory guard: the sandbox's own memory accounting, enforced.
 *
 * Memory a gVisor workload allocates is the sentry's memory, so on a host
 * where the unit's MemoryMax works it bounds the sandbox too. It does not
 * always work (nested containers with read-only cgroup controllers, as on the
 * test bed, enforce nothing), and RLIMIT_AS would break runtimes that reserve
 * address space (V8 reserves gigabytes). So the launcher stays the unit's main
 * process, runs the runtime as its child, follows the sentry's usage (read
 * from the sentry's own files, launch-sentry-mem.c, or else through
 * "runsc events --interval=1") and kills the sandbox when usage passes the
 * limit. The check is once a second, so a burst can overshoot for that long. */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "launch-env.h"
#include "launch-guard.h"
#include "launch-sentry-mem.h"
#include "launch-slack.h"
#include "launch-state.h"
#include "parse-util.h"
#include "spawn.h"

#define KILL_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define EVENTS_RESTART_USEC (250 * USEC_PER_MSEC)
#define EVENTS_FIRST_START_USEC (500 * USEC_PER_MSEC)
/* How long to look for the sentry's files before following runsc events
 * instead: a loaded host boots a sandbox slowly. */
#define DIRECT_GIVE_UP_USEC (10 * USEC_PER_SEC)

typedef enum { FOLLOW_PENDING, FOLLOW_DIRECT, FOLLOW_EVENTS } Follow;

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
        Follow follow;
        SentryMem mem;
        uint64_t started;
        uint64_t next_check;
        bool killed;
        const char *images;             /* to remove once the sandbox runs; NULL once removed */
        bool seen_running;              /* runsc reported it running: it may be asked anything */
        uint64_t slack_ns;              /* to set on the sandbox once booted; 0: nothing (left) to set */
        uint64_t slack_at;
        uint64_t next_state_check;
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

/* One reading of the sandbox's memory, from either source. */
static void handle_usage(Guard *g, uint64_t usage) {
        refresh_limit(g);
        if (usage > g->limit && !g->killed)
                kill_sandbox(g, usage);
}

/* One line of "runsc events": {"type":"stats","data":{"memory":{"usage":{"usage":N}}}} */
static void handle_line(Guard *g, const char *line) {
        struct json_object *o = json_tokener_parse(line), *v = o;
        static const char * const path[] = { "data", "memory", "usage", "usage" };

        for (size_t i = 0; v && i < ELEMENTSOF(path); i++)
                if (!json_object_object_get_ex(v, path[i], &v))
                        v = NULL;
        if (v && json_object_is_type(v, json_type_int))
                handle_usage(g, json_object_get_uint64(v));
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

/* Whether runsc reports the sandbox running, asked at most every
 * LAUNCH_STATE_POLL_USEC until it does (launch-state.h). */
static bool check_running(Guard *g, uint64_t now) {
        if (g->seen_running || now < g->next_state_check)
                return g->seen_running;
        g->seen_running = launch_container_running(g->runtime_path, g->root_arg, g->container) > 0;
        /* From the answer: on a loaded host runsc state takes longer than
         * the interval, and must not run back to back beside the restore. */
        g->next_state_check = now_usec(CLOCK_MONOTONIC) + LAUNCH_STATE_POLL_USEC;
        return g->seen_running;
}

/* The restored sandbox ran: its image goes, and systemd hears READY=1. */
static void restore_ran(Guard *g) {
        int r = rm_rf(g->images);
        if (r < 0)
                log_warning_errno(r, "Failed to remove the checkpoint image %s: %m", g->images);
        g->images = NULL;
        r = sd_notify(false, "READY=1");
        if (r < 0)
                log_warning_errno(r, "Failed to tell systemd the restored sandbox runs: %m");
}

/* A restored sandbox: once it runs, runsc has read or holds open all of its
 * image, which goes, and the unit (Type=notify) is ready: the resume is
 * answered only now, so nothing asks runsc about a restore in progress.
 * Nothing else in the launcher removes an image: a restore that fails before
 * this leaves it whole, and sandboxd, which watches for this removal, keeps
 * the worker suspended for the next resume (worker-resume.h). */
static void restore_check(Guard *g, uint64_t now) {
        if (g->images && check_running(g, now))
                restore_ran(g);
}

/* The sentry's own files where this runsc has them, else runsc events. */
static void follow_choose(Guard *g, pid_t runtime_pid, uint64_t now) {
        if (sentry_mem_open(runtime_pid, &g->mem) >= 0) {
                g->follow = FOLLOW_DIRECT;
                g->next_check = now;
        } else if (now >= g->started + DIRECT_GIVE_UP_USEC) {
                log_debug("%s: the sentry's memory files were not found; following runsc events.", g->container);
                g->follow = FOLLOW_EVENTS;
                g->restart_at = now;
        } else
                g->restart_at = now + EVENTS_RESTART_USEC;
}

/* The idle timer slack, once the sandbox had time to boot (launch-slack.h).
 * Set once: later threads inherit it. A failure costs idle CPU, not the
 * worker: said once, not retried. */
static void slack_check(Guard *g, pid_t runtime_pid, uint64_t now) {
        if (g->slack_ns == 0 || now < g->slack_at)
                return;
        int r = launch_slack_apply(runtime_pid, g->slack_ns);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "%s: failed to set the runtime's timer slack: %m", g->container);
        g->slack_ns = 0;
}

static int poll_timeout_ms(const Guard *g) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), at;

        switch (g->follow) {
        case FOLLOW_DIRECT:
                at = g->next_check;
                break;
        case FOLLOW_PENDING:
                at = g->restart_at;
                break;
        default:
                if (g->events_fd >= 0)
                        return -1;
                at = g->restart_at;
        }
        if (g->images && g->next_state_check < at)
                at = g->next_state_check;
        if (g->slack_ns > 0 && g->slack_at < at)
                at = g->slack_at;
        return at <= now ? 0 : (int) ((at - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC);
}

static int exit_code(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return LAUNCH_GUARD_EXIT_FAILED;
}

int launch_guard_run(const char *runtime_path, const char *root_arg, const char *container, uint64_t limit,
                     const char *limit_path, pid_t runtime_pid, const char *images, uint64_t slack_ns) {
        Guard g = {
                .runtime_path = runtime_path,
                .root_arg = root_arg,
                .container = container,
                .limit = limit,
                .images = images,
                .limit_path = limit_path,
                .events_fd = -1,
                /* Let the sandbox boot first: a second runsc competing for
                 * the CPU would delay the worker's first byte, and there is
                 * nothing to follow before the container exists. */
                .restart_at = now_usec(CLOCK_MONOTONIC) + EVENTS_FIRST_START_USEC,
                .follow = FOLLOW_PENDING,
                .mem = SENTRY_MEM_NULL,
                .started = now_usec(CLOCK_MONOTONIC),
                .next_state_check = now_usec(CLOCK_MONOTONIC) + LAUNCH_STATE_POLL_USEC,
                .slack_ns = slack_ns,
                .slack_at = now_usec(CLOCK_MONOTONIC) + LAUNCH_SLACK_AFTER_USEC,
        };
        int status;

        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, runtime_pid, 0);
        if (pidfd < 0)
                return LAUNCH_GUARD_EXIT_FAILED;
        (void) signal(SIGPIPE, SIG_IGN);
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = pidfd, .events = POLLIN },
                        { .fd = -1, .events = POLLIN },
                };
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                if (g.follow == FOLLOW_PENDING && now >= g.restart_at)
                        follow_choose(&g, runtime_pid, now);
                if (g.follow == FOLLOW_DIRECT && now >= g.next_check) {
                        uint64_t usage;
                        if (sentry_mem_read(&g.mem, &usage) >= 0)
                                handle_usage(&g, usage);
                        g.next_check = now + USEC_PER_SEC;
                }
                restore_check(&g, now);
                slack_check(&g, runtime_pid, now);
                /* runsc events on a sandbox that is not running yet ends its
                 * restore (launch-state.h): it waits for that. */
                if (g.follow == FOLLOW_EVENTS && g.events_fd < 0 && now >= g.restart_at &&
                    (!check_running(&g, now) || events_start(&g) < 0))
                        g.restart_at = now + EVENTS_RESTART_USEC;
                p[1].fd = g.events_fd;
                int n = poll(p, 2, poll_timeout_ms(&g));
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
                        sentry_mem_close(&g.mem);
                        return LAUNCH_GUARD_EXIT_FAILED;
                }
        events_stop(&g);
        sentry_mem_close(&g.mem);
        /* Ended before a poll saw it run. runsc restore's own failures exit
         * LAUNCH_RUNSC_FATAL_EXIT (its Fatalf) with the image still whole,
         * which sandboxd then keeps for the next resume. Anything else is
         * the restored workload's end: it ran, so the image is no longer
         * its state and must not be restored again, and the unit is ready
         * before it ends (the barrier: systemd has READY=1 before the exit),
         * so the worker ends with its own exit status. */
        if (g.images && !(WIFEXITED(status) && WEXITSTATUS(status) == LAUNCH_RUNSC_FATAL_EXIT)) {
                restore_ran(&g);
                (void) sd_notify_barrier(false, 5 * USEC_PER_SEC);
        }
        if (g.killed) {
                log_error("%s was killed for exceeding its memory limit of %" PRIu64 " bytes.", container, g.limit);
                return LAUNCH_GUARD_EXIT_OOM;
        }
        return exit_code(status);
}
