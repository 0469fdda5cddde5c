/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tools of `sandboxctl mcp` over org.sandboxd1 (mcp-tools.h). */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "errors.h"
#include "mcp-tools-internal.h"
#include "sandboxctl-bus.h"
#include "sandboxctl-logs.h"
#include "sandboxctl-output.h"


/* CreateWorker answers once the start job is done (a VM-backed class can
 * take long); a suspend or resume once its checkpoint or restore is. */
#define CREATE_TIMEOUT_USEC (300 * USEC_PER_SEC)
#define SUSPEND_RESUME_TIMEOUT_USEC (600 * USEC_PER_SEC)
/* After its output ended, how long a one-shot worker may take to be ended
 * on the bus (its unit's stop) before the tool stops waiting. */
#define END_WAIT_USEC (15 * USEC_PER_SEC)
/* Beyond the command's timeout (the worker's RuntimeMaxUSec, which the
 * daemon enforces), how long the tool waits before stopping it itself. */
#define TIMEOUT_GRACE_USEC (10 * USEC_PER_SEC)

const char mcp_instructions[] =
        "This server runs commands in sandboxd workers: each worker is a fresh, isolated sandbox on this one host "
        "(its own user, an empty home, no network route; egress only to the hosts an allow-list names, through a "
        "proxy), started for a model, so at least class untrusted (gVisor) whatever is asked. A worker is not the "
        "user's machine: it cannot see the user's files, and nothing in it survives its stop. run_command without "
        "a worker_id runs one command in a fresh worker and returns its output and exit code.";

static int bus_connect(const McpToolsContext *ctx, sd_bus **ret) {
        return sandboxctl_bus_open(ctx->ask_password, ret);
}

/* A refusal or failure as the model sees it: the D-Bus error's name first. */
int mcp_tool_bus_error(McpToolResult *ret, const char *what, const sd_bus_error *e, int r) {
        const char *name = e && sd_bus_error_is_set(e) ? e->name : NULL;
        const char *message = name ? (e->message ?: "") : strerror(r < 0 ? -r : r);
        json_object *o;

        mcp_tool_error(ret, "%s: %s%s%s", what, name ?: "", name ? ": " : "", message);
        o = json_object_new_object();
        if (o) {
                json_object_object_add(o, "error", name ? json_object_new_string(name) : NULL);
                json_object_object_add(o, "message", json_object_new_string(message));
                ret->structured = o;
        }
        return ret->text ? 0 : -ENOMEM;
}

int mcp_tool_connect(const McpToolsContext *ctx, McpToolResult *ret, sd_bus **bus) {
        int r = bus_connect(ctx, bus);

        if (r < 0) {
                mcp_tool_bus_error(ret, "Cannot reach sandboxd on the system bus", NULL, r);
                return 0;
        }
        return 1;
}

int mcp_call_manager(sd_bus *bus, const char *method, uint64_t timeout, sd_bus_error *error,
                        sd_bus_message **reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, method);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, m, timeout, error, reply);
}

