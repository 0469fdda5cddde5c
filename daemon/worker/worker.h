/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "caller-quota.h"
#include "cgroup-stats.h"
#include "channel.h"
#include "class.h"
#include "config.h"
#include "egress-ctl.h"
#include "errors.h"
#include "spec.h"
#include "unit-stop.h"
#include "worker-history.h"

typedef struct Manager Manager;
typedef struct UnitDrop UnitDrop;
typedef struct UnitHalt UnitHalt;
typedef struct Worker Worker;
typedef struct WorkerLogJob WorkerLogJob;
typedef struct WorkerProcess WorkerProcess;
typedef struct WorkerUnitEnv WorkerUnitEnv;
typedef struct WorkerWake WorkerWake;
/* How a worker's keeper came (uid-keep.h): 0, it is up or has its start
 * job; or a negative errno and WHY (systemd's words). */
typedef void (*uid_keep_done_t)(Worker *w, int r, const char *why);

typedef enum WorkerState {
        WORKER_STARTING,
        WORKER_RUNNING,
        WORKER_STOPPING,
        WORKER_ENDED,                   /* whatever the end was: the result says which */
        WORKER_SUSPENDING,              /* its sandbox is being checkpointed; the unit ends */
        WORKER_SUSPENDED,               /* no unit: its checkpoint image, home and spec remain */
        WORKER_RESUMING,                /* a new unit restores the sandbox from the image */
        _WORKER_STATE_MAX,
} WorkerState;

#define WORKER_ID_LEN 12
/* How long an ended worker's object stays readable on the bus. */
#define WORKER_LINGER_USEC (30 * USEC_PER_SEC)

/* What a worker found that the runtimes' or the walls' probe should check again. */
typedef enum WorkerProbe {
        WORKER_PROBE_RUNTIMES,          /* a sandboxed worker failed before its workload ran */
        WORKER_PROBE_WALLS,             /* a shared-kernel worker's start failed */
} WorkerProbe;

/* A worker's gate service as sandboxd last heard of it (worker-gate.h). */
typedef struct WorkerGateSeen {
        uint64_t served;        /* its served count; 0: none yet */
        unsigned open;          /* requests at its handler */
        bool starting;          /* its ActiveState is "activating" */
} WorkerGateSeen;

/* The worker layer reports, its owner decides. Whoever owns workers (the
 * manager) gives each one this: the handles a worker uses, and a callback
 * for each thing the worker reports, the way unit-drop.h's done callback
 * works. A worker never calls the bus or the manager itself: every signal,
 * reply and decision above the worker goes through here, in the order the
 * worker reports it (clients see the signals in that order).
 *
 * The handles are pointers to the owner's own: the owner opens the systemd
 * connection and the stop queue after it made the owner (at start-up), so
 * a worker reads them at use (worker_event() and the others below). */
typedef struct WorkerOwner {
        Manager *manager;               /* the owner's, kept in Worker.manager; opaque here */
        sd_event *const *event;
        sd_bus *const *systemd;         /* PID 1 (systemd-bus.h) */
        UnitStops *const *unit_stops;   /* every StopUnit (unit-stop.h) */
        WorkerHistory *history;         /* ended workers, for ListWorkersEx */
        const SbxConfig *config;
        char *const *launcher_path;     /* sandbox-launch, a sandboxed unit's ExecStart */
        CallerQuota *log_read_quota;    /* ReadWorkerLog journal reads under way (worker-log-job.h) */
        WorkerLogJob **log_jobs;

        /* W's state changed to S (worker_set_state()): PropertiesChanged State. */
        void (*state_changed)(Worker *w);
        /* W reached running for the first time: its object and WorkerNew. */
        void (*appeared)(Worker *w);
        /* W's channel moved (at most once a second): LastActivityUSec. */
        void (*activity)(Worker *w);
        /* W was admitted (worker_prepare()): it counts as alive from now on. */
        void (*added)(Worker *w);
        /* W ended: it no longer counts as alive, and its workspace is free. */
        void (*released)(Worker *w);
        /* W, exported, ended: PropertiesChanged and WorkerRemoved. */
        void (*ended)(Worker *w);
        /* The number of workers changed: the service's status line. */
        void (*status_changed)(Worker *w);
        /* W lingered long enough: its object goes from the bus. */
        void (*gone)(Worker *w);
        /* W may be freed, later, never inside the callback that asks
         * (worker_may_gc() says whether it may). */
        void (*collect)(Worker *w);
        /* W saw something that the probe WHAT should check again. */
        void (*needs_probe)(Worker *w, WorkerProbe what);
        /* Answers CreateWorker's REQUEST for W: its ID and object, or WHY it
         * failed (NULL on success). */
        void (*reply_created)(Worker *w, sd_bus_message *request, const char *why);
        /* Answers a Suspend/Resume/OpenChannel call W kept waiting
         * (worker-suspend.h): ERROR_NAME NULL for success. */
        void (*reply_waiter)(Worker *w, sd_bus_message *msg, const char *error_name, const char *error_message);
        /* W is suspended, its image complete: whether it is kept across a
         * reboot is the owner's to decide (suspend-keep.h). */
        void (*suspended)(Worker *w);
        /* The bytes W's checkpoint image may take (manager-quota.h). */
        uint64_t (*checkpoint_budget)(Worker *w);
        /* What W's unit is made of beyond W: the daemon's programs and
         * roots, PID 1's namespaces (worker-unit.h). */
        void (*unit_env)(Worker *w, WorkerUnitEnv *ret);
        /* The gate's second check, just before W's unit is emitted: 0 when
         * the runtime chosen still serves W's class, else the error. */
        int (*recheck_gate)(Worker *w, SbxError *error);
} WorkerOwner;

