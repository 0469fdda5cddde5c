/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tools over the Worker methods of issue 24: a command in a running
 * worker (Worker.Exec), and its files (OpenFile, CommitFile, ListDirectory).
 * They are offered only once a worker's introspection shows those methods
 * with these signatures (mcp_tools_available()), and each call checks its
 * own worker again: nothing is offered that the daemon cannot do. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "mcp-tools-internal.h"

/* Beyond the command's own timeout (TimeoutUSec, which the daemon enforces),
 * how long the tool waits before it kills the process itself. */
#define EXEC_GRACE_USEC (5 * USEC_PER_SEC)
#define EXEC_EXIT_WAIT_USEC (10 * USEC_PER_SEC)
/* stdin a tool may pass: less than a pipe holds, so it is written at once. */
#define EXEC_STDIN_MAX (60u * 1024u)

/* 1 when worker PATH has the methods NEEDS, else 0 with a tool error. */
static int worker_has(sd_bus *bus, const char *path, unsigned needs, McpToolResult *ret) {
        int f = mcp_worker_features(bus, path);

        if (f >= 0 && ((unsigned) f & needs) == needs)
                return 1;
        mcp_tool_error(ret, "%s: this worker offers no %s (a worker started by an older sandboxd, or a class "
                       "without it)", SBX_ERROR_NOT_SUPPORTED,
                       needs & MCP_NEEDS_EXEC ? "Worker.Exec" : "file methods");
        return 0;
}

static int append_exec_options(sd_bus_message *m, uint64_t timeout, const char *cwd) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_append(m, "{sv}", "TimeoutUSec", "t", timeout);
        if (r >= 0 && cwd)
                r = sd_bus_message_append(m, "{sv}", "WorkingDirectory", "s", cwd);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* Exec: the process's path and its stdin, stdout and stderr (ours). */
static int exec_start(sd_bus *bus, const char *path, char **argv, uint64_t timeout, const char *cwd,
                      sd_bus_error *error, char **ret_process, int fds[3]) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *process;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, path, WORKER_INTERFACE, "Exec");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, argv);
        if (r >= 0)
                r = append_exec_options(m, timeout, cwd);
        if (r >= 0)
                r = sd_bus_call(bus, m, 60 * USEC_PER_SEC, error, &reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &process);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "h");
        for (int i = 0; r >= 0 && i < 3; i++) {
                int fd;
                r = sd_bus_message_read(reply, "h", &fd);
                if (r == 0)
                        r = -EBADMSG;   /* fewer than three: a terminal, which this tool never asks for */
                if (r > 0) {
                        fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                        r = fds[i] < 0 ? -errno : 0;
                }
        }
        if (r < 0)
                return r;
        *ret_process = strdup(process);
        return *ret_process ? 0 : -ENOMEM;
}

typedef enum ExecEnd { EXEC_EOF, EXEC_TIMEOUT, EXEC_CANCELLED } ExecEnd;

/* Reads stdout and stderr until both end, the deadline or a cancellation. */
static int exec_read(int out_fd, int err_fd, McpCall *call, uint64_t deadline, McpOutput *out, McpOutput *err,
                     ExecEnd *ret) {
        bool open[2] = { true, true };
        int fds[2] = { out_fd, err_fd };
        McpOutput *sinks[2] = { out, err };
        char buf[16384];

        while (open[0] || open[1]) {
                struct pollfd p[3] = {
                        { .fd = open[0] ? fds[0] : -1, .events = POLLIN },
                        { .fd = open[1] ? fds[1] : -1, .events = POLLIN },
                        { .fd = mcp_call_cancel_fd(call), .events = POLLIN },
                };
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (now >= deadline) {
                        *ret = EXEC_TIMEOUT;
                        return 0;
                }
                if (poll(p, 3, (int) MIN((deadline - now) / USEC_PER_MSEC + 1, (uint64_t) INT32_MAX)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[2].revents) {
                        *ret = EXEC_CANCELLED;
                        return 0;
                }
                for (int i = 0; i < 2; i++) {
                        if (!open[i] || !p[i].revents)
                                continue;
                        ssize_t n = read(fds[i], buf, sizeof(buf));
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0)
                                open[i] = false;
                        else
                                mcp_output_add(sinks[i], buf, (size_t) n);
                }
        }
        *ret = EXEC_EOF;
        return 0;
}

