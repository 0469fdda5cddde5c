/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>

#include "egress-host.h"
#include "env-cred.h"
#include "errors.h"
#include "spec.h"
#include "spec-service.h"
#include "worker-view.h"
#include "workspace-name.h"

void worker_spec_init(WorkerSpec *s) {
        *s = (WorkerSpec) { .class = _SBX_CLASS_INVALID, .requested_class = _SBX_CLASS_INVALID };
}

void worker_spec_done(WorkerSpec *s) {
        strv_free(s->argv);
        strv_free(s->environment);
        strv_free(s->egress_allow);
        free(s->origin);
        free(s->workspace);
        for (size_t i = 0; i < s->n_credentials; i++) {
                free(s->credentials[i].name);
                erase_and_free(s->credentials[i].data, s->credentials[i].size);
        }
        free(s->credentials);
        for (size_t i = 0; i < s->n_services; i++)
                sbx_service_done(&s->services[i]);
        free(s->services);
        worker_spec_init(s);
}

void worker_spec_apply_defaults(WorkerSpec *s, const SbxConfig *c) {
        SbxClass floor;

        if (!(s->set & SPEC_HAS_CLASS))
                s->class = c->default_class;
        s->requested_class = s->class;
        /* An unknown origin has no floor; validation refuses it. */
        floor = sbx_config_origin_floor(c, s->origin ?: SBX_ORIGIN_DEFAULT);
        if (floor != _SBX_CLASS_INVALID && s->class >= 0 && s->class < floor)
                s->class = floor;
        if (!(s->set & SPEC_HAS_MEMORY_MAX))
                s->limits.memory_max = c->defaults.memory_max;
        if (!(s->set & SPEC_HAS_TASKS_MAX))
                s->limits.tasks_max = c->defaults.tasks_max;
        if (!(s->set & SPEC_HAS_CPU_QUOTA))
                s->limits.cpu_quota_percent = c->defaults.cpu_quota_percent;
        if (!(s->set & SPEC_HAS_RUNTIME_MAX))
                s->limits.runtime_max_usec = c->defaults.runtime_max_usec;
        if (!(s->set & SPEC_HAS_IDLE_TIMEOUT))
                s->limits.idle_timeout_usec = c->defaults.idle_timeout_usec;
        if (!(s->set & SPEC_HAS_EGRESS_RATE))
                s->egress_rate_bps = c->egress_rate_bps;
        /* Every worker's disk is capped (worker-disk.h); one on a Workspace
         * has the workspace's image as its disk instead. */
        if (!(s->set & SPEC_HAS_DISK_MAX))
                s->disk_max = s->workspace ? 0 : c->disk_default;
        for (size_t i = 0; i < s->n_services; i++)
                sbx_service_apply_defaults(&s->services[i]);
}

/* Names become file names under $CREDENTIALS_DIRECTORY and travel in the
 * abstract socket address systemd uses to ask for them, so keep them plain. */
bool credential_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > 64 || name[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr("._-", name[i]))
                        return false;
        return true;
}

/* The daemon owns these; a spec that sets them would break the worker's
 * view of its own home and credentials, or point its egress elsewhere. */
static const char * const reserved_env[] = {
        "HOME", "USER", "LOGNAME", "SHELL", "CREDENTIALS_DIRECTORY", "STATE_DIRECTORY",
        "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
        "NO_PROXY", "no_proxy", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
};

static bool environment_name_is_reserved(const char *e, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(reserved_env); i++)
                if (strlen(reserved_env[i]) == n && strncmp(reserved_env[i], e, n) == 0)
                        return true;
        return false;
}

bool environment_assignment_is_valid(const char *e) {
        const char *eq = strchr(e, '=');

        if (!eq || !environment_name_is_valid(e, (size_t) (eq - e)))
                return false;
        /* Values travel NUL-separated in a credential (env-cred.h), so a
         * newline or tab is data; other control characters are refused as
         * what no program expects in its environment. */
        for (const char *p = eq + 1; *p; p++)
                if ((unsigned char) *p < 0x20 && *p != '\t' && *p != '\n')
                        return false;
        return true;
}

/* The proxy's own parser decides, so a pattern the daemon accepts is
 * exactly one the proxy understands. */
bool egress_pattern_is_valid(const char *p) {
        EgressPattern pattern;
        return p && egress_pattern_parse(p, &pattern) >= 0;
}

static int check_limit(const char *key, uint64_t v, uint64_t min, uint64_t max, SbxError *error) {
        if (v < min || v > max)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "%s=%" PRIu64 " is out of range: it must be between %" PRIu64 " and %" PRIu64,
                                     key, v, min, max);
        return 0;
}

