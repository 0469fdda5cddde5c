/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl logs: a worker's journal entries through the Manager's
 * ReadWorkerLog (org.sandboxd1(5), docs/man/org.sandboxd1.5.scd), page by page with its cursor. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "sandboxctl-spec.h"

/* Entries asked for per call (the daemon serves at most this many). */
#define LOGS_PAGE_SIZE 1000u
/* How often -f asks for new entries. */
#define LOGS_FOLLOW_INTERVAL_USEC (500 * UINT64_C(1000))

typedef struct LogsArgs {
        const char *id;
        bool follow;
        bool egress;
        bool json;
        bool legend;
        bool pager;
        uint64_t lines;                 /* UINT64_MAX: all */
} LogsArgs;

/* --json, --no-legend and --no-pager after the verb land in *RET; GLOBAL
 * (may be NULL: then they are unknown) takes the other global options.
 * Returns 0, 1 when --help was asked for, 2 when GLOBAL said the program is
 * done (--version), or -EINVAL with a message in ERR. */
int logs_parse_args(int argc, char *argv[], CliGlobalOption global, LogsArgs *ret, char *err, size_t err_size);

/* One entry of ReadWorkerLog's a(tsuss); the strings point into the message. */
typedef struct LogEntry {
        uint64_t timestamp_usec;
        const char *source;
        uint32_t priority;
        const char *event;
        const char *message;
} LogEntry;

/* Reads the whole reply: the entries and the cursor to resume after. */
int log_page_read(sd_bus_message *reply, LogEntry **ret, size_t *ret_n, const char **ret_cursor);

/* sandboxd's entry saying the worker is gone for good: nothing follows it. */
bool log_entry_is_end(const LogEntry *e);

/* One line, without its newline: "2026-12-01T09:20:01.123456+0000 sandboxd: Worker started",
 * or with JSON one object like journalctl -o json's. */
char *log_entry_format(const LogEntry *e, bool json);

/* The last N lines of a sequence (-n N), kept as they come. */
typedef struct LogTail {
        char **lines;
        size_t size, allocated, start, n;
} LogTail;

void log_tail_init(LogTail *t, size_t size);
/* Takes LINE (freeing the oldest when full); -ENOMEM frees LINE too. */
int log_tail_push(LogTail *t, char *line);
/* Prints and drops what it holds, oldest first. */
int log_tail_flush(LogTail *t, FILE *f);
void log_tail_done(LogTail *t);

/* Prints worker ARGS->id's log to OUT: everything (or the last -n), and with
 * -f new entries until the worker's end has been printed or SIGNAL_FD (may
 * be -1) is readable. Returns 0, -EPIPE when the reader went away, or a
 * negative errno with ERROR set when the daemon refused. */
int logs_run(sd_bus *bus, const LogsArgs *args, FILE *out, int signal_fd, sd_bus_error *error);