const char *mcp_arg_string(json_object *args, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(args, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int worker_string_property(sd_bus *bus, const char *path, const char *name, sd_bus_error *error, char **ret) {
        return sd_bus_get_property_string(bus, BUS_NAME, path, WORKER_INTERFACE, name, error, ret);
}

/* Whether worker PATH is one a model started for this user: Origin
 * llm-generated and owned by our UID. The server acts on no other worker,
 * so a model cannot stop, suspend or read the user's own workers. */
static int worker_is_ours(sd_bus *bus, const char *path, sd_bus_error *error) {
        _cleanup_free_ char *origin = NULL;
        uint32_t owner = UINT32_MAX;
        int r;

        r = worker_string_property(bus, path, "Origin", error, &origin);
        if (r < 0)
                return r;
        r = sd_bus_get_property_trivial(bus, BUS_NAME, path, WORKER_INTERFACE, "Owner", error, 'u', &owner);
        if (r < 0)
                return r;
        return streq(origin, MCP_ORIGIN) && owner == (uint32_t) getuid();
}

/* The worker named by the "worker_id" argument, if it is ours: 1 with
 * *ret_id, or 0 with a tool error in RET. */
int mcp_our_worker(sd_bus *bus, json_object *args, McpToolResult *ret, const char **ret_id, char **ret_path) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *id = mcp_arg_string(args, "worker_id"), *path;
        int r;

        if (isempty(id)) {
                mcp_tool_error(ret, "\"worker_id\" (a string, as create_worker or list_workers gave it) is required");
                return 0;
        }
        r = mcp_call_manager(bus, "GetWorker", 0, &error, &reply, "s", id);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0)
                r = worker_is_ours(bus, path, &error);
        if (r < 0) {
                mcp_tool_bus_error(ret, "No such worker", &error, r);
                return 0;
        }
        if (r == 0) {
                mcp_tool_error(ret, "%s: worker %s was not started through this MCP server (Origin=%s, this user): "
                               "it acts on no other worker", SBX_ERROR_NO_SUCH_WORKER, id, MCP_ORIGIN);
                return 0;
        }
        *ret_id = id;
        if (ret_path) {
                *ret_path = strdup(path);
                if (!*ret_path)
                        return -ENOMEM;
        }
        return 1;
}

/* Alive workers a model started for this user, for the ceiling on workers at once. */
static int count_ours(sd_bus *bus, unsigned *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        size_t n = 0;
        unsigned count = 0;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "ListWorkersEx");
        if (r >= 0)
                r = sd_bus_message_append(m, "a{sv}", 0);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, error, &reply);
        if (r >= 0)
                r = worker_list_ex_read(reply, &workers, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (streq_ptr(workers[i].state, "ended") || !workers[i].path)
                        continue;
                /* A worker that ended between the list and this read is not counted. */
                if (worker_is_ours(bus, workers[i].path, NULL) > 0)
                        count++;
        }
        *ret = count;
        return 0;
}

static int check_worker_ceiling(const McpToolsContext *ctx, sd_bus *bus, McpToolResult *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        unsigned n = 0;
        int r;

        r = count_ours(bus, &n, &error);
        if (r < 0) {
                mcp_tool_bus_error(ret, "Failed to list the workers", &error, r);
                return 0;
        }
        if (n >= ctx->policy.max_workers) {
                mcp_tool_error(ret, "%s: this server allows %u workers at once and %u are alive; stop one with "
                               "stop_worker first", SBX_ERROR_TOO_MANY_WORKERS, ctx->policy.max_workers, n);
                return 0;
        }
        return 1;
}

/* CreateWorker of SPEC (freed). *ret_id is a copy. */
static int create_worker(sd_bus *bus, CliSpec *spec, sd_bus_error *error, char **ret_id, char **ret_path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *id, *path;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "CreateWorker");
        if (r >= 0)
                r = cli_spec_append(m, spec);
        cli_spec_done(spec);
        if (r >= 0)
                r = sd_bus_call(bus, m, CREATE_TIMEOUT_USEC, error, &reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "so", &id, &path);
        if (r < 0)
                return r;
        *ret_id = strdup(id);
        *ret_path = strdup(path);
        return *ret_id && *ret_path ? 0 : -ENOMEM;
}

static void stop_worker_quietly(sd_bus *bus, const char *id) {
        (void) mcp_call_manager(bus, "StopWorker", 0, NULL, NULL, "s", id);
}

/* The spec of a tool's arguments within the ceilings; 1, or 0 with a tool error. */
static int tool_spec(const McpToolsContext *ctx, json_object *args, char **argv, uint64_t runtime_usec, CliSpec *spec,
                     char *notes, size_t notes_size, McpToolResult *ret) {
        char err[512];
        int r;

        r = mcp_policy_spec(&ctx->policy, args, argv, runtime_usec, spec, notes, notes_size, err, sizeof(err));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                mcp_tool_error(ret, "%s: %s", r == -EPERM ? SBX_ERROR_ACCESS_DENIED : SBX_ERROR_INVALID_ARGUMENT, err);
                return 0;
        }
        return 1;
}

