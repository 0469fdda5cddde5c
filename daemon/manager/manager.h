/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "caller-quota.h"
#include "config.h"
#include "creds.h"
#include "pool.h"
#include "probe.h"
#include "runtimes.h"
#include "subscribers.h"
#include "unit-stop.h"
#include "worker-history.h"
#include "worker.h"

/* The manager reports, the layer above (the bus) tells the world: what it
 * installs here is called in the order things happen, as WorkerOwner's
 * callbacks are for a worker. Unset ones are skipped. */
typedef struct ManagerListener {
        /* The number of alive workers changed: the service's status line. */
        void (*status_changed)(Manager *m);
        /* The name is ours: the workers the restore found lost are announced. */
        void (*workers_lost)(Manager *m);
} ManagerListener;

struct Manager {
        WorkerOwner worker_owner;       /* what each worker reports to (worker.h), made by manager_new() */
        sd_event *event;
        sd_bus *bus;                    /* the system bus: clients, polkit */
        sd_bus *systemd;                /* PID 1 (systemd-bus.h): every call to it, every signal of its */
        SbxConfig config;
        char *launcher_path;
        char *exec_path;                /* sandbox-exec, trusted and wasm workers' ExecStart */
        char *egress_path;
        char *gate_path;
        char *walls_path;

        Worker *workers;                /* a short list: MaxWorkers bounds it */
        Worker *gc_queue;               /* ended workers to free, from gc_event */
        sd_event_source *gc_event;
        unsigned n_alive;
        WorkerHistory history;          /* ended workers, for ListWorkersEx */

        CredentialServer *credentials;
        RuntimeTable runtimes;
        Prober prober;                  /* the runtimes' and walls' probes (probe.h), made by manager_new() */
        sd_bus_slot *job_removed_match;
        UnitStops *unit_stops;          /* every StopUnit, asked again when refused (unit-stop.h) */
        Subscribers subscribers;        /* clients that get signals (bus-subscribe.h) */
        struct BusState *bus_state;     /* the bus layer's own (bus-manager.h); opaque here */
        ManagerListener listener;       /* installed by the bus layer (bus_manager_listen()) */
        CallerQuota log_read_quota;     /* ReadWorkerLog journal reads under way (worker-log-job.h) */
        CallerQuota workspace_creation_quota; /* workspaces being made, by owner (manager-workspace.h) */
        struct WorkerLogJob *log_jobs;
        char **restore_removed;         /* IDs cleaned at start-up, announced once the name is ours */

        Pool pool;                      /* the warm pool (pool.h), made by manager_new() */
        struct Workspace *workspaces;   /* manager-workspace.h */
        char *workspace_root;           /* SBX_WORKSPACE_ROOT */
        char *mkfs_path;                /* mkfs.ext4, for new workspaces */
};

int manager_new(Manager **ret, const char *config_path, SbxError *error);
Manager *manager_free(Manager *m);

/* Connects to the system bus and to PID 1, subscribes to systemd, wipes leftovers of an
 * earlier run, starts the credential socket and probes the runtimes. */
int manager_startup(Manager *m);
/* Once the bus API is exported (bus_manager_install()): takes the name,
 * announces the restore's lost workers and starts the pool. */
int manager_serve(Manager *m);
/* Tells the listener that the number of alive workers changed. */
void manager_notify_status(Manager *m);
/* Hears systemd's JobRemoved on Manager.systemd (part of the startup). */
int manager_watch_jobs(Manager *m);

Worker *manager_find_worker(Manager *m, const char *id);
Worker *manager_find_worker_by_unit(Manager *m, const char *unit);

/* Takes ownership of SPEC (validated, defaults applied) for a worker owned
 * by OWNER. On success the reply to REQUEST is sent later, when systemd's
 * start job has finished. */
/* QUOTA_EXEMPT: the caller holds manage-workers and [Quota] ExemptManagers=yes
 * (bus-manager.c decides): the owner's per-owner limits are not applied. */
int manager_create_worker(Manager *m, WorkerSpec *spec, uid_t owner, bool quota_exempt, sd_bus_message *request,
                          SbxError *error);

/* Admission of one more worker disk of WANT bytes (worker-disk.h), against
 * every disk held now: live workers' (suspended ones included) and the pool's. */
int manager_admit_disk(Manager *m, uint64_t want, SbxError *error);
/* What every worker's and waiting sandbox's disk may take (their caps),
 * and in RET_UNWRITTEN what of it they have not written yet. */
uint64_t manager_disks_held(Manager *m, uint64_t *ret_unwritten);
/* Links W, alive, into the worker list. */
void manager_add_worker(Manager *m, Worker *w);
/* Frees W, ended and off the bus, once the event being dispatched is over
 * (machined's gc queue): no callback that holds W sees it go. */
void manager_enqueue_gc(Manager *m, Worker *w);

/* The fail-closed gate: which runtime serves CLASS on this host right now,
 * or a named error saying what is missing. Used at request time and again
 * just before the unit is emitted. */
int manager_choose_runtime(Manager *m, SbxClass class, SbxRuntime *ret, SbxError *error);

/* Stops every sandbox-* unit and empties the sessions root. */
int manager_wipe_leftovers(Manager *m);
/* Stops UNITS and waits (bounded) until they are gone. */
int manager_stop_units(Manager *m, char **units);

/* A re-adopted worker, running or suspended, takes its workspace back
 * (logged if it is gone or taken). */
void manager_workspace_hold(Manager *m, Worker *w);
/* Takes W, rebuilt from its state file, and the daemon's ends of its pipes
 * (closed on failure): it runs again as before the restart. */
int manager_adopt_worker(Manager *m, Worker *w, const ChannelDaemonFds *fds, uint64_t last_activity);
