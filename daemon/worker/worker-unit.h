/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's unit: the StartTransientUnit message that makes it (with its
 * proxy pair, workspace and disk units), and the answer to that call. */

#include <systemd/sd-bus.h>

#include "channel.h"
#include "config.h"
#include "walls.h"
#include "worker.h"

/* What the unit is made of beyond the worker: the owner's (WorkerOwner.unit_env). */
typedef struct WorkerUnitEnv {
        const SbxConfig *config;
        const char *launcher_path;      /* sandbox-launch */
        const char *exec_path;          /* sandbox-exec */
        const char *egress_path;        /* sandbox-egress */
        const char *gate_path;          /* sandbox-gate */
        const char *mkfs_path;          /* for the worker's disk */
        const char *workspace_root;
        const NsIdSet *host_ns;         /* PID 1's namespaces, which a worker's must not be */
} WorkerUnitEnv;

/* StartTransientUnit of W's unit, with STDIO as its stdin/stdout/stderr. */
int worker_build_start_message(const Worker *w, const WorkerUnitEnv *env, const ChannelWorkerFds *stdio,
                               sd_bus_message **ret);
/* The reply to that call, W as USERDATA: a refusal fails the start (or the resume). */
int worker_on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);
/* Starts the unit of suspended W again, restoring its sandbox
 * (worker-suspend.h), after the owner's gate check; its start job's end is
 * reported like a creation's. */
int worker_start_resumed_unit(Worker *w, SbxError *error);
