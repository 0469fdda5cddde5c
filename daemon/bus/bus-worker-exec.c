/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

#include "bus-manager.h"
#include "bus-polkit.h"
#include "bus-subscribe.h"
#include "bus-worker-exec.h"
#include "bus-worker.h"
#include "errors.h"
#include "event-util.h"
#include "manager.h"
#include "spec.h"
#include "worker-spawn.h"
#include "worker-view.h"

#define WORKER_PREFIX "/org/sandboxd1/worker"
#define PROCESS_IFACE "org.sandboxd1.Process"

typedef struct BusProcess {
        Manager *manager;
        struct BusProcess *next;
        WorkerProcess *process;
        sd_bus_message *request;        /* the Exec call, until the process runs */
        int fds[3];                     /* our ends, until the reply carries them */
        char worker_id[WORKER_ID_LEN + 1];
        uid_t owner;                    /* the worker's, for who may see this */
        uid_t caller;
        uint64_t n;
        char *path;
        char *command;                  /* argv[0] as run */
        bool tty;
        bool exported;
        const char *state;              /* "starting", "running", "exited" */
        pid_t pid;
        int exit_status;                /* -1 until exited; 128+N for signal N */
        int exit_signal;                /* 0 unless killed by a signal */
        uint64_t started_realtime;
        uint64_t exited_realtime;
        sd_event_source *timeout;
        sd_event_source *linger;
} BusProcess;

static BusProcess **process_list(Manager *m) {
        return &m->bus_state->processes;
}

static BusProcess *bus_process_free(BusProcess *p) {
        if (!p)
                return NULL;
        for (BusProcess **i = process_list(p->manager); *i; i = &(*i)->next)
                if (*i == p) {
                        *i = p->next;
                        break;
                }
        if (p->exported)
                bus_emit_interfaces_removed(p->manager, AUDIENCE_WORKER, p->owner, p->path, PROCESS_IFACE);
        if (p->request)
                (void) sd_bus_reply_method_errorf(p->request, SBX_ERROR_NOT_RUNNING, "The worker went");
        sd_bus_message_unref(p->request);
        for (int i = 0; i < 3; i++)
                safe_close(p->fds[i]);
        worker_process_free(p->process);
        sd_event_source_disable_unref(p->timeout);
        sd_event_source_disable_unref(p->linger);
        free(p->path);
        free(p->command);
        free(p);
        return NULL;
}

int bus_process_path_worker_id(const char *path, char **ret_id) {
        _cleanup_free_ char *id = NULL, *n = NULL;
        int r;

        r = sd_bus_path_decode_many(path, WORKER_PREFIX "/%/process/%", &id, &n);
        if (r <= 0)
                return r < 0 ? 0 : r;
        *ret_id = TAKE_PTR(id);
        return 1;
}

static BusProcess *process_from_path(Manager *m, const char *path) {
        for (BusProcess *p = *process_list(m); p; p = p->next)
                if (p->exported && streq(p->path, path))
                        return p;
        return NULL;
}

static bool is_method_call(sd_bus_message *msg) {
        uint8_t type;
        return msg && sd_bus_message_get_type(msg, &type) >= 0 && type == SD_BUS_MESSAGE_METHOD_CALL;
}

/* As the worker's own object: bus_worker_filter() asked polkit for the
 * worker this path names; someone who may not see it finds nothing. */
int bus_process_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                     sd_bus_error *error) {
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        BusProcess *p = process_from_path(userdata, path);
        uid_t caller = UID_INVALID;

        if (!p)
                return 0;
        if (is_method_call(msg)) {
                (void) bus_caller_uid(msg, &caller);
                if (!bus_authorized(userdata, msg, caller, SBX_ACTION_MANAGE_WORKERS, p->owner))
                        return 0;
        }
        *found = p;
        return 1;
}

int bus_process_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        _cleanup_strv_free_ char **l = NULL;
        Manager *m = userdata;
        uid_t caller = UID_INVALID;

        if (msg)
                (void) bus_caller_uid(msg, &caller);
        for (BusProcess *p = *process_list(m); p; p = p->next) {
                if (!p->exported || (is_method_call(msg) &&
                                     !bus_authorized(m, msg, caller, SBX_ACTION_MANAGE_WORKERS, p->owner)))
                        continue;
                if (strv_extend(&l, p->path) < 0)
                        return -ENOMEM;
        }
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *nodes = TAKE_PTR(l);
        return 1;
}

