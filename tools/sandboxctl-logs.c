/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "parse-util.h"
#include "sandboxctl-args.h"
#include "sandboxctl-logs.h"
#include "util.h"

enum {
        ARG_EGRESS = 0x100,
};

int logs_parse_args(int argc, char *argv[], CliGlobalOption global, LogsArgs *ret, char *err, size_t err_size) {
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h' },
                { "follow",    no_argument,       NULL, 'f' },
                { "lines",     required_argument, NULL, 'n' },
                { "egress",    no_argument,       NULL, ARG_EGRESS },
                SANDBOXCTL_GLOBAL_OPTIONS,
                {}
        };
        LogsArgs a = { .legend = true, .pager = true, .lines = UINT64_MAX };
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hfn:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        return 1;
                case 'f':
                        a.follow = true;
                        break;
                case 'n':
                        if (parse_uint64(optarg, &a.lines) < 0) {
                                snprintf(err, err_size, "logs: --lines needs a number of entries, not '%s'", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_EGRESS:
                        a.egress = true;
                        break;
                case ARG_JSON:
                        a.json = true;
                        break;
                case ARG_NO_LEGEND:
                        a.legend = false;
                        break;
                case ARG_NO_PAGER:
                        a.pager = false;
                        break;
                case ':':
                        snprintf(err, err_size, "logs: option '%s' needs an argument", argv[optind - 1]);
                        return -EINVAL;
                default:
                        if (is_global_option(c) && global) {
                                if (global(c) > 0)
                                        return 2;
                                break;
                        }
                        snprintf(err, err_size, "logs: unknown option '%s'", argv[optind - 1]);
                        return -EINVAL;
                }
        if (argc - optind != 1) {
                snprintf(err, err_size, "logs: expected one worker ID, got %d arguments", argc - optind);
                return -EINVAL;
        }
        a.id = argv[optind];
        *ret = a;
        return 0;
}

int log_page_read(sd_bus_message *reply, LogEntry **ret, size_t *ret_n, const char **ret_cursor) {
        _cleanup_free_ LogEntry *v = NULL;
        size_t n = 0, allocated = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(tsuss)");
        if (r < 0)
                return r;
        for (;;) {
                LogEntry e;

                r = sd_bus_message_read(reply, "(tsuss)", &e.timestamp_usec, &e.source, &e.priority, &e.event,
                                        &e.message);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (n == allocated) {
                        size_t k = allocated ? allocated * 2 : 16;
                        LogEntry *nv = reallocarray(v, k, sizeof(LogEntry));
                        if (!nv)
                                return -ENOMEM;
                        v = nv;
                        allocated = k;
                }
                v[n++] = e;
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", ret_cursor);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

bool log_entry_is_end(const LogEntry *e) {
        return streq_ptr(e->source, "sandboxd") && (streq_ptr(e->event, "ended") || streq_ptr(e->event, "start-failed"));
}

static char *format_json(const LogEntry *e) {
        json_object *o = json_object_new_object();
        char *s = NULL;

        if (!o)
                return NULL;
        if (json_object_object_add(o, "timestamp_usec", json_object_new_uint64(e->timestamp_usec)) >= 0 &&
            json_object_object_add(o, "source", json_object_new_string(e->source)) >= 0 &&
            json_object_object_add(o, "priority", json_object_new_int((int) e->priority)) >= 0 &&
            json_object_object_add(o, "event", json_object_new_string(e->event)) >= 0 &&
            json_object_object_add(o, "message", json_object_new_string(e->message)) >= 0) {
                const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE);
                s = t ? strdup(t) : NULL;
        }
        json_object_put(o);
        return s;
}

char *log_entry_format(const LogEntry *e, bool json) {
        time_t sec = (time_t) (e->timestamp_usec / USEC_PER_SEC);
        char stamp[64], zone[8];
        struct tm tm;
        char *s;

        if (json)
                return format_json(e);
        if (!localtime_r(&sec, &tm) || strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm) == 0 ||
            strftime(zone, sizeof(zone), "%z", &tm) == 0)
                snprintf(stamp, sizeof(stamp), "@%" PRIu64, e->timestamp_usec / USEC_PER_SEC), zone[0] = 0;
        if (asprintf(&s, "%s.%06" PRIu64 "%s %s: %s", stamp, e->timestamp_usec % USEC_PER_SEC, zone, e->source,
                     e->message) < 0)
                return NULL;
        return s;
}

void log_tail_init(LogTail *t, size_t size) {
        *t = (LogTail) { .size = size };
}

/* The ring grows as lines come, up to SIZE: -n 1000000 costs nothing
 * until there are that many. It wraps only once full, so growing never has
 * to untangle a wrapped ring. */
int log_tail_push(LogTail *t, char *line) {
        if (t->size == 0) {
                free(line);
                return 0;
        }
        if (t->n == t->allocated && t->allocated < t->size) {
                size_t k = MIN(t->size, MAX(t->allocated * 2, (size_t) 16));
                char **nl = reallocarray(t->lines, k, sizeof(char *));
                if (!nl) {
                        free(line);
                        return -ENOMEM;
                }
                t->lines = nl;
                t->allocated = k;
        }
        if (t->n == t->size) {
                free(t->lines[t->start]);
                t->lines[t->start] = line;
                t->start = (t->start + 1) % t->allocated;
                return 0;
        }
        t->lines[(t->start + t->n) % t->allocated] = line;
        t->n++;
        return 0;
}