/* "in:as,a{sv};out:o,ah" of METHOD in the introspection XML, or "" when
 * it is not there. sd-bus writes one <arg type= name= direction=/> a line. */
static void method_signature(const char *xml, const char *method, char *buf, size_t size) {
        char open[96], in[128] = "", out[128] = "";
        const char *p, *end;

        buf[0] = '\0';
        snprintf(open, sizeof(open), "<method name=\"%s\">", method);
        p = strstr(xml, open);
        if (!p)
                return;
        end = strstr(p, "</method>");
        if (!end)
                return;
        for (const char *a = strstr(p, "<arg "); a && a < end; a = strstr(a + 1, "<arg ")) {
                const char *t = strstr(a, "type=\""), *d = strstr(a, "direction=\""), *close = strchr(a, '>');
                char type[64];
                if (!t || !close || t > close)
                        continue;
                t += 6;
                snprintf(type, sizeof(type), "%.*s", (int) MIN((size_t) (strchr(t, '"') - t), sizeof(type) - 1), t);
                bool is_out = d && d < close && startswith(d + 11, "out");
                char *dst = is_out ? out : in;
                size_t n = strlen(dst);
                snprintf(dst + n, sizeof(in) - n, "%s%s", n ? "," : "", type);
        }
        snprintf(buf, size, "in:%s;out:%s", in, out);
}

static bool has_method(const char *xml, const char *method, const char *signature) {
        char sig[300];

        method_signature(xml, method, sig, sizeof(sig));
        return streq(sig, signature);
}

unsigned mcp_introspect_features(const char *xml) {
        const char *iface = xml ? strstr(xml, "<interface name=\"" WORKER_INTERFACE "\">") : NULL;
        const char *iface_end = iface ? strstr(iface, "</interface>") : NULL;
        _cleanup_free_ char *worker = NULL;
        unsigned f = 0;

        if (!iface || !iface_end)
                return 0;
        /* Only the Worker interface's own methods count. */
        worker = strndup(iface, (size_t) (iface_end - iface));
        if (!worker)
                return 0;
        iface = worker;
        if (has_method(iface, "Exec", "in:as,a{sv};out:o,ah"))
                f |= MCP_NEEDS_EXEC;
        if (has_method(iface, "OpenFile", "in:s,s,a{sv};out:h,s") && has_method(iface, "CommitFile", "in:s;out:t") &&
            has_method(iface, "ListDirectory", "in:s;out:a(sstutuu)"))
                f |= MCP_NEEDS_FILES;
        return f;
}

int mcp_worker_features(sd_bus *bus, const char *path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *xml;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, path, "org.freedesktop.DBus.Introspectable", "Introspect", NULL, &reply,
                               NULL);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &xml);
        return r < 0 ? r : (int) mcp_introspect_features(xml);
}

/* What one of this user's model-started workers shows; nothing when none is alive. */
static unsigned detect_features(const McpToolsContext *ctx) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        size_t n = 0;
        int r;

        if (bus_connect(ctx, &bus) < 0)
                return 0;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "ListWorkersEx");
        if (r >= 0)
                r = sd_bus_message_append(m, "a{sv}", 0);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, NULL, &reply);
        if (r >= 0)
                r = worker_list_ex_read(reply, &workers, &n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (!streq_ptr(workers[i].state, "running") || !workers[i].path ||
                    worker_is_ours(bus, workers[i].path, NULL) <= 0)
                        continue;
                int f = mcp_worker_features(bus, workers[i].path);
                if (f >= 0)
                        return (unsigned) f;
        }
        return 0;
}

/* Looked up again at most every 10 s while nothing was found; once found,
 * kept (a daemon does not lose a method without a restart of its own). */
#define FEATURES_RECHECK_USEC (10 * USEC_PER_SEC)

static unsigned features(McpToolsContext *ctx) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        unsigned f;

        pthread_mutex_lock(&ctx->lock);
        f = ctx->features;
        bool stale = f == 0 && (ctx->features_checked == 0 || now - ctx->features_checked >= FEATURES_RECHECK_USEC);
        pthread_mutex_unlock(&ctx->lock);
        if (!stale)
                return f;
        f = detect_features(ctx);
        pthread_mutex_lock(&ctx->lock);
        ctx->features |= f;
        ctx->features_checked = now;
        f = ctx->features;
        pthread_mutex_unlock(&ctx->lock);
        return f;
}

