/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Worker's file methods over sandbox-files (bus-worker-files.h). A job is
 * one run of the helper inside the worker: its stderr (status lines) and,
 * for ListDirectory and Stat, its stdout (frames) come to sandboxd on pipes
 * read on the event loop. A transfer is an OpenFile's job: it has a handle
 * the caller names in CommitFile and AbortFile, belongs to the bus name that
 * opened it, and is aborted when that name leaves. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>

#include "bus-manager.h"
#include "bus-polkit.h"
#include "bus-worker-files.h"
#include "bus-worker.h"
#include "errors.h"
#include "event-util.h"
#include "file-frame.h"
#include "manager.h"
#include "unit-props.h"
#include "worker-spawn.h"

#define SANDBOX_FILES SANDBOXD_LIBEXECDIR "/sandbox-files"
/* A transfer's data pipe: 1 MiB (the default fs.pipe-max-size) instead of
 * 64 KiB, so each wakeup of either end moves 16 times the bytes; for a
 * gVisor worker each one is also a trip of the sentry's to the host pipe. */
#define FILE_DATA_PIPE_SIZE (1 << 20)
/* How long a helper may take to answer: to say "open", or to end a
 * ListDirectory, Stat, MakeDirectory, Remove, Rename, commit or abort. The
 * data of a transfer takes as long as the caller lets it. */
#define FILE_JOB_TIMEOUT_USEC (30 * USEC_PER_SEC)
/* How long the outcome of a read or write waits for its CommitFile. */
#define FILE_RESULT_KEEP_USEC (60 * USEC_PER_SEC)
/* A listing's frames: SBX_FILES_LIST_MAX entries of a full-length name. */
#define FILE_JOB_OUT_MAX ((size_t) SBX_FILES_LIST_MAX * (SBX_FILES_NAME_MAX + 64))

typedef enum FileJobKind {
        FILE_JOB_TRANSFER,      /* OpenFile */
        FILE_JOB_LIST,
        FILE_JOB_STAT,
        FILE_JOB_PLAIN,         /* MakeDirectory, Remove, Rename, a commit or an abort */
} FileJobKind;

struct FileJob {
        Manager *manager;
        Worker *worker;
        FileJob *next;          /* the bus state's list */
        FileJobKind kind;
        const char *verb;       /* sandbox-files' */
        WorkerProcess *process;
        sd_bus_message *request;        /* answered when the job opens (OpenFile) or ends */
        int err_fd, out_fd;
        sd_event_source *err_source, *out_source, *timer;
        char line[SBX_FILES_STATUS_MAX];
        size_t line_len;
        char *out;
        size_t out_len;
        FileStatus status;      /* the last line: done or error */
        bool have_status, ended;
        char *malformed;        /* what the helper said that is no status line */
        int exit_code, exit_status;

        /* A transfer's. */
        char handle[24];
        char *sender;           /* the bus name that opened it: the only one that may finish it */
        sd_bus_track *track;
        char *path;             /* as the caller gave it */
        bool replace, opened;
        char temp[SBX_FILES_NAME_MAX + 1];      /* a replace's temporary file, from its open line */
        int client_fd;          /* the caller's end, until the open line */
};

static FileJob **jobs_head(Manager *m) {
        return &m->bus_state->file_jobs;
}

static void job_unlink(FileJob *j) {
        for (FileJob **p = jobs_head(j->manager); *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        break;
                }
}

static FileJob *job_free(FileJob *j) {
        if (!j)
                return NULL;
        job_unlink(j);
        /* Kills a helper still running: nobody reads its answer now. */
        worker_process_free(j->process);
        sd_event_source_disable_unref(j->err_source);
        sd_event_source_disable_unref(j->out_source);
        sd_event_source_disable_unref(j->timer);
        safe_close(j->err_fd);
        safe_close(j->out_fd);
        safe_close(j->client_fd);
        sd_bus_message_unref(j->request);
        sd_bus_track_unref(j->track);
        free(j->out);
        free(j->malformed);
        free(j->sender);
        free(j->path);
        free(j);
        return NULL;
}