static int property_get_worker(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusProcess *p = userdata;
        _cleanup_free_ char *o = NULL;

        if (asprintf(&o, WORKER_PREFIX "/%s", p->worker_id) < 0)
                return -ENOMEM;
        return sd_bus_message_append(reply, "o", o);
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusProcess *p = userdata;
        return sd_bus_message_append(reply, "s", p->state);
}

static int property_get_pid(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusProcess *p = userdata;
        return sd_bus_message_append(reply, "u", (uint32_t) p->pid);
}

static int property_get_tty(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusProcess *p = userdata;
        return sd_bus_message_append(reply, "b", p->tty);
}

static int method_signal(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        BusProcess *p = userdata;
        int32_t sig;
        int r;

        r = sd_bus_message_read(msg, "i", &sig);
        if (r < 0)
                return r;
        if (sig <= 0 || sig >= NSIG)
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_ARGUMENT, "%" PRIi32 " is not a signal", sig);
        if (!p->process || !worker_process_running(p->process))
                return sd_bus_error_setf(ret_error, SBX_ERROR_NOT_RUNNING, "Process %" PRIu64 " has exited", p->n);
        r = worker_process_signal(p->process, sig);
        if (r < 0)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NOT_RUNNING, "Cannot signal process %" PRIu64 ": %s",
                                         p->n, strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resize_tty(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        BusProcess *p = userdata;
        uint16_t rows, cols;
        int r;

        r = sd_bus_message_read(msg, "qq", &rows, &cols);
        if (r < 0)
                return r;
        if (!p->tty)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NOT_SUPPORTED, "Process %" PRIu64 " has no terminal",
                                         p->n);
        if (rows == 0 || cols == 0)
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_ARGUMENT, "A terminal has at least one row "
                                         "and one column");
        if (!p->process || !worker_process_running(p->process))
                return sd_bus_error_setf(ret_error, SBX_ERROR_NOT_RUNNING, "Process %" PRIu64 " has exited", p->n);
        r = worker_process_resize(p->process, rows, cols);
        if (r < 0)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NOT_RUNNING, "Cannot resize the terminal: %s",
                                         strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