int spec_validate_argv(char * const *argv, SbxError *error) {
        size_t n = strv_length(argv), bytes = 0;

        if (n == 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_MISSING_ARGV,
                                     "Argv is missing or empty: give the command to run, e.g. Argv=[\"/bin/sh\"]");
        if (isempty(argv[0]))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_MISSING_ARGV,
                                     "Argv[0] is empty: give a command name or an absolute path");
        /* A worker starts in its own new home: nothing of the caller's
         * directory is there for a relative path to name. */
        if (argv[0][0] != '/' && !exec_name_is_bare(argv[0]))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Argv[0] \"%.255s\" is a relative path: give an absolute path, or a bare name "
                                     "to search in " SBX_EXEC_SEARCH_PATH " as the worker sees it", argv[0]);
        if (exec_name_is_bare(argv[0]) && strlen(argv[0]) > NAME_MAX)
                return sbx_error_set(error, -ENAMETOOLONG, SBX_ERROR_INVALID_SPEC,
                                     "Argv[0] is a name of %zu bytes; a file name has at most %d", strlen(argv[0]),
                                     NAME_MAX);
        if (n > SBX_ARGV_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SPEC,
                                     "Argv has %zu entries; at most %d are allowed", n, SBX_ARGV_MAX);
        for (size_t i = 0; i < n; i++)
                bytes += strlen(argv[i]) + 1;
        if (bytes > SBX_STRINGS_BYTES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SPEC,
                                     "Argv is %zu bytes; at most %" PRIu64 " are allowed", bytes, SBX_STRINGS_BYTES_MAX);
        return 0;
}

int spec_validate_environment(char * const *env, SbxError *error) {
        size_t n = strv_length(env), bytes = 0;

        if (n > SBX_ENV_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_ENVIRONMENT,
                                     "Environment has %zu entries; at most %d are allowed", n, SBX_ENV_MAX);
        for (size_t i = 0; i < n; i++) {
                if (!environment_assignment_is_valid(env[i]))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_ENVIRONMENT,
                                             "Environment entry \"%.64s\" is not a valid KEY=VALUE assignment", env[i]);
                size_t name_len = (size_t) (strchr(env[i], '=') - env[i]);
                if (environment_name_is_reserved(env[i], name_len))
                        return sbx_error_set(error, -EPERM, SBX_ERROR_INVALID_ENVIRONMENT,
                                             "Environment variable %.*s is set by sandboxd and cannot be overridden",
                                             (int) name_len, env[i]);
                /* systemd refuses an environment that assigns a name twice. */
                for (size_t j = 0; j < i; j++)
                        if (strncmp(env[j], env[i], name_len + 1) == 0)
                                return sbx_error_set(error, -EEXIST, SBX_ERROR_INVALID_ENVIRONMENT,
                                                     "Environment variable %.*s is given more than once",
                                                     (int) name_len, env[i]);
                bytes += strlen(env[i]) + 1;
        }
        if (bytes > SBX_STRINGS_BYTES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_ENVIRONMENT,
                                     "Environment is %zu bytes; at most %" PRIu64 " are allowed", bytes, SBX_STRINGS_BYTES_MAX);
        return 0;
}

static int validate_credentials(const WorkerSpec *s, SbxError *error) {
        uint64_t total = 0;

        if (s->n_credentials > SBX_CREDENTIALS_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_CREDENTIAL,
                                     "%zu credentials given; at most %d are allowed", s->n_credentials, SBX_CREDENTIALS_MAX);
        for (size_t i = 0; i < s->n_credentials; i++) {
                const SbxCredential *cr = &s->credentials[i];
                if (!credential_name_is_valid(cr->name))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_CREDENTIAL,
                                             "Credential name \"%.64s\" is invalid: use 1-64 characters of [A-Za-z0-9._-], not starting with '.'",
                                             cr->name);
                if (credential_name_is_reserved(cr->name))
                        return sbx_error_set(error, -EPERM, SBX_ERROR_INVALID_CREDENTIAL,
                                             "Credential name \"%.64s\" is reserved: names starting with \""
                                             SBX_RESERVED_CREDENTIAL_PREFIX "\" are sandboxd's own", cr->name);
                if (cr->size > SBX_CREDENTIAL_SIZE_MAX)
                        return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_CREDENTIAL,
                                             "Credential %s is %zu bytes; at most %" PRIu64 " are allowed",
                                             cr->name, cr->size, SBX_CREDENTIAL_SIZE_MAX);
                for (size_t j = 0; j < i; j++)
                        if (streq(s->credentials[j].name, cr->name))
                                return sbx_error_set(error, -EEXIST, SBX_ERROR_INVALID_CREDENTIAL,
                                                     "Credential %s is given twice", cr->name);
                total += cr->size;
        }
        /* The environment is one more credential of the unit, and systemd caps
         * the sum of a unit's credentials: over it, the start would fail. */
        for (char **e = s->environment; e && *e; e++)
                total += strlen(*e) + 1;
        if (total > SBX_CREDENTIAL_SIZE_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_CREDENTIAL,
                                     "Credentials and Environment total %" PRIu64 " bytes; at most %" PRIu64 " are allowed",
                                     total, SBX_CREDENTIAL_SIZE_MAX);
        return 0;
}