bool mcp_tools_available(void *userdata, const McpTool *tool) {
        McpToolsContext *ctx = userdata;
        unsigned f = features(ctx);

        if (tool->requires & MCP_WITHOUT_EXEC)
                return !(f & MCP_NEEDS_EXEC);
        return (f & tool->requires) == tool->requires;
}

/* After a new worker: if it shows methods not seen before, the tool list
 * grew; tell the client. */
static void note_worker_features(McpToolsContext *ctx, McpCall *call, sd_bus *bus, const char *path) {
        int f = mcp_worker_features(bus, path);
        bool grew;

        if (f <= 0)
                return;
        pthread_mutex_lock(&ctx->lock);
        grew = ((unsigned) f & ~ctx->features) != 0;
        ctx->features |= (unsigned) f;
        ctx->features_checked = now_usec(CLOCK_MONOTONIC);
        pthread_mutex_unlock(&ctx->lock);
        if (grew)
                mcp_call_tools_changed(call);
}

static int tool_create_worker(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *id = NULL, *path = NULL, *class = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        json_object *command = NULL;
        CliSpec spec;
        char notes[512], err[256];
        int r;

        if (json_object_object_get_ex(args, "command", &command) && command &&
            mcp_command_argv(command, &argv, err, sizeof(err)) < 0)
                return mcp_tool_error(ret, "%s: %s", SBX_ERROR_INVALID_ARGUMENT, err);
        r = tool_spec(ctx, args, TAKE_PTR(argv), 0, &spec, notes, sizeof(notes), ret);
        if (r <= 0)
                return r;
        if (mcp_tool_connect(ctx, ret, &bus) == 0 || check_worker_ceiling(ctx, bus, ret) == 0) {
                cli_spec_done(&spec);
                return 0;
        }
        r = create_worker(bus, &spec, &error, &id, &path);
        if (r < 0)
                return mcp_tool_bus_error(ret, "Failed to create the worker", &error, r);
        if (mcp_call_cancelled(call)) {
                stop_worker_quietly(bus, id);
                return 0;
        }
        (void) worker_string_property(bus, path, "Class", NULL, &class);
        note_worker_features((McpToolsContext *) ctx, call, bus, path);

        _cleanup_(json_putp) json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "worker_id", json_object_new_string(id));
        json_object_object_add(o, "class", class ? json_object_new_string(class) : NULL);
        json_object_object_add(o, "origin", json_object_new_string(MCP_ORIGIN));
        if (asprintf(&ret->text, "Worker %s is running, class %s. %sIt is stopped after %" PRIu64 " s without "
                     "activity and after %" PRIu64 " s in any case; stop it with stop_worker when done.", id,
                     class ?: "unknown", notes, ctx->policy.idle_max_usec / USEC_PER_SEC,
                     ctx->policy.runtime_max_usec / USEC_PER_SEC) < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        ret->structured = TAKE_PTR(o);
        return 0;
}

/* The one-shot's command waits for a line on its stdin before it runs, so
 * its first output cannot be written before the channel is open (a worker
 * that ended has no channel, and what it wrote would be lost). */