struct Worker {
        Manager *manager;               /* the owner's (WorkerOwner.manager), for the layers above */
        const WorkerOwner *owned_by;
        Worker *next;

        char id[WORKER_ID_LEN + 1];
        char *unit;                     /* sandbox-<id>.service */
        char *unit_path;                /* its object path on systemd's bus */
        char *user;                     /* sandbox-<id> */
        char *home;                     /* /var/lib/sandboxd/workers/<id> */
        char *object_path;              /* /org/sandboxd1/worker/<id> */

        WorkerSpec spec;
        /* The way out (NULL socket and service: none). */
        struct {
                SbxCredential policy;   /* served to the proxy as its "egress-policy" credential */
                char *socket;           /* sandbox-<id>-egress.socket */
                char *service;          /* NULL: the worker has no way out at all */
                /* The proxy's counters as last asked (worker-metrics.h). */
                EgressCounters counters;
                uint64_t counters_usec;         /* monotonic, when asked; 0: never */
                uint64_t counters_failed_usec;  /* when the proxy last failed to answer */
        } egress;
        /* The way in (worker-gate.h; NULL socket and service: no endpoint). */
        struct {
                SbxCredential config;   /* served to the gate as its "gate-config" credential */
                char *socket;           /* sandbox-<id>-gate.socket */
                char *service;          /* sandbox-<id>-gate.service */
                uint16_t tcp_port;      /* 127.0.0.1:<port> on the host; 0: the UNIX socket only */
                sd_bus_slot *status_match;      /* PropertiesChanged of the service (worker_gate_watch) */
                WorkerGateSeen seen;    /* what its service last said (worker_gate_watch) */
                sd_bus_slot *start_call;        /* its socket started again (worker_gate_start), until answered */
                UnitHalt *restart;      /* ... once its gate, if it still runs, has stopped */
        } gate;
        WorkerWake *wake;               /* its endpoint held while it sleeps (worker-wake.h) */
        /* The cgroup's counters as last read (worker-metrics.h): one read
         * serves every property of a GetAll. */
        struct {
                CgroupStats stats;
                uint64_t usec;                  /* monotonic; 0: never */
        } cgroup;
        SbxCredential environment;      /* the spec's Environment, served to the worker unit as
                                         * SBX_ENV_CREDENTIAL (env-cred.h); wiped once it started */
        SbxRuntime runtime;
        WorkerState state;
        uid_t uid;
        uid_t owner;                    /* who created it, from the bus's credentials */
        int exit_status;                /* -1 until ended */
        uint64_t created_realtime;
        uint64_t ended_realtime;        /* 0 until ended */
        uint64_t activity_emitted;      /* monotonic time of the last LastActivityUSec signal */

