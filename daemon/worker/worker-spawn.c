/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>

#include "exec-proto.h"
#include "worker-spawn.h"
#include "worker.h"

struct WorkerProcess {
        Worker *worker;                 /* NULL once the worker let go of it */
        WorkerProcess *next;
        int fd;                         /* the exec channel's connection: this process */
        sd_event_source *io;
        pid_t pid;
        int tty_fd;
        bool started;
        bool done;                      /* its last callback was made */
        WorkerSpawnCallbacks cb;
        void *userdata;
};

static void unlink_from_worker(WorkerProcess *p) {
        Worker *w = p->worker;

        if (!w)
                return;
        for (WorkerProcess **i = &w->processes.list; *i; i = &(*i)->next)
                if (*i == p) {
                        *i = p->next;
                        w->processes.n--;
                        break;
                }
        p->next = NULL;
        p->worker = NULL;
        /* A process that ended is activity, as one that started was. */
        if (w->channel)
                channel_touch(w->channel);
}

/* Its last word: no more events, out of the worker's count. The callback
 * comes after this, and may free P. */
static void finish(WorkerProcess *p) {
        p->done = true;
        p->io = sd_event_source_disable_unref(p->io);
        p->fd = safe_close(p->fd);
        unlink_from_worker(p);
}

static void report_lost(WorkerProcess *p) {
        bool started = p->started;

        finish(p);
        if (!started)
                p->cb.started(p, -ECONNRESET, p->userdata);
        else
                p->cb.exited(p, CLD_KILLED, SIGKILL, p->userdata);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WorkerProcess *p = userdata;
        int tty[1] = { -1 };
        SbxExecHeader h;
        size_t n_fds = 0;
        int r;

        r = sbx_exec_recv(fd, &h, NULL, 0, NULL, tty, 1, &n_fds);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0) {
                report_lost(p);
                return 0;
        }
        if (h.type == SBX_EXEC_STARTED && !p->started && h.value > 0) {
                p->started = true;
                p->pid = h.value;
                p->tty_fd = n_fds > 0 ? tty[0] : -1;
                p->cb.started(p, 0, p->userdata);
                return 0;
        }
        for (size_t i = 0; i < n_fds; i++)
                safe_close(tty[i]);
        if (h.type == SBX_EXEC_FAILED && !p->started) {
                finish(p);
                p->cb.started(p, h.value > 0 ? -h.value : -EIO, p->userdata);
        } else if (h.type == SBX_EXEC_EXITED && p->started) {
                finish(p);
                p->cb.exited(p, h.value, h.status, p->userdata);
        } else
                report_lost(p);
        return 0;
}

static int connect_channel(const char *id, int *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), SBX_EXEC_SOCKET_DIR "/%s.sock", id) >=
            sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

static int check_worker(Worker *w, const WorkerSpawn *req, SbxError *error) {
        switch (w->state) {
        case WORKER_RUNNING:
                break;
        case WORKER_SUSPENDING:
        case WORKER_SUSPENDED:
        case WORKER_RESUMING:
                return sbx_error_set(error, -EAGAIN, SBX_ERROR_SUSPENDED, "Worker %s is %s", w->id,
                                     worker_state_to_string(w->state));
        default:
                return sbx_error_set(error, -ESRCH, SBX_ERROR_NOT_RUNNING, "Worker %s is %s", w->id,
                                     worker_state_to_string(w->state));
        }
        if (w->runtime != SBX_RUNTIME_SYSTEMD && w->runtime != SBX_RUNTIME_WASM && w->runtime != SBX_RUNTIME_RUNSC)
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "Worker %s runs under %s, which cannot start another process", w->id,
                                     sbx_runtime_to_string(w->runtime));
        if (w->processes.n >= WORKER_PROCESSES_MAX)
                return sbx_error_set(error, -EUSERS, SBX_ERROR_TOO_MANY_PROCESSES,
                                     "Worker %s runs %u processes already, the most it may", w->id,
                                     w->processes.n);
        if (!req->argv || !req->argv[0] || req->argv[0][0] != '/')
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                     "The command must be an absolute path");
        if (!req->tty && (req->stdin_fd < 0 || req->stdout_fd < 0 || req->stderr_fd < 0))
                return sbx_error_set(error, -EBADF, SBX_ERROR_INVALID_ARGUMENT, "A process needs its stdio");
        return 0;
}

