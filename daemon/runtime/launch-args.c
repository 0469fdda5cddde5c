/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>

#include "errors.h"
#include "launch-args.h"

static const char * const verb_names[_LAUNCH_VERB_MAX] = {
        [LAUNCH_RUN] = "run",
        [LAUNCH_CLEANUP] = "cleanup",
        [LAUNCH_PROBE] = "probe",
        [LAUNCH_PROBE_GUEST] = "probe-guest",
        [LAUNCH_CHECKPOINT] = "checkpoint",
};

static const char * const runtime_names[_LAUNCH_RUNTIME_MAX] = {
        [LAUNCH_RUNTIME_RUNSC] = "runsc",
        [LAUNCH_RUNTIME_KATA] = "kata",
        [LAUNCH_RUNTIME_WASM] = "wasm",
};

const char *launch_verb_to_string(LaunchVerb v) {
        return v >= 0 && v < _LAUNCH_VERB_MAX ? verb_names[v] : NULL;
}

LaunchVerb launch_verb_from_string(const char *s) {
        for (int v = 0; s && v < _LAUNCH_VERB_MAX; v++)
                if (streq(s, verb_names[v]))
                        return (LaunchVerb) v;
        return _LAUNCH_VERB_INVALID;
}

const char *launch_runtime_to_string(LaunchRuntime r) {
        return r >= 0 && r < _LAUNCH_RUNTIME_MAX ? runtime_names[r] : NULL;
}

LaunchRuntime launch_runtime_from_string(const char *s) {
        for (int r = 0; s && r < _LAUNCH_RUNTIME_MAX; r++)
                if (streq(s, runtime_names[r]))
                        return (LaunchRuntime) r;
        return _LAUNCH_RUNTIME_INVALID;
}

bool launch_id_valid(const char *id) {
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n > LAUNCH_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(isalnum((unsigned char) id[i]) || id[i] == '-' || id[i] == '_'))
                        return false;
        return true;
}

typedef enum OptKind { OPT_STRING, OPT_SIZE, OPT_ENV, OPT_BOOL } OptKind;

typedef struct LaunchOption {
        const char *name;
        OptKind kind;
        unsigned verbs;         /* bit mask of LaunchVerb */
        size_t offset;
} LaunchOption;

#define V(v) (1u << (v))
#define FIELD(f) offsetof(LaunchArgs, f)
static const LaunchOption options[] = {
#define CK V(LAUNCH_CHECKPOINT)
        { "id",           OPT_STRING, V(LAUNCH_RUN) | V(LAUNCH_CLEANUP) | CK,                    FIELD(id) },
        { "runtime",      OPT_STRING, V(LAUNCH_RUN) | V(LAUNCH_CLEANUP) | V(LAUNCH_PROBE) | CK, 0 },
        { "runtime-path", OPT_STRING, V(LAUNCH_RUN) | V(LAUNCH_CLEANUP) | V(LAUNCH_PROBE) | CK, FIELD(runtime_path) },
        { "platform",     OPT_STRING, V(LAUNCH_RUN) | V(LAUNCH_PROBE) | CK,                      FIELD(platform) },
        { "network",      OPT_STRING, V(LAUNCH_RUN),                                        FIELD(network) },
        { "root-image",   OPT_STRING, V(LAUNCH_RUN),                                        FIELD(root_image) },
        { "home",         OPT_STRING, V(LAUNCH_RUN),                                        FIELD(home) },
        { "pids",         OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(pids) },
        { "memory",       OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(memory) },
        { "cpu-percent",  OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(cpu_percent) },
        { "disk",         OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(disk) },
        { "tmp-size",     OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(tmp_size) },
        { "nofile",       OPT_SIZE,   V(LAUNCH_RUN),                                        FIELD(nofile) },
        { "setenv",       OPT_ENV,    V(LAUNCH_RUN),                                        0 },
        { "pool",         OPT_STRING, V(LAUNCH_RUN),                                        FIELD(pool) },
        { "timeout",      OPT_SIZE,   V(LAUNCH_PROBE),                                      FIELD(timeout_sec) },
        { "nonce",        OPT_STRING, V(LAUNCH_PROBE_GUEST),                                FIELD(nonce) },
        { "restore",      OPT_BOOL,   V(LAUNCH_RUN),                                        FIELD(restore) },
        { "noexec-home",  OPT_BOOL,   V(LAUNCH_RUN),                                        FIELD(noexec_home) },
        { "home-disk",    OPT_BOOL,   V(LAUNCH_RUN),                                        FIELD(home_disk) },
        { "image-max",    OPT_SIZE,   CK,                                                   FIELD(image_max) },
        { "timer-slack-usec", OPT_SIZE, V(LAUNCH_RUN),                                      FIELD(timer_slack_usec) },
#undef CK
};