        Channel *channel;
        /* The start: its job, the CreateWorker call, the pool, the ready token. */
        struct {
                sd_bus_message *request; /* the CreateWorker call waiting for the start job */
                sd_bus_slot *call;
                /* The warm pool (pool.h): "pooled" or "cold", and for a cold start of
                 * a pooled class, why the pool could not serve it. Static strings. */
                const char *mode;
                const char *mode_reason;
                ChannelDaemonFds pool_fds; /* a claimed sandbox's stdio until its job is handed over */
                /* A shared-kernel worker's start ends at sandbox-exec's token (worker-ready.h). */
                bool awaits_ready;
                bool job_done;
                bool job_canceled;      /* the start job ended "canceled" (worker-ready.c) */
                int ready_result;       /* 1 while awaited, then the channel's answer */
                sd_event_source *ready_timer;
        } start;
        sd_bus_slot *unit_match;
        sd_bus_slot *unit_state_call;   /* the re-read of the unit before acting on its end */
        /* The timers of a running worker. */
        struct {
                sd_event_source *idle;
                sd_event_source *linger;
                sd_event_source *runtime; /* a pooled worker's RuntimeMaxSec, kept by sandboxd */
        } timers;
        /* Suspending: the checkpoint unit, its image's budget, the restore (worker-suspend.h). */
        struct {
                char *unit;             /* sandbox-<id>-suspend.service, the checkpoint */
                sd_bus_slot *call;      /* its StartTransientUnit, until answered */
                sd_bus_message *checkpoint;     /* ... that call, until the keeper it requires is had */
                int result;             /* while suspending: 0 not known yet, 1 saved, -1 failed */
                uint64_t budget;        /* while suspending: the bytes its image may take (manager-quota.h) */
                UnitDrop *drop;         /* saved: the old unit's companions are being stopped (unit-drop.h) */
                UnitHalt *gate_drain;   /* before the checkpoint: its socket, then the gate, stopping */
                bool restore;           /* the next unit restores from the image (worker-suspend.h) */
                bool for_idle;          /* the reaper asked: a failed checkpoint stops it */
        } suspend;
        /* While resuming (worker-resume.h). */
        struct {
                sd_event_source *watch; /* inotify on the image, which the launcher removes once it runs */
                sd_event_source *timer; /* after the job: how long the image may stay */
                UnitDrop *drop;         /* failed: the attempt's units are being stopped */
                char *why;              /* failed: why, for the callers */
                bool job_done;
                bool job_failed;        /* its main process ended before READY=1: its exit status says why */
                bool ran;               /* the image went: the sandbox ran */
                bool failing;           /* going back to suspended */
                bool uid_taken;         /* failed: its UID was taken (UIDTaken for the callers) */
                unsigned failures;      /* in a row, for the log */
        } resume;
        bool uid_kept;                  /* its keeper unit was asked for (uid-keep.h) */
        struct {
                sd_bus_slot *call;      /* its start, until answered */
                unsigned attempts;
                uid_keep_done_t done;
        } keep;
        /* Its Credentials and Environment across a suspend (worker-secrets.h). */
        struct {
                bool keep;              /* its Credentials and Environment stay for a resume (worker-secrets.h) */
                bool stored;            /* and are in systemd's fd store */
        } secrets;
        /* Processes started inside it (worker-spawn.h), started or starting. */
        struct {
                WorkerProcess *list;
                unsigned n;
        } processes;
        sd_bus_message **waiters;       /* Suspend/Resume/OpenChannel calls answered at the end of the move */
        size_t n_waiters;
        bool unexported;                /* its object left the bus, after lingering */
        /* The owner's queue of workers to free. */
        struct {
                Worker *next;           /* the manager's queue of workers to free */
                bool queued;
        } gc;

        /* What systemd told us about the unit, in arrival order. */
        bool exported;
        bool unit_seen_active;
        bool unit_ended;
        int exec_main_code;
        int exec_main_status;
        char *unit_result;
        const char *stop_reason;        /* set when we asked for the stop */
        const char *end_reason;
        char *result;                   /* worker_result_format(); NULL until ended */
};

const char *worker_state_to_string(WorkerState s);
/* _WORKER_STATE_MAX for a name that is not a state. */
WorkerState worker_state_from_string(const char *s);

/* OWNER: who is told what the worker reports (NULL only in tests that
 * never run its lifecycle). */
int worker_new(Worker **ret, const WorkerOwner *owner, WorkerSpec *spec, SbxRuntime runtime);
/* The same for a worker whose ID is known already: one re-adopted after a restart. */
int worker_new_with_id(Worker **ret, const WorkerOwner *owner, WorkerSpec *spec, SbxRuntime runtime, const char *id);
Worker *worker_free(Worker *w);
/* For a worker still being built: freed on an early return, kept with TAKE_PTR(). */
static inline void worker_freep(Worker **w) { worker_free(*w); }

/* The owner's handles (WorkerOwner). */
static inline sd_event *worker_event(const Worker *w) {
        return *w->owned_by->event;
}
static inline sd_bus *worker_systemd(const Worker *w) {
        return *w->owned_by->systemd;
}
static inline UnitStops *worker_unit_stops(const Worker *w) {
        return *w->owned_by->unit_stops;
}

uint64_t worker_last_activity_realtime(const Worker *w);
bool worker_is_alive(const Worker *w);

/* Maps systemd's ExecMainCode/ExecMainStatus to a shell-style status. */
int worker_exit_status_from_exec(int code, int status);
/* Picks the WorkerRemoved reason from what we asked and what systemd saw. */
const char *worker_end_reason(const char *stop_reason, const char *unit_result, int exec_main_code);

/* The result people read, from the same facts: "exited N", "killed by
 * signal N", "idle", "timeout", "oom", "stopped" (or another reason we
 * stopped it for), or "failed: REASON" when the command never ran.
 * LAUNCHER: the unit's main process is sandbox-launch, whose setup status
 * means the sandbox never ran the workload. */
