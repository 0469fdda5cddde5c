/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "caller-quota.h"

typedef struct Manager Manager;
typedef struct PolkitQuery PolkitQuery;

/* What the bus layer keeps for itself beside the Manager, which only holds
 * the pointer (Manager.bus_state): made by bus_manager_listen(), freed by
 * bus_manager_free(). */
typedef struct BusState {
        sd_bus_slot *worker_filter;
        PolkitQuery *polkit_queries;    /* calls parked while polkit decides */
        sd_bus_slot *polkit_filter;     /* frees answered ones after their second dispatch */
        sd_bus_slot *name_lost_match;
        CallerQuota polkit_quota;       /* ... counted per caller UID and in total */
        uint64_t polkit_cap_logged_usec;  /* the last refusal past that cap that was logged */
        struct BusProcess *processes;   /* Exec's process objects (bus-worker-exec.h) */
        uint64_t process_serial;        /* the last process object's number */
        struct FileJob *file_jobs;      /* the Worker's file methods' helpers and transfers (bus-worker-files.h) */
} BusState;

/* Right after manager_new(), before any worker exists: what the manager
 * and its workers report (ManagerListener, WorkerOwner) becomes the bus's
 * signals and replies. */
int bus_manager_listen(Manager *m);
/* Exports /org/sandboxd1, the worker objects below it and an object manager
 * (between manager_startup() and manager_serve()). */
int bus_manager_install(Manager *m);
/* Before manager_free(): the parked polkit calls, the filters, the
 * subscribers and the bus state go. */
void bus_manager_free(Manager *m);
/* sd_notify STATUS= with the worker count. */
void bus_manager_notify_status(Manager *m);