static int gate_argv(char **argv, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;

        if (strv_extend(&a, "/bin/sh") < 0 || strv_extend(&a, "-c") < 0 ||
            strv_extend(&a, "IFS= read -r _ || exit 125; exec \"$@\"") < 0 || strv_extend(&a, "sh") < 0)
                return -ENOMEM;
        for (size_t i = 0; argv[i]; i++)
                if (strv_extend(&a, argv[i]) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

static int open_channel(sd_bus *bus, const char *id, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int fd, r;

        r = mcp_call_manager(bus, "OpenChannel", SUSPEND_RESUME_TIMEOUT_USEC, error, &reply, "s", id);
        if (r >= 0)
                r = sd_bus_message_read(reply, "h", &fd);
        if (r < 0)
                return r;
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

typedef enum RelayEnd { RELAY_EOF, RELAY_TIMEOUT, RELAY_CANCELLED } RelayEnd;

/* Reads the channel into OUT until its end, the deadline or a cancellation. */
static int read_output(int fd, McpCall *call, uint64_t deadline, McpOutput *out, RelayEnd *ret) {
        char buf[16384];

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = fd, .events = POLLIN },
                        { .fd = mcp_call_cancel_fd(call), .events = POLLIN },
                };
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                ssize_t n;

                if (now >= deadline) {
                        *ret = RELAY_TIMEOUT;
                        return 0;
                }
                if (poll(p, 2, (int) MIN((deadline - now) / USEC_PER_MSEC + 1, (uint64_t) INT32_MAX)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents) {
                        *ret = RELAY_CANCELLED;
                        return 0;
                }
                if (!p[0].revents)
                        continue;
                n = read(fd, buf, sizeof(buf));
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0) {
                        *ret = RELAY_EOF;
                        return 0;
                }
                mcp_output_add(out, buf, (size_t) n);
        }
}

/* Waits until the worker is ended on the bus; its ExitStatus and Result. */
static int wait_ended(sd_bus *bus, const char *path, int *ret_status, char **ret_result) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + END_WAIT_USEC;

        for (;;) {
                _cleanup_free_ char *state = NULL;
                int r = worker_string_property(bus, path, "State", NULL, &state);

                if (r < 0)
                        return r;
                if (streq(state, "ended")) {
                        int32_t status = -1;
                        (void) sd_bus_get_property_trivial(bus, BUS_NAME, path, WORKER_INTERFACE, "ExitStatus", NULL,
                                                           'i', &status);
                        *ret_status = status;
                        return worker_string_property(bus, path, "Result", NULL, ret_result);
                }
                if (now_usec(CLOCK_MONOTONIC) >= deadline)
                        return -ETIMEDOUT;
                (void) usleep(100 * 1000);
        }
}

static int run_result(McpToolResult *ret, const char *id, const char *class, const McpOutput *out, int status,
                      const char *result, bool timed_out, uint64_t timeout_usec) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *text = mcp_output_text(out);

        if (!o || !text)
                return -ENOMEM;
        json_object_object_add(o, "worker_id", json_object_new_string(id));
        json_object_object_add(o, "class", class ? json_object_new_string(class) : NULL);
        json_object_object_add(o, "exit_code", status >= 0 ? json_object_new_int(status) : NULL);
        json_object_object_add(o, "result", result ? json_object_new_string(result) : NULL);
        json_object_object_add(o, "timed_out", json_object_new_boolean(timed_out));
        json_object_object_add(o, "output", json_object_new_string(text));
        json_object_object_add(o, "output_bytes", json_object_new_int64((int64_t) out->total));
        json_object_object_add(o, "output_omitted_bytes", json_object_new_int64((int64_t) mcp_output_omitted(out)));
        char end[160];
        if (timed_out)
                snprintf(end, sizeof(end), "timed out after %" PRIu64 " s and was stopped",
                         timeout_usec / USEC_PER_SEC);
        else if (status >= 0)
                snprintf(end, sizeof(end), "exit code %d", status);
        else
                snprintf(end, sizeof(end), "no exit code");
        if (asprintf(&ret->text, "%s%s[%s; worker %s (class %s) ended: %s]", text,
                     isempty(text) || text[strlen(text) - 1] == '\n' ? "" : "\n", end, id, class ?: "unknown",
                     result ?: "unknown") < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        /* A command that ran and exited non-zero is a result, not a tool
         * error; one that could not finish (timeout, a signal) is. */
        ret->is_error = timed_out || status < 0;
        ret->structured = TAKE_PTR(o);
        return 0;
}

