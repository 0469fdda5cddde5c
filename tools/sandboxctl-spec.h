/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The worker spec as the CLI sees it: command-line options parsed into a
 * model, then appended to a CreateWorker call as the a{sv} the daemon reads.
 * Only options the user gave become keys, so the daemon's configured
 * defaults apply to everything else. Nothing here touches a bus connection. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "parse-util.h"
#include "sandboxctl-publish.h"
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

/* One --service NAME=URL and the --service-* options naming it. */
typedef struct CliService {
        char *name;
        char *url;
        uint8_t *credential;
        size_t credential_size;
        char *header;
        char **methods;
        char **paths;
        SpecU64 max_request_bytes;
        SpecU64 max_response_bytes;
        SpecU64 rate_bps;
} CliService;

typedef struct CliSpec {
        char **argv;
        char **environment;
        char **egress_allow;
        char *class;
        char *origin;
        char *egress_mode;
        char *idle_action;
        char *workspace;
        SpecCredential *credentials;
        size_t n_credentials;
        SpecU64 memory_max;
        SpecU64 tasks_max;
        SpecU64 cpu_quota_percent;
        SpecU64 runtime_max_usec;
        SpecU64 idle_timeout_usec;
        SpecU64 disk_max;
        SpecU64 egress_rate_bps;
        CliService *services;
        size_t n_services;
        CliPublish publish;             /* --publish: the Endpoint */
} CliSpec;

/* Frees everything and wipes credential bytes. */
void cli_spec_done(CliSpec *spec);

/* Reads a credential file with the caller's own permissions. */
int credential_read_file(const char *path, uint8_t **ret_data, size_t *ret_size);

/* Applies one of sandboxctl's global options (sandboxctl-args.h): 0 when
 * applied, 1 when it printed something and the program is done (--version). */
typedef int (*CliGlobalOption)(int option);

/* Parses the options of `run`/`create` (getopt_long, stopping at "--" or the
 * first non-option) and the command after them; GLOBAL, when not NULL, takes
 * the global options found among them. Returns 0 on success, 1 when --help
 * was asked for, 2 when GLOBAL said the program is done, -EINVAL for a usage
 * error and another negative errno when e.g. a credential file cannot be
 * read; a message for the user is in *error in both failure cases. */
int cli_spec_parse_args(CliSpec *spec, int argc, char *argv[], CliGlobalOption global, SbxError *error);

/* Whether run/create's option NAME (without "--") takes no value; true for
 * names it does not know, so a caller never takes their next word. */
bool cli_spec_option_is_flag(const char *name);

/* Appends the spec as one a{sv} to a message being built. */
int cli_spec_append(sd_bus_message *m, const CliSpec *spec);