static const char *error_name_for(const char *helper_name) {
        static const struct { const char *helper, *bus; } map[] = {
                { "FileNotFound", SBX_ERROR_FILE_NOT_FOUND },
                { "FileExists", SBX_ERROR_FILE_EXISTS },
                { "NotADirectory", SBX_ERROR_NOT_A_DIRECTORY },
                { "IsADirectory", SBX_ERROR_IS_A_DIRECTORY },
                { "NotRegularFile", SBX_ERROR_NOT_REGULAR_FILE },
                { "PathOutsideHome", SBX_ERROR_PATH_OUTSIDE_HOME },
                { "PermissionDenied", SBX_ERROR_PERMISSION_DENIED },
                { "DiskFull", SBX_ERROR_DISK_FULL },
                { "DirectoryNotEmpty", SBX_ERROR_DIRECTORY_NOT_EMPTY },
                { "TooManyEntries", SBX_ERROR_TOO_MANY_ENTRIES },
                { "InvalidArgument", SBX_ERROR_INVALID_ARGUMENT },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(map[i].helper, helper_name))
                        return map[i].bus;
        return SBX_ERROR_FILE_ERROR;
}

/* The job's outcome as a D-Bus error, or 0 when the helper said done. */
static int job_error(FileJob *j, sd_bus_error *error) {
        if (j->have_status && j->status.kind == FILE_STATUS_DONE)
                return 0;
        if (j->have_status)
                return sd_bus_error_setf(error, error_name_for(j->status.error), "%s", j->status.message);
        if (j->malformed)
                return sd_bus_error_setf(error, SBX_ERROR_FILE_ERROR, "sandbox-files said: %s", j->malformed);
        if (!j->ended)
                return sd_bus_error_setf(error, SBX_ERROR_FILE_ERROR, "sandbox-files did not answer within %u s",
                                         (unsigned) (FILE_JOB_TIMEOUT_USEC / USEC_PER_SEC));
        if (j->exit_code == CLD_EXITED)
                return sd_bus_error_setf(error, SBX_ERROR_FILE_ERROR,
                                         "sandbox-files ended with status %d and no answer", j->exit_status);
        return sd_bus_error_setf(error, SBX_ERROR_FILE_ERROR, "sandbox-files was killed by signal %s",
                                 strsignal(j->exit_status));
}

static void reply_error(sd_bus_message **request, FileJob *j) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (!*request)
                return;
        (void) job_error(j, &error);
        (void) sd_bus_reply_method_error(*request, &error);
        *request = sd_bus_message_unref(*request);
}

static int reply_entries(FileJob *j) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        size_t off = 0, skipped = 0;
        int r;

        r = sd_bus_message_new_method_return(j->request, &reply);
        if (r < 0)
                return r;
        if (j->kind == FILE_JOB_LIST) {
                r = sd_bus_message_open_container(reply, 'a', "(sstutuu)");
                if (r < 0)
                        return r;
        }
        unsigned n = 0;
        while (off < j->out_len) {
                FileEntry e;
                size_t used;
                r = file_entry_parse(j->out + off, j->out_len - off, &e, &used);
                if (r <= 0)
                        return -EBADMSG;
                off += used;
                /* A name D-Bus cannot carry is no path a caller could name either. */
                char copy[sizeof(e.name)];
                memcpy(copy, e.name, sizeof(copy));
                utf8_replace_invalid(copy);
                if (!streq(copy, e.name)) {
                        skipped++;
                        continue;
                }
                if (j->kind == FILE_JOB_STAT && n > 0)
                        return -EBADMSG;
                n++;
                r = sd_bus_message_append(reply, j->kind == FILE_JOB_LIST ? "(sstutuu)" : "sstutuu", e.name,
                                          file_type_to_string(e.type), e.size, e.mode, e.mtime_usec, e.uid, e.gid);
                if (r < 0)
                        return r;
        }
        if (j->kind == FILE_JOB_LIST) {
                r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        } else if (n != 1)
                return -EBADMSG;
        if (skipped > 0)
                log_debug("Worker %s: %zu entries of a listing are not UTF-8 and were left out", j->worker->id, skipped);
        return sd_bus_send(NULL, reply, NULL);
}

static void start_finish(FileJob *t, bool commit, sd_bus_message *request);
static int job_arm_expiry(FileJob *j);

