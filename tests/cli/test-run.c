/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sandboxctl binary end to end against a fake org.sandboxd1: a direct
 * sd-bus server connection on a private socket that answers the bus-driver
 * calls a client makes (Hello, AddMatch) and implements the Manager and one
 * Worker object from org.sandboxd1(5) enough to drive the CLI. The daemon's
 * own tests use the real daemon under a real systemd; this one checks what
 * the CLI sends, prints and exits with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include <json-c/json.h>

#include "util.h"

#define WORKER_ID   "0123456789ab"
#define WORKER_PATH "/org/sandboxd1/worker/" WORKER_ID

typedef enum WorkerMode {
        WORKER_ECHO_UPPER,   /* answers in upper case, exits 7 on stdin EOF, signals the end */
        WORKER_SILENT_END,   /* same, but emits no signal: only reading State reveals the end */
        WORKER_NEVER_ENDS,
        WORKER_END_FIRST,    /* signals the end first; its last output arrives while the client is stopped */
        WORKER_END_KEEPS_CHANNEL, /* signals the end but never closes the channel */
} WorkerMode;

typedef struct Fake {
        sd_event *event;
        sd_bus *bus;
        int listen_fd;
        unsigned n_connections;

        WorkerMode mode;
        int worker_fd;
        sd_event_source *worker_source;
        sd_event_source *late_source;
        const char *id;
        char *state;
        int32_t exit_status;

        /* What the client sent. */
        char spec_keys[256];
        char **argv;
        char *credential;
        char *origin;
        int interactive;    /* the CreateWorker call's ALLOW_INTERACTIVE_AUTHORIZATION flag */
        bool stop_called;
        bool subscribed;                /* Subscribe was called */
        bool subscribed_first;          /* ... before CreateWorker */
        bool channel_opened;
        bool kill_on_open;  /* SIGTERM the client once it holds the channel */
        char list_states[128]; /* the States option of ListWorkersEx */
        bool list_called;

        /* The client. */
        pid_t pid;
        int exit_code;
        bool exited;
        char output[4096];
        size_t output_len;
        char errors[4096];
        size_t errors_len;
        unsigned open_pipes;
        bool timed_out;
} Fake;

static char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
static char credential_path[] = "/tmp/test-sandboxctl-run-cred-XXXXXX";

/* --- the bus driver part every bus client talks to first --- */

static int driver_hello(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "s", ":1.42");
}

static int driver_match(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable driver_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Hello", "", "s", driver_hello, 0),
        SD_BUS_METHOD("AddMatch", "s", "", driver_match, 0),
        SD_BUS_METHOD("RemoveMatch", "s", "", driver_match, 0),
        SD_BUS_VTABLE_END
};

/* --- the fake worker behind the channel --- */

static bool emit_ok(int r) {
        return r >= 0 || r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE;
}

static void worker_end(Fake *f) {
        free(f->state);
        f->state = strdup("exited");
        f->exit_status = 7;
        if (f->mode == WORKER_SILENT_END)
                return;
        /* The client may already be gone: it saw the channel end, read State and
         * ExitStatus and exited, which is allowed. A signal to a closed
         * connection is then refused, and that is no failure of the client. */
        assert_true(emit_ok(sd_bus_emit_properties_changed(f->bus, WORKER_PATH, "org.sandboxd1.Worker", "State",
                                                           "ExitStatus", NULL)));
        assert_true(emit_ok(sd_bus_emit_signal(f->bus, "/org/sandboxd1", "org.sandboxd1.Manager", "WorkerRemoved",
                                               "sos", WORKER_ID, WORKER_PATH, "exited")));
}

static int on_resume_client(sd_event_source *s, uint64_t usec, void *userdata) {
        Fake *f = userdata;

        kill(f->pid, SIGCONT);
        return 0;
}

/* Half a second after the end was signalled (the client has seen it and
 * started waiting for the rest of the output), the last output and the
 * channel's end arrive while the client is stopped for longer than it waits
 * for output after an end: a loaded host that descheduled it. */