const sd_bus_vtable process_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "t", NULL, offsetof(BusProcess, n), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Worker", "o", property_get_worker, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Command", "s", NULL, offsetof(BusProcess, command), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Tty", "b", property_get_tty, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CallerUID", "u", NULL, offsetof(BusProcess, caller), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("PID", "u", property_get_pid, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExitStatus", "i", NULL, offsetof(BusProcess, exit_status), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExitSignal", "i", NULL, offsetof(BusProcess, exit_signal), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("StartedUSec", "t", NULL, offsetof(BusProcess, started_realtime), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ExitedUSec", "t", NULL, offsetof(BusProcess, exited_realtime), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("Signal", SD_BUS_ARGS("i", signal), SD_BUS_NO_RESULT, method_signal,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResizeTty", SD_BUS_ARGS("q", rows, "q", columns), SD_BUS_NO_RESULT,
                                method_resize_tty, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Exited", SD_BUS_ARGS("i", status, "i", signal), 0),
        SD_BUS_VTABLE_END
};

static int on_linger(sd_event_source *s, uint64_t usec, void *userdata) {
        bus_process_free(userdata);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        BusProcess *p = userdata;

        log_struct(LOG_INFO, "Process started by Exec ran out of time, killing it",
                   "SANDBOXD_WORKER_ID", p->worker_id, "SANDBOXD_PROCESS", p->path, NULL);
        if (p->process)
                (void) worker_process_signal(p->process, SIGKILL);
        return 0;
}

static int build_exited(sd_bus_message *m, void *userdata) {
        BusProcess *p = userdata;
        return sd_bus_message_append(m, "ii", p->exit_status, p->exit_signal);
}

static void on_exited(WorkerProcess *wp, int code, int status, void *userdata) {
        BusProcess *p = userdata;
        char st[16], sig[16];

        p->state = "exited";
        p->exited_realtime = now_usec(CLOCK_REALTIME);
        p->exit_signal = code == CLD_EXITED ? 0 : status;
        p->exit_status = code == CLD_EXITED ? status : 128 + status;
        p->timeout = sd_event_source_disable_unref(p->timeout);
        snprintf(st, sizeof(st), "%d", p->exit_status);
        snprintf(sig, sizeof(sig), "%d", p->exit_signal);
        log_struct(LOG_INFO, "Process started by Exec exited",
                   "SANDBOXD_WORKER_ID", p->worker_id, "SANDBOXD_PROCESS", p->path,
                   "SANDBOXD_EXIT_STATUS", st, "SANDBOXD_EXIT_SIGNAL", sig, NULL);
        if (p->exported) {
                bus_emit_properties_changed(p->manager, AUDIENCE_WORKER, p->owner, p->path, PROCESS_IFACE,
                                            process_vtable, p,
                                            (char *[]) { (char *) "State", (char *) "ExitStatus",
                                                         (char *) "ExitSignal", (char *) "ExitedUSec", NULL });
                bus_emit_to_subscribers(p->manager, AUDIENCE_WORKER, p->owner, p->path, PROCESS_IFACE, "Exited",
                                        build_exited, p);
        }
        if (sd_event_add_time_relative(p->manager->event, &p->linger, CLOCK_MONOTONIC, PROCESS_LINGER_USEC,
                                       USEC_PER_SEC, on_linger, p) >= 0)
                (void) sd_event_source_set_description(p->linger, "process-linger");
        else
                bus_process_free(p);
}

static const char *start_error_name(int error) {
        switch (error) {
        case -ENOENT:
        case -EACCES:
        case -ENOEXEC:
        case -ENOTDIR:
                return SBX_ERROR_EXECUTABLE_NOT_FOUND;
        case -EAGAIN:
                return SBX_ERROR_TOO_MANY_PROCESSES;
        default:
                return SBX_ERROR_NOT_RUNNING;
        }
}

static void on_started(WorkerProcess *wp, int error, void *userdata) {
        BusProcess *p = userdata;
        int r;

        if (error < 0) {
                (void) sd_bus_reply_method_errorf(p->request, start_error_name(error),
                                                  "Cannot start %s in worker %s: %s", p->command, p->worker_id,
                                                  error == -EAGAIN ? "the worker runs as many tasks as it may"
                                                                   : strerror(-error));
                p->request = sd_bus_message_unref(p->request);
                p->process = NULL;      /* freed with P, just below */
                worker_process_free(wp);
                bus_process_free(p);
                return;
        }
        p->state = "running";
        p->pid = worker_process_pid(wp);
        p->started_realtime = now_usec(CLOCK_REALTIME);
        if (p->tty) {
                p->fds[0] = fcntl(worker_process_tty_fd(wp), F_DUPFD_CLOEXEC, 3);
                if (p->fds[0] < 0)
                        log_warning_errno(errno, "Cannot pass the terminal of %s on: %m", p->path);
        }
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        r = sd_bus_message_new_method_return(p->request, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "o", p->path);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "h");
        for (int i = 0; r >= 0 && i < (p->tty ? 1 : 3); i++)
                r = sd_bus_message_append(reply, "h", p->fds[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        for (int i = 0; i < 3; i++)
                p->fds[i] = safe_close(p->fds[i]);
        p->request = sd_bus_message_unref(p->request);
        if (r < 0) {
                log_warning_errno(r, "Cannot answer the Exec of %s, ending it: %m", p->path);
                bus_process_free(p);
                return;
        }
        p->exported = true;
        bus_emit_interfaces_added(p->manager, AUDIENCE_WORKER, p->owner, p->path, PROCESS_IFACE, process_vtable, p);
}

static const WorkerSpawnCallbacks callbacks = { on_started, on_exited };

typedef struct ExecOptions {
        char **environment;
        char *working_directory;
        bool tty;
        uint16_t rows, cols;
        uint64_t timeout_usec;
} ExecOptions;

static void exec_options_done(ExecOptions *o) {
        strv_free_erase(o->environment);
        free(o->working_directory);
}

/* Inside the home: relative to it, or an absolute path below it, with no
 * "." or ".." step (the worker resolves it, as itself, in its own view). */
static int working_directory(const Worker *w, const char *dir, char **ret, SbxError *error) {
        const char *rel = dir;

        if (dir[0] == '/') {
                size_t n = strlen(w->home);
                if (strncmp(dir, w->home, n) != 0 || (dir[n] != '/' && dir[n] != 0))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                             "WorkingDirectory \"%.255s\" is not inside the worker's home %s", dir,
                                             w->home);
                rel = dir + n;
        }
        for (const char *s = rel; *s;) {
                size_t k = strcspn(s, "/");
                if ((k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ARGUMENT,
                                             "WorkingDirectory \"%.255s\" has a \".\" or \"..\" step", dir);
                s += k;
                s += strspn(s, "/");
        }
        if (strlen(rel) >= PATH_MAX / 2)
                return sbx_error_set(error, -ENAMETOOLONG, SBX_ERROR_INVALID_ARGUMENT, "WorkingDirectory is too long");
        if (asprintf(ret, "%s/%s", w->home, rel[0] == '/' ? rel + 1 : rel) < 0)
                return -ENOMEM;
        return 0;
}

static int read_options(sd_bus_message *msg, const Worker *w, ExecOptions *o, SbxError *error) {
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *key, *s;
                int b;

                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (streq(key, "Environment")) {
                        strv_free_erase(o->environment);
                        o->environment = NULL;
                        r = sd_bus_message_enter_container(msg, 'v', "as");
                        if (r >= 0)
                                r = sd_bus_message_read_strv(msg, &o->environment);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(msg);
                } else if (streq(key, "WorkingDirectory")) {
                        r = sd_bus_message_read(msg, "v", "s", &s);
                        if (r >= 0) {
                                free(o->working_directory);
                                o->working_directory = NULL;
                                r = working_directory(w, s, &o->working_directory, error);
                        }
                } else if (streq(key, "Tty")) {
                        r = sd_bus_message_read(msg, "v", "b", &b);
                        o->tty = b;
                } else if (streq(key, "TtySize")) {
                        r = sd_bus_message_read(msg, "v", "(qq)", &o->rows, &o->cols);
                } else if (streq(key, "TimeoutUSec")) {
                        r = sd_bus_message_read(msg, "v", "t", &o->timeout_usec);
                } else
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_KEY,
                                             "Unknown Exec option \"%.64s\": Environment, WorkingDirectory, Tty, "
                                             "TtySize and TimeoutUSec are known", key);
                if (r == -ENXIO || r == -EINVAL)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_WRONG_TYPE, "Exec option %s has the wrong type",
                                             key);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

/* A bare name is searched for as the worker sees its files, as
 * CreateWorker does; a path must be absolute. */
static int resolve_command(Manager *m, const Worker *w, char **argv, SbxError *error) {
        _cleanup_free_ char *path = NULL;
        WorkerView view;
        int r;

        r = spec_validate_argv(argv, error);
        if (r < 0 || !exec_name_is_bare(argv[0]))
                return r;
        r = worker_view_for_runtime(w->runtime, &m->config, &view);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_NOT_SUPPORTED,
                                     "The %s runtime has no file system view to search for '%.255s' in",
                                     sbx_runtime_to_string(w->runtime), argv[0]);
        r = worker_view_find_executable(&view, argv[0], &path, error);
        if (r < 0)
                return r;
        free(argv[0]);
        argv[0] = TAKE_PTR(path);
        return 0;
}