/* The helper ended (and its pipes are drained): answer whoever waits. */
static void job_ended(FileJob *j) {
        int r;

        j->timer = sd_event_source_disable_unref(j->timer);
        if (j->kind == FILE_JOB_TRANSFER) {
                if (!j->opened) {
                        /* The open never came: OpenFile fails, nothing was handed out. */
                        reply_error(&j->request, j);
                        job_free(j);
                        return;
                }
                /* A CommitFile that waited for the data's end. */
                if (j->request) {
                        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = TAKE_PTR(j->request);
                        if (job_error(j, NULL) < 0 || !j->replace) {
                                if (job_error(j, NULL) < 0)
                                        reply_error(&req, j);
                                else
                                        (void) sd_bus_reply_method_return(req, "t", j->status.value);
                                job_free(j);
                        } else
                                start_finish(j, true, req);
                        return;
                }
                /* Its caller left: a replace's temporary file goes, the rest is over. */
                if (!j->sender) {
                        if (j->replace)
                                start_finish(j, false, NULL);
                        else
                                job_free(j);
                        return;
                }
                /* The outcome waits for CommitFile: a replace's for as long
                 * as its caller stays, any other's a while (a caller that
                 * never asks must not fill FILE_TRANSFERS_MAX). */
                if (!j->replace)
                        (void) job_arm_expiry(j);
                return;
        }
        if (!j->request) {
                job_free(j);
                return;
        }
        if (job_error(j, NULL) < 0)
                reply_error(&j->request, j);
        else if (j->kind == FILE_JOB_LIST || j->kind == FILE_JOB_STAT) {
                r = reply_entries(j);
                if (r < 0) {
                        log_warning_errno(r, "Worker %s: sandbox-files gave a listing sandboxd cannot read: %m",
                                          j->worker->id);
                        (void) sd_bus_reply_method_errorf(j->request, SBX_ERROR_FILE_ERROR,
                                                          "sandbox-files gave a malformed answer");
                }
        } else if (streq(j->verb, "commit"))
                (void) sd_bus_reply_method_return(j->request, "t", j->status.value);
        else
                (void) sd_bus_reply_method_return(j->request, NULL);
        job_free(j);
}

/* An OpenFile's answer: the caller's end of the data pipe and the handle. */
static void job_opened(FileJob *j) {
        int r;

        j->opened = true;
        if (j->replace)
                snprintf(j->temp, sizeof(j->temp), "%s", j->status.temp);
        j->status = (FileStatus) {};
        j->timer = sd_event_source_disable_unref(j->timer);
        r = sd_bus_reply_method_return(j->request, "hs", j->client_fd, j->handle);
        if (r < 0)
                log_warning_errno(r, "Worker %s: failed to answer OpenFile: %m", j->worker->id);
        j->request = sd_bus_message_unref(j->request);
        /* The caller's end is the caller's now: ours would keep the pipe open. */
        j->client_fd = safe_close(j->client_fd);
}

static void job_line(FileJob *j, const char *line) {
        FileStatus s;

        if (file_status_parse(line, &s) < 0 || (s.kind == FILE_STATUS_OPEN && (j->opened || j->kind != FILE_JOB_TRANSFER))) {
                if (!j->malformed) {
                        j->malformed = strndup(line, 200);
                        if (j->malformed)
                                utf8_replace_invalid(j->malformed);
                }
                return;
        }
        if (j->replace && s.kind == FILE_STATUS_OPEN && isempty(s.temp)) {
                j->malformed = strdup("an open line without the temporary file");
                return;
        }
        j->status = s;
        if (s.kind == FILE_STATUS_OPEN) {
                job_opened(j);
                return;
        }
        j->have_status = true;
}

/* Reads what FD has now (non-blocking) into the job: 0 at EOF, 1 for more
 * to come, -E2BIG past the bound. */
static int job_drain(FileJob *j, int fd) {
        for (;;) {
                char buf[4096];
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0)
                        return errno == EAGAIN ? 1 : errno == EINTR ? job_drain(j, fd) : -errno;
                if (n == 0)
                        return 0;
                if (fd == j->out_fd) {
                        if (j->out_len + (size_t) n > FILE_JOB_OUT_MAX)
                                return -E2BIG;
                        char *p = realloc(j->out, j->out_len + (size_t) n);
                        if (!p)
                                return -ENOMEM;
                        j->out = p;
                        memcpy(j->out + j->out_len, buf, (size_t) n);
                        j->out_len += (size_t) n;
                        continue;
                }
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] == '\n') {
                                j->line[j->line_len] = 0;
                                j->line_len = 0;
                                job_line(j, j->line);
                                continue;
                        }
                        if (j->line_len + 1 >= sizeof(j->line))
                                return -E2BIG;
                        j->line[j->line_len++] = buf[i];
                }
        }
}

static void job_fail_now(FileJob *j, const char *why) {
        if (!j->malformed)
                j->malformed = strdup(why);
        j->process = worker_process_free(j->process);
        j->ended = true;
        job_ended(j);
}

