/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The command line of sandbox-launch, parsed and checked without touching
 * the host, so that every refusal is unit-testable. Strings point into the
 * argv given to launch_args_parse; only the arrays are owned. */

#include <stdint.h>

#include "parse-util.h"
#include "util.h"

typedef enum LaunchVerb {
        LAUNCH_RUN,
        LAUNCH_CLEANUP,
        LAUNCH_PROBE,
        LAUNCH_PROBE_GUEST,     /* internal: what the runsc probe runs inside the sandbox */
        LAUNCH_CHECKPOINT,      /* suspend: a running runsc worker's sandbox into its image directory */
        _LAUNCH_VERB_MAX,
        _LAUNCH_VERB_INVALID = -1,
} LaunchVerb;

typedef enum LaunchRuntime {
        LAUNCH_RUNTIME_RUNSC,
        LAUNCH_RUNTIME_KATA,
        LAUNCH_RUNTIME_WASM,
        _LAUNCH_RUNTIME_MAX,
        _LAUNCH_RUNTIME_INVALID = -1,
} LaunchRuntime;

const char *launch_verb_to_string(LaunchVerb v);
LaunchVerb launch_verb_from_string(const char *s);
const char *launch_runtime_to_string(LaunchRuntime r);
LaunchRuntime launch_runtime_from_string(const char *s);

#define LAUNCH_ID_MAX 23                /* "sandbox-" + id fits a 31-character user name */
#define LAUNCH_DEFAULT_PLATFORM "systrap"
#define LAUNCH_DEFAULT_NETWORK "none"
#define LAUNCH_DEFAULT_RUNSC "/usr/bin/runsc"
#define LAUNCH_DEFAULT_PROBE_TIMEOUT_SEC 20
/* The largest --timer-slack-usec: beyond a second timers inside the sandbox
 * would be too late to be of use to anything. */
#define LAUNCH_TIMER_SLACK_MAX_USEC 1000000

typedef struct LaunchArgs {
        LaunchVerb verb;
        const char *id;
        LaunchRuntime runtime;
        const char *runtime_path;
        const char *platform;
        const char *network;            /* runsc: "none" (default) or "veth" (launch-veth.h) */
        const char *root_image;
        const char *home;
        const char *nonce;
        const char *pool;               /* "wait": a warm-pool sandbox (daemon/pool/pool.h), else NULL */
        uint64_t pids;
        uint64_t memory;
        uint64_t cpu_percent;
        uint64_t disk;
        uint64_t tmp_size;
        uint64_t nofile;
        uint64_t timeout_sec;
        uint64_t image_max;     /* checkpoint: the cap on the image directory's bytes */
        int exec_fd;            /* run: the exec channel systemd passed (exec-proto.h), or -1 */
        uint64_t timer_slack_usec; /* run, runsc: the runtime's timer slack (launch-run.c); 0: the kernel's */
        bool restore;           /* run: restore the sandbox from its checkpoint image */
        bool noexec_home;       /* run: the home is mounted noexec (the spec's NoExec) */
        bool home_disk;         /* run: bind the worker's disk's home on the home (launch-home.h) */
        char **setenv;          /* NULL-terminated, strings borrowed */
        char **argv;            /* NULL-terminated, strings borrowed */
} LaunchArgs;

/* Parses "sandbox-launch VERB [--option[=]value]... [-- ARGV...]". On bad
 * input fills *error with a message that names the option and returns
 * -EINVAL; *ret is then left empty. */
int launch_args_parse(int argc, char * const *argv, LaunchArgs *ret, SbxError *error);
void launch_args_done(LaunchArgs *a);

bool launch_id_valid(const char *id);