int mcp_run_fresh(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *id = NULL, *path = NULL, *class = NULL, *result = NULL;
        _cleanup_strv_free_ char **argv = NULL, **gated = NULL;
        _cleanup_close_ int fd = -1;
        json_object *command = NULL;
        McpOutput out = {};
        RelayEnd end = RELAY_EOF;
        uint64_t timeout;
        CliSpec spec;
        char notes[512], err[256];
        int status = -1, r;

        if (json_object_object_get_ex(args, "worker_id", NULL))
                return mcp_tool_error(ret, "%s: \"worker_id\": this sandboxd has no Worker.Exec, so run_command runs "
                                      "each command in a fresh worker; leave worker_id out", SBX_ERROR_NOT_SUPPORTED);
        json_object_object_get_ex(args, "command", &command);
        if (mcp_command_argv(command, &argv, err, sizeof(err)) < 0)
                return mcp_tool_error(ret, "%s: %s", SBX_ERROR_INVALID_ARGUMENT, err);
        r = mcp_policy_timeout(&ctx->policy, args, &timeout, err, sizeof(err));
        if (r < 0)
                return mcp_tool_error(ret, "%s: %s", r == -EPERM ? SBX_ERROR_ACCESS_DENIED : SBX_ERROR_INVALID_ARGUMENT,
                                      err);
        if (gate_argv(argv, &gated) < 0)
                return -ENOMEM;
        r = tool_spec(ctx, args, TAKE_PTR(gated), timeout, &spec, notes, sizeof(notes), ret);
        if (r <= 0)
                return r;
        if (mcp_tool_connect(ctx, ret, &bus) == 0 || check_worker_ceiling(ctx, bus, ret) == 0) {
                cli_spec_done(&spec);
                return 0;
        }
        r = create_worker(bus, &spec, &error, &id, &path);
        if (r < 0)
                return mcp_tool_bus_error(ret, "Failed to start a worker for the command", &error, r);
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout + TIMEOUT_GRACE_USEC;
        (void) worker_string_property(bus, path, "Class", NULL, &class);
        if (mcp_output_init(&out, ctx->policy.max_output) < 0) {
                stop_worker_quietly(bus, id);
                mcp_output_done(&out);
                return -ENOMEM;
        }

        fd = open_channel(bus, id, &error);
        if (fd < 0) {
                stop_worker_quietly(bus, id);
                mcp_output_done(&out);
                return mcp_tool_bus_error(ret, "Failed to open the worker's channel", &error, fd);
        }
        /* The line that lets the command start, then the end of its input. */
        if (write(fd, "\n", 1) != 1 || shutdown(fd, SHUT_WR) < 0)
                r = -errno;
        else
                r = read_output(fd, call, deadline, &out, &end);
        if (r < 0 || end != RELAY_EOF)
                stop_worker_quietly(bus, id);
        if (r < 0 || end == RELAY_CANCELLED) {
                mcp_output_done(&out);
                return r < 0 ? mcp_tool_bus_error(ret, "Failed to read the command's output", NULL, r) : 0;
        }
        r = wait_ended(bus, path, &status, &result);
        if (r < 0) {
                stop_worker_quietly(bus, id);
                (void) wait_ended(bus, path, &status, &result);
        }
        r = run_result(ret, id, class, &out, status, result, end == RELAY_TIMEOUT ||
                       streq_ptr(result, "timeout"), timeout);
        mcp_output_done(&out);
        return r;
}