static int on_job_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FileJob *j = userdata;
        int r = job_drain(j, fd);

        if (r == -E2BIG) {
                job_fail_now(j, fd == j->out_fd ? "a listing larger than sandboxd reads" : "a status line too long");
                return 0;
        }
        if (r <= 0) {
                /* EOF (or an error reading our own pipe): nothing more here. */
                if (fd == j->err_fd)
                        j->err_source = sd_event_source_disable_unref(j->err_source);
                else
                        j->out_source = sd_event_source_disable_unref(j->out_source);
        }
        return 0;
}

static void on_job_started(WorkerProcess *p, int error, void *userdata) {
        FileJob *j = userdata;

        if (error >= 0)
                return;
        j->process = worker_process_free(j->process);
        free(j->malformed);
        j->malformed = NULL;
        if (asprintf(&j->malformed, "sandbox-files could not be started in the worker: %s", strerror(-error)) < 0)
                j->malformed = NULL;
        j->ended = true;
        j->exit_code = CLD_EXITED;
        j->exit_status = 127;
        job_ended(j);
}

static void on_job_exited(WorkerProcess *p, int code, int status, void *userdata) {
        FileJob *j = userdata;

        /* Whatever it wrote is in the pipes by now: read it all, then end
         * (a holder of the pipes' other ends, such as runsc, may outlive it). */
        if (j->err_source)
                (void) job_drain(j, j->err_fd);
        if (j->out_source && job_drain(j, j->out_fd) == -E2BIG) {
                job_fail_now(j, "a listing larger than sandboxd reads");
                return;
        }
        if (j->line_len > 0 && !j->have_status) {
                j->line[j->line_len] = 0;
                job_line(j, j->line);
        }
        j->process = worker_process_free(j->process);
        j->ended = true;
        j->exit_code = code;
        j->exit_status = status;
        job_ended(j);
}

static int on_job_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        FileJob *j = userdata;
        job_fail_now(j, "sandbox-files did not answer in time");
        return 0;
}

static int on_transfer_expired(sd_event_source *s, uint64_t usec, void *userdata) {
        job_free(userdata);
        return 0;
}

static int job_arm_expiry(FileJob *j) {
        int r = sd_event_add_time_relative(j->manager->event, &j->timer, CLOCK_MONOTONIC, FILE_RESULT_KEEP_USEC, 0,
                                           on_transfer_expired, j);
        if (r >= 0)
                (void) sd_event_source_set_description(j->timer, "file-transfer-expiry");
        return r;
}

static const WorkerSpawnCallbacks job_callbacks = {
        .started = on_job_started,
        .exited = on_job_exited,
};

static int watch(FileJob *j, int fd, sd_event_source **ret, const char *what) {
        int r = sd_event_add_io(j->manager->event, ret, fd, EPOLLIN, on_job_io, j);
        if (r >= 0)
                (void) sd_event_source_set_description(*ret, what);
        return r;
}

static int job_arm_timer(FileJob *j) {
        int r = sd_event_add_time_relative(j->manager->event, &j->timer, CLOCK_MONOTONIC, FILE_JOB_TIMEOUT_USEC, 0,
                                           on_job_timeout, j);
        if (r >= 0)
                (void) sd_event_source_set_description(j->timer, "file-job-timeout");
        return r;
}

/* Runs sandbox-files ARGS (after "--root=HOME") in the job's worker.
 * IN and OUT are the helper's stdin and stdout when the caller has them
 * (a transfer's data pipe), else /dev/null and, for a listing, a pipe of ours. */
static void close_pair(int (*p)[2]) {
        safe_close((*p)[0]);
        safe_close((*p)[1]);
}