/* The process's end: its exit status, or the signal that killed it. */
static void exec_wait(sd_bus *bus, const char *process, int *ret_status, int *ret_signal) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + EXEC_EXIT_WAIT_USEC;

        *ret_status = *ret_signal = -1;
        while (now_usec(CLOCK_MONOTONIC) < deadline) {
                _cleanup_free_ char *state = NULL;
                if (sd_bus_get_property_string(bus, BUS_NAME, process, PROCESS_INTERFACE, "State", NULL, &state) < 0)
                        return;
                if (streq(state, "exited")) {
                        int32_t v = -1;
                        if (sd_bus_get_property_trivial(bus, BUS_NAME, process, PROCESS_INTERFACE, "ExitStatus", NULL,
                                                        'i', &v) >= 0)
                                *ret_status = v;
                        v = -1;
                        if (sd_bus_get_property_trivial(bus, BUS_NAME, process, PROCESS_INTERFACE, "ExitSignal", NULL,
                                                        'i', &v) >= 0)
                                *ret_signal = v;
                        return;
                }
                (void) usleep(50 * 1000);
        }
}

static int exec_result(McpToolResult *ret, const char *id, const McpOutput *out, const McpOutput *err, int status,
                       int sig, bool timed_out, uint64_t timeout) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *so = mcp_output_text(out), *se = mcp_output_text(err);

        if (!o || !so || !se)
                return -ENOMEM;
        json_object_object_add(o, "worker_id", json_object_new_string(id));
        json_object_object_add(o, "exit_code", status >= 0 ? json_object_new_int(status) : NULL);
        json_object_object_add(o, "signal", sig > 0 ? json_object_new_int(sig) : NULL);
        json_object_object_add(o, "timed_out", json_object_new_boolean(timed_out));
        json_object_object_add(o, "stdout", json_object_new_string(so));
        json_object_object_add(o, "stderr", json_object_new_string(se));
        json_object_object_add(o, "stdout_omitted_bytes", json_object_new_int64((int64_t) mcp_output_omitted(out)));
        json_object_object_add(o, "stderr_omitted_bytes", json_object_new_int64((int64_t) mcp_output_omitted(err)));
        const char *last = !isempty(se) ? se : so;
        bool newline = isempty(last) || last[strlen(last) - 1] == '\n';
        char end[128];

        if (timed_out)
                snprintf(end, sizeof(end), "timed out after %" PRIu64 " s: the process was killed",
                         timeout / USEC_PER_SEC);
        else if (status >= 0)
                snprintf(end, sizeof(end), "exit code %d", status);
        else if (sig > 0)
                snprintf(end, sizeof(end), "killed by signal %d", sig);
        else
                snprintf(end, sizeof(end), "no exit status");
        if (asprintf(&ret->text, "%s%s%s%s[%s]", so, isempty(se) ? "" : "\n[stderr]\n", se, newline ? "" : "\n",
                     end) < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        ret->is_error = timed_out || status < 0;
        ret->structured = TAKE_PTR(o);
        return 0;
}