static int on_late_output(sd_event_source *s, uint64_t usec, void *userdata) {
        Fake *f = userdata;

        f->late_source = sd_event_source_disable_unref(f->late_source);
        kill(f->pid, SIGSTOP);
        assert_int_equal(write(f->worker_fd, "LATE\n", 5), 5);
        f->worker_fd = safe_close(f->worker_fd);
        assert_true(sd_event_add_time_relative(f->event, &f->late_source, CLOCK_MONOTONIC, 3 * USEC_PER_SEC, 0,
                                               on_resume_client, f) >= 0);
        return 0;
}

static int on_worker_input(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;
        char buf[1024];
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n > 0) {
                for (ssize_t i = 0; i < n; i++)
                        buf[i] = (char) toupper((unsigned char) buf[i]);
                assert_int_equal(write(fd, buf, (size_t) n), n);
                return 0;
        }
        /* stdin EOF: the worker finishes, closing its stdout, except in the
         * modes that signal the end with the channel still open. */
        f->worker_source = sd_event_source_disable_unref(f->worker_source);
        if (f->mode == WORKER_END_FIRST || f->mode == WORKER_END_KEEPS_CHANNEL) {
                worker_end(f);
                if (f->mode == WORKER_END_FIRST)
                        assert_true(sd_event_add_time_relative(f->event, &f->late_source, CLOCK_MONOTONIC,
                                                               500 * USEC_PER_MSEC, 0, on_late_output, f) >= 0);
                return 0;
        }
        f->worker_fd = safe_close(f->worker_fd);
        if (f->mode != WORKER_NEVER_ENDS)
                worker_end(f);
        return 0;
}

/* --- org.sandboxd1.Manager --- */

static int method_create_worker(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Fake *f = userdata;
        int r;

        f->interactive = sd_bus_message_get_allow_interactive_authorization(m);
        f->subscribed_first = f->subscribed;
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key;

                assert_true(sd_bus_message_read(m, "s", &key) > 0);
                if (*f->spec_keys)
                        strcat(f->spec_keys, ",");
                strcat(f->spec_keys, key);
                if (streq(key, "Argv")) {
                        assert_true(sd_bus_message_enter_container(m, 'v', "as") > 0);
                        assert_true(sd_bus_message_read_strv(m, &f->argv) > 0);
                        assert_true(sd_bus_message_exit_container(m) > 0);
                } else if (streq(key, "Origin")) {
                        const char *origin;

                        assert_true(sd_bus_message_read(m, "v", "s", &origin) > 0);
                        f->origin = strdup(origin);
                } else if (streq(key, "Credentials")) {
                        const char *name;
                        const void *data;
                        size_t size;

                        assert_true(sd_bus_message_enter_container(m, 'v', "a(say)") > 0);
                        assert_true(sd_bus_message_enter_container(m, 'a', "(say)") > 0);
                        assert_true(sd_bus_message_enter_container(m, 'r', "say") > 0);
                        assert_true(sd_bus_message_read(m, "s", &name) > 0);
                        assert_true(sd_bus_message_read_array(m, 'y', &data, &size) > 0);
                        assert_true(asprintf(&f->credential, "%s=%.*s", name, (int) size, (const char *) data) > 0);
                        assert_true(sd_bus_message_exit_container(m) > 0);
                        assert_true(sd_bus_message_exit_container(m) > 0);
                        assert_true(sd_bus_message_exit_container(m) > 0);
                } else
                        assert_true(sd_bus_message_skip(m, "v") >= 0);
                assert_true(sd_bus_message_exit_container(m) > 0);
        }
        assert_true(r >= 0);

        if (f->argv && streq(f->argv[0], "/fail"))
                return sd_bus_error_set(error, "org.sandboxd1.Error.StartFailed",
                                        "Unit sandbox-" WORKER_ID ".service failed: exit-code");
        if (f->argv && streq(f->argv[0], "/silent"))
                f->mode = WORKER_SILENT_END;
        if (f->argv && streq(f->argv[0], "/never-exits"))
                f->mode = WORKER_NEVER_ENDS;
        if (f->argv && streq(f->argv[0], "/end-first"))
                f->mode = WORKER_END_FIRST;
        if (f->argv && streq(f->argv[0], "/end-keeps-channel"))
                f->mode = WORKER_END_KEEPS_CHANNEL;
        free(f->state);
        f->state = strdup("running");
        return sd_bus_reply_method_return(m, "so", WORKER_ID, WORKER_PATH);
}