static int make_pipes(BusProcess *p, int worker_fds[3]) {
        int a[2], b[2], c[2];

        if (pipe2(a, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(b, O_CLOEXEC) < 0) {
                int e = -errno;
                close(a[0]), close(a[1]);
                return e;
        }
        if (pipe2(c, O_CLOEXEC) < 0) {
                int e = -errno;
                close(a[0]), close(a[1]), close(b[0]), close(b[1]);
                return e;
        }
        /* The caller writes stdin and reads stdout and stderr. */
        p->fds[0] = a[1], worker_fds[0] = a[0];
        p->fds[1] = b[0], worker_fds[1] = b[1];
        p->fds[2] = c[0], worker_fds[2] = c[1];
        return 0;
}

int bus_worker_method_exec(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(exec_options_done) ExecOptions o = {};
        _cleanup_strv_free_ char **argv = NULL;
        int worker_fds[3] = { -1, -1, -1 };
        Worker *w = userdata;
        Manager *m = w->manager;
        BusProcess *p = NULL;
        uid_t caller = UID_INVALID;
        char caller_field[16], owner_field[16];
        SbxError e = {};
        int r;

        (void) bus_caller_uid(msg, &caller);
        if (!bus_authorized(m, msg, caller, SBX_ACTION_MANAGE_WORKERS, w->owner))
                return sd_bus_error_setf(ret_error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Access denied: this needs the polkit action %s",
                                         sbx_action_to_string(SBX_ACTION_MANAGE_WORKERS));
        r = sd_bus_message_read_strv(msg, &argv);
        if (r < 0)
                return r;
        r = read_options(msg, w, &o, &e);
        if (r >= 0)
                r = resolve_command(m, w, argv, &e);
        if (r >= 0)
                r = spec_validate_environment(o.environment, &e);
        if (r < 0)
                return bus_reply_sbx_error(ret_error, &e, r);

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (BusProcess) { .manager = m, .fds = { -1, -1, -1 }, .owner = w->owner, .caller = caller,
                            .n = ++m->bus_state->process_serial, .tty = o.tty, .state = "starting",
                            .exit_status = -1 };
        snprintf(p->worker_id, sizeof(p->worker_id), "%s", w->id);
        p->command = strdup(argv[0]);
        if (!p->command || asprintf(&p->path, "%s/process/%" PRIu64, w->object_path, p->n) < 0) {
                free(p->command);
                free(p);
                return -ENOMEM;
        }
        p->next = *process_list(m);
        *process_list(m) = p;
        if (!o.tty) {
                r = make_pipes(p, worker_fds);
                if (r < 0) {
                        bus_process_free(p);
                        return r;
                }
        }
        WorkerSpawn req = {
                .argv = argv,
                .environment = o.environment,
                .working_directory = o.working_directory,
                .stdin_fd = worker_fds[0], .stdout_fd = worker_fds[1], .stderr_fd = worker_fds[2],
                .tty = o.tty, .tty_rows = o.rows, .tty_cols = o.cols,
        };
        r = worker_spawn_inside(w, &req, &callbacks, p, &p->process, &e);
        for (int i = 0; i < 3; i++)
                safe_close(worker_fds[i]);
        if (r < 0) {
                bus_process_free(p);
                return bus_reply_sbx_error(ret_error, &e, r);
        }
        snprintf(caller_field, sizeof(caller_field), "%u", (unsigned) caller);
        worker_owner_field(w, owner_field);
        /* The command, never its arguments or environment: either may hold a secret. */
        log_struct(LOG_INFO, "Exec in worker",
                   "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_CALLER_UID", caller_field,
                   "SANDBOXD_OWNER_UID", owner_field, "SANDBOXD_PROCESS", p->path,
                   "SANDBOXD_COMMAND", argv[0], "SANDBOXD_TTY", o.tty ? "yes" : "no", NULL);
        if (o.timeout_usec > 0 && o.timeout_usec != USEC_INFINITY &&
            sd_event_add_time_relative(m->event, &p->timeout, CLOCK_MONOTONIC, o.timeout_usec, 0, on_timeout, p) >= 0)
                (void) sd_event_source_set_description(p->timeout, "process-timeout");
        /* Answered once it runs (on_started()). */
        p->request = sd_bus_message_ref(msg);
        return 1;
}

void bus_worker_exec_forget(Worker *w) {
        BusProcess **i = process_list(w->manager);

        while (*i) {
                if (streq((*i)->worker_id, w->id))
                        bus_process_free(*i);   /* unlinks it */
                else
                        i = &(*i)->next;
        }
}

void bus_worker_exec_free_all(Manager *m) {
        while (*process_list(m))
                bus_process_free(*process_list(m));
}
