/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a worker uses, for its properties (CPUUsageNSec, MemoryCurrent, ...)
 * and `sandboxctl top`: its unit's cgroup, read from the controllers
 * (cgroup-stats.h), and its proxy's counters, asked over the proxy's
 * root-only control channel (egress-ctl.h).
 *
 * For a gVisor worker the unit's cgroup holds the whole sandbox: the
 * sentry, the gofer and everything the workload runs, so its memory is the
 * sentry's and its CPU time includes the sentry's own work. For a trusted
 * worker it is the workload's processes alone. */

#include <stdbool.h>
#include <stdint.h>

#include "cgroup-stats.h"
#include "egress-ctl.h"
#include "worker.h"

/* How long a property read waits for the proxy (it answers from its event
 * loop at once; one that does not is asked again only after
 * WORKER_EGRESS_RETRY_USEC), and how long an answer is reused: a listing
 * of many workers asks each proxy once. */
#define WORKER_EGRESS_STATS_TIMEOUT_MSEC 100
#define WORKER_EGRESS_RETRY_USEC (5 * 1000 * 1000ULL)
#define WORKER_EGRESS_CACHE_USEC (500 * 1000ULL)
/* A GetAll reads each property: the cgroup is read once for all of them. */
#define WORKER_CGROUP_CACHE_USEC (100 * 1000ULL)

/* The cgroup's counters, each CGROUP_STAT_UNKNOWN when not known (no unit:
 * a suspended or ended worker; a controller this host lacks). */
void worker_metrics_cgroup(Worker *w, CgroupStats *ret);
/* The proxy's counters since it started (a proxy started again, after a
 * crash or a resume, counts from 0); all 0 for a worker without a proxy or
 * whose proxy does not answer (the last answer, if any, is kept). */
void worker_metrics_egress(Worker *w, EgressCounters *ret);

/* Whether W's proxy service runs now (its cgroup exists): a socket-activated
 * proxy starts on the first connection, and asking it would be one. */
bool worker_proxy_running(const Worker *w);

/* One request to W's proxy over its control channel and its answer:
 * connects (a proxy not running is started by socket activation), sends
 * REQ, waits at most TIMEOUT_MSEC. Returns the answer's length, -ENOENT
 * when the worker has no control listener (no proxy, or one made before
 * there was one), -ETIMEDOUT, -EMSGSIZE, or another negative errno. */
int worker_egress_ctl_call(const Worker *w, const char *req, size_t len, int timeout_msec, char *reply,
                           size_t size);
