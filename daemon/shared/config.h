/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "class.h"
#include "parse-util.h"
#include "quota.h"
#include "util.h"

/* Resource caps of one worker. */
typedef struct SbxLimits {
        uint64_t memory_max;            /* bytes */
        uint64_t tasks_max;
        uint32_t cpu_quota_percent;     /* of one CPU */
        uint64_t runtime_max_usec;
        uint64_t idle_timeout_usec;
} SbxLimits;

/* The smallest disk cap: an ext4 file system without a journal still fits. */
#define SBX_DISK_MIN (UINT64_C(1) << 20)

/* Where a spec's code came from, when it does not say. */
#define SBX_ORIGIN_DEFAULT "first-party"

typedef struct SbxConfig {
        SbxLimits defaults;     /* what a spec that says nothing gets */
        SbxLimits minimum;      /* below this a request is refused as too small to run */
        SbxLimits maximum;      /* above this a request is refused as absurd */
        unsigned max_workers;
        unsigned ended_workers_max;             /* how many ended workers ListWorkersEx remembers */
        uint64_t ended_workers_max_age_usec;    /* and for how long */
        uint64_t suspend_image_max;             /* a suspended worker's checkpoint image, at most */
        bool suspend_keep_across_reboot;        /* suspended workspace workers survive a boot (suspend-keep.h) */
        uint64_t checkpoint_extra_memory;       /* a worker's unit may use this beyond its MemoryMax
                                                 * while runsc saves it (worker-suspend.c) */
        SbxClass default_class;
        SbxQuotaConfig quota;                   /* [Quota]: per owner and in total (quota.h) */

        /* Worker disks (worker-disk.h): every worker's home, and a
         * shared-kernel worker's /tmp, on an ext4 image of its own. */
        uint64_t disk_default;          /* [Defaults] DiskMax: a spec without DiskMax */
        uint64_t disk_limit;            /* [Limits] DiskMax: the most a spec may ask */
        uint64_t disk_total_max;        /* [Disk] TotalMax: all workers' caps together */
        uint64_t disk_keep_free;        /* [Disk] KeepFree: what the disks never take of /var */

        /* Isolation */
        bool allow_shared_kernel_for_standard;
        char *runsc_path;
        char *runsc_platform;
        uint64_t runsc_timer_slack_usec;        /* sandbox-launch --timer-slack-usec; 0: the kernel's */
        char *kata_path;
        char *wasm_path;
        char *root_image;
        char **syscall_allow;           /* names added to shared-kernel workers' allow-list */

        /* Egress: the operator's bounds on what any spec may ask for */
        char **egress_floor;
        char **egress_deny;
        char **egress_private_ranges;
        uint64_t egress_rate_bps;
        unsigned egress_max_tunnels;
        bool egress_require_tls;
        char *egress_broker_ca_file;    /* the broker's upstream CAs; NULL: the system trust store */

        /* Endpoints (spec-endpoint.h): the group that may connect to the
         * gates' UNIX sockets, the most a spec's caps may be, a loopback
         * port range ("" none), whether Public=true may be asked. */
        char *endpoints_socket_group;
        uint64_t endpoints_max_request_bytes;
        uint64_t endpoints_max_response_bytes;
        char *endpoints_port_range;
        uint16_t endpoints_port_first, endpoints_port_last;     /* from the range; 0: none */
        bool endpoints_allow_public;

        /* Classes: the operator's origins as "name:class" (the lowest class
         * code of that origin gets), and whether trusted is first-party's alone */
        char **origin_floors;
        bool trusted_first_party_only;

        /* The warm pool of gVisor sandboxes (pool.h): how many wait per
         * class, what they may hold together, how fast they are replaced,
         * and when memory is too short to keep them. */
        unsigned pool_standard_size;
        unsigned pool_untrusted_size;
        uint64_t pool_memory_max;
        unsigned pool_refill_per_second;
        uint64_t pool_min_mem_available;
        unsigned pool_pressure_max;     /* /proc/pressure/memory "some avg10", percent */

        /* What one caller UID, and all callers together, may hold at once
         * (caller-quota.h): calls parked while polkit decides, and
         * ReadWorkerLog journal reads under way, workspaces being made (their
         * mkfs running). Root never waits for polkit; its reads and creations
         * meet only the per-user cap (worker-log-job.h, manager-workspace.h). */
        unsigned bus_authorizations_per_user;
        unsigned bus_authorizations_max;
        uint64_t bus_interactive_authorization_timeout_usec;
        unsigned bus_log_reads_per_user;
        unsigned bus_log_reads_max;
        unsigned bus_workspace_creations_per_user;
        unsigned bus_workspace_creations_max;
} SbxConfig;

void sbx_config_init_defaults(SbxConfig *c);
void sbx_config_done(SbxConfig *c);

/* Loads PATH over the defaults. A missing file is not an error (the defaults
 * apply); a malformed value is, with a message naming section and key. */
int sbx_config_load(SbxConfig *c, const char *path, SbxError *error);


/* The lowest class a worker of ORIGIN may get: the built-in floors
 * (llm-generated and marketplace: untrusted) and the operator's, whichever is
 * higher, and at least standard for any origin but first-party when trusted
 * is first-party's alone. _SBX_CLASS_INVALID for an origin nobody defined. */
SbxClass sbx_config_origin_floor(const SbxConfig *c, const char *origin);
bool sbx_origin_name_is_valid(const char *s);

/* Every entry must be a system call this machine's libseccomp knows; a typo
 * in a security allow-list is an error, not a silently ignored line. */
int syscall_names_validate(char * const *names, const char **ret_bad);