static int method_open_channel(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Fake *f = userdata;
        const char *id;
        int sv[2], r;

        assert_true(sd_bus_message_read(m, "s", &id) > 0);
        if (!streq(id, WORKER_ID))
                return sd_bus_error_set(error, "org.sandboxd1.Error.NoSuchWorker", "No worker with that id");
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        f->worker_fd = sv[0];
        assert_true(sd_event_add_io(f->event, &f->worker_source, sv[0], EPOLLIN, on_worker_input, f) >= 0);
        f->channel_opened = true;
        r = sd_bus_reply_method_return(m, "h", sv[1]);
        close(sv[1]);
        if (f->kill_on_open)
                kill(f->pid, SIGTERM);
        return r;
}

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Fake *f = userdata;

        f->subscribed = true;
        return sd_bus_reply_method_return(m, NULL);
}

static int method_stop_worker(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Fake *f = userdata;
        const char *id;

        assert_true(sd_bus_message_read(m, "s", &id) > 0);
        assert_string_equal(id, WORKER_ID);
        f->stop_called = true;
        return sd_bus_reply_method_return(m, NULL);
}

static int method_list_workers(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "a(ssssuuo)", 1, WORKER_ID, "trusted", "running",
                                          "sandbox-" WORKER_ID ".service", (uint32_t) 61234, (uint32_t) 1500,
                                          WORKER_PATH);
}

/* A running worker and one the idle reaper ended, whatever States asked:
 * the client filters too. */
static int method_list_workers_ex(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **states = NULL;
        Fake *f = userdata;
        const char *key;

        f->list_called = true;
        assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") > 0);
        assert_true(sd_bus_message_enter_container(m, 'e', "sv") > 0);
        assert_true(sd_bus_message_read(m, "s", &key) > 0);
        assert_string_equal(key, "States");
        assert_true(sd_bus_message_enter_container(m, 'v', "as") > 0);
        assert_true(sd_bus_message_read_strv(m, &states) > 0);
        for (char **st = states; *st; st++) {
                if (*f->list_states)
                        strcat(f->list_states, ",");
                strcat(f->list_states, *st);
        }

        assert_true(sd_bus_message_new_method_return(m, &reply) >= 0);
        assert_true(sd_bus_message_append(reply, "aa{sv}", 2,
                                          8, "Id", "s", WORKER_ID, "Class", "s", "trusted", "State", "s", "running",
                                          "Result", "s", "", "Owner", "u", (uint32_t) 0, "UID", "u", (uint32_t) 61234,
                                          "Unit", "s", "sandbox-" WORKER_ID ".service",
                                          "IdleUSec", "t", 2 * USEC_PER_SEC,
                                          6, "Id", "s", "ffffffffffff", "Class", "s", "standard", "State", "s", "ended",
                                          "Result", "s", "idle", "Owner", "u", (uint32_t) 0,
                                          "ExitStatus", "i", (int32_t) 143) >= 0);
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_worker(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *id;

        assert_true(sd_bus_message_read(m, "s", &id) > 0);
        if (!streq(id, WORKER_ID))
                return sd_bus_error_setf(error, "org.sandboxd1.Error.NoSuchWorker", "No worker '%s'", id);
        return sd_bus_reply_method_return(m, "o", WORKER_PATH);
}

/* The operator's egress floor the fake daemon reports; NULL: a daemon
 * without the EgressFloor property. */
static char **fake_floor;

static int property_get_egress_floor(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        if (!fake_floor)
                return sd_bus_error_set(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "No EgressFloor here");
        return sd_bus_message_append_strv(reply, fake_floor);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("CreateWorker", "a{sv}", "so", method_create_worker, SD_BUS_VTABLE_SENSITIVE),
        SD_BUS_METHOD("OpenChannel", "s", "h", method_open_channel, 0),
        SD_BUS_METHOD("StopWorker", "s", "", method_stop_worker, 0),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, 0),
        SD_BUS_METHOD("ListWorkers", "", "a(ssssuuo)", method_list_workers, 0),
        SD_BUS_METHOD("GetWorker", "s", "o", method_get_worker, 0),
        SD_BUS_PROPERTY("EgressFloor", "as", property_get_egress_floor, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END
};

/* What a daemon newer than ListWorkers adds; off: one that predates it. */
static bool fake_has_list_ex = true;
static const sd_bus_vtable manager_ex_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("ListWorkersEx", "a{sv}", "aa{sv}", method_list_workers_ex, 0),
        SD_BUS_VTABLE_END
};