/* ARGV (in JSON) in our worker named by worker_id, with STDIN_DATA. */
static int exec_in_worker(const McpToolsContext *ctx, McpCall *call, json_object *args, json_object *command,
                          McpToolResult *ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *process = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        const char *id, *stdin_data = mcp_arg_string(args, "stdin"), *cwd = mcp_arg_string(args, "working_directory");
        int fds[3] = { -1, -1, -1 }, status = -1, sig = -1, r;
        McpOutput out = {}, err = {};
        ExecEnd end = EXEC_EOF;
        uint64_t timeout;
        char msg[256];

        if (mcp_command_argv(command, &argv, msg, sizeof(msg)) < 0)
                return mcp_tool_error(ret, "%s: %s", SBX_ERROR_INVALID_ARGUMENT, msg);
        r = mcp_policy_timeout(&ctx->policy, args, &timeout, msg, sizeof(msg));
        if (r < 0)
                return mcp_tool_error(ret, "%s: %s", r == -EPERM ? SBX_ERROR_ACCESS_DENIED : SBX_ERROR_INVALID_ARGUMENT,
                                      msg);
        if (stdin_data && strlen(stdin_data) > EXEC_STDIN_MAX)
                return mcp_tool_error(ret, "%s: \"stdin\" may be at most %u bytes; write a file instead",
                                      SBX_ERROR_INVALID_ARGUMENT, EXEC_STDIN_MAX);
        if (mcp_tool_connect(ctx, ret, &bus) == 0)
                return 0;
        r = mcp_our_worker(bus, args, ret, &id, &path);
        if (r <= 0)
                return r;
        if (worker_has(bus, path, MCP_NEEDS_EXEC, ret) == 0)
                return 0;
        r = exec_start(bus, path, argv, timeout, cwd, &error, &process, fds);
        if (r < 0)
                return mcp_tool_bus_error(ret, "Exec", &error, r);
        /* All of stdin at once (less than a pipe holds), then its end. */
        if (stdin_data)
                (void) !write(fds[0], stdin_data, strlen(stdin_data));
        fds[0] = safe_close(fds[0]);
        if (mcp_output_init(&out, ctx->policy.max_output) < 0 || mcp_output_init(&err, ctx->policy.max_output) < 0)
                r = -ENOMEM;
        else
                r = exec_read(fds[1], fds[2], call, now_usec(CLOCK_MONOTONIC) + timeout + EXEC_GRACE_USEC, &out, &err,
                              &end);
        safe_close(fds[1]);
        safe_close(fds[2]);
        if (r < 0 || end != EXEC_EOF)
                (void) sd_bus_call_method(bus, BUS_NAME, process, PROCESS_INTERFACE, "Signal", NULL, NULL, "i",
                                          (int32_t) SIGKILL);
        if (r >= 0 && end != EXEC_CANCELLED) {
                exec_wait(bus, process, &status, &sig);
                r = exec_result(ret, id, &out, &err, status, sig, end == EXEC_TIMEOUT || sig == SIGKILL, timeout);
        }
        mcp_output_done(&out);
        mcp_output_done(&err);
        return r;
}

static int tool_run_in_worker(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        json_object *command = NULL;

        if (!json_object_object_get_ex(args, "worker_id", NULL))
                return mcp_run_fresh(userdata, call, args, ret);
        if (json_object_object_get_ex(args, "class", NULL) || json_object_object_get_ex(args, "allow", NULL) ||
            json_object_object_get_ex(args, "memory", NULL) || json_object_object_get_ex(args, "workspace", NULL))
                return mcp_tool_error(ret, "%s: class, allow, memory and workspace are for a fresh worker; a "
                                      "worker_id's worker keeps its own", SBX_ERROR_INVALID_ARGUMENT);
        json_object_object_get_ex(args, "command", &command);
        return exec_in_worker(userdata, call, args, command, ret);
}

static int tool_exec(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        json_object *argv = NULL;

        json_object_object_get_ex(args, "argv", &argv);
        if (!argv || !json_object_is_type(argv, json_type_array))
                return mcp_tool_error(ret, "%s: \"argv\" is an array of strings", SBX_ERROR_INVALID_ARGUMENT);
        return exec_in_worker(userdata, call, args, argv, ret);
}

