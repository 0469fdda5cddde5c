/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Another process inside a running worker: what Worker.Exec and the Files
 * API's helpers stand on. The process is started by something that already
 * is the worker (the exec channel, shared/exec-proto.h): for trusted and
 * wasm workers the supervisor sandbox-exec leaves in the unit, for gVisor
 * workers the launcher's `runsc exec` into the worker's own sandbox. So it
 * has the worker's UID and GID, namespaces, cgroup, seccomp filter,
 * NoNewPrivs and capabilities, counts against its TasksMax, MemoryMax and
 * CPU quota (gVisor: the sandbox's RLIMIT_NPROC), and dies with the unit.
 * sandboxd itself gains no privilege for it.
 *
 * Asynchronous and on the worker's event loop: worker_spawn_inside() sends
 * the request and returns; `started` comes once the process runs (or could
 * not), then `exited` once it ended, each exactly once, in that order
 * (`exited` never comes after a failed start). The WorkerProcess belongs to
 * the caller until worker_process_free(), which ends a process still
 * running (SIGKILL to its session) and may be called from the callbacks.
 * A worker that ends ends its processes: `exited` comes for each (killed by
 * SIGKILL if the supervisor went first); the caller frees them. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "util.h"

typedef struct Worker Worker;
typedef struct WorkerProcess WorkerProcess;

/* At most this many processes per worker at once (Exec and file helpers
 * together): TooManyProcesses beyond. */
#define WORKER_PROCESSES_MAX 16

typedef struct WorkerSpawn {
        /* argv[0] an absolute path as the worker sees it (bare names are
         * the caller's to resolve: worker_view_find_executable()). */
        char * const *argv;
        /* KEY=VALUE entries over the worker's own environment (HOME, the
         * proxy variables, CREDENTIALS_DIRECTORY, the spec's Environment);
         * NULL for none. Sent over the exec channel only: never in a unit,
         * a property or a command line. */
        char * const *environment;
        /* Absolute, in the worker's view; NULL: the worker's home. */
        const char *working_directory;
        /* Without tty: the process's stdin, stdout and stderr, borrowed
         * (the call sends duplicates; close yours when it returns). */
        int stdin_fd, stdout_fd, stderr_fd;
        /* Instead: a terminal made inside the worker; its master fd comes
         * with `started` (worker_process_tty_fd()). */
        bool tty;
        uint16_t tty_rows, tty_cols;    /* 0: the kernel's default */
} WorkerSpawn;

typedef struct WorkerSpawnCallbacks {
        /* ERROR 0: it runs (worker_process_pid()); else a negative errno
         * and it never ran: -ENOENT or -EACCES from its execve(), -ENOTDIR
         * or -ENOENT from its working directory, -EAGAIN the worker's
         * TasksMax, -ECONNRESET the worker went. */
        void (*started)(WorkerProcess *p, int error, void *userdata);
        /* CODE is CLD_EXITED (STATUS its exit status) or CLD_KILLED /
         * CLD_DUMPED (STATUS the signal). */
        void (*exited)(WorkerProcess *p, int code, int status, void *userdata);
} WorkerSpawnCallbacks;

/* Starts REQ in W. W must be running: NotRunning (starting, stopping,
 * ended), Suspended (suspending, suspended, resuming), NotSupported (a
 * runtime without an exec channel: Kata), TooManyProcesses (W runs
 * WORKER_PROCESSES_MAX already), InvalidArgument (the strings are above
 * SBX_EXEC_STRINGS_MAX); these set ERROR and change nothing. CB and
 * USERDATA are kept until worker_process_free(). */
int worker_spawn_inside(Worker *w, const WorkerSpawn *req, const WorkerSpawnCallbacks *cb, void *userdata,
                        WorkerProcess **ret, SbxError *error);
/* Ends a running process (SIGKILL) and frees P; NULL is fine. */
WorkerProcess *worker_process_free(WorkerProcess *p);
static inline void worker_process_freep(WorkerProcess **p) { worker_process_free(*p); }

/* Sends SIG to the process (not its children): -ESRCH once it ended. */
int worker_process_signal(WorkerProcess *p, int sig);
/* A tty's window size (TIOCSWINSZ on the master): -ENOTTY without one. */
int worker_process_resize(WorkerProcess *p, uint16_t rows, uint16_t cols);
/* The tty's master fd, owned by P (dup it to pass it on); -1 without one
 * or before `started`. */
int worker_process_tty_fd(const WorkerProcess *p);
/* Its pid in the worker's view (gVisor: the sandbox's); 0 before `started`. */
pid_t worker_process_pid(const WorkerProcess *p);
Worker *worker_process_worker(const WorkerProcess *p);
bool worker_process_running(const WorkerProcess *p);
/* How many processes W runs now (started or starting). */
unsigned worker_process_count(const Worker *w);
/* W ended: its processes are told (`exited`, SIGKILL) unless they were. */
void worker_processes_end(Worker *w);

/* sandbox-ID.socket, the exec channel's unit (exec-proto.h). */
int worker_exec_socket_unit_name(const char *id, char **ret);
/* Appends the worker unit's dependency on it (inside the unit's a(sv)). */
int worker_exec_append_dependency(sd_bus_message *m, const char *id);
/* Appends the socket unit as an aux unit (inside a(sa(sv))): SOCK_SEQPACKET
 * at SBX_EXEC_SOCKET_DIR/ID.sock, 0600 root, bound to UNIT. */
int worker_exec_append_aux_unit(sd_bus_message *m, const char *id, const char *unit);