int worker_result_format(const char *stop_reason, const char *unit_result, int exec_main_code,
                         int exec_main_status, bool launcher, char **ret);
/* "failed: REASON" for a worker whose start failed. */
int worker_result_format_failed(const char *reason, char **ret);

/* Idle time as the reaper sees it (monotonic), 0 for a worker without a channel. */
uint64_t worker_idle_usec(const Worker *w, uint64_t now_monotonic);

/* ---- the lifecycle ----------------------------------------------------- *
 * starting -> running -> stopping -> ended, starting -> ended (the start
 * failed), running -> ended (it ended by itself); running -> suspending ->
 * suspended -> resuming -> running (worker-suspend.h), suspending -> running
 * (the checkpoint failed, the sandbox runs on), suspending -> ended (it
 * failed and the sandbox is gone), suspended -> ended (stopped), resuming ->
 * ended (the restore failed). Every change goes through
 * worker_set_state(), but for the restore paths below; an ended worker is
 * freed once worker_may_gc() says so, later, from the owner's deferred
 * queue (WorkerOwner.collect), never inside the callback that ended it. */

bool worker_state_transition_valid(WorkerState from, WorkerState to);
/* Moves W to S and tells clients what the move means: WorkerNew and its
 * object on entering running, PropertiesChanged State on stopping, the end
 * (PropertiesChanged, WorkerRemoved, NWorkers) on ended. -EINVAL, logged and
 * with nothing changed, for a transition not in the table. */
int worker_set_state(Worker *w, WorkerState s);
/* The only other writers of a worker's state, each once, on a worker just
 * rebuilt from its state file (adopt.c) and not yet seen by anyone: they set
 * the state directly, with no transition and nothing told to the owner,
 * because clients knew the worker in that state before the restart.
 * A worker re-adopted after a restart of sandboxd: running again. */
void worker_restore_running(Worker *w);
/* The same for a worker that was suspended (adopt.c). */
void worker_restore_suspended(Worker *w);
/* The same for a worker whose checkpoint was under way: it is watched to its
 * end as a live suspend would be (worker-suspend.c). */
void worker_restore_suspending(Worker *w);

/* Whether W may be freed: it ended, and no client can reach it any more
 * (its object left the bus after lingering, or it never had one). The one
 * test before a worker goes to its owner's collect callback. */
bool worker_may_gc(const Worker *w);

/* Removes the home (and its private target) and the checkpoint image. */
void worker_delete_home(Worker *w);

/* Its channel (the worker's ends go to the unit) or, after a restart, one
 * over the daemon's kept ends; then systemd's view of its unit. */
int worker_new_channel(Worker *w, ChannelWorkerFds *ret_worker_fds);
int worker_adopt_channel(Worker *w, const ChannelDaemonFds *fds, uint64_t last_activity);
int worker_watch_unit(Worker *w);
/* A signal said W's unit ended: W is ended (its home deleted) only once
 * systemd, asked again, says the unit is inactive or failed. */
void worker_confirm_unit_end(Worker *w);

/* The start is done (systemd's start job, and for a worker started by
 * sandbox-exec its readiness token: worker-ready.h): answers CreateWorker,
 * then running. */
void worker_start_done(Worker *w);
/* The start failed (the call or its job): cleans up, answers CreateWorker
 * with the error, ended, queued to be freed. */
void worker_start_failed(Worker *w, const char *why);
/* The unit is gone: records the result, deletes the home, ended; the object
 * lingers briefly so the result can still be read. */
/* Stops the worker's proxy pair, if it has one (asynchronously). */
void worker_stop_egress(Worker *w);
void worker_unit_gone(Worker *w);
int worker_arm_idle_timer(Worker *w);
/* The worker runs (its start or its resume is done): its idle clock starts
 * now, however long that took, and the reaper is armed from it. */
void worker_start_idle_clock(Worker *w);
/* A sandboxed worker's (or pool sandbox's) bundle that outlived its unit:
 * the launcher's cleanup again, from a oneshot unit of its own. */
void worker_cleanup_sandbox_leftovers(const WorkerOwner *o, const char *worker_id, SbxRuntime runtime);

int worker_stop(Worker *w, const char *reason, SbxError *error);
int worker_open_channel(Worker *w, int *ret_fd, SbxError *error);

/* SANDBOXD_OWNER_UID's value. */
void worker_owner_field(const Worker *w, char buf[static 16]);
/* The one "Starting worker" entry of a cold start or a pool claim: MODE is
 * "cold" or "pooled", REASON why a cold start was not pooled (NULL: none). */
void worker_log_starting(const Worker *w, const char *mode, const char *reason);