static int job_start(FileJob *j, char **args, int in, int out, SbxError *e) {
        _cleanup_(close_pair) int err_pipe[2] = { -1, -1 }, out_pipe[2] = { -1, -1 };
        _cleanup_close_ int null_fd = -1;
        _cleanup_free_ char *root = NULL, *alias = NULL;
        char *argv[16];
        size_t n = 0;
        int r;

        /* The home as the worker sees it: a gVisor sandbox has it at its
         * real path (sandbox-launch binds the realpath; the link beside it is
         * the host's, not the sandbox's), a trusted unit at the Home
         * property's. Both names are accepted in an absolute path. */
        if (j->worker->runtime == SBX_RUNTIME_RUNSC) {
                if (asprintf(&root, "--root=" SBX_PRIVATE_STATE_ROOT "/%s", j->worker->id) < 0 ||
                    asprintf(&alias, "--alias=%s", j->worker->home) < 0)
                        return -ENOMEM;
        } else if (asprintf(&root, "--root=%s", j->worker->home) < 0)
                return -ENOMEM;
        argv[n++] = (char *) SANDBOX_FILES;
        argv[n++] = root;
        if (alias)
                argv[n++] = alias;
        for (char **a = args; *a && n < ELEMENTSOF(argv) - 1; a++)
                argv[n++] = *a;
        argv[n] = NULL;
        if (pipe2(err_pipe, O_CLOEXEC) < 0)
                return -errno;
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;
        if (out < 0 && (j->kind == FILE_JOB_LIST || j->kind == FILE_JOB_STAT)) {
                if (pipe2(out_pipe, O_CLOEXEC) < 0)
                        return -errno;
                out = out_pipe[1];
        }
        WorkerSpawn req = {
                .argv = argv,
                .stdin_fd = in >= 0 ? in : null_fd,
                .stdout_fd = out >= 0 ? out : null_fd,
                .stderr_fd = err_pipe[1],
        };
        r = worker_spawn_inside(j->worker, &req, &job_callbacks, j, &j->process, e);
        if (r < 0)
                return r;
        j->err_fd = TAKE_FD(err_pipe[0]);
        (void) fcntl(j->err_fd, F_SETFL, O_NONBLOCK);
        r = watch(j, j->err_fd, &j->err_source, "file-job-status");
        if (r >= 0 && out_pipe[0] >= 0) {
                j->out_fd = TAKE_FD(out_pipe[0]);
                (void) fcntl(j->out_fd, F_SETFL, O_NONBLOCK);
                r = watch(j, j->out_fd, &j->out_source, "file-job-frames");
        }
        if (r >= 0)
                r = job_arm_timer(j);
        return r;
}

static FileJob *job_new(Worker *w, FileJobKind kind, const char *verb) {
        FileJob *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->manager = w->manager;
        j->worker = w;
        j->kind = kind;
        j->verb = verb;
        j->err_fd = j->out_fd = j->client_fd = -1;
        j->next = *jobs_head(w->manager);
        *jobs_head(w->manager) = j;
        return j;
}

static unsigned count_transfers(Worker *w) {
        unsigned n = 0;
        for (FileJob *j = *jobs_head(w->manager); j; j = j->next)
                if (j->worker == w)
                        n++;
        return n;
}

/* One journal entry per call, with the caller's UID. */
static void log_call(sd_bus_message *msg, Worker *w, const char *method, const char *path, const char *detail) {
        _cleanup_free_ char *text = NULL, *caller_s = NULL;
        uid_t caller = UID_INVALID;

        (void) bus_caller_uid(msg, &caller);
        if (asprintf(&caller_s, "%u", (unsigned) caller) < 0 ||
            asprintf(&text, "Worker %s: %s %s%s%s by UID %u", w->id, method, path, detail ? " " : "", detail ?: "",
                     (unsigned) caller) < 0)
                return;
        utf8_replace_invalid(text);
        log_struct(LOG_INFO, text, "SANDBOXD_WORKER_ID", w->id, "SANDBOXD_CALLER_UID", caller_s,
                   "SANDBOXD_FILE_CALL", method, NULL);
}

static int check_path(const char *path, sd_bus_error *error) {
        if (strlen(path) >= PATH_MAX)
                return sd_bus_error_setf(error, SBX_ERROR_INVALID_ARGUMENT, "The path is longer than %d bytes.", PATH_MAX - 1);
        return 0;
}

/* Reads an a{sv} of the keys "Mode" (u, permission bits), "Parents" and
 * "Recursive" (b); any other key, or one this method does not take, is
 * InvalidArgument. */
