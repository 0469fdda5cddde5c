/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "channel.h"
#include "class.h"
#include "config.h"
#include "spec.h"
#include "systemd-bus.h"
#include "walls.h"

#define SBX_SLICE "sandbox.slice"
#define SBX_STATE_ROOT "/var/lib/sandboxd/workers"
#define SBX_PRIVATE_STATE_ROOT "/var/lib/private/sandboxd/workers"
#define SBX_RUNTIME_DIR "/run/sandboxd"
#define SBX_CREDENTIAL_SOCKET SBX_RUNTIME_DIR "/credentials.sock"
#define SBX_BUNDLE_ROOT SBX_RUNTIME_DIR "/bundles"
/* sandbox-launch's status when the runtime failed before the workload ran. */
#define SBX_LAUNCH_EXIT_SETUP 125

/* Everything the worker's transient unit is made of. */
typedef struct WorkerUnitParams {
        const char *id;
        const char *unit;               /* sandbox-<id>.service */
        const char *user;               /* sandbox-<id>, the DynamicUser name */
        const char *home;               /* SBX_STATE_ROOT/<id> */
        const WorkerSpec *spec;         /* validated, defaults applied */
        const SbxConfig *config;
        SbxRuntime runtime;
        const char *launcher_path;      /* sandbox-launch, for non-systemd runtimes */
        const char *exec_path;          /* sandbox-exec, the trusted and wasm workers' wrapper */
        const ChannelWorkerFds *stdio;  /* the worker's ends of the channel's pipes */
        const char *egress_proxy_url;   /* NULL: no CONNECT egress */
        const char *egress_socket;      /* the proxy's socket unit (egress or Services); NULL: none */
        const char *gate_socket;        /* the inbound gate's socket unit (Endpoint); NULL: none */
        const NsIdSet *host_ns;         /* PID 1's namespaces, which a worker's must not be */
        bool restore;                   /* a resumed worker: the launcher restores its checkpoint */
        bool pool;                      /* a warm-pool sandbox (pool.h): the launcher runs the waiter */
        const char *workspace_image;    /* NULL: a fresh home; else mounted as the home */
        uint64_t disk_bytes;            /* the worker's disk cap (worker-disk.h); 0: its workspace is its disk */
} WorkerUnitParams;

/* Appends the a(sv) properties of StartTransientUnit for the worker unit.
 * M must be positioned where the array goes; this opens and closes it. */
int worker_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p);

/* Appends the hardening and namespacing every worker's unit gets (P's
 * runtime and config decide the details), inside the a(sv) array: the
 * walls probe's unit is made of the very same list. */
int unit_append_hardening(sd_bus_message *m, const WorkerUnitParams *p);

/* Appends the a(sv) properties of a oneshot unit that runs the launcher's
 * cleanup of a sandboxed worker (bundle and runtime state), for when its own
 * ExecStopPost did not run. Its command is a plain ExecStart=, which systemd
 * can read back from the transient unit file: systemd 252 writes
 * ExecStartEx=/ExecStopPostEx= there but does not parse them, so a
 * "systemctl daemon-reload" drops a running worker's ExecStopPost. */
int worker_cleanup_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p);

/* The same for the oneshot unit that checkpoints a running runsc worker's
 * sandbox (sandbox-launch checkpoint), its image capped at IMAGE_MAX bytes. */
int worker_checkpoint_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p, uint64_t image_max);

/* Opens the aux-unit entry (sa(sv)) NAME of a oneshot that mounts something a
 * worker requires while it runs (its workspace, its disk) and undoes it once
 * no longer needed (RemainAfterExit=, StopWhenUnneeded=), with its common
 * properties; the caller appends ExecStart=/ExecStop= and closes both
 * containers. */
int unit_open_mount_aux(sd_bus_message *m, const char *name, const char *description);

/* Appends what every oneshot unit running one of sandboxd's own helpers (the
 * runtime probe, a worker's late cleanup) has: DESCRIPTION, Type=oneshot,
 * collected when done, no network, no system bus, a start timeout, and PATH ARGV as a plain
 * ExecStart=. M must be inside the a(sv) array. */
int unit_append_helper_oneshot(sd_bus_message *m, const char *description, uint64_t timeout_usec, const char *path,
                               char * const *argv);

/* The unit's TasksMax: the spec's, plus room for the runtime's own threads
 * where the runtime enforces the spec's value inside its sandbox. */
uint64_t unit_tasks_max(const WorkerUnitParams *p);

/* The unit that mounts P's workspace image on its home (sandbox-<id>-workspace.service),
 * one (sa(sv)) entry of StartTransientUnit's aux array; nothing without a workspace. */
int worker_workspace_unit_name(const char *id, char **ret);
int worker_workspace_append_aux_unit(sd_bus_message *m, const WorkerUnitParams *p);

/* The state directory as systemd wants it: relative to /var/lib. */
int worker_state_directory(const char *id, char **ret);
