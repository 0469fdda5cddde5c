/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "class.h"
#include "config.h"
#include "util.h"

#define SBX_CREDENTIAL_SIZE_MAX (UINT64_C(1024) * 1024)     /* systemd's own per-credential cap */
#define SBX_CREDENTIALS_MAX 64
#define SBX_ARGV_MAX 4096
#define SBX_ENV_MAX 512
#define SBX_STRINGS_BYTES_MAX (UINT64_C(256) * 1024)
#define SBX_EGRESS_RULES_MAX 256
#define SBX_SERVICES_MAX 16

typedef struct SbxCredential {
        char *name;
        uint8_t *data;
        size_t size;
} SbxCredential;

typedef enum SbxSpecField {
        SPEC_HAS_CLASS = 1 << 0,
        SPEC_HAS_MEMORY_MAX = 1 << 1,
        SPEC_HAS_TASKS_MAX = 1 << 2,
        SPEC_HAS_CPU_QUOTA = 1 << 3,
        SPEC_HAS_RUNTIME_MAX = 1 << 4,
        SPEC_HAS_IDLE_TIMEOUT = 1 << 5,
        SPEC_HAS_DISK_MAX = 1 << 6,
        SPEC_HAS_EGRESS_RATE = 1 << 7,
        SPEC_HAS_EGRESS_MODE = 1 << 8,
        SPEC_HAS_ARGV = 1 << 9,
        SPEC_HAS_ENVIRONMENT = 1 << 10,
        SPEC_HAS_CREDENTIALS = 1 << 11,
        SPEC_HAS_EGRESS_ALLOW = 1 << 12,
        SPEC_HAS_ORIGIN = 1 << 13,
        SPEC_HAS_SERVICES = 1 << 14,
        SPEC_HAS_IDLE_ACTION = 1 << 15,
        SPEC_HAS_WORKSPACE = 1 << 16,
} SbxSpecField;

/* An upstream the worker reaches through the proxy's broker (spec-service.h). */
typedef struct SbxService {
        unsigned set;                   /* SbxServiceField bits */
        char *name;
        char *url;                      /* https://host[:port][/base] */
        uint8_t *credential;            /* a secret: wiped with the spec */
        size_t credential_size;
        char *header;                   /* "Name: template with {}" */
        char **methods;
        char **paths;                   /* allowed path prefixes */
        uint64_t max_request_bytes;
        uint64_t max_response_bytes;
        uint64_t rate_bps;              /* 0: the worker's egress rate */
} SbxService;

/* What a client asked for, after parsing and before defaults. */
typedef struct WorkerSpec {
        unsigned set;                   /* SbxSpecField bits */
        char **argv;
        char **environment;
        SbxClass class;                 /* effective: at least the origin's floor */
        SbxClass requested_class;       /* what the client asked for, or the default */
        char *origin;                   /* NULL: SBX_ORIGIN_DEFAULT */
        SbxCredential *credentials;
        size_t n_credentials;
        SbxLimits limits;
        uint64_t disk_max;              /* bytes; defaults applied: the worker's disk cap, 0 on a Workspace */
        char **egress_allow;
        uint64_t egress_rate_bps;
        bool egress_report_only;
        SbxService *services;
        size_t n_services;
        bool idle_suspend;              /* IdleAction=suspend: the reaper suspends instead of stopping */
        char *workspace;                /* NULL: a fresh home (workspace.h) */
} WorkerSpec;

void worker_spec_init(WorkerSpec *s);
void worker_spec_done(WorkerSpec *s);

/* Fills in what the client left out from the configuration's defaults, and
 * raises the class to the origin's floor (never lowers it). */
void worker_spec_apply_defaults(WorkerSpec *s, const SbxConfig *c);

/* Checks a spec with defaults applied. Refuses with a named error and a
 * message that says what to fix; never modifies anything outside S. */
int worker_spec_validate(const WorkerSpec *s, const SbxConfig *c, SbxError *error);

bool credential_name_is_valid(const char *name);
bool environment_assignment_is_valid(const char *e);
/* The checks of a spec's Argv and Environment, for other callers that take
 * the same (Worker.Exec): 0, or a negative errno with ERROR set. */
int spec_validate_argv(char * const *argv, SbxError *error);
int spec_validate_environment(char * const *env, SbxError *error);
bool egress_pattern_is_valid(const char *p);