static int read_options(sd_bus_message *msg, const char *allowed, long *perm, bool *flag, sd_bus_error *error) {
        const char *key;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (!strstr(allowed, key) || (!streq(key, "Mode") && !streq(key, "Parents") && !streq(key, "Recursive")))
                        return sd_bus_error_setf(error, SBX_ERROR_INVALID_ARGUMENT, "Unknown option '%s'.", key);
                if (streq(key, "Mode")) {
                        uint32_t mode;
                        r = sd_bus_message_read(msg, "v", "u", &mode);
                        if (r < 0)
                                return sd_bus_error_setf(error, SBX_ERROR_WRONG_TYPE, "Mode is a 'u'.");
                        if (mode > 07777)
                                return sd_bus_error_setf(error, SBX_ERROR_INVALID_ARGUMENT,
                                                         "Mode %o has more than permission bits.", mode);
                        *perm = mode;
                } else {
                        int b;
                        r = sd_bus_message_read(msg, "v", "b", &b);
                        if (r < 0)
                                return sd_bus_error_setf(error, SBX_ERROR_WRONG_TYPE, "%s is a 'b'.", key);
                        *flag = b;
                }
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

static int refuse_busy(Worker *w, sd_bus_error *error) {
        if (count_transfers(w) < FILE_TRANSFERS_MAX)
                return 0;
        return sd_bus_error_setf(error, SBX_ERROR_TOO_MANY_REQUESTS,
                                 "Worker %s has %u file operations open; commit or abort one first.", w->id,
                                 FILE_TRANSFERS_MAX);
}

static void on_transfer_owner_gone_finish(FileJob *t);

static int on_transfer_owner_gone(sd_bus_track *track, void *userdata) {
        on_transfer_owner_gone_finish(userdata);
        return 0;
}

int bus_worker_method_open_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        static uint64_t serial;
        Worker *w = userdata;
        _cleanup_close_ int data_r = -1, data_w = -1;
        int data[2];
        const char *path, *mode, *how = NULL;
        char perm_arg[32] = "", how_arg[32] = "";
        bool unused = false, reading;
        long perm = -1;
        SbxError e = {};
        FileJob *j;
        int r;

        r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "ss", &path, &mode);
        if (r < 0)
                return r;
        r = read_options(msg, "Mode", &perm, &unused, ret_error);
        if (r < 0)
                return r;
        r = check_path(path, ret_error);
        if (r < 0)
                return r;
        reading = streq(mode, "read");
        if (streq(mode, "write") || streq(mode, "create") || streq(mode, "append"))
                how = mode;
        else if (!reading && !streq(mode, "replace"))
                return sd_bus_error_setf(ret_error, SBX_ERROR_INVALID_ARGUMENT,
                                         "Unknown mode '%s': read, write, create, append or replace.", mode);
        r = refuse_busy(w, ret_error);
        if (r < 0)
                return r;
        log_call(msg, w, "OpenFile", path, mode);
        if (pipe2(data, O_CLOEXEC) < 0)
                return -errno;
        data_r = data[0];
        data_w = data[1];
        /* Best effort: past the pipe limits of our user it stays as it is,
         * only slower. The pages are charged to whoever writes them. */
        (void) fcntl(data_w, F_SETPIPE_SZ, FILE_DATA_PIPE_SIZE);
        j = job_new(w, FILE_JOB_TRANSFER, reading ? "read" : how ? "write" : "replace");
        if (!j)
                return -ENOMEM;
        j->replace = streq(mode, "replace");
        snprintf(j->handle, sizeof(j->handle), "%" PRIu64, ++serial);
        j->path = strdup(path);
        j->sender = strdup(sd_bus_message_get_sender(msg) ?: "");
        if (!j->path || !j->sender) {
                job_free(j);
                return -ENOMEM;
        }
        if (perm >= 0)
                snprintf(perm_arg, sizeof(perm_arg), "--perm=%lo", (unsigned long) perm);
        if (how)
                snprintf(how_arg, sizeof(how_arg), "--how=%s", how);
        char *args[8];
        size_t n = 0;
        if (*perm_arg)
                args[n++] = perm_arg;
        if (*how_arg)
                args[n++] = how_arg;
        args[n++] = (char *) "--";
        args[n++] = (char *) j->verb;
        args[n++] = (char *) path;
        args[n] = NULL;
        /* Read: the helper writes into the pipe, the caller reads; write:
         * the other way round. sandboxd keeps neither end. */
        r = job_start(j, args, reading ? -1 : data_r, reading ? data_w : -1, &e);
        if (r < 0) {
                job_free(j);
                return bus_reply_sbx_error(ret_error, &e, r);
        }
        j->client_fd = reading ? TAKE_FD(data_r) : TAKE_FD(data_w);
        r = sd_bus_track_new(sd_bus_message_get_bus(msg), &j->track, on_transfer_owner_gone, j);
        if (r >= 0)
                r = sd_bus_track_add_sender(j->track, msg);
        if (r < 0) {
                job_free(j);
                return r;
        }
        j->request = sd_bus_message_ref(msg);
        return 1;
}