static int validate_egress(const WorkerSpec *s, SbxError *error) {
        size_t n = strv_length(s->egress_allow);

        if (n > SBX_EGRESS_RULES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_EGRESS,
                                     "EgressAllow has %zu patterns; at most %d are allowed", n, SBX_EGRESS_RULES_MAX);
        for (size_t i = 0; i < n; i++)
                if (!egress_pattern_is_valid(s->egress_allow[i]))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_EGRESS,
                                             "EgressAllow pattern \"%.64s\" is invalid: use host, *.domain, optionally :port",
                                             s->egress_allow[i]);
        if ((s->set & SPEC_HAS_EGRESS_RATE) && s->egress_rate_bps == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "EgressRateBps must be positive; leave it out for the operator's default");
        return 0;
}

/* A workspace is a home on the host's file system, mounted by the unit:
 * something the shared kernel and gVisor take, not Kata's VM or wasm. */
static int validate_workspace(const WorkerSpec *s, SbxError *error) {
        if (!s->workspace)
                return s->class == SBX_CLASS_DEVCONTAINER
                        ? sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                        "Class devcontainer needs a Workspace: create one with CreateWorkspace and name it")
                        : 0;
        if (!workspace_name_is_valid(s->workspace))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "Workspace \"%.64s\" is not a workspace name: use 1-%d characters of [a-z0-9_-], "
                                     "starting with a letter or digit", s->workspace, SBX_WORKSPACE_NAME_MAX);
        if (!workspace_class_is_valid(s->class))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "A Workspace can back a worker of class trusted, standard, devcontainer or "
                                     "untrusted, not %s", sbx_class_to_string(s->class));
        if (s->set & SPEC_HAS_DISK_MAX)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_WORKSPACE,
                                     "DiskMax does not apply to a worker on a Workspace: the workspace's SizeMax is its cap");
        return 0;
}

int worker_spec_validate(const WorkerSpec *s, const SbxConfig *c, SbxError *error) {
        int r;

        r = spec_validate_argv(s->argv, error);
        if (r < 0)
                return r;
        r = spec_validate_environment(s->environment, error);
        if (r < 0)
                return r;
        if (s->class < 0 || s->class >= _SBX_CLASS_MAX)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_CLASS,
                                     "Unknown isolation class; use trusted, standard, devcontainer, untrusted, hostile or wasm");
        if (sbx_config_origin_floor(c, s->origin ?: SBX_ORIGIN_DEFAULT) == _SBX_CLASS_INVALID)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_ORIGIN,
                                     "Unknown origin \"%.64s\"; use first-party, user, llm-generated, marketplace "
                                     "or one of the [Classes] Origins in sandboxd.conf", s->origin);
        r = validate_workspace(s, error);
        if (r < 0)
                return r;
        r = check_limit("MemoryMax", s->limits.memory_max, c->minimum.memory_max, c->maximum.memory_max, error);
        if (r >= 0)
                r = check_limit("TasksMax", s->limits.tasks_max, c->minimum.tasks_max, c->maximum.tasks_max, error);
        if (r >= 0)
                r = check_limit("CPUQuotaPercent", s->limits.cpu_quota_percent,
                                c->minimum.cpu_quota_percent, c->maximum.cpu_quota_percent, error);
        if (r >= 0)
                r = check_limit("RuntimeMaxUSec", s->limits.runtime_max_usec,
                                c->minimum.runtime_max_usec, c->maximum.runtime_max_usec, error);
        if (r >= 0)
                r = check_limit("IdleTimeoutUSec", s->limits.idle_timeout_usec,
                                c->minimum.idle_timeout_usec, c->maximum.idle_timeout_usec, error);
        /* The home's cap is the worker's disk image (worker-disk.h), on the
         * host's file system, within the operator's bound. */
        if (r >= 0 && (s->set & SPEC_HAS_DISK_MAX))
                r = check_limit("DiskMax", s->disk_max, SBX_DISK_MIN, c->disk_limit, error);
        if (r < 0)
                return r;
        r = validate_credentials(s, error);
        if (r < 0)
                return r;
        r = validate_egress(s, error);
        if (r < 0)
                return r;
        return sbx_services_validate(s->services, s->n_services, error);
}
