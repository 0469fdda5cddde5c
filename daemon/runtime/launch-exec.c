/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exec channel of a gVisor worker (shared/exec-proto.h): sandbox-launch
 * serves it by running `runsc exec` into the worker's own sandbox, so the
 * process is the sandbox's: its kernel, namespaces, mounts, user and
 * capabilities (the bundle's process, taken from its config.json), inside
 * the unit's cgroup on the host. RLIMIT_NPROC is the worker's TasksMax
 * under gVisor (counted per user, over the workload's processes too). runsc 0.0~20240729 gives an exec'd process
 * the rlimits of the sandbox's own spec (runsc/boot/loader.go executeAsync:
 * createLimitSet of the root spec), which hold RLIMIT_NPROC = --pids, and
 * NoNewPrivs is always set in gVisor (PR_GET_NO_NEW_PRIVS answers 1 and
 * set-ID bits are never honoured: kernel/task_identity.go). So the command
 * runs as is, with the bundle's environment, which is the workload's.
 * A warm-pool sandbox's spec and environment are the pool's, not the
 * claiming job's, and a worker may ask for fewer tasks than the launcher
 * was given: there the command runs through `sandbox-exec-limits --nproc=N
 * --init-env` inside, which lowers RLIMIT_NPROC, sets NoNewPrivs, takes the
 * environment of the worker's PID 1 and execs it. Skipping it where it
 * changes nothing is what makes an Exec cheaper: its exec inside gVisor
 * cost about 15 ms of the sandbox's CPU, under its quota, per Exec in the
 * test bed. The environment goes in the process file, a memfd: never on a
 * command line.
 *
 * A server process (killed with the launcher) accepts; each connection gets
 * a handler, which runs one runsc exec and reports it. */
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <inttypes.h>

#include "build-config.h"
#include "exec-proto.h"
#include "exec-started.h"
#include "launch-env.h"
#include "launch-exec.h"
#include "launch.h"

/* The image must hold it as the host does (the default image, /, does). */
#define EXEC_WRAPPER SANDBOXD_LIBEXECDIR "/sandbox-exec-limits"
#define PID_WAIT_USEC (30 * USEC_PER_SEC)

static void send_simple(int conn, SbxExecType type, int value, int status, const int *fds, size_t n_fds) {
        SbxExecHeader h = { .type = type, .value = value, .status = status };
        (void) sbx_exec_send(conn, &h, NULL, 0, fds, n_fds);
}

static bool strv_env_has(char * const *env, const char *key, size_t n) {
        for (char * const *e = env; e && *e; e++)
                if (strncmp(*e, key, n) == 0 && (*e)[n] == '=')
                        return true;
        return false;
}

/* Whether the spec's own rlimits and environment are the worker's, so that
 * runsc exec alone gives the process its walls (see the top): not in a
 * warm-pool sandbox, and not when the worker's TasksMax (H's value) is
 * below the launcher's --pids. */
static bool exec_direct(const LaunchArgs *a, const SbxExecHeader *h) {
        return !a->pool && (h->value <= 0 || (uint64_t) h->value >= a->pids);
}

static int json_add(struct json_object *obj, const char *key, struct json_object *val) {
        if (!val)
                return -ENOMEM;
        return json_object_object_add(obj, key, val) < 0 ? -ENOMEM : 0;
}

static struct json_object *strv_to_json(char * const *v) {
        struct json_object *a = json_object_new_array();
        for (char * const *s = v; a && s && *s; s++)
                if (json_object_array_add(a, json_object_new_string(*s)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

/* The bundle's process with S's command, directory and environment: a
 * memfd runsc reads as --process. Run directly, its environment is the
 * bundle's with the request's entries over it. Through the wrapper it is
 * the bundle's HOME (else runsc would make one up) and the request's
 * entries; the worker's own comes from its first process inside
 * (sandbox-exec-limits --init-env reads /proc/1/environ, as the worker),
 * since a pooled sandbox's bundle holds the pool's environment and not the
 * claimed job's. */
static int process_file(const LaunchArgs *a, const SbxExecHeader *h, const SbxExecSpawn *s, int *ret) {
        char path[PATH_MAX], nproc[48];
        struct json_object *config, *process, *env, *args, *cwd, *new_env;
        _cleanup_strv_free_ char **argv = NULL;
        const char *text;
        int fd, r = 0;

        snprintf(path, sizeof(path), LAUNCH_BUNDLES_DIR "/%s/config.json", a->id);
        config = json_object_from_file(path);
        if (!config)
                return -EIO;
        if (!json_object_object_get_ex(config, "process", &process) || !json_object_is_type(process, json_type_object) ||
            !json_object_object_get_ex(process, "env", &env) || !json_object_is_type(env, json_type_array) ||
            !json_object_object_get_ex(process, "cwd", &cwd)) {
                json_object_put(config);
                return -EBADMSG;
        }
        bool direct = exec_direct(a, h);
        new_env = json_object_new_array();
        for (size_t i = 0; new_env && r >= 0 && i < json_object_array_length(env); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(env, i));
                const char *eq = e ? strchr(e, '=') : NULL;
                if (!eq || strv_env_has(s->env, e, (size_t) (eq - e)) || (!direct && !startswith(e, "HOME=")))
                        continue;
                r = json_object_array_add(new_env, json_object_new_string(e)) < 0 ? -ENOMEM : 0;
        }
        for (char **e = s->env; new_env && r >= 0 && e && *e; e++)
                r = json_object_array_add(new_env, json_object_new_string(*e)) < 0 ? -ENOMEM : 0;
        if (!new_env)
                r = -ENOMEM;
        if (r >= 0)
                r = json_add(process, "env", new_env);
        /* The lower of the launcher's --pids and the worker's TasksMax from
         * the request: a claimed pool sandbox's launcher has the pool's. */
        uint64_t pids = a->pids;
        if (h->value > 0 && (uint64_t) h->value < pids)
                pids = (uint64_t) h->value;
        snprintf(nproc, sizeof(nproc), "--nproc=%" PRIu64, pids);
        if (r >= 0 && !direct &&
            (strv_extend(&argv, EXEC_WRAPPER) < 0 || strv_extend(&argv, nproc) < 0 ||
             strv_extend(&argv, "--init-env") < 0 || strv_extend(&argv, "--") < 0))
                r = -ENOMEM;
        for (char **v = s->argv; r >= 0 && *v; v++)
                r = strv_extend(&argv, *v);
        args = r >= 0 ? strv_to_json(argv) : NULL;
        if (r >= 0)
                r = json_add(process, "args", args);
        if (r >= 0 && s->cwd[0])
                r = json_add(process, "cwd", json_object_new_string(s->cwd));
        if (r >= 0)
                r = json_add(process, "terminal", json_object_new_boolean(!!(h->flags & SBX_EXEC_TTY)));
        text = r >= 0 ? json_object_to_json_string_ext(process, JSON_C_TO_STRING_PLAIN) : NULL;
        fd = text ? memfd_create("sandboxd-exec-process", MFD_CLOEXEC) : -1;
        if (fd >= 0 && write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                fd = safe_close(fd);
        json_object_put(config);
        if (fd < 0)
                return r < 0 ? r : -EIO;
        *ret = fd;
        return 0;
}

/* Whether runsc's state file STATE says the container runs ("status" of
 * its JSON): before that runsc exec fails as the sandbox comes up. */
static bool container_running(const char *state) {
        struct json_object *o = json_object_from_file(state), *status;
        bool running = o && json_object_object_get_ex(o, "status", &status) &&
                       streq_ptr(json_object_get_string(status), "running");

        json_object_put(o);
        return running;
}

static void runsc_args(const LaunchArgs *a, char *root, size_t root_size, char *platform, size_t platform_size) {
        runtime_root_arg(a, root, root_size);
        snprintf(platform, platform_size, "--platform=%s", a->platform);
}

/* runsc kill --pid=PID sandbox-ID SIG: runsc exec forwards signals only to
 * a terminal's foreground process. */
static void kill_inside(const LaunchArgs *a, pid_t pid, int sig) {
        char root[64], platform[64], pid_arg[32], sig_arg[16], container[64];
        pid_t child;

        runsc_args(a, root, sizeof(root), platform, sizeof(platform));
        snprintf(pid_arg, sizeof(pid_arg), "--pid=%d", (int) pid);
        snprintf(sig_arg, sizeof(sig_arg), "%d", sig);
        snprintf(container, sizeof(container), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        char *argv[] = { (char *) a->runtime_path, root, (char *) "--ignore-cgroups", platform, (char *) "kill",
                         pid_arg, container, sig_arg, NULL };
        child = fork();
        if (child == 0) {
                int null = open("/dev/null", O_RDWR);
                if (null >= 0) {
                        dup2(null, 0);
                        dup2(null, 1);
                        dup2(null, 2);
                }
                execve(argv[0], argv, launch_runtime_environment);
                _exit(127);
        }
        if (child > 0)
                (void) waitpid(child, NULL, 0);
}

static _Noreturn void exec_runsc(const LaunchArgs *a, int process_fd, const char *pid_file, const int *fds,
                                 const char *pts) {
        char root[64], platform[64], process[64], pidf[PATH_MAX + 32], container[64];
        sigset_t none;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) setsid();
        if (pts) {
                /* The session's terminal: the host's line discipline sends
                 * Ctrl-C and window changes to runsc exec, which passes them
                 * to the sandbox's foreground process. */
                int t = open(pts, O_RDWR);
                if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0 || dup2(t, 0) < 0 || dup2(t, 1) < 0 || dup2(t, 2) < 0)
                        _exit(LAUNCH_EXIT_SETUP);
        } else {
                int moved[3];
                for (int i = 0; i < 3; i++)
                        if ((moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10)) < 0)
                                _exit(LAUNCH_EXIT_SETUP);
                for (int i = 0; i < 3; i++)
                        if (dup2(moved[i], i) < 0)
                                _exit(LAUNCH_EXIT_SETUP);
        }
        /* Its own copy, at a number it names, and not close-on-exec. */
        int pf = fcntl(process_fd, F_DUPFD, 3);
        if (pf < 0)
                _exit(LAUNCH_EXIT_SETUP);
        runsc_args(a, root, sizeof(root), platform, sizeof(platform));
        snprintf(process, sizeof(process), "--process=/proc/self/fd/%d", pf);
        snprintf(pidf, sizeof(pidf), "--internal-pid-file=%s", pid_file);
        snprintf(container, sizeof(container), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        char *argv[] = { (char *) a->runtime_path, root, (char *) "--ignore-cgroups", platform, (char *) "exec",
                         process, pidf, container, NULL };
        execve(argv[0], argv, launch_runtime_environment);
        _exit(LAUNCH_EXIT_SETUP);
}

static int open_terminal(const SbxExecHeader *h, int *ret_master, char *pts, size_t size) {
        struct winsize ws = { .ws_row = h->rows, .ws_col = h->cols };
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

        if (m < 0)
                return -errno;
        if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, pts, size) != 0 ||
            (ws.ws_row > 0 && ioctl(m, TIOCSWINSZ, &ws) < 0)) {
                int r = -errno;
                close(m);
                return r;
        }
        *ret_master = m;
        return 0;
}

/* runsc's exit status as a wait status of the process: runsc exits 128+N
 * for a process killed by signal N (so does a process that exits 128+N
 * itself: the two are not told apart). */
static void report_exit(int conn, int status) {
        int code = CLD_EXITED, value = 0;

        if (WIFEXITED(status)) {
                value = WEXITSTATUS(status);
                if (value > 128 && value < 128 + 65) {
                        code = CLD_KILLED;
                        value -= 128;
                }
        } else if (WIFSIGNALED(status)) {
                code = CLD_KILLED;
                value = WTERMSIG(status);
        }
        send_simple(conn, SBX_EXEC_EXITED, code, value, NULL, 0);
}

static _Noreturn void handle(const LaunchArgs *a, int conn) {
        _cleanup_free_ char *buf = malloc(SBX_EXEC_STRINGS_MAX);
        _cleanup_close_ int master = -1, process_fd = -1;
        int fds[3] = { -1, -1, -1 }, sfd, status = 0;
        char pid_file[PATH_MAX], pts[64];
        SbxExecSpawn s = {};
        SbxExecHeader h;
        size_t len = 0, n_fds = 0;
        pid_t runsc, inside;
        bool reaped = false;
        sigset_t chld;
        int r;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        sfd = signalfd(-1, &chld, SFD_CLOEXEC);
        if (!buf || sfd < 0)
                _exit(EXIT_FAILURE);
        r = sbx_exec_recv(conn, &h, buf, SBX_EXEC_STRINGS_MAX, &len, fds, 3, &n_fds);
        if (r <= 0 || sbx_exec_spawn_decode(&h, buf, len, &s) < 0 || n_fds != ((h.flags & SBX_EXEC_TTY) ? 0 : 3)) {
                send_simple(conn, SBX_EXEC_FAILED, EBADMSG, 0, NULL, 0);
                _exit(EXIT_FAILURE);
        }
        r = process_file(a, &h, &s, &process_fd);
        if (r >= 0 && (h.flags & SBX_EXEC_TTY))
                r = open_terminal(&h, &master, pts, sizeof(pts));
        if (r < 0) {
                send_simple(conn, SBX_EXEC_FAILED, -r, 0, NULL, 0);
                _exit(EXIT_FAILURE);
        }
        snprintf(pid_file, sizeof(pid_file), LAUNCH_BUNDLES_DIR "/%s/exec-%d.pid", a->id, (int) getpid());
        /* An Exec right behind CreateWorker can come before runsc has made
         * the sandbox (the unit's start job is done when the launcher
         * runs): runsc exec then fails at once, and is tried again for a
         * while. Nothing of the request was read by then. */
        uint64_t give_up = now_usec(CLOCK_MONOTONIC) + PID_WAIT_USEC;
        char state[PATH_MAX];
        snprintf(state, sizeof(state), LAUNCH_RUNSC_ROOT "/" LAUNCH_CONTAINER_PREFIX "%s_sandbox:"
                 LAUNCH_CONTAINER_PREFIX "%s.state", a->id, a->id);
        /* First until runsc has written the container's state: before that
         * every try only says so on the process's stderr. */
        while (access(state, F_OK) < 0 && now_usec(CLOCK_MONOTONIC) < give_up)
                usleep(20 * 1000);
        for (;;) {
                runsc = fork();
                if (runsc == 0)
                        exec_runsc(a, process_fd, pid_file, fds, master >= 0 ? pts : NULL);
                if (runsc < 0) {
                        send_simple(conn, SBX_EXEC_FAILED, errno, 0, NULL, 0);
                        _exit(EXIT_FAILURE);
                }
                inside = exec_started_wait(runsc, exec_started_read_pid_file, pid_file, PID_WAIT_USEC, &status,
                                           &reaped);
                (void) unlink(pid_file);
                /* In a running container a failed runsc exec is the
                 * command's (runsc could not load it: no wrapper inside
                 * starts first to report it), and final. */
                if (inside > 0 || now_usec(CLOCK_MONOTONIC) >= give_up || container_running(state))
                        break;
                if (!reaped) {
                        (void) kill(runsc, SIGKILL);
                        (void) waitpid(runsc, NULL, 0);
                }
                usleep(100 * 1000);
        }
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (inside <= 0) {
                /* runsc ended (or never said) before the process ran. */
                if (!reaped)
                        (void) kill(runsc, SIGKILL);
                send_simple(conn, SBX_EXEC_FAILED, ENOEXEC, 0, NULL, 0);
                _exit(EXIT_FAILURE);
        }
        send_simple(conn, SBX_EXEC_STARTED, inside, 0, master >= 0 ? &master : NULL, master >= 0 ? 1 : 0);
        master = safe_close(master);
        if (reaped) {
                /* It ran and ended before it was seen running. */
                report_exit(conn, status);
                _exit(EXIT_SUCCESS);
        }
        for (;;) {
                struct pollfd p[2] = { { .fd = conn, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };

                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents) {
                        struct signalfd_siginfo ssi;
                        (void) !read(sfd, &ssi, sizeof(ssi));
                }
                if (waitpid(runsc, &status, WNOHANG) == runsc) {
                        report_exit(conn, status);
                        _exit(EXIT_SUCCESS);
                }
                if (p[0].revents) {
                        SbxExecHeader m;
                        r = sbx_exec_recv(conn, &m, NULL, 0, NULL, NULL, 0, NULL);
                        if (r <= 0 && r != -EAGAIN)
                                break;
                        if (r > 0 && m.type == SBX_EXEC_SIGNAL && m.value > 0 && m.value < NSIG)
                                kill_inside(a, inside, m.value);
                }
        }
        /* sandboxd went: the process goes too. */
        kill_inside(a, inside, SIGKILL);
        (void) kill(runsc, SIGKILL);
        (void) waitpid(runsc, NULL, 0);
        _exit(EXIT_SUCCESS);
}

static _Noreturn void serve(const LaunchArgs *a, int listen_fd) {
        (void) prctl(PR_SET_NAME, "sandbox-exec-sv");
        signal(SIGCHLD, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        for (;;) {
                struct ucred cred;
                socklen_t l = sizeof(cred);
                int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                pid_t pid;

                if (conn < 0) {
                        if (errno != EINTR && errno != ECONNABORTED)
                                sleep(1);
                        continue;
                }
                if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0 || cred.uid != 0) {
                        close(conn);
                        continue;
                }
                pid = fork();
                if (pid == 0) {
                        close(listen_fd);
                        handle(a, conn);
                }
                if (pid < 0)
                        send_simple(conn, SBX_EXEC_FAILED, EAGAIN, 0, NULL, 0);
                close(conn);
        }
}

int launch_exec_start(const LaunchArgs *a, int listen_fd) {
        pid_t parent = getpid(), pid;

        if (listen_fd < 0)
                return 0;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* Gone with the launcher, which may have gone already. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(EXIT_SUCCESS);
                /* None of the worker's stdio: its channel's EOF is the sandbox's. */
                int null = open("/dev/null", O_RDWR);
                if (null >= 0) {
                        (void) dup2(null, 0);
                        (void) dup2(null, 1);
                        (void) dup2(null, 2);
                        if (null > 2)
                                close(null);
                }
                serve(a, listen_fd);
        }
        close(listen_fd);
        return 0;
}