static FileJob *find_transfer(sd_bus_message *msg, Worker *w, const char *handle) {
        const char *sender = sd_bus_message_get_sender(msg) ?: "";

        for (FileJob *j = *jobs_head(w->manager); j; j = j->next)
                if (j->kind == FILE_JOB_TRANSFER && j->worker == w && j->opened && streq(j->handle, handle) &&
                    streq_ptr(j->sender, sender))
                        return j;
        return NULL;
}

/* Runs commit or abort of T's temporary file as a job of its own (answering
 * REQUEST, if any) and frees T. */
static void start_finish(FileJob *t, bool commit, sd_bus_message *request) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = sd_bus_message_ref(request);
        SbxError e = {};
        FileJob *j;
        int r;

        if (isempty(t->temp)) {
                job_free(t);
                if (req)
                        (void) sd_bus_reply_method_return(req, commit ? "t" : NULL, UINT64_C(0));
                return;
        }
        j = job_new(t->worker, FILE_JOB_PLAIN, commit ? "commit" : "abort");
        if (!j) {
                job_free(t);
                if (req)
                        (void) sd_bus_reply_method_errno(req, ENOMEM, NULL);
                return;
        }
        char *args[] = { (char *) "--", (char *) j->verb, t->temp, t->path, NULL };
        r = job_start(j, args, -1, -1, &e);
        if (r < 0) {
                log_warning("Worker %s: cannot %s the temporary file %s of a replace: %s", t->worker->id, j->verb,
                            t->temp, e.name ? e.message : strerror(-r));
                if (req)
                        (void) sd_bus_reply_method_errorf(req, e.name ?: SBX_ERROR_FILE_ERROR, "%s",
                                                          e.name ? e.message : strerror(-r));
                job_free(j);
        } else
                j->request = TAKE_PTR(req);
        job_free(t);
}

static void on_transfer_owner_gone_finish(FileJob *t) {
        /* The caller left without Commit: a replace's target stays as it was. */
        t->track = sd_bus_track_unref(t->track);
        free(t->sender);
        t->sender = NULL;
        if (!t->opened)
                return;         /* OpenFile's own reply will fail; the job ends with its helper */
        if (t->replace && t->ended)
                start_finish(t, false, NULL);
        else if (t->ended)
                job_free(t);
        else if (t->replace) {
                /* Still writing: kill the helper, then remove what it left. */
                t->process = worker_process_free(t->process);
                t->ended = true;
                start_finish(t, false, NULL);
        }
        /* A read or write still running ends with its pipe (job_ended()). */
}

int bus_worker_method_commit_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *handle;
        FileJob *t;
        int r;

        r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "s", &handle);
        if (r < 0)
                return r;
        t = find_transfer(msg, w, handle);
        if (!t || t->request)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NO_SUCH_TRANSFER,
                                         "No open file transfer '%s' of this caller on worker %s.", handle, w->id);
        log_call(msg, w, "CommitFile", t->path, t->replace ? "replace" : t->verb);
        /* Answered once the data has ended (the caller closed its end). */
        t->request = sd_bus_message_ref(msg);
        if (t->ended)
                job_ended(t);
        return 1;
}

int bus_worker_method_abort_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *handle;
        FileJob *t;
        int r;

        r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "s", &handle);
        if (r < 0)
                return r;
        t = find_transfer(msg, w, handle);
        if (!t || t->request)
                return sd_bus_error_setf(ret_error, SBX_ERROR_NO_SUCH_TRANSFER,
                                         "No open file transfer '%s' of this caller on worker %s.", handle, w->id);
        log_call(msg, w, "AbortFile", t->path, t->verb);
        t->process = worker_process_free(t->process);
        t->ended = true;
        if (t->replace)
                start_finish(t, false, msg);
        else {
                job_free(t);
                (void) sd_bus_reply_method_return(msg, NULL);
        }
        return 1;
}

/* A job that answers MSG when it ends: the helper's VERB with ARGS. */
static int start_simple(sd_bus_message *msg, Worker *w, FileJobKind kind, const char *verb, char **args,
                        sd_bus_error *ret_error) {
        SbxError e = {};
        FileJob *j;
        int r;

        r = refuse_busy(w, ret_error);
        if (r < 0)
                return r;
        j = job_new(w, kind, verb);
        if (!j)
                return -ENOMEM;
        r = job_start(j, args, -1, -1, &e);
        if (r < 0) {
                job_free(j);
                return bus_reply_sbx_error(ret_error, &e, r);
        }
        j->request = sd_bus_message_ref(msg);
        return 1;
}