int log_tail_flush(LogTail *t, FILE *f) {
        int r = 0;

        for (; t->n > 0; t->n--) {
                char **l = &t->lines[t->start];
                if (r == 0 && fprintf(f, "%s\n", *l) < 0)
                        r = -errno ?: -EIO;
                free(*l);
                *l = NULL;
                t->start = (t->start + 1) % t->allocated;
        }
        t->start = 0;
        return r;
}

void log_tail_done(LogTail *t) {
        for (size_t i = 0; i < t->n; i++)
                free(t->lines[(t->start + i) % t->allocated]);
        free(t->lines);
        *t = (LogTail) {};
}

/* ---- talking to the daemon ---------------------------------------------- */

typedef struct LogsState {
        const LogsArgs *args;
        FILE *out;
        LogTail tail;
        bool tailing;           /* -n: still reading the backlog into the tail */
        bool ended;
        size_t printed;
        char *cursor;
} LogsState;

static int out_error(FILE *f) {
        return ferror(f) ? (errno == EPIPE ? -EPIPE : -EIO) : 0;
}

static int logs_emit(LogsState *s, const LogEntry *e) {
        char *line = log_entry_format(e, s->args->json);

        if (!line)
                return -ENOMEM;
        if (s->tailing)
                return log_tail_push(&s->tail, line);
        s->printed++;
        fprintf(s->out, "%s\n", line);
        free(line);
        return out_error(s->out);
}

/* One ReadWorkerLog call. Returns > 0 when it moved the cursor on (there may
 * be more), 0 when there was nothing new. */
static int logs_fetch(sd_bus *bus, LogsState *s, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ LogEntry *entries = NULL;
        const char *next;
        size_t n;
        int r;

        r = sd_bus_call_method(bus, "org.sandboxd1", "/org/sandboxd1", "org.sandboxd1.Manager", "ReadWorkerLog",
                               error, &reply, "ssbu", s->args->id, s->cursor, s->args->egress,
                               (uint32_t) LOGS_PAGE_SIZE);
        if (r < 0)
                return r;
        r = log_page_read(reply, &entries, &n, &next);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (log_entry_is_end(&entries[i]))
                        s->ended = true;
                r = logs_emit(s, &entries[i]);
                if (r < 0)
                        return r;
        }
        if (streq(next, s->cursor))
                return 0;
        free(s->cursor);
        s->cursor = strdup(next);
        return s->cursor ? 1 : -ENOMEM;
}

/* Waits one follow interval; > 0 when a signal asked us to stop. */
static int logs_wait(int signal_fd) {
        struct pollfd pfd = { .fd = signal_fd, .events = POLLIN };
        int r;

        r = poll(&pfd, 1, (int) (LOGS_FOLLOW_INTERVAL_USEC / USEC_PER_MSEC));
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        return r > 0 && (pfd.revents & POLLIN);
}

static int logs_loop(sd_bus *bus, LogsState *s, int signal_fd, sd_bus_error *error) {
        bool drained_after_end = false;
        int r;

        for (;;) {
                /* Everything there is, page by page. */
                while ((r = logs_fetch(bus, s, error)) > 0)
                        ;
                if (r < 0)
                        return r;
                if (s->tailing) {
                        s->tailing = false;
                        s->printed += s->tail.n;
                        r = log_tail_flush(&s->tail, s->out);
                        if (r < 0)
                                return out_error(s->out) ?: r;
                }
                if (fflush(s->out) != 0)
                        return errno == EPIPE ? -EPIPE : -EIO;
                if (!s->args->follow)
                        return 0;
                /* What the proxy and the launcher log as the worker goes
                 * lands just after sandboxd's end entry: one more round. */
                if (s->ended) {
                        if (drained_after_end)
                                return 0;
                        drained_after_end = true;
                }
                r = logs_wait(signal_fd);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
}

int logs_run(sd_bus *bus, const LogsArgs *args, FILE *out, int signal_fd, sd_bus_error *error) {
        LogsState s = { .args = args, .out = out, .tailing = args->lines != UINT64_MAX };
        int r;

        s.cursor = strdup("");
        if (!s.cursor)
                return -ENOMEM;
        log_tail_init(&s.tail, (size_t) MIN(args->lines, (uint64_t) SIZE_MAX));
        r = logs_loop(bus, &s, signal_fd, error);
        if (r >= 0 && args->legend && !args->json) {
                if (s.printed == 0 && !args->follow)
                        fputs("-- No entries --\n", out);
                else if (args->follow && s.ended)
                        fprintf(out, "-- Worker %s has ended --\n", args->id);
                r = fflush(out) != 0 ? (errno == EPIPE ? -EPIPE : -EIO) : 0;
        }
        log_tail_done(&s.tail);
        free(s.cursor);
        return r;
}