/* OpenFile on our worker: the data fd (ours) and the transfer's handle. */
static int open_file(sd_bus *bus, const char *worker, const char *file, const char *mode, sd_bus_error *error,
                     int *ret_fd, char **ret_transfer) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *transfer;
        int fd, r;

        r = sd_bus_call_method(bus, BUS_NAME, worker, WORKER_INTERFACE, "OpenFile", error, &reply, "ssa{sv}", file,
                               mode, 0);
        if (r >= 0)
                r = sd_bus_message_read(reply, "hs", &fd, &transfer);
        if (r < 0)
                return r;
        *ret_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (*ret_fd < 0)
                return -errno;
        *ret_transfer = strdup(transfer);
        return *ret_transfer ? 0 : -ENOMEM;
}

/* The worker's path and the file's, for the file tools: 1, or 0 with a tool error. */
static int file_target(const McpToolsContext *ctx, json_object *args, McpToolResult *ret, sd_bus **bus,
                       char **ret_path, const char **ret_file, bool required) {
        const char *id, *file = mcp_arg_string(args, "path");
        int r;

        if (required && isempty(file)) {
                mcp_tool_error(ret, "%s: \"path\" is required: relative to the worker's home, or absolute inside "
                               "it", SBX_ERROR_INVALID_ARGUMENT);
                return 0;
        }
        if (mcp_tool_connect(ctx, ret, bus) == 0)
                return 0;
        r = mcp_our_worker(*bus, args, ret, &id, ret_path);
        if (r <= 0)
                return r;
        if (worker_has(*bus, *ret_path, MCP_NEEDS_FILES, ret) == 0)
                return 0;
        *ret_file = isempty(file) ? "." : file;
        return 1;
}