/* What every path method does first: the caller may see W (NoSuchWorker
 * otherwise, as for the log), and its first argument, a path, is read. */
static int read_path_call(sd_bus_message *msg, Worker *w, const char **ret_path, sd_bus_error *ret_error) {
        int r;

        r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        return sd_bus_message_read(msg, "s", ret_path);
}

/* A method of one path and no options: the helper's VERB on it. */
static int method_on_path(sd_bus_message *msg, Worker *w, const char *method, FileJobKind kind, const char *verb,
                          sd_bus_error *ret_error) {
        const char *path;
        int r;

        r = read_path_call(msg, w, &path, ret_error);
        if (r < 0)
                return r;
        r = check_path(path, ret_error);
        if (r < 0)
                return r;
        log_call(msg, w, method, path, NULL);
        return start_simple(msg, w, kind, verb,
                            (char *[]) { (char *) "--", (char *) verb, (char *) path, NULL }, ret_error);
}

int bus_worker_method_list_directory(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return method_on_path(msg, userdata, "ListDirectory", FILE_JOB_LIST, "list", ret_error);
}

int bus_worker_method_stat(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return method_on_path(msg, userdata, "Stat", FILE_JOB_STAT, "stat", ret_error);
}

int bus_worker_method_make_directory(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *path;
        char perm_arg[32] = "";
        bool parents = false;
        long perm = -1;
        int r;

        r = read_path_call(msg, w, &path, ret_error);
        if (r < 0)
                return r;
        r = read_options(msg, "Mode Parents", &perm, &parents, ret_error);
        if (r < 0)
                return r;
        r = check_path(path, ret_error);
        if (r < 0)
                return r;
        if (perm >= 0)
                snprintf(perm_arg, sizeof(perm_arg), "--perm=%lo", (unsigned long) perm);
        log_call(msg, w, "MakeDirectory", path, parents ? "parents" : NULL);
        char *args[6];
        size_t n = 0;
        if (perm >= 0)
                args[n++] = perm_arg;
        if (parents)
                args[n++] = (char *) "--parents";
        args[n++] = (char *) "--";
        args[n++] = (char *) "mkdir";
        args[n++] = (char *) path;
        args[n] = NULL;
        return start_simple(msg, w, FILE_JOB_PLAIN, "mkdir", args, ret_error);
}

int bus_worker_method_remove(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *path;
        bool recursive = false;
        long unused = -1;
        int r;

        r = read_path_call(msg, w, &path, ret_error);
        if (r < 0)
                return r;
        r = read_options(msg, "Recursive", &unused, &recursive, ret_error);
        if (r < 0)
                return r;
        r = check_path(path, ret_error);
        if (r < 0)
                return r;
        log_call(msg, w, "Remove", path, recursive ? "recursive" : NULL);
        char *args[5];
        size_t n = 0;
        if (recursive)
                args[n++] = (char *) "--recursive";
        args[n++] = (char *) "--";
        args[n++] = (char *) "remove";
        args[n++] = (char *) path;
        args[n] = NULL;
        return start_simple(msg, w, FILE_JOB_PLAIN, "remove", args, ret_error);
}

int bus_worker_method_rename(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Worker *w = userdata;
        const char *from, *to;
        int r;

        r = bus_worker_check_access(msg, w, ret_error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "ss", &from, &to);
        if (r < 0)
                return r;
        r = check_path(from, ret_error);
        if (r >= 0)
                r = check_path(to, ret_error);
        if (r < 0)
                return r;
        log_call(msg, w, "Rename", from, to);
        return start_simple(msg, w, FILE_JOB_PLAIN, "rename",
                            (char *[]) { (char *) "--", (char *) "rename", (char *) from, (char *) to, NULL },
                            ret_error);
}

void bus_worker_files_drop(Worker *w) {
        if (!w->manager->bus_state)
                return;
        for (FileJob *j = *jobs_head(w->manager), *next; j; j = next) {
                next = j->next;
                if (j->worker != w)
                        continue;
                if (j->request)
                        (void) sd_bus_reply_method_errorf(j->request, SBX_ERROR_NOT_RUNNING,
                                                          "Worker %s has ended.", w->id);
                job_free(j);
        }
}

void bus_worker_files_free_all(Manager *m) {
        while (m->bus_state && m->bus_state->file_jobs)
                job_free(m->bus_state->file_jobs);
}
