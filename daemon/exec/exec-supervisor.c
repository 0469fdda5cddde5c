/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exec supervisor of a trusted or wasm worker (exec-proto.h): a process
 * sandbox-exec forks before it writes its readiness token, so it is the
 * unit's own process: the worker's UID and GID, every namespace, the cgroup
 * (TasksMax, MemoryMax and CPUQuota count what it starts), the seccomp
 * filter, NoNewPrivs and the (empty) capability sets, inherited and not
 * re-created. It is a grandchild (reparented away from the workload, which
 * stays the unit's main process and never sees it as a child), holds no
 * stdio of the worker's, and is not dumpable, so the workload (the same UID)
 * can neither ptrace it nor take its listening fd from /proc; it can kill
 * it, which only takes Exec away from itself. Each connection gets a
 * handler process of its own, which starts the one process, reports it and
 * waits for it. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>

#include "exec-proto.h"
#include "exec-supervisor.h"
#include "util.h"

extern char **environ;

static void close_fds_from(int lowest, int keep) {
        /* close_range() would do, but the seccomp filter of an older systemd
         * may not know it; /proc/self/fd is always there. */
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                int fd = atoi(de->d_name);
                if (de->d_name[0] != '.' && fd >= lowest && fd != keep && fd != dirfd(d))
                        close(fd);
        }
        closedir(d);
}

/* The worker's own environment with REQ's entries over it (the same key:
 * the request's wins). */
static char **build_env(char **req) {
        size_t n = strv_length(environ) + strv_length(req);
        char **v = calloc(n + 1, sizeof(char *));
        size_t k = 0;

        if (!v)
                return NULL;
        for (char **e = environ; e && *e; e++) {
                size_t klen = strcspn(*e, "=");
                bool overridden = false;
                for (char **r = req; r && *r && !overridden; r++)
                        overridden = strncmp(*r, *e, klen) == 0 && (*r)[klen] == '=';
                if (!overridden)
                        v[k++] = *e;
        }
        for (char **r = req; r && *r; r++)
                v[k++] = *r;
        return v;
}

/* In the child: becomes the process. Writes errno to ERR_FD if it cannot. */
static _Noreturn void become_process(const SbxExecSpawn *s, const int *fds, const char *pts, int err_fd) {
        sigset_t none;
        char **env;
        int e;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        /* A session of its own: a terminal becomes its controlling one, and
         * a signal to its group reaches neither the supervisor nor the workload. */
        if (setsid() < 0)
                goto fail;
        if (pts) {
                int t = open(pts, O_RDWR);      /* the session leader's first terminal: its controlling one */
                if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0)
                        goto fail;
                if (dup2(t, 0) < 0 || dup2(t, 1) < 0 || dup2(t, 2) < 0)
                        goto fail;
                if (t > 2)
                        close(t);
        } else {
                int moved[3];
                /* Out of the way of 0-2 first, then into place. */
                for (int i = 0; i < 3; i++)
                        if ((moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10)) < 0)
                                goto fail;
                for (int i = 0; i < 3; i++)
                        if (dup2(moved[i], i) < 0)
                                goto fail;
        }
        close_fds_from(3, err_fd);
        if (s->cwd[0] && chdir(s->cwd) < 0)
                goto fail;
        env = build_env(s->env);
        if (!env) {
                errno = ENOMEM;
                goto fail;
        }
        execve(s->argv[0], s->argv, env);
fail:
        e = errno;
        (void) !write(err_fd, &e, sizeof(e));
        _exit(127);
}

static int open_terminal(const SbxExecHeader *h, int *ret_master, char *pts, size_t size) {
        struct winsize ws = { .ws_row = h->rows, .ws_col = h->cols };
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

        if (m < 0)
                return -errno;
        if (unlockpt(m) < 0 || ptsname_r(m, pts, size) != 0 || (ws.ws_row > 0 && ioctl(m, TIOCSWINSZ, &ws) < 0)) {
                int r = -errno;
                close(m);
                return r;
        }
        *ret_master = m;
        return 0;
}

