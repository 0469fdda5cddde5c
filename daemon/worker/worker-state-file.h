/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "class.h"
#include "config.h"
#include "worker.h"

/* What sandboxd needs to account for a running worker after its own restart,
 * one file per worker under SBX_WORKER_STATE_DIR (root's alone, written
 * atomically). Never a secret: the spec's credentials and environment are
 * gone once the worker started, or, for a worker that can be suspended, kept
 * in systemd's fd store (worker-secrets.h); the file says only which. The egress
 * policy is the proxy's, served again to a proxy that starts after the
 * restart; it names hosts, not secrets.
 *
 * The format is line-based "key=value" after a versioned first line and ends
 * with an "end" line, so that a file cut short is refused rather than read
 * as a worker with defaults. Keys this version does not know are skipped: a
 * field added later must not make an older daemon drop running workers. */
#define SBX_WORKER_STATE_DIR "/run/sandboxd/workers"
#define SBX_BOOT_ID_FILE "/run/sandboxd/boot-id"                 /* the boot the state is from */
#define SBX_CURRENT_BOOT_ID_FILE "/run/sandboxd/current-boot-id"  /* sandboxd.service's ExecStartPre= */
#define WORKER_RECORD_MAGIC "sandboxd-worker-state"
#define WORKER_RECORD_VERSION 1
#define WORKER_RECORD_SIZE_MAX (UINT64_C(2) * 1024 * 1024)

typedef struct WorkerRecord {
        char id[WORKER_ID_LEN + 1];
        char *unit;
        SbxClass class;
        SbxClass requested_class;
        char *origin;                   /* NULL: SBX_ORIGIN_DEFAULT */
        SbxRuntime runtime;
        uid_t owner;
        uid_t uid;
        SbxLimits limits;
        bool has_disk_max;
        uint64_t disk_max;
        uint64_t egress_rate_bps;
        char *egress_socket;            /* both NULL: the worker has no egress */
        char *egress_service;
        char *egress_policy;            /* the proxy's credential, JSON */
        uint64_t created_realtime;
        uint64_t created_monotonic;
        uint64_t last_activity_monotonic;
        bool suspended;                 /* no unit: its checkpoint image holds it (worker-suspend.h) */
        bool idle_suspend;              /* IdleAction=suspend */
        char **argv;                    /* the command: a resumed unit's launcher is given it again */
        bool pooled;                    /* a claimed warm-pool sandbox: sandboxd keeps its run time */
        char *workspace;                /* NULL: the worker has a home of its own */
        bool kept_secrets;              /* its Credentials and Environment are in the fd store (worker-secrets.h) */
        char *suspending;               /* NULL, or the checkpoint unit under way (worker-suspend.h) */
        uint64_t checkpoint_budget;     /* while suspending: the bytes its image may take */
        char *gate_config;              /* NULL: no endpoint; else its gate's settings (gate-config.h) */
        uint64_t gate_port;             /* its gate's loopback port, 0: none */
        char *endpoint_name;            /* its EndpointName, NULL: none */
} WorkerRecord;

void worker_record_init(WorkerRecord *r);
void worker_record_done(WorkerRecord *r);

int worker_record_format(const WorkerRecord *r, char **ret);
/* -EBADMSG for a file that is corrupt or cut short, -EPROTONOSUPPORT for
 * another version; WHY then says what is wrong. */
int worker_record_parse(const char *text, size_t size, WorkerRecord *ret, char *why, size_t why_size);

/* DIR/<id>, written as DIR/.#<id> first, fsynced and renamed over it. */
int worker_record_save(const char *dir, const WorkerRecord *r);
int worker_record_load(const char *dir, const char *id, WorkerRecord *ret, char *why, size_t why_size);
int worker_record_remove(const char *dir, const char *id);
bool worker_id_is_valid(const char *id);