int worker_spawn_inside(Worker *w, const WorkerSpawn *req, const WorkerSpawnCallbacks *cb, void *userdata,
                        WorkerProcess **ret, SbxError *error) {
        _cleanup_free_ char *payload = NULL;
        _cleanup_close_ int fd = -1;
        WorkerProcess *p;
        size_t len;
        int r;

        assert(w && req && cb && cb->started && cb->exited && ret);
        r = check_worker(w, req, error);
        if (r < 0)
                return r;
        r = sbx_exec_spawn_encode(req->working_directory, req->argv, req->environment, &payload, &len);
        if (r == -E2BIG)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_ARGUMENT,
                                     "The command, environment and working directory take more than %u bytes",
                                     SBX_EXEC_STRINGS_MAX);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_NOT_RUNNING, "Cannot start a process: %s", strerror(-r));
        r = connect_channel(w->id, &fd);
        if (r < 0)
                /* A worker started by a sandboxd without the channel, or one
                 * whose supervisor the workload killed. */
                return sbx_error_set(error, r, SBX_ERROR_NOT_SUPPORTED,
                                     "Worker %s cannot start another process (its exec channel: %s)", w->id,
                                     strerror(-r));
        SbxExecHeader h = {
                .type = SBX_EXEC_SPAWN,
                .flags = req->tty ? SBX_EXEC_TTY : 0,
                .n_argv = (uint32_t) strv_length(req->argv),
                .n_env = (uint32_t) strv_length(req->environment),
                .rows = req->tty_rows,
                .cols = req->tty_cols,
        };
        const int fds[3] = { req->stdin_fd, req->stdout_fd, req->stderr_fd };
        r = sbx_exec_send(fd, &h, payload, len, fds, req->tty ? 0 : 3);
        erase_and_free(TAKE_PTR(payload), len);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_NOT_SUPPORTED,
                                     "Cannot ask worker %s to start a process: %s", w->id, strerror(-r));
        p = calloc(1, sizeof(*p));
        if (!p)
                return sbx_error_set(error, -ENOMEM, SBX_ERROR_NOT_RUNNING, "Out of memory");
        *p = (WorkerProcess) { .worker = w, .fd = TAKE_FD(fd), .tty_fd = -1, .cb = *cb, .userdata = userdata };
        r = sd_event_add_io(worker_event(w), &p->io, p->fd, EPOLLIN, on_io, p);
        if (r < 0) {
                safe_close(p->fd);
                free(p);
                return sbx_error_set(error, r, SBX_ERROR_NOT_RUNNING, "Cannot watch the process: %s", strerror(-r));
        }
        (void) sd_event_source_set_description(p->io, "worker-process");
        p->next = w->processes.list;
        w->processes.list = p;
        w->processes.n++;
        if (w->channel)
                channel_touch(w->channel);
        *ret = p;
        return 0;
}

WorkerProcess *worker_process_free(WorkerProcess *p) {
        if (!p)
                return NULL;
        /* The supervisor kills a process whose connection closed. */
        p->io = sd_event_source_disable_unref(p->io);
        p->fd = safe_close(p->fd);
        p->tty_fd = safe_close(p->tty_fd);
        unlink_from_worker(p);
        free(p);
        return NULL;
}

int worker_process_signal(WorkerProcess *p, int sig) {
        SbxExecHeader h = { .type = SBX_EXEC_SIGNAL, .value = sig };

        if (p->done || !p->started)
                return -ESRCH;
        if (sig <= 0 || sig >= NSIG)
                return -EINVAL;
        return sbx_exec_send(p->fd, &h, NULL, 0, NULL, 0);
}

int worker_process_resize(WorkerProcess *p, uint16_t rows, uint16_t cols) {
        struct winsize ws = { .ws_row = rows, .ws_col = cols };

        if (p->tty_fd < 0)
                return -ENOTTY;
        return ioctl(p->tty_fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

int worker_process_tty_fd(const WorkerProcess *p) { return p->tty_fd; }
pid_t worker_process_pid(const WorkerProcess *p) { return p->pid; }
Worker *worker_process_worker(const WorkerProcess *p) { return p->worker; }
bool worker_process_running(const WorkerProcess *p) { return !p->done; }
unsigned worker_process_count(const Worker *w) { return w->processes.n; }

void worker_processes_end(Worker *w) {
        while (w->processes.list)
                report_lost(w->processes.list);
}

int worker_exec_socket_unit_name(const char *id, char **ret) {
        return asprintf(ret, "sandbox-%s.socket", id) < 0 ? -ENOMEM : 0;
}

int worker_exec_append_dependency(sd_bus_message *m, const char *id) {
        _cleanup_free_ char *name = NULL;
        int r;

        if (worker_exec_socket_unit_name(id, &name) < 0)
                return -ENOMEM;
        /* Listening before the worker runs, so its supervisor gets it. */
        r = sd_bus_message_append(m, "(sv)", "Requires", "as", 1, name);
        return r < 0 ? r : sd_bus_message_append(m, "(sv)", "After", "as", 1, name);
}

int worker_exec_append_aux_unit(sd_bus_message *m, const char *id, const char *unit) {
        _cleanup_free_ char *name = NULL, *path = NULL, *description = NULL;
        int r;

        if (worker_exec_socket_unit_name(id, &name) < 0 || asprintf(&path, SBX_EXEC_SOCKET_DIR "/%s.sock", id) < 0 ||
            asprintf(&description, "sandboxd exec channel of worker %s", id) < 0)
                return -ENOMEM;
        r = sd_bus_message_open_container(m, 'r', "sa(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        /* Root's alone (PID 1 makes it, 0600, in a 0700 directory of
         * root's), so the worker can never reach its own supervisor. Bound
         * to the worker's unit: it goes when the worker goes, and a
         * connection can never start the worker again. */
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                          "Description", "s", description,
                                          "Listen", "a(ss)", 1, "SequentialPacket", path,
                                          "SocketMode", "u", 0600,
                                          "DirectoryMode", "u", 0700,
                                          "RemoveOnStop", "b", 1,
                                          "FileDescriptorName", "s", SBX_EXEC_FD_NAME,
                                          "BindsTo", "as", 1, unit);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}