static int set_option(LaunchArgs *a, const LaunchOption *o, char *value, SbxError *error) {
        if (streq(o->name, "runtime")) {
                a->runtime = launch_runtime_from_string(value);
                if (a->runtime < 0)
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "--runtime must be runsc, kata or wasm, got '%s'.", value);
                return 0;
        }
        switch (o->kind) {
        case OPT_STRING:
                if (isempty(value))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--%s needs a value.", o->name);
                *(const char **) ((char *) a + o->offset) = value;
                return 0;
        case OPT_SIZE:
                if (parse_size(value, (uint64_t *) ((char *) a + o->offset)) < 0)
                        return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                             "--%s needs a number (optionally with K, M, G), got '%s'.",
                                             o->name, value);
                return 0;
        case OPT_ENV:
                if (!strchr(value, '=') || value[0] == '=')
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_ENVIRONMENT,
                                             "--setenv needs NAME=VALUE, got '%s'.", value);
                return strv_push(&a->setenv, value);
        case OPT_BOOL:
                if (!streq(value, "yes") && !streq(value, "no"))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "--%s must be yes or no, got '%s'.", o->name, value);
                *(bool *) ((char *) a + o->offset) = streq(value, "yes");
                return 0;
        }
        return -EINVAL;
}

static const LaunchOption *find_option(const char *name, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (strlen(options[i].name) == n && strncmp(options[i].name, name, n) == 0)
                        return &options[i];
        return NULL;
}

static int parse_options(int argc, char * const *argv, LaunchArgs *a, SbxError *error) {
        int i;

        for (i = 2; i < argc; i++) {
                const char *arg = argv[i], *eq;
                const LaunchOption *o;
                char *value;
                int r;

                if (streq(arg, "--")) {
                        i++;
                        break;
                }
                if (!startswith(arg, "--"))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Unexpected argument '%s': the command goes after '--'.", arg);
                eq = strchr(arg, '=');
                o = find_option(arg + 2, eq ? (size_t) (eq - arg - 2) : strlen(arg + 2));
                if (!o || !(o->verbs & V(a->verb)))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Unknown option '%s' for '%s'.", arg, launch_verb_to_string(a->verb));
                if (eq)
                        value = (char *) eq + 1;
                else if (i + 1 < argc)
                        value = argv[++i];
                else
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--%s needs a value.", o->name);
                r = set_option(a, o, value, error);
                if (r < 0)
                        return r;
        }
        for (; i < argc; i++) {
                int r = strv_push(&a->argv, argv[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int require(const void *v, const char *name, SbxError *error) {
        return v ? 0 : sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--%s is required.", name);
}

static int check_path(const char *p, const char *name, SbxError *error) {
        if (p && p[0] != '/')
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "--%s must be an absolute path, got '%s'.", name, p);
        return 0;
}

static int check_run(LaunchArgs *a, SbxError *error) {
        int r;

        if ((r = require(a->home, "home", error)) < 0 || (r = require(a->runtime_path, "runtime-path", error)) < 0 ||
            (r = check_path(a->home, "home", error)) < 0 || (r = check_path(a->root_image, "root-image", error)) < 0)
                return r;
        if (a->runtime != LAUNCH_RUNTIME_RUNSC && a->runtime != LAUNCH_RUNTIME_KATA)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--runtime must be runsc or kata for run.");
        if (a->restore && a->runtime != LAUNCH_RUNTIME_RUNSC)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--restore is for runsc only.");
        if (a->pids == 0 || a->memory == 0 || a->cpu_percent == 0)
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "--pids, --memory and --cpu-percent are required and must be positive.");
        if (a->timer_slack_usec > 0 && a->runtime != LAUNCH_RUNTIME_RUNSC)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--timer-slack-usec is for runsc only.");
        if (a->timer_slack_usec > LAUNCH_TIMER_SLACK_MAX_USEC)
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "--timer-slack-usec must be at most %d, got %" PRIu64 ".",
                                     LAUNCH_TIMER_SLACK_MAX_USEC, a->timer_slack_usec);
        if (!a->argv || !a->argv[0])
                return sbx_error_set(error, EINVAL, SBX_ERROR_MISSING_ARGV, "The command is missing after '--'.");
        if (a->argv[0][0] != '/')
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "The command must be an absolute path, got '%s'.", a->argv[0]);
        return 0;
}

