/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a unit's cgroup says it used, read from the controllers themselves:
 * systemd 252 on the legacy (v1) or hybrid layout gives no IO counters and
 * no peak, so sandboxd reads what it needs on both layouts.
 *
 *                  v1 (legacy, hybrid)                   v2 (unified)
 *   CPU            cpuacct/cpuacct.usage (ns), else      cpu.stat usage_usec
 *                  unified/cpu.stat usage_usec (hybrid)
 *   memory         memory/memory.usage_in_bytes          memory.current
 *   peak           memory/memory.max_usage_in_bytes      memory.peak (5.19+)
 *   tasks          pids/pids.current                     pids.current
 *   IO bytes       blkio/blkio.throttle.io_service_bytes io.stat rbytes, wbytes
 *   OOM kills      memory/memory.oom_control oom_kill    memory.events oom_kill
 *
 * The parsers are pure; cgroup_stats_read() does the reading, from any
 * root, so that tests can point it at a fixture tree. */

#include <stdint.h>

#define CGROUP_STAT_UNKNOWN UINT64_MAX

typedef struct CgroupStats {
        uint64_t cpu_usage_nsec;
        uint64_t memory_current;
        uint64_t memory_peak;
        uint64_t tasks_current;
        uint64_t io_read_bytes;
        uint64_t io_write_bytes;
        uint64_t oom_kills;
} CgroupStats;

/* Each 0 or -EINVAL; RET untouched on error. */
/* One decimal number and an optional newline (memory.current, cpuacct.usage). */
int cgroup_parse_u64(const char *text, uint64_t *ret);
/* The value of KEY in "key value" lines (cpu.stat, memory.events, memory.oom_control). */
int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret);
/* v2 io.stat ("MAJ:MIN rbytes=N wbytes=N ..." per device): the sums. */
int cgroup_parse_io_stat(const char *text, uint64_t *ret_read, uint64_t *ret_write);
/* v1 blkio.throttle.io_service_bytes ("MAJ:MIN Read N" ..., "Total N"): the
 * Read and Write sums over the devices. An empty file is 0 and 0. */
int cgroup_parse_blkio_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_write);

/* Reads the cgroup PATH ("sandbox.slice/sandbox-x.service") under ROOT
 * ("/sys/fs/cgroup"), on either layout. A counter that cannot be read (no
 * such controller, an older kernel, the cgroup gone) is
 * CGROUP_STAT_UNKNOWN. Returns 0, or -ENOENT when the cgroup exists in no
 * hierarchy. */
int cgroup_stats_read(const char *root, const char *path, CgroupStats *ret);
