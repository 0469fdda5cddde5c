/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Worker.SetEgress: a running (or suspended) worker's egress policy
 * replaced, within the operator's floor. The new policy is the one the
 * proxy's credential serves from then on and the one the state file keeps
 * (worker-persist.h), so a proxy started again (killed, or after a resume)
 * and a restarted sandboxd come back with it; the running proxy takes it
 * over its control channel (egress-ctl.h) without a restart, ending the
 * tunnels the new list refuses. A proxy that cannot take it so is stopped,
 * and the next connection starts one with the new credential: a revoked
 * host never stays reachable. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker.h"

typedef struct WorkerEgressChange {
        char **allow;           /* replaces the list; at least one entry */
        bool has_allow;
        uint64_t rate_bps;      /* per destination host, > 0 */
        bool has_rate;
        bool report_only;       /* EgressMode "report" */
        bool has_mode;
} WorkerEgressChange;

/* How the running proxy took it. */
typedef enum WorkerEgressApplied {
        WORKER_EGRESS_APPLIED_LIVE,      /* over the control channel */
        WORKER_EGRESS_APPLIED_RESTART,   /* the proxy was stopped; the next one loads it */
        WORKER_EGRESS_APPLIED_LATER,     /* no proxy runs now (suspended): the next one loads it */
} WorkerEgressApplied;

/* Validates CHANGE over W's current policy, refusing (with ERROR set,
 * nothing changed) bad patterns (InvalidEgressRule), a rate of 0
 * (LimitOutOfRange), an allow entry outside Egress:Floor
 * (EgressOutsideFloor), a worker created without egress (NotSupported) or
 * one neither running nor suspended (NotRunning); then applies it as above
 * and journals it with CALLER. */
int worker_set_egress(Worker *w, uid_t caller, const WorkerEgressChange *change, WorkerEgressApplied *ret_applied,
                      SbxError *error);