/* Starts the process of one request; its pid, or a negative errno. */
static pid_t start(const SbxExecHeader *h, const SbxExecSpawn *s, const int *fds, int *ret_master) {
        _cleanup_close_ int master = -1;
        int err[2], e = 0;
        char pts[64];
        pid_t pid;
        ssize_t n;

        if (h->flags & SBX_EXEC_TTY) {
                int r = open_terminal(h, &master, pts, sizeof(pts));
                if (r < 0)
                        return r;
        }
        if (pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                e = errno;
                close(err[0]);
                close(err[1]);
                return -e;
        }
        if (pid == 0) {
                close(err[0]);
                become_process(s, fds, master >= 0 ? pts : NULL, err[1]);
        }
        close(err[1]);
        do
                n = read(err[0], &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        close(err[0]);
        if (n == sizeof(e)) {
                (void) waitpid(pid, NULL, 0);
                return -(e ?: EIO);
        }
        *ret_master = TAKE_FD(master);
        return pid;
}

static void send_simple(int conn, SbxExecType type, int value, int status, const int *fds, size_t n_fds) {
        SbxExecHeader h = { .type = type, .value = value, .status = status };
        (void) sbx_exec_send(conn, &h, NULL, 0, fds, n_fds);
}

/* Waits for PID, passing SIGNAL requests on; a closed connection kills it. */
static void follow(int conn, pid_t pid, int sfd) {
        for (;;) {
                struct pollfd p[2] = { { .fd = conn, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                siginfo_t si = {};

                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents) {
                        struct signalfd_siginfo ssi;
                        (void) !read(sfd, &ssi, sizeof(ssi));
                }
                if (waitid(P_PID, pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == pid) {
                        send_simple(conn, SBX_EXEC_EXITED, si.si_code, si.si_status, NULL, 0);
                        return;
                }
                if (p[0].revents) {
                        SbxExecHeader h;
                        int r = sbx_exec_recv(conn, &h, NULL, 0, NULL, NULL, 0, NULL);
                        if (r <= 0 && r != -EAGAIN)
                                break;
                        if (h.type == SBX_EXEC_SIGNAL && h.value > 0 && h.value < NSIG)
                                (void) kill(pid, h.value);
                }
        }
        /* sandboxd went: the process goes too, and all it started in its session. */
        (void) kill(-pid, SIGKILL);
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

static _Noreturn void handle(int conn) {
        _cleanup_free_ char *buf = malloc(SBX_EXEC_STRINGS_MAX);
        _cleanup_close_ int master = -1;
        int fds[3] = { -1, -1, -1 }, sfd;
        SbxExecSpawn s = {};
        SbxExecHeader h;
        size_t len = 0, n_fds = 0;
        sigset_t chld;
        pid_t pid;
        int r;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        sfd = signalfd(-1, &chld, SFD_CLOEXEC);
        if (!buf || sfd < 0)
                _exit(EXIT_FAILURE);
        r = sbx_exec_recv(conn, &h, buf, SBX_EXEC_STRINGS_MAX, &len, fds, 3, &n_fds);
        if (r <= 0 || sbx_exec_spawn_decode(&h, buf, len, &s) < 0 ||
            n_fds != ((h.flags & SBX_EXEC_TTY) ? 0 : 3)) {
                send_simple(conn, SBX_EXEC_FAILED, EBADMSG, 0, NULL, 0);
                _exit(EXIT_FAILURE);
        }
        pid = start(&h, &s, fds, &master);
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (pid < 0) {
                send_simple(conn, SBX_EXEC_FAILED, -pid, 0, NULL, 0);
                _exit(EXIT_FAILURE);
        }
        send_simple(conn, SBX_EXEC_STARTED, pid, 0, master >= 0 ? &master : NULL, master >= 0 ? 1 : 0);
        master = safe_close(master);
        follow(conn, pid, sfd);
        _exit(EXIT_SUCCESS);
}

/* Only root (sandboxd) can reach the socket's path; a connection from
 * anyone else is a bug somewhere, refused all the same. */
static bool peer_is_root(int conn) {
        struct ucred cred;
        socklen_t l = sizeof(cred);

        return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &l) == 0 && cred.uid == 0;
}

static _Noreturn void supervise(int listen_fd) {
        int null = open("/dev/null", O_RDWR);

        (void) prctl(PR_SET_DUMPABLE, 0);
        (void) prctl(PR_SET_NAME, "sandbox-exec-sv");
        (void) setsid();
        /* None of the worker's stdio: its channel sees EOF when the workload
         * and what it started are done, not when the supervisor is. */
        if (null >= 0) {
                (void) dup2(null, 0);
                (void) dup2(null, 1);
                (void) dup2(null, 2);
        }
        close_fds_from(3, listen_fd);
        /* Handlers are reaped by the kernel. */
        signal(SIGCHLD, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        for (;;) {
                int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                pid_t pid;

                if (conn < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
                            errno == ENOBUFS || errno == ENOMEM) {
                                if (errno != EINTR && errno != ECONNABORTED)
                                        sleep(1);
                                continue;
                        }
                        _exit(EXIT_FAILURE);
                }
                if (!peer_is_root(conn)) {
                        close(conn);
                        continue;
                }
                pid = fork();
                if (pid == 0) {
                        close(listen_fd);
                        handle(conn);
                }
                if (pid < 0)    /* TasksMax reached: the request sees its connection close */
                        send_simple(conn, SBX_EXEC_FAILED, EAGAIN, 0, NULL, 0);
                close(conn);
        }
}

int exec_supervisor_start(int listen_fd) {
        pid_t pid;
        int status;

        /* The workload never inherits the listening fd; the supervisor keeps
         * it across fork(), not execve(). */
        if (fcntl(listen_fd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                pid_t s = fork();
                if (s == 0)
                        supervise(listen_fd);
                _exit(s < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        close(listen_fd);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EAGAIN;
}
