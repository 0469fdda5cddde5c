/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The worker spec as the CLI sees it: command-line options parsed into a
 * model, then appended to a CreateWorker call as the a{sv} the daemon reads.
 * Only options the user gave become keys, so the daemon's configured
 * defaults apply to everything else. Nothing here touches a bus connection. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "util.h"

/* Client-side cap on one credential file: far above what systemd accepts for
 * a credential, low enough that a wrong path (a disk image) fails fast. */
#define SPEC_CREDENTIAL_SIZE_MAX (16U * 1024U * 1024U)

typedef struct SpecCredential {
        char *name;
        uint8_t *data;
        size_t size;
} SpecCredential;

typedef struct SpecU64 {
        uint64_t value;
        bool set;
} SpecU64;

typedef struct WorkerSpec {
        char **argv;
        char **environment;
        char **egress_allow;
        char *class;
        char *egress_mode;
        SpecCredential *credentials;
        size_t n_credentials;
        SpecU64 memory_max;
        SpecU64 tasks_max;
        SpecU64 cpu_quota_percent;
        SpecU64 runtime_max_usec;
        SpecU64 idle_timeout_usec;
        SpecU64 disk_max;
        SpecU64 egress_rate_bps;
} WorkerSpec;

/* Frees everything and wipes credential bytes. */
void worker_spec_done(WorkerSpec *spec);

/* "512", "64K", "1.5G", "2TiB": bytes, base 1024. -EINVAL on bad format,
 * -ERANGE on overflow. */
int parse_size(const char *s, uint64_t *ret);
/* "30", "30s", "5min", "1h30min", "250ms": microseconds; a bare number is
 * seconds. -EINVAL on bad format, -ERANGE on overflow. */
int parse_duration_usec(const char *s, uint64_t *ret);
/* A plain decimal number without sign or suffix. */
int parse_uint64(const char *s, uint64_t *ret);

/* Reads a credential file with the caller's own permissions. */
int credential_read_file(const char *path, uint8_t **ret_data, size_t *ret_size);

/* Parses the options of `run`/`create` (getopt_long, stopping at "--" or the
 * first non-option) and the command after them. Returns 0 on success, 1 when
 * --help was asked for, -EINVAL for a usage error and another negative errno
 * when e.g. a credential file cannot be read; a message for the user is in
 * *error in both failure cases. */
int worker_spec_parse_args(WorkerSpec *spec, int argc, char *argv[], SbxError *error);

/* Appends the spec as one a{sv} to a message being built. */
int worker_spec_append(sd_bus_message *m, const WorkerSpec *spec);