static int check(LaunchArgs *a, SbxError *error) {
        int r;

        if (a->argv && a->verb != LAUNCH_RUN)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "'%s' takes no command.",
                                     launch_verb_to_string(a->verb));
        if (a->verb == LAUNCH_RUN || a->verb == LAUNCH_CLEANUP || a->verb == LAUNCH_CHECKPOINT) {
                if ((r = require(a->id, "id", error)) < 0)
                        return r;
                if (!launch_id_valid(a->id))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "--id must be 1-%d letters, digits, '-' or '_', got '%s'.",
                                             LAUNCH_ID_MAX, a->id);
        }
        if ((r = check_path(a->runtime_path, "runtime-path", error)) < 0)
                return r;
        if (a->platform && !streq(a->platform, "systrap") && !streq(a->platform, "ptrace"))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "--platform must be systrap or ptrace, got '%s'.", a->platform);
        if (a->platform && a->runtime != LAUNCH_RUNTIME_RUNSC)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--platform is for runsc only.");
        if (a->network && !streq(a->network, "none") && !streq(a->network, "veth"))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "--network must be none or veth, got '%s'.", a->network);
        if (a->network && a->runtime != LAUNCH_RUNTIME_RUNSC)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "--network is for runsc only.");
        if (a->home_disk && a->disk > 0)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "--home-disk and --disk name two homes; give one.");
        if (a->pool && (!streq(a->pool, "wait") || a->runtime != LAUNCH_RUNTIME_RUNSC || a->disk > 0))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "--pool=wait is for runsc only, without --disk.");
        switch (a->verb) {
        case LAUNCH_RUN:
                return check_run(a, error);
        case LAUNCH_CLEANUP:
                if (!a->runtime_path && a->runtime == LAUNCH_RUNTIME_RUNSC)
                        a->runtime_path = LAUNCH_DEFAULT_RUNSC;
                return require(a->runtime_path, "runtime-path", error);
        case LAUNCH_PROBE:
                if (a->timeout_sec == 0 || a->timeout_sec > 600)
                        return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                             "--timeout must be between 1 and 600 seconds.");
                return require(a->runtime_path, "runtime-path", error);
        case LAUNCH_PROBE_GUEST:
                return require(a->nonce, "nonce", error);
        case LAUNCH_CHECKPOINT:
                /* Only gVisor can save a sandbox's memory (Kata here is refused anyway). */
                if (a->runtime != LAUNCH_RUNTIME_RUNSC)
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "--runtime must be runsc for checkpoint.");
                if (a->image_max == 0)
                        return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                             "--image-max is required and must be positive.");
                return require(a->runtime_path, "runtime-path", error);
        default:
                return -EINVAL;
        }
}

int launch_args_parse(int argc, char * const *argv, LaunchArgs *ret, SbxError *error) {
        LaunchArgs a = {
                .runtime = LAUNCH_RUNTIME_RUNSC,
                .timeout_sec = LAUNCH_DEFAULT_PROBE_TIMEOUT_SEC,
                .exec_fd = -1,
        };
        int r;

        assert(ret);
        *ret = (LaunchArgs) { .verb = _LAUNCH_VERB_INVALID };
        if (argc < 2)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "A verb is required: run, cleanup or probe.");
        a.verb = launch_verb_from_string(argv[1]);
        if (a.verb < 0)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Unknown verb '%s': run, cleanup or probe.", argv[1]);
        r = parse_options(argc, argv, &a, error);
        if (r >= 0)
                r = check(&a, error);
        if (r < 0) {
                launch_args_done(&a);
                return r;
        }
        if (!a.platform && a.runtime == LAUNCH_RUNTIME_RUNSC && a.verb != LAUNCH_CLEANUP)
                a.platform = LAUNCH_DEFAULT_PLATFORM;
        if (!a.network && a.runtime == LAUNCH_RUNTIME_RUNSC && a.verb == LAUNCH_RUN)
                a.network = LAUNCH_DEFAULT_NETWORK;
        *ret = a;
        return 0;
}

void launch_args_done(LaunchArgs *a) {
        if (!a)
                return;
        free(a->setenv);
        free(a->argv);
        a->setenv = a->argv = NULL;
}
