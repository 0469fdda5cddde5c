/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Worker's file methods (org.sandboxd1(5), FILES): OpenFile, CommitFile,
 * AbortFile, ListDirectory, Stat, MakeDirectory, Remove, Rename. Each runs
 * sandbox-files (daemon/files/README.md) inside the worker, as the worker,
 * through worker_spawn_inside(): sandboxd opens nothing in a home itself.
 * OpenFile's data never passes through sandboxd: the caller gets one end of
 * a pipe whose other end is the helper's stdout (read) or stdin (write);
 * sandboxd reads only the helper's status lines and, for ListDirectory and
 * Stat, its frames, bounded. Access is bus_worker_filter()'s, as for every
 * call on a worker's object: anyone but the owner, root and holders of
 * manage-workers finds no such worker. */

#include <systemd/sd-bus.h>

#include "worker.h"

typedef struct FileJob FileJob;

/* Transfers a worker may hold at once (opened and not yet committed or
 * aborted), running helpers included; their processes also count against
 * WORKER_PROCESSES_MAX. */
#define FILE_TRANSFERS_MAX 32

int bus_worker_method_open_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_commit_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_abort_file(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_list_directory(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_stat(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_make_directory(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_remove(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);
int bus_worker_method_rename(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* W leaves the bus: its jobs and transfers end, calls waiting on them are
 * answered NotRunning. */
void bus_worker_files_drop(Worker *w);
/* Every job, at sandboxd's exit. */
void bus_worker_files_free_all(Manager *m);

#define BUS_WORKER_FILES_VTABLE                                                                                   \
        SD_BUS_METHOD_WITH_ARGS("OpenFile", SD_BUS_ARGS("s", path, "s", mode, "a{sv}", options),                  \
                                SD_BUS_RESULT("h", data, "s", transfer), bus_worker_method_open_file,            \
                                SD_BUS_VTABLE_UNPRIVILEGED),                                                      \
        SD_BUS_METHOD_WITH_ARGS("CommitFile", SD_BUS_ARGS("s", transfer), SD_BUS_RESULT("t", bytes),              \
                                bus_worker_method_commit_file, SD_BUS_VTABLE_UNPRIVILEGED),                       \
        SD_BUS_METHOD_WITH_ARGS("AbortFile", SD_BUS_ARGS("s", transfer), SD_BUS_NO_RESULT,                        \
                                bus_worker_method_abort_file, SD_BUS_VTABLE_UNPRIVILEGED),                        \
        SD_BUS_METHOD_WITH_ARGS("ListDirectory", SD_BUS_ARGS("s", path), SD_BUS_RESULT("a(sstutuu)", entries),    \
                                bus_worker_method_list_directory, SD_BUS_VTABLE_UNPRIVILEGED),                    \
        SD_BUS_METHOD_WITH_ARGS("Stat", SD_BUS_ARGS("s", path),                                                   \
                                SD_BUS_RESULT("s", name, "s", type, "t", size, "u", mode, "t", mtime_usec,        \
                                              "u", uid, "u", gid),                                                \
                                bus_worker_method_stat, SD_BUS_VTABLE_UNPRIVILEGED),                              \
        SD_BUS_METHOD_WITH_ARGS("MakeDirectory", SD_BUS_ARGS("s", path, "a{sv}", options), SD_BUS_NO_RESULT,      \
                                bus_worker_method_make_directory, SD_BUS_VTABLE_UNPRIVILEGED),                    \
        SD_BUS_METHOD_WITH_ARGS("Remove", SD_BUS_ARGS("s", path, "a{sv}", options), SD_BUS_NO_RESULT,             \
                                bus_worker_method_remove, SD_BUS_VTABLE_UNPRIVILEGED),                            \
        SD_BUS_METHOD_WITH_ARGS("Rename", SD_BUS_ARGS("s", from, "s", to), SD_BUS_NO_RESULT,                      \
                                bus_worker_method_rename, SD_BUS_VTABLE_UNPRIVILEGED)
