/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The warm pool's decisions that need no systemd: which requests a waiting
 * sandbox can serve, and how many sandboxes the host's memory allows. */

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "spec.h"

/* What the host says about its memory. */
typedef struct PoolMemoryFacts {
        bool avail_known;
        uint64_t mem_available;         /* /proc/meminfo MemAvailable, bytes */
        bool pressure_known;
        unsigned some_avg10;            /* /proc/pressure/memory "some avg10", percent, rounded down */
} PoolMemoryFacts;

/* Reads MEMINFO and PRESSURE (either may be missing: that fact is then unknown). */
void pool_memory_facts_read(const char *meminfo, const char *pressure, PoolMemoryFacts *ret);

/* How many sandboxes of each kind a class waits with by configuration: that
 * many with their proxy pair (for claims with egress) and that many without
 * (gVisor's own loopback, as a cold worker without egress gets). */
unsigned pool_configured_size(const SbxConfig *c, SbxClass class);
/* Both kinds of every class. */
unsigned pool_configured_total(const SbxConfig *c);
/* Each waiting sandbox's share of Pool:MemoryMax; 0 when the pool is off. */
uint64_t pool_entry_memory(const SbxConfig *c);

/* How many sandboxes may wait in all, given CURRENT waiting now: the
 * configured total, none while memory pressure is at Pool:PressureMax or
 * above, and fewer where MemAvailable would drop below Pool:MinMemAvailable
 * (each sandbox counted at its share). */
unsigned pool_plan_total(const SbxConfig *c, unsigned current, const PoolMemoryFacts *f);

/* The longest wait after pool sandboxes that failed in a row. */
#define POOL_BACKOFF_MAX_USEC (60 * 1000000ULL)
/* How long the pool waits before its next sandbox after FAILURES that did
 * not come up in a row, at PACE (the refill's interval): twice as long each
 * time, POOL_BACKOFF_MAX_USEC at most, so that a cause no probe finds is not
 * retried in a loop. */
uint64_t pool_plan_backoff(uint64_t pace_usec, unsigned failures);

/* What a claim adds to the worker disks held (worker-disk.h): a waiting
 * sandbox's disk of Defaults:DiskMax is held already (pool_disk_held) and
 * only moves to the worker, so nothing unless S's disk is larger. */
uint64_t pool_claim_disk_added(const SbxConfig *c, const WorkerSpec *s);

/* Why a validated spec cannot be served by a waiting sandbox of its class
 * (a cap or option that cannot be applied to a running one), or NULL. */
const char *pool_claim_refusal(const WorkerSpec *s);
