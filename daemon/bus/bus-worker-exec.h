/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Worker.Exec and the process objects it makes,
 * /org/sandboxd1/worker/<id>/process/<n> (org.sandboxd1.Process): the
 * process itself is the worker layer's (worker-spawn.h); this is what a
 * client sees of it. A process object is visible exactly to those who may
 * see its worker (bus_worker_filter() checks its path as the worker's), its
 * signals go only to subscribers entitled to the worker, and it stays on
 * the bus PROCESS_LINGER_USEC after the process ended, or until its worker
 * leaves the bus. */

#include <systemd/sd-bus.h>

#include "worker.h"

#define PROCESS_LINGER_USEC (30 * USEC_PER_SEC)

extern const sd_bus_vtable process_vtable[];

/* Worker.Exec(as argv, a{sv} options) -> (o process, ah stdio). */
int bus_worker_method_exec(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* The worker ID of a process object's PATH, in *RET_ID: 1, or 0 when PATH
 * is no process path. */
int bus_process_path_worker_id(const char *path, char **ret_id);

int bus_process_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                     sd_bus_error *error);
int bus_process_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);

/* W leaves the bus: its process objects go with it. */
void bus_worker_exec_forget(Worker *w);
/* sandboxd ends: every process object goes (their processes are killed). */
void bus_worker_exec_free_all(Manager *m);