/* stop_worker, suspend_worker, resume_worker: one Manager method on one of our workers. */
static int worker_method(const McpToolsContext *ctx, json_object *args, McpToolResult *ret, const char *method,
                         const char *done) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *id;
        int r;

        if (mcp_tool_connect(ctx, ret, &bus) == 0 || mcp_our_worker(bus, args, ret, &id, NULL) == 0)
                return 0;
        r = mcp_call_manager(bus, method, streq(method, "StopWorker") ? 0 : SUSPEND_RESUME_TIMEOUT_USEC, &error, NULL, "s",
                         id);
        if (r < 0)
                return mcp_tool_bus_error(ret, method, &error, r);
        if (asprintf(&ret->text, "Worker %s %s.", id, done) < 0) {
                ret->text = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int tool_stop_worker(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        return worker_method(userdata, args, ret, "StopWorker", "is stopping: its processes, home and files go");
}

static int tool_suspend_worker(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        return worker_method(userdata, args, ret, "SuspendWorker", "is suspended: checkpointed to disk, its memory freed");
}

static int tool_resume_worker(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        return worker_method(userdata, args, ret, "ResumeWorker", "is running again");
}

static int tool_list_workers(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ WorkerEntry *workers = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0, kept = 0, len = 0;
        FILE *f;
        int r;

        if (mcp_tool_connect(ctx, ret, &bus) == 0)
                return 0;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "ListWorkersEx");
        if (r >= 0)
                r = sd_bus_message_append(m, "a{sv}", 0);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r >= 0)
                r = worker_list_ex_read(reply, &workers, &n);
        if (r < 0)
                return mcp_tool_bus_error(ret, "Failed to list the workers", &error, r);
        for (size_t i = 0; i < n; i++)
                if (workers[i].path && worker_is_ours(bus, workers[i].path, NULL) > 0)
                        workers[kept++] = workers[i];
        worker_list_sort(workers, kept);

        _cleanup_(json_putp) json_object *list = worker_list_to_json(workers, kept);
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        f = open_memstream(&text, &len);
        if (!list || !o || !f) {
                if (f)
                        fclose(f);
                return -ENOMEM;
        }
        fprintf(f, "%zu worker%s started through this server:\n", kept, kept == 1 ? "" : "s");
        for (size_t i = 0; i < kept; i++)
                fprintf(f, "%s class=%s state=%s%s%s\n", workers[i].id, workers[i].class, workers[i].state,
                        isempty(workers[i].result) ? "" : " result=", workers[i].result ?: "");
        if (fclose(f) != 0)
                return -ENOMEM;
        json_object_object_add(o, "workers", TAKE_PTR(list));
        ret->structured = TAKE_PTR(o);
        ret->text = TAKE_PTR(text);
        return 0;
}

static int tool_worker_logs(void *userdata, McpCall *call, json_object *args, McpToolResult *ret) {
        const McpToolsContext *ctx = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *text = NULL;
        json_object *v = NULL;
        LogsArgs la = { .lines = 100 };
        McpOutput out = {};
        size_t len = 0;
        FILE *f;
        int r;

        if (json_object_object_get_ex(args, "lines", &v) && v) {
                int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
                if (n < 1 || n > 1000)
                        return mcp_tool_error(ret, "%s: \"lines\" is a number from 1 to 1000",
                                              SBX_ERROR_INVALID_ARGUMENT);
                la.lines = (uint64_t) n;
        }
        if (mcp_tool_connect(ctx, ret, &bus) == 0 || mcp_our_worker(bus, args, ret, &la.id, NULL) == 0)
                return 0;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        r = logs_run(bus, &la, f, -1, &error);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return mcp_tool_bus_error(ret, "Failed to read the worker's log", &error, r);
        /* The tail matters most: what the worker did last. */
        if (mcp_output_init(&out, ctx->policy.max_output) < 0) {
                mcp_output_done(&out);
                return -ENOMEM;
        }
        mcp_output_add(&out, text ?: "", len);
        ret->text = mcp_output_text(&out);
        mcp_output_done(&out);
        if (!ret->text)
                return -ENOMEM;
        if (isempty(ret->text)) {
                free(ret->text);
                ret->text = strdup("(no entries)");
        }
        return ret->text ? 0 : -ENOMEM;
}

static const McpTool tool_create = {
        .name = "create_worker",
        .title = "Create a sandbox worker",
        .description = "Starts a fresh sandbox worker and returns its worker_id. A worker is an isolated sandbox on "
                       "this host (gVisor for class untrusted): its own user, an empty home that is deleted when it "
                       "stops, no network except the allow-listed hosts. It is not the user's machine and cannot see "
                       "the user's files. It runs `command` (default: an idle process) and is stopped when idle "
                       "or at this server's runtime limit; stop it with stop_worker when done. Where this sandboxd "
                       "can run commands in a worker (Worker.Exec), run_command, exec and the file tools take its "
                       "worker_id; otherwise run_command runs each command in a fresh worker.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SPEC_SCHEMA ","
                        "\"idle_timeout\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Seconds without "
                        "activity after which the worker is stopped (default 600, at most this server's ceiling).\"},"
                        "\"command\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},\"description\":"
                        "\"What the worker runs: a string runs through /bin/sh -c, an array is argv. Default: an "
                        "idle `sleep infinity`.\"}},\"additionalProperties\":false}",
        .fn = tool_create_worker,
};