static const sd_bus_vtable worker_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "s", NULL, offsetof(Fake, id), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", NULL, offsetof(Fake, state), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExitStatus", "i", NULL, offsetof(Fake, exit_status), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_VTABLE_END
};

/* --- the connection and the client process --- */

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;
        sd_id128_t server_id;
        int conn;

        conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        assert_true(conn >= 0);
        f->n_connections++;
        assert_null(f->bus);
        assert_true(sd_bus_new(&f->bus) >= 0);
        assert_true(sd_bus_set_fd(f->bus, conn, conn) >= 0);
        assert_true(sd_id128_randomize(&server_id) >= 0);
        assert_true(sd_bus_set_server(f->bus, true, server_id) >= 0);
        /* Signals must look like they come from the daemon's well-known name. */
        assert_true(sd_bus_set_sender(f->bus, "org.sandboxd1") >= 0);
        assert_true(sd_bus_add_object_vtable(f->bus, NULL, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                             driver_vtable, f) >= 0);
        assert_true(sd_bus_add_object_vtable(f->bus, NULL, "/org/sandboxd1", "org.sandboxd1.Manager",
                                             manager_vtable, f) >= 0);
        if (fake_has_list_ex)
                assert_true(sd_bus_add_object_vtable(f->bus, NULL, "/org/sandboxd1", "org.sandboxd1.Manager",
                                                     manager_ex_vtable, f) >= 0);
        assert_true(sd_bus_add_object_vtable(f->bus, NULL, WORKER_PATH, "org.sandboxd1.Worker", worker_vtable, f) >=
                    0);
        assert_true(sd_bus_start(f->bus) >= 0);
        assert_true(sd_bus_attach_event(f->bus, f->event, 0) >= 0);
        return 0;
}

static void maybe_done(Fake *f) {
        if (f->exited && f->open_pipes == 0)
                sd_event_exit(f->event, 0);
}

static int on_client_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Fake *f = userdata;

        if (si->si_code == CLD_EXITED)
                f->exit_code = si->si_status;
        else
                f->exit_code = 1000 + si->si_status;
        f->exited = true;
        maybe_done(f);
        return 0;
}

static int collect(sd_event_source *s, int fd, Fake *f, char *buf, size_t size, size_t *len) {
        char scratch[512];
        ssize_t n;

        if (*len < size - 1)
                n = read(fd, buf + *len, size - 1 - *len);
        else
                n = read(fd, scratch, sizeof(scratch));
        if (n > 0) {
                if (*len < size - 1)
                        *len += (size_t) n;
                buf[*len] = 0;
                return 0;
        }
        if (n < 0 && errno == EAGAIN)
                return 0;
        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        f->open_pipes--;
        maybe_done(f);
        return 0;
}

static int on_client_stdout(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;
        return collect(s, fd, f, f->output, sizeof(f->output), &f->output_len);
}

static int on_client_stderr(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;
        return collect(s, fd, f, f->errors, sizeof(f->errors), &f->errors_len);
}

/* Fails outside the event loop (after cleaning up), so a hanging client
 * neither outlives the test nor turns into a leak report. */
static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Fake *f = userdata;

        kill(f->pid, SIGKILL);
        (void) waitpid(f->pid, NULL, 0);
        f->timed_out = true;
        return sd_event_exit(f->event, 0);
}

static void fake_done(Fake *f);

/* Runs `sandboxctl ARGS...` against a fresh fake with `input` on its stdin
 * (NULL: stdin stays open until the client exits) and waits for it. */