static int tool_read_file(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *transfer = NULL, *data = NULL;
        _cleanup_close_ int fd = -1;
        size_t cap = ctx->policy.max_output, n = 0;
        const char *file;
        bool more = false;
        int r;

        r = file_target(ctx, args, ret, &bus, &path, &file, true);
        if (r <= 0)
                return r;
        r = open_file(bus, path, file, "read", &error, &fd, &transfer);
        if (r < 0)
                return mcp_tool_bus_error(ret, "OpenFile", &error, r);
        data = malloc(cap + 1);
        if (!data)
                return -ENOMEM;
        ssize_t k = read_full(fd, data, cap + 1);
        if (k < 0)
                return mcp_tool_bus_error(ret, "Failed to read the file", NULL, (int) k);
        n = MIN((size_t) k, cap);
        more = (size_t) k > cap;
        fd = safe_close(fd);
        /* A read cut short is abandoned; one read to its end is confirmed. */
        r = sd_bus_call_method(bus, BUS_NAME, path, WORKER_INTERFACE, more ? "AbortFile" : "CommitFile", &error, NULL,
                               "s", transfer);
        if (r < 0 && !more)
                return mcp_tool_bus_error(ret, "CommitFile", &error, r);
        data[n] = '\0';
        if (memchr(data, '\0', n))
                return mcp_tool_error(ret, "%s is binary (it holds NUL bytes); read it with run_command "
                                      "(base64 FILE)", file);
        /* JSON carries UTF-8 only; a byte that is not becomes '?'. */
        utf8_replace_invalid(data);
        if (asprintf(&ret->text, "%s%s", data, more ? "\n[... the file is longer than this server's output limit; "
                     "read the rest with run_command (tail, sed -n) ...]" : "") < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int tool_write_file(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL, *transfer = NULL;
        _cleanup_close_ int fd = -1;
        const char *file, *content = mcp_arg_string(args, "content");
        json_object *append = NULL;
        uint64_t bytes = 0;
        int r;

        if (!content)
                return mcp_tool_error(ret, "%s: \"content\" (a string) is required", SBX_ERROR_INVALID_ARGUMENT);
        json_object_object_get_ex(args, "append", &append);
        r = file_target(ctx, args, ret, &bus, &path, &file, true);
        if (r <= 0)
                return r;
        /* replace: written aside and put in place at CommitFile, so a reader
         * never sees half of it. */
        r = open_file(bus, path, file, append && json_object_get_boolean(append) ? "append" : "replace", &error, &fd,
                      &transfer);
        if (r < 0)
                return mcp_tool_bus_error(ret, "OpenFile", &error, r);
        for (size_t done = 0, len = strlen(content); done < len;) {
                ssize_t k = write(fd, content + done, len - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        (void) sd_bus_call_method(bus, BUS_NAME, path, WORKER_INTERFACE, "AbortFile", NULL, NULL, "s",
                                                  transfer);
                        return mcp_tool_bus_error(ret, "Failed to write the file", NULL, r);
                }
                done += (size_t) k;
        }
        fd = safe_close(fd);
        r = sd_bus_call_method(bus, BUS_NAME, path, WORKER_INTERFACE, "CommitFile", &error, &reply, "s", transfer);
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", &bytes);
        if (r < 0)
                return mcp_tool_bus_error(ret, "CommitFile", &error, r);
        if (asprintf(&ret->text, "Wrote %" PRIu64 " bytes to %s.", bytes, file) < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int tool_list_files(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_(json_putp) json_object *list = NULL, *o = NULL;
        const char *file, *name, *type;
        uint64_t size, mtime;
        uint32_t mode, uid, gid;
        size_t len = 0;
        FILE *f;
        int r;

        r = file_target(ctx, args, ret, &bus, &path, &file, false);
        if (r <= 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, path, WORKER_INTERFACE, "ListDirectory", &error, &reply, "s", file);
        if (r < 0)
                return mcp_tool_bus_error(ret, "ListDirectory", &error, r);
        list = json_object_new_array();
        o = json_object_new_object();
        f = open_memstream(&text, &len);
        if (!list || !o || !f) {
                if (f)
                        fclose(f);
                return -ENOMEM;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(sstutuu)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sstutuu)", &name, &type, &size, &mode, &mtime, &uid, &gid)) > 0) {
                json_object *e = json_object_new_object();
                if (!e) {
                        r = -ENOMEM;
                        break;
                }
                json_object_object_add(e, "name", json_object_new_string(name));
                json_object_object_add(e, "type", json_object_new_string(type));
                json_object_object_add(e, "size", json_object_new_int64((int64_t) size));
                json_object_object_add(e, "mode", json_object_new_int((int) (mode & 07777)));
                json_object_object_add(e, "mtime_usec", json_object_new_int64((int64_t) mtime));
                json_object_array_add(list, e);
                fprintf(f, "%-9s %04o %10" PRIu64 " %s\n", type, mode & 07777, size, name);
        }
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return mcp_tool_bus_error(ret, "Failed to read the listing", NULL, r);
        json_object_object_add(o, "entries", TAKE_PTR(list));
        ret->structured = TAKE_PTR(o);
        ret->text = TAKE_PTR(text);
        if (!ret->text)
                ret->text = strdup("(empty directory)");
        return ret->text ? 0 : -ENOMEM;
}

#define COMMAND_SCHEMA                                                                                    \
        "\"command\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},\"description\":"  \
        "\"The command: a string runs through /bin/sh -c, an array of strings is argv (a bare name is "  \
        "looked up in /usr/local/bin:/usr/bin:/bin as the worker sees them).\"}"
#define TIMEOUT_SCHEMA                                                                                    \
        "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Seconds the command may run "  \
        "(default 60, at most this server's runtime ceiling); then it is killed.\"}"
#define EXEC_EXTRA_SCHEMA                                                                                 \
        "\"stdin\":{\"type\":\"string\",\"description\":\"Text the process reads on its standard input "  \
        "(at most 60 KiB).\"},\"working_directory\":{\"type\":\"string\",\"description\":\"Where it "     \
        "runs: relative to the worker's home, or absolute inside it (default: the home).\"}"

const McpTool mcp_tool_run_in_worker = {
        .name = "run_command",
        .title = "Run a command in a sandbox",
        .description = "Runs a command and returns its stdout, stderr and exit code. With worker_id it runs in "
                       "that running worker (its files and processes stay for the next command); without, in a "
                       "fresh worker created for it and gone with it. A worker is an isolated sandbox (gVisor for "
                       "class untrusted): its own user, its own home, no network except the allow-listed hosts; "
                       "not the user's machine. Output past this server's limit is cut in the middle with a notice. "
                       "A non-zero exit code is a result, not a tool error; a timeout is an error.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" COMMAND_SCHEMA "," WORKER_ID_SCHEMA ","
                        TIMEOUT_SCHEMA "," SPEC_SCHEMA "},\"required\":[\"command\"],\"additionalProperties\":false}",
        .requires = MCP_NEEDS_EXEC,
        .fn = tool_run_in_worker,
};

const McpTool mcp_tool_exec = {
        .name = "exec",
        .title = "Run a process in a sandbox worker",
        .description = "Runs argv (no shell) in a running worker started through this server, with optional "
                       "stdin and working directory, killed after its timeout; returns its stdout, stderr, and exit "
                       "code or signal. It runs as the worker: the same user, walls and limits.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA ",\"argv\":{\"type\":\"array\","
                        "\"items\":{\"type\":\"string\"},\"minItems\":1,\"description\":\"The program and its "
                        "arguments.\"}," TIMEOUT_SCHEMA "," EXEC_EXTRA_SCHEMA "},\"required\":[\"worker_id\","
                        "\"argv\"],\"additionalProperties\":false}",
        .requires = MCP_NEEDS_EXEC,
        .fn = tool_exec,
};

#define FILE_PATH_SCHEMA                                                                                  \
        "\"path\":{\"type\":\"string\",\"description\":\"A path in the worker's home: relative to it, or " \
        "absolute inside it. Symlinks and .. never lead out of it.\"}"

const McpTool mcp_tool_read_file = {
        .name = "read_file",
        .title = "Read a file in a sandbox worker",
        .description = "Reads a text file from a worker's home (as the worker: its permissions apply). Up to this "
                       "server's output limit; binary files are refused (use run_command with base64).",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "," FILE_PATH_SCHEMA "},"
                        "\"required\":[\"worker_id\",\"path\"],\"additionalProperties\":false}",
        .read_only = true,
        .idempotent = true,
        .requires = MCP_NEEDS_FILES,
        .fn = tool_read_file,
};

const McpTool mcp_tool_write_file = {
        .name = "write_file",
        .title = "Write a file in a sandbox worker",
        .description = "Writes text to a file in a worker's home, owned by the worker: replaced at once when "
                       "complete (never half-written), or appended to. Bounded by the worker's disk cap.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "," FILE_PATH_SCHEMA ","
                        "\"content\":{\"type\":\"string\",\"description\":\"The file's text.\"},\"append\":{\"type\":"
                        "\"boolean\",\"description\":\"Append instead of replacing (default false).\"}},"
                        "\"required\":[\"worker_id\",\"path\",\"content\"],\"additionalProperties\":false}",
        .destructive = true,
        .requires = MCP_NEEDS_FILES,
        .fn = tool_write_file,
};

const McpTool mcp_tool_list_files = {
        .name = "list_files",
        .title = "List files in a sandbox worker",
        .description = "Lists a directory of a worker's home (default: the home): name, type, size, mode, mtime.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "," FILE_PATH_SCHEMA "},"
                        "\"required\":[\"worker_id\"],\"additionalProperties\":false}",
        .read_only = true,
        .idempotent = true,
        .requires = MCP_NEEDS_FILES,
        .fn = tool_list_files,
};