static const McpTool tool_run = {
        .name = "run_command",
        .title = "Run a command in a fresh sandbox",
        .description = "Runs one command in a fresh sandbox worker that is created for it and ends with it, and "
                       "returns its output and exit code. A string runs through /bin/sh -c, an array as argv. The "
                       "worker starts with an empty home and no network except the allow-listed hosts; nothing it "
                       "writes survives. stdout and stderr come back as one stream, interleaved as the worker's "
                       "channel carries them. Output past this server's limit is cut in the middle with a notice. "
                       "A non-zero exit code is a result, not a tool error; a timeout is an error.",
        .input_schema = "{\"type\":\"object\",\"properties\":{"
                        "\"command\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},\"description\":"
                        "\"The command: a string runs through /bin/sh -c, an array of strings is argv (a bare name "
                        "is looked up in /usr/local/bin:/usr/bin:/bin).\"},"
                        "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Seconds the command may "
                        "run (default 60, at most this server's runtime ceiling); then it is stopped.\"},"
                        SPEC_SCHEMA "},\"required\":[\"command\"],\"additionalProperties\":false}",
        .requires = MCP_WITHOUT_EXEC,
        .fn = mcp_run_fresh,
};

static const McpTool tool_stop = {
        .name = "stop_worker",
        .title = "Stop a sandbox worker",
        .description = "Stops a worker started through this server: its processes end and its home and files are "
                       "deleted (a workspace stays). Acts on no other worker.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "},\"required\":[\"worker_id\"],"
                        "\"additionalProperties\":false}",
        .destructive = true,
        .idempotent = true,
        .fn = tool_stop_worker,
};

static const McpTool tool_list = {
        .name = "list_workers",
        .title = "List sandbox workers",
        .description = "Lists the workers started through this server for this user (none of the user's other "
                       "workers): id, class, state and, for ended ones, how they ended.",
        .input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
        .read_only = true,
        .idempotent = true,
        .fn = tool_list_workers,
};

static const McpTool tool_suspend = {
        .name = "suspend_worker",
        .title = "Suspend a sandbox worker",
        .description = "Checkpoints a running gVisor worker to disk and frees its memory, keeping its id, home and "
                       "processes for resume_worker. Refused for classes that cannot be checkpointed.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "},\"required\":[\"worker_id\"],"
                        "\"additionalProperties\":false}",
        .fn = tool_suspend_worker,
};

static const McpTool tool_resume = {
        .name = "resume_worker",
        .title = "Resume a sandbox worker",
        .description = "Restores a suspended worker where it was; returns once it runs.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA "},\"required\":[\"worker_id\"],"
                        "\"additionalProperties\":false}",
        .fn = tool_resume_worker,
};

static const McpTool tool_logs = {
        .name = "worker_logs",
        .title = "Read a sandbox worker's log",
        .description = "The last lines of what sandboxd and the worker's launcher logged about a worker started "
                       "through this server (its start, its walls, how it ended); not the worker's own output.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" WORKER_ID_SCHEMA ","
                        "\"lines\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"How many "
                        "of the last entries (default 100).\"}},\"required\":[\"worker_id\"],"
                        "\"additionalProperties\":false}",
        .read_only = true,
        .idempotent = true,
        .fn = tool_worker_logs,
};

/* A tool that needs a Worker method comes after the one it replaces:
 * tools/call takes the first one offered. */
const McpTool * const mcp_tools[] = {
        &tool_create, &tool_run, &mcp_tool_run_in_worker, &mcp_tool_exec, &mcp_tool_read_file,
        &mcp_tool_write_file, &mcp_tool_list_files, &tool_stop, &tool_list, &tool_suspend, &tool_resume, &tool_logs,
};
const size_t mcp_tools_count = ELEMENTSOF(mcp_tools);