static void run_client(Fake *f, bool kill_on_open, const char *input, char **args) {
        const char *binary = getenv("SANDBOXCTL_BINARY");
        _cleanup_free_ char *address = NULL;
        sd_event_source *sources[4] = {};
        int in_pipe[2], out_pipe[2], err_pipe[2];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n_args = strv_length(args);
        char **argv;

        assert_non_null(binary);
        *f = (Fake) { .listen_fd = -1, .worker_fd = -1, .id = WORKER_ID, .exit_status = -1, .exit_code = -1,
                      .kill_on_open = kill_on_open };
        f->state = strdup("starting");

        unlink(socket_path);
        f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(f->listen_fd >= 0);
        memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
        assert_int_equal(bind(f->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(f->listen_fd, 4), 0);
        assert_true(asprintf(&address, "unix:path=%s", socket_path) > 0);

        assert_int_equal(pipe2(in_pipe, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out_pipe, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(pipe2(err_pipe, O_CLOEXEC | O_NONBLOCK), 0);

        argv = calloc(n_args + 2, sizeof(char *));
        assert_non_null(argv);
        argv[0] = (char *) "sandboxctl";
        memcpy(argv + 1, args, n_args * sizeof(char *));

        f->pid = fork();
        assert_true(f->pid >= 0);
        if (f->pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                if (dup2(in_pipe[0], STDIN_FILENO) < 0 || dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
                    dup2(err_pipe[1], STDERR_FILENO) < 0)
                        _exit(127);
                /* The bus fds must look like a terminal-less caller's. */
                fd_nonblock(STDOUT_FILENO, false);
                fd_nonblock(STDERR_FILENO, false);
                setenv("SANDBOXCTL_BUS_ADDRESS", address, 1);
                execv(binary, argv);
                _exit(127);
        }
        free(argv);
        close(in_pipe[0]);
        close(out_pipe[1]);
        close(err_pipe[1]);
        if (input) {
                assert_int_equal(write(in_pipe[1], input, strlen(input)), (ssize_t) strlen(input));
                in_pipe[1] = safe_close(in_pipe[1]);
        }

        assert_true(sd_event_new(&f->event) >= 0);
        assert_true(sd_event_add_io(f->event, &sources[0], f->listen_fd, EPOLLIN, on_connection, f) >= 0);
        assert_true(sd_event_add_io(f->event, &sources[1], out_pipe[0], EPOLLIN, on_client_stdout, f) >= 0);
        assert_true(sd_event_add_io(f->event, &sources[2], err_pipe[0], EPOLLIN, on_client_stderr, f) >= 0);
        f->open_pipes = 2;
        assert_true(sd_event_add_child(f->event, NULL, f->pid, WEXITED, on_client_exit, f) >= 0);
        assert_true(sd_event_add_time_relative(f->event, &sources[3], CLOCK_MONOTONIC, 60 * USEC_PER_SEC, 0,
                                               on_timeout, f) >= 0);
        assert_true(sd_event_loop(f->event) >= 0);

        for (size_t i = 0; i < ELEMENTSOF(sources); i++)
                sd_event_source_disable_unref(sources[i]);
        safe_close(in_pipe[1]);
        close(out_pipe[0]);
        close(err_pipe[0]);
        if (f->timed_out) {
                fprintf(stderr, "sandboxctl did not finish in 60 s; stdout: '%s' stderr: '%s'\n", f->output,
                        f->errors);
                fake_done(f);
                fail();
        }
}

static void fake_done(Fake *f) {
        sd_event_source_disable_unref(f->worker_source);
        sd_event_source_disable_unref(f->late_source);
        safe_close(f->worker_fd);
        if (f->bus)
                sd_bus_flush_close_unref(f->bus);
        sd_event_unref(f->event);
        safe_close(f->listen_fd);
        unlink(socket_path);
        strv_free(f->argv);
        free(f->credential);
        free(f->origin);
        free(f->state);
}

#define ARGS(...) ((char *[]) { __VA_ARGS__, NULL })

static void test_run_relays_and_exits_with_status(void **state) {
        Fake f;

        run_client(&f, false, "ping\nsecond line\n",
                   ARGS("run", "--memory", "64M", "--setenv", "A=B", "--", "/bin/cat", "-u"));
        assert_int_equal(f.n_connections, 1);
        assert_string_equal(f.spec_keys, "Argv,Environment,MemoryMax");
        assert_int_equal(strv_length(f.argv), 2);
        assert_string_equal(f.argv[0], "/bin/cat");
        assert_string_equal(f.argv[1], "-u");
        assert_true(f.channel_opened);
        assert_string_equal(f.output, "PING\nSECOND LINE\n");
        assert_string_equal(f.errors, "");
        assert_int_equal(f.exit_code, 7);
        assert_false(f.stop_called);
        /* Signals about the worker come only to a subscriber. */
        assert_true(f.subscribed_first);
        fake_done(&f);
}

/* `sandboxctl run WORKER` with input on its stdin prints output and exits
 * with the fake worker's status, 7. */
static void expect_run(const char *input, const char *worker, const char *output) {
        Fake f;

        run_client(&f, false, input, ARGS("run", (char *) worker));
        assert_string_equal(f.output, output);
        assert_int_equal(f.exit_code, 7);
        fake_done(&f);
}

static void test_run_reads_state_after_eof(void **state) {
        /* No signal announces the end: the State read after channel EOF must. */
        expect_run("quiet\n", "/silent", "QUIET\n");
}

static void test_run_collects_output_after_a_stall(void **state) {
        /* The end is signalled before the last output; the client is then
         * stopped for longer than it waits for output after an end. What was
         * there when it resumed must still be printed. */
        expect_run("x\n", "/end-first", "X\nLATE\n");
}

static void test_run_ends_when_output_stays_quiet(void **state) {
        /* A channel that never closes after the end does not hold the run. */
        expect_run("x\n", "/end-keeps-channel", "X\n");
}

static void test_run_start_failure(void **state) {
        Fake f;

        run_client(&f, false, "", ARGS("run", "--", "/fail"));
        assert_int_equal(f.exit_code, 70);
        assert_string_equal(f.errors,
                            "sandboxctl: org.sandboxd1.Error.StartFailed: Unit sandbox-" WORKER_ID
                            ".service failed: exit-code\n");
        assert_false(f.channel_opened);
        fake_done(&f);
}

static void test_run_sigterm_stops_worker(void **state) {
        Fake f;

        /* stdin stays open and the worker never ends: only the signal ends the run. */
        run_client(&f, true, NULL, ARGS("run", "/never-exits"));
        assert_true(f.stop_called);
        assert_int_equal(f.exit_code, 128 + SIGTERM);
        fake_done(&f);
}

static void test_create_prints_id_and_sends_credential(void **state) {
        _cleanup_free_ char *arg = NULL;
        Fake f;

        assert_true(asprintf(&arg, "token:%s", credential_path) > 0);
        run_client(&f, false, "", ARGS("create", "--credential", arg, "--class", "trusted", "/bin/sleep", "1"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.output, WORKER_ID "\n");
        assert_string_equal(f.spec_keys, "Argv,Class,Credentials");
        assert_string_equal(f.credential, "token=s3cr3t-value");
        assert_false(f.channel_opened);
        fake_done(&f);
}

/* polkit may ask for a password unless --no-ask-password; --origin is the
 * spec's Origin key. */
static void test_origin_and_no_ask_password(void **state) {
        Fake f;

        run_client(&f, false, "", ARGS("create", "--origin", "llm-generated", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.spec_keys, "Argv,Origin");
        assert_string_equal(f.origin, "llm-generated");
        assert_int_equal(f.interactive, 1);
        fake_done(&f);

        run_client(&f, false, "", ARGS("--no-ask-password", "create", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.spec_keys, "Argv");
        assert_int_equal(f.interactive, 0);
        fake_done(&f);
}

#define FLOOR_HINT "sandboxctl: hint: the operator's egress floor is empty, so every --allow is refused; " \
        "see [Egress] in /etc/sandboxd/sandboxd.conf\n"

/* Only with --allow and an empty floor; the worker is created all the
 * same, since the daemon decides. */
static void test_empty_floor_hint(void **state) {
        char *empty[] = { NULL }, *some[] = { (char *) "*.example.org", NULL };
        Fake f;

        fake_floor = empty;
        run_client(&f, false, "", ARGS("create", "--allow", "example.org", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.spec_keys, "Argv,EgressAllow");
        assert_string_equal(f.errors, FLOOR_HINT);
        assert_string_equal(f.output, WORKER_ID "\n");
        fake_done(&f);

        run_client(&f, false, "", ARGS("create", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.errors, "");
        fake_done(&f);

        fake_floor = some;
        run_client(&f, false, "", ARGS("create", "--allow", "example.org", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.errors, "");
        fake_done(&f);

        fake_floor = NULL;
        run_client(&f, false, "", ARGS("create", "--allow", "example.org", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.errors, "");
        fake_done(&f);
}

static void test_usage_error_never_connects(void **state) {
        Fake f;

        run_client(&f, false, "", ARGS("run", "--memory", "12Q", "--", "/bin/true"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        assert_non_null(strstr(f.errors, "--memory"));
        fake_done(&f);

        run_client(&f, false, "", ARGS("frobnicate"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        fake_done(&f);

        run_client(&f, false, "", ARGS("stop"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        fake_done(&f);

        run_client(&f, false, "", ARGS("list", "--bogus"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        fake_done(&f);

        /* An unknown state is named, and nothing is asked. */
        run_client(&f, false, "", ARGS("list", "--state=running,failed"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        assert_non_null(strstr(f.errors, "unknown state 'failed'"));
        fake_done(&f);

        /* run relays raw bytes: --json is a usage error, before or after the verb. */
        run_client(&f, false, "", ARGS("run", "--json", "--", "/bin/true"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        assert_non_null(strstr(f.errors, "--json"));
        fake_done(&f);

        run_client(&f, false, "", ARGS("--json", "run", "/bin/true"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        fake_done(&f);

        run_client(&f, false, "", ARGS("attach", WORKER_ID, "--json"));
        assert_int_equal(f.exit_code, 64);
        assert_int_equal(f.n_connections, 0);
        fake_done(&f);
}

static void test_list_json(void **state) {
        json_object *parsed, *first, *v;
        Fake f;

        /* --json after the verb as before it. */
        run_client(&f, false, "", ARGS("list", "--json"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.list_states, "starting,running,stopping,suspending,suspended,resuming");
        parsed = json_tokener_parse(f.output);
        assert_non_null(parsed);
        /* The fake's ended worker is not asked for: the client filters too. */
        assert_int_equal(json_object_array_length(parsed), 1);
        first = json_object_array_get_idx(parsed, 0);
        assert_true(json_object_object_get_ex(first, "id", &v));
        assert_string_equal(json_object_get_string(v), WORKER_ID);
        assert_true(json_object_object_get_ex(first, "uid", &v));
        assert_int_equal(json_object_get_int64(v), 61234);
        assert_true(json_object_object_get_ex(first, "owner", &v));
        assert_string_equal(json_object_get_string(v), "root");
        assert_true(json_object_object_get_ex(first, "owner_uid", &v));
        assert_int_equal(json_object_get_int64(v), 0);
        assert_true(json_object_object_get_ex(first, "idle_usec", &v));
        assert_int_equal(json_object_get_int64(v), 2 * USEC_PER_SEC);
        /* No systemd behind the fake: memory is not known, and says so. */
        assert_true(json_object_object_get_ex(first, "memory_bytes", &v));
        assert_null(v);
        json_object_put(parsed);
        fake_done(&f);

        run_client(&f, false, "", ARGS("--json", "list", "--all"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.list_states, "starting,running,stopping,ended,suspending,suspended,resuming");
        parsed = json_tokener_parse(f.output);
        assert_non_null(parsed);
        assert_int_equal(json_object_array_length(parsed), 2);
        json_object_put(parsed);
        fake_done(&f);

        run_client(&f, false, "", ARGS("list", "--state=ended", "--no-legend"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.list_states, "ended");
        assert_string_equal(f.output, "ffffffffffff standard ended idle root - - -\n");
        fake_done(&f);

        run_client(&f, false, "", ARGS("--no-legend", "list"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.output, WORKER_ID " trusted running - root - 2s -\n");
        fake_done(&f);

        run_client(&f, false, "", ARGS("list", "--no-pager"));
        assert_int_equal(f.exit_code, 0);
        assert_string_equal(f.output, "ID           CLASS   STATE   RESULT OWNER AGE IDLE MEMORY\n"
                                      WORKER_ID " trusted running -      root  -   2s   -\n"
                                      "\n1 worker listed.\n");
        fake_done(&f);
}

/* A daemon that predates ListWorkersEx (still running after an upgrade). */
static void test_list_legacy_daemon(void **state) {
        Fake f;

        fake_has_list_ex = false;
        run_client(&f, false, "", ARGS("list", "--no-legend"));
        fake_has_list_ex = true;
        assert_int_equal(f.exit_code, 0);
        assert_false(f.list_called);
        assert_string_equal(f.output, WORKER_ID " trusted running - 1500 - - -\n");
        fake_done(&f);
}

static void test_create_json(void **state) {
        json_object *parsed, *v;
        Fake f;

        run_client(&f, false, "", ARGS("create", "--json", "/bin/true"));
        assert_int_equal(f.exit_code, 0);
        parsed = json_tokener_parse(f.output);
        assert_non_null(parsed);
        assert_true(json_object_object_get_ex(parsed, "id", &v));
        assert_string_equal(json_object_get_string(v), WORKER_ID);
        assert_true(json_object_object_get_ex(parsed, "path", &v));
        assert_string_equal(json_object_get_string(v), WORKER_PATH);
        json_object_put(parsed);
        fake_done(&f);

        /* stop --json is accepted and prints nothing, as stop does. */
        run_client(&f, false, "", ARGS("stop", "--json", WORKER_ID));
        assert_int_equal(f.exit_code, 0);
        assert_true(f.stop_called);
        assert_string_equal(f.output, "");
        fake_done(&f);

        run_client(&f, false, "", ARGS("status", WORKER_ID, "--json"));
        assert_int_equal(f.exit_code, 0);
        parsed = json_tokener_parse(f.output);
        assert_non_null(parsed);
        assert_true(json_object_object_get_ex(parsed, "State", &v));
        json_object_put(parsed);
        fake_done(&f);
}

static void test_status_and_errors(void **state) {
        Fake f;

        run_client(&f, false, "", ARGS("status", WORKER_ID));
        assert_int_equal(f.exit_code, 0);
        assert_non_null(strstr(f.output, "State: starting\n"));
        assert_non_null(strstr(f.output, "ExitStatus: -1\n"));
        fake_done(&f);

        run_client(&f, false, "", ARGS("status", "ffffffffffff"));
        assert_int_equal(f.exit_code, 66);
        assert_string_equal(f.errors, "sandboxctl: org.sandboxd1.Error.NoSuchWorker: No worker 'ffffffffffff'\n");
        fake_done(&f);

        run_client(&f, false, "", ARGS("stop", WORKER_ID));
        assert_int_equal(f.exit_code, 0);
        assert_true(f.stop_called);
        fake_done(&f);
}

static int setup(void **state) {
        sigset_t mask;
        int fd;

        /* sd_event_add_child() needs SIGCHLD blocked. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);

        snprintf(socket_path, sizeof(socket_path), "/tmp/test-sandboxctl-bus-%d", (int) getpid());
        fd = mkstemp(credential_path);
        if (fd < 0)
                return -1;
        if (write(fd, "s3cr3t-value", 12) != 12) {
                close(fd);
                return -1;
        }
        close(fd);
        return 0;
}

static int teardown(void **state) {
        unlink(credential_path);
        unlink(socket_path);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_run_relays_and_exits_with_status),
                cmocka_unit_test(test_run_reads_state_after_eof),
                cmocka_unit_test(test_run_collects_output_after_a_stall),
                cmocka_unit_test(test_run_ends_when_output_stays_quiet),
                cmocka_unit_test(test_run_start_failure),
                cmocka_unit_test(test_run_sigterm_stops_worker),
                cmocka_unit_test(test_create_prints_id_and_sends_credential),
                cmocka_unit_test(test_origin_and_no_ask_password),
                cmocka_unit_test(test_empty_floor_hint),
                cmocka_unit_test(test_usage_error_never_connects),
                cmocka_unit_test(test_list_json),
                cmocka_unit_test(test_list_legacy_daemon),
                cmocka_unit_test(test_create_json),
                cmocka_unit_test(test_status_and_errors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
