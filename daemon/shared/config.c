/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <iniparser.h>
#include <seccomp.h>
#include <limits.h>

#include "config.h"
#include "errors.h"

#define KiB UINT64_C(1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)
#define TiB (GiB * 1024)

void sbx_config_init_defaults(SbxConfig *c) {
        *c = (SbxConfig) {
                .defaults = {
                        .memory_max = 256 * MiB,
                        .tasks_max = 256,
                        .cpu_quota_percent = 50,
                        .runtime_max_usec = 3600 * USEC_PER_SEC,
                        .idle_timeout_usec = 600 * USEC_PER_SEC,
                },
                /* Below these a worker cannot even start its runtime. */
                .minimum = {
                        .memory_max = 16 * MiB,
                        .tasks_max = 4,
                        .cpu_quota_percent = 1,
                        .runtime_max_usec = 1 * USEC_PER_SEC,
                        .idle_timeout_usec = 1 * USEC_PER_SEC,
                },
                .maximum = {
                        .memory_max = 64 * GiB,
                        .tasks_max = 16384,
                        .cpu_quota_percent = 6400,
                        .runtime_max_usec = 7 * 24 * 3600 * USEC_PER_SEC,
                        .idle_timeout_usec = 7 * 24 * 3600 * USEC_PER_SEC,
                },
                .max_workers = 256,
                .ended_workers_max = 256,
                .ended_workers_max_age_usec = 3600 * USEC_PER_SEC,
                /* Four times the default MemoryMax: a checkpoint is about
                 * the sandbox's memory, plus gVisor's own state. */
                .suspend_image_max = UINT64_C(1) << 30,
                /* runsc 0.0~20240729's save builds gVisor's whole state in
                 * the sentry's Go heap on top of the sandbox's: measured
                 * at up to 3.7 times the state written (docs/benchmarks.md,
                 * checkpoint). As much as the image may take. */
                .checkpoint_extra_memory = UINT64_C(1) << 30,
                .default_class = SBX_CLASS_STANDARD,
                /* A worker's home and /tmp together. The images are sparse:
                 * the total bounds what they may take, KeepFree what the
                 * host keeps of /var whatever they take. */
                .disk_default = 1 * GiB,
                .disk_limit = 16 * GiB,
                .disk_total_max = 64 * GiB,
                .disk_keep_free = 2 * GiB,
                .allow_shared_kernel_for_standard = false,
                .runsc_path = strdup("/usr/bin/runsc"),
                .runsc_platform = strdup("systrap"),
                /* An idle systrap sentry wakes every 400 us: at 20 ms of
                 * slack it costs a tenth (README, "Density"). */
                .runsc_timer_slack_usec = 20 * USEC_PER_MSEC,
                .kata_path = strdup("/usr/bin/kata-runtime"),
                .wasm_path = strdup("/usr/bin/wasmtime"),
                .root_image = strdup("/"),
                .egress_rate_bps = 0,
                .egress_max_tunnels = 64,
                .egress_require_tls = true,
                .endpoints_socket_group = strdup("www-data"),
                /* Both are held whole in the gate's memory. */
                .endpoints_max_request_bytes = 16 * MiB,
                .endpoints_max_response_bytes = 16 * MiB,
                .pool_standard_size = 2,
                .pool_untrusted_size = 2,
                .pool_memory_max = 1 * GiB,
                .pool_refill_per_second = 2,
                .pool_min_mem_available = 512 * MiB,
                .pool_pressure_max = 20,
                /* Well under dbus-daemon's 128 awaited replies per
                 * connection, which sandboxd's calls to systemd share. */
                .bus_authorizations_per_user = 8,
                .bus_authorizations_max = 32,
                .bus_interactive_authorization_timeout_usec = 120 * USEC_PER_SEC,
                .bus_log_reads_per_user = 2,
                .bus_log_reads_max = 4,
                .bus_workspace_creations_per_user = 2,
                .bus_workspace_creations_max = 4,
        };
        quota_config_init_defaults(&c->quota);
}

void sbx_config_done(SbxConfig *c) {
        free(c->runsc_path);
        free(c->runsc_platform);
        free(c->kata_path);
        free(c->wasm_path);
        free(c->root_image);
        strv_free(c->syscall_allow);
        strv_free(c->egress_floor);
        strv_free(c->egress_deny);
        strv_free(c->egress_private_ranges);
        free(c->egress_broker_ca_file);
        free(c->endpoints_socket_group);
        free(c->endpoints_port_range);
        strv_free(c->origin_floors);
        *c = (SbxConfig) {};
}

/* Whitespace-separated list. */
static char **split_words(const char *s) {
        _cleanup_free_ char *copy = strdup(s);
        char **l = calloc(1, sizeof(char *));
        size_t n = 0;
        char *save = NULL;

        if (!copy || !l) {
                free(l);
                return NULL;
        }
        for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
                char **nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl) {
                        strv_free(l);
                        return NULL;
                }
                l = nl;
                l[n] = strdup(w);
                if (!l[n]) {
                        strv_free(l);
                        return NULL;
                }
                l[++n] = NULL;
        }
        return l;
}

typedef enum { KEY_SIZE, KEY_TIMESPAN, KEY_UINT64, KEY_UINT32, KEY_UNSIGNED, KEY_BOOL, KEY_STRING, KEY_STRV, KEY_CLASS } KeyType;

typedef struct ConfigKey {
        const char *name;       /* "Section:Key" as iniparser spells it */
        KeyType type;
        size_t offset;
} ConfigKey;

#define K(n, t, field) { n, t, offsetof(SbxConfig, field) }
static const ConfigKey config_keys[] = {
        K("Defaults:MemoryMax", KEY_SIZE, defaults.memory_max),
        K("Defaults:TasksMax", KEY_UINT64, defaults.tasks_max),
        K("Defaults:CPUQuotaPercent", KEY_UINT32, defaults.cpu_quota_percent),
        K("Defaults:RuntimeMaxSec", KEY_TIMESPAN, defaults.runtime_max_usec),
        K("Defaults:IdleTimeoutSec", KEY_TIMESPAN, defaults.idle_timeout_usec),
        K("Defaults:Class", KEY_CLASS, default_class),
        K("Defaults:DiskMax", KEY_SIZE, disk_default),
        K("Limits:DiskMax", KEY_SIZE, disk_limit),
        K("Disk:TotalMax", KEY_SIZE, disk_total_max),
        K("Disk:KeepFree", KEY_SIZE, disk_keep_free),
        K("Limits:MemoryMax", KEY_SIZE, maximum.memory_max),
        K("Limits:TasksMax", KEY_UINT64, maximum.tasks_max),
        K("Limits:CPUQuotaPercent", KEY_UINT32, maximum.cpu_quota_percent),
        K("Limits:RuntimeMaxSec", KEY_TIMESPAN, maximum.runtime_max_usec),
        K("Limits:IdleTimeoutSec", KEY_TIMESPAN, maximum.idle_timeout_usec),
        K("Limits:MaxWorkers", KEY_UNSIGNED, max_workers),
        K("Limits:EndedWorkersMax", KEY_UNSIGNED, ended_workers_max),
        K("Limits:EndedWorkersMaxAgeSec", KEY_TIMESPAN, ended_workers_max_age_usec),
        K("Limits:SuspendImageMax", KEY_SIZE, suspend_image_max),
        K("Suspend:KeepAcrossReboot", KEY_BOOL, suspend_keep_across_reboot),
        K("Suspend:CheckpointExtraMemory", KEY_SIZE, checkpoint_extra_memory),
        K("Isolation:AllowSharedKernelForStandard", KEY_BOOL, allow_shared_kernel_for_standard),
        K("Isolation:RunscPath", KEY_STRING, runsc_path),
        K("Isolation:RunscPlatform", KEY_STRING, runsc_platform),
        K("Isolation:RunscTimerSlackSec", KEY_TIMESPAN, runsc_timer_slack_usec),
        K("Isolation:KataRuntimePath", KEY_STRING, kata_path),
        K("Isolation:WasmRuntimePath", KEY_STRING, wasm_path),
        K("Isolation:RootImage", KEY_STRING, root_image),
        K("Isolation:SystemCallAllow", KEY_STRV, syscall_allow),
        K("Egress:Floor", KEY_STRV, egress_floor),
        K("Egress:Deny", KEY_STRV, egress_deny),
        K("Egress:PrivateRanges", KEY_STRV, egress_private_ranges),
        K("Egress:RateBps", KEY_SIZE, egress_rate_bps),
        K("Egress:MaxTunnels", KEY_UNSIGNED, egress_max_tunnels),
        K("Egress:RequireTLS", KEY_BOOL, egress_require_tls),
        K("Egress:BrokerCAFile", KEY_STRING, egress_broker_ca_file),
        K("Endpoints:SocketGroup", KEY_STRING, endpoints_socket_group),
        K("Endpoints:MaxRequestBytes", KEY_SIZE, endpoints_max_request_bytes),
        K("Endpoints:MaxResponseBytes", KEY_SIZE, endpoints_max_response_bytes),
        K("Endpoints:PortRange", KEY_STRING, endpoints_port_range),
        K("Endpoints:AllowPublic", KEY_BOOL, endpoints_allow_public),
        K("Classes:Origins", KEY_STRV, origin_floors),
        K("Classes:TrustedOnlyFirstParty", KEY_BOOL, trusted_first_party_only),
        K("Pool:StandardSize", KEY_UNSIGNED, pool_standard_size),
        K("Pool:UntrustedSize", KEY_UNSIGNED, pool_untrusted_size),
        K("Pool:MemoryMax", KEY_SIZE, pool_memory_max),
        K("Pool:RefillPerSecond", KEY_UNSIGNED, pool_refill_per_second),
        K("Pool:MinMemAvailable", KEY_SIZE, pool_min_mem_available),
        K("Pool:PressureMax", KEY_UNSIGNED, pool_pressure_max),
        K("Quota:WorkersPerOwner", KEY_UNSIGNED, quota.workers_per_owner),
        K("Quota:WorkspacesPerOwner", KEY_UNSIGNED, quota.workspaces_per_owner),
        K("Quota:WorkspaceBytesPerOwner", KEY_SIZE, quota.workspace_bytes_per_owner),
        K("Quota:CheckpointBytesPerOwner", KEY_SIZE, quota.checkpoint_bytes_per_owner),
        K("Quota:CheckpointBytesTotal", KEY_SIZE, quota.checkpoint_bytes_total),
        K("Quota:Reserve", KEY_SIZE, quota.reserve_bytes),
        K("Quota:Overcommit", KEY_BOOL, quota.overcommit),
        K("Quota:ExemptRoot", KEY_BOOL, quota.exempt_root),
        K("Quota:ExemptManagers", KEY_BOOL, quota.exempt_managers),
        K("Bus:AuthorizationsPerUser", KEY_UNSIGNED, bus_authorizations_per_user),
        K("Bus:AuthorizationsMax", KEY_UNSIGNED, bus_authorizations_max),
        K("Bus:InteractiveAuthorizationTimeoutSec", KEY_TIMESPAN, bus_interactive_authorization_timeout_usec),
        K("Bus:LogReadsPerUser", KEY_UNSIGNED, bus_log_reads_per_user),
        K("Bus:LogReadsMax", KEY_UNSIGNED, bus_log_reads_max),
        K("Bus:WorkspaceCreationsPerUser", KEY_UNSIGNED, bus_workspace_creations_per_user),
        K("Bus:WorkspaceCreationsMax", KEY_UNSIGNED, bus_workspace_creations_max),
};
#undef K

static int config_set(SbxConfig *c, const ConfigKey *k, const char *value, SbxError *error) {
        void *field = (uint8_t *) c + k->offset;
        uint64_t v;
        int r;

        switch (k->type) {
        case KEY_SIZE:
                r = parse_size(value, field);
                break;
        case KEY_TIMESPAN:
                r = parse_duration_usec(value, field);
                break;
        case KEY_UINT64:
                r = parse_uint64(value, field);
                break;
        case KEY_UINT32:
        case KEY_UNSIGNED:
                r = parse_uint64(value, &v);
                if (r >= 0 && v > UINT32_MAX)
                        r = -ERANGE;
                if (r >= 0)
                        *(uint32_t *) field = (uint32_t) v;
                break;
        case KEY_BOOL:
                r = parse_boolean(value);
                if (r >= 0)
                        *(bool *) field = r;
                break;
        case KEY_CLASS: {
                SbxClass cl = sbx_class_from_string(value);
                r = cl < 0 ? -EINVAL : 0;
                if (r >= 0)
                        *(SbxClass *) field = cl;
                break;
        }
        case KEY_STRING: {
                char *s = strdup(value);
                if (!s)
                        return -ENOMEM;
                free(*(char **) field);
                *(char **) field = s;
                r = 0;
                break;
        }
        case KEY_STRV: {
                char **l = split_words(value);
                if (!l)
                        return -ENOMEM;
                strv_free(*(char ***) field);
                *(char ***) field = l;
                r = 0;
                break;
        }
        default:
                r = -EINVAL;
        }
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC,
                                     "Invalid value \"%s\" for %s in the configuration", value, k->name);
        return 0;
}

/* iniparser lowercases keys; compare without case. */
static const ConfigKey *config_key_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
                if (strcasecmp(config_keys[i].name, name) == 0)
                        return &config_keys[i];
        return NULL;
}

/* The seeds' policy: code a model wrote, or a marketplace shipped, never
 * runs on the shared kernel or the standard wall. */
static const struct {
        const char *name;
        SbxClass floor;
} builtin_origins[] = {
        { "first-party", SBX_CLASS_TRUSTED },
        { "user", SBX_CLASS_TRUSTED },
        { "llm-generated", SBX_CLASS_UNTRUSTED },
        { "marketplace", SBX_CLASS_UNTRUSTED },
};

bool sbx_origin_name_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
                        return false;
        return true;
}

static SbxClass builtin_origin_floor(const char *origin) {
        for (size_t i = 0; i < ELEMENTSOF(builtin_origins); i++)
                if (streq(builtin_origins[i].name, origin))
                        return builtin_origins[i].floor;
        return _SBX_CLASS_INVALID;
}

/* "name:class" -> the class, if the entry names ORIGIN. */
static SbxClass origin_entry_floor(const char *entry, const char *origin) {
        const char *colon = strchr(entry, ':');

        if (!colon || (size_t) (colon - entry) != strlen(origin) || strncmp(entry, origin, strlen(origin)) != 0)
                return _SBX_CLASS_INVALID;
        return sbx_class_from_string(colon + 1);
}

SbxClass sbx_config_origin_floor(const SbxConfig *c, const char *origin) {
        SbxClass floor;

        if (!sbx_origin_name_is_valid(origin))
                return _SBX_CLASS_INVALID;
        floor = builtin_origin_floor(origin);
        for (char * const *e = c->origin_floors; e && *e; e++)
                floor = MAX(floor, origin_entry_floor(*e, origin));
        if (floor == _SBX_CLASS_INVALID)
                return floor;
        if (c->trusted_first_party_only && !streq(origin, "first-party"))
                floor = MAX(floor, SBX_CLASS_STANDARD);
        return floor;
}

static int origin_floors_validate(char * const *entries, const char *path, SbxError *error) {
        for (char * const *e = entries; e && *e; e++) {
                const char *colon = strchr(*e, ':');
                _cleanup_free_ char *name = colon ? strndup(*e, (size_t) (colon - *e)) : NULL;
                SbxClass cl = colon ? sbx_class_from_string(colon + 1) : _SBX_CLASS_INVALID;
                SbxClass builtin;

                if (!name || !sbx_origin_name_is_valid(name) || cl == _SBX_CLASS_INVALID)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Classes:Origins in %s has \"%.64s\"; write ORIGIN:CLASS, e.g. ci-bot:standard",
                                             path, *e);
                builtin = builtin_origin_floor(name);
                /* Floors only ever raise; a lower one would read as if it applied. */
                if (builtin != _SBX_CLASS_INVALID && cl < builtin)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Classes:Origins in %s lowers %s below %s; its built-in floor stays",
                                             path, name, sbx_class_to_string(builtin));
        }
        return 0;
}

/* Each waiting sandbox gets an equal share of Pool:MemoryMax, which must be
 * enough to run at all; a pool that could never refill is a mistake. */
static int pool_config_validate(const SbxConfig *c, const char *path, SbxError *error) {
        /* Each class waits with that many of each kind, with and without egress. */
        unsigned total = 2 * (c->pool_standard_size + c->pool_untrusted_size);

        if (total == 0)
                return 0;
        if (c->pool_standard_size > 64 || c->pool_untrusted_size > 64)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Pool:StandardSize and Pool:UntrustedSize are at most 64 in %s", path);
        if (c->pool_refill_per_second == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Pool:RefillPerSecond must be positive in %s while the pool is on "
                                     "(set the sizes to 0 to turn it off)", path);
        if (c->pool_pressure_max > 100)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Pool:PressureMax is a percentage (0-100) in %s", path);
        if (c->pool_memory_max / total < c->minimum.memory_max)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Pool:MemoryMax in %s leaves each of the %u pooled sandboxes less than "
                                     "the %" PRIu64 " bytes a worker needs at least",
                                     path, total, c->minimum.memory_max);
        return 0;
}

/* A cap of 0 would refuse every non-root listing; a total above
 * BUS_AUTHORIZATIONS_MAX_LIMIT could use up dbus-daemon's 128 awaited replies
 * that sandboxd's calls to systemd need too. */
#define BUS_AUTHORIZATIONS_MAX_LIMIT 96u
#define BUS_LOG_READS_MAX_LIMIT 64u
/* Each creation is an mkfs.ext4 running as root in sandboxd's cgroup. */
#define BUS_WORKSPACE_CREATIONS_MAX_LIMIT 64u
static int bus_config_validate(const SbxConfig *c, const char *path, SbxError *error) {
        if (c->bus_authorizations_per_user == 0 || c->bus_authorizations_per_user > c->bus_authorizations_max ||
            c->bus_authorizations_max > BUS_AUTHORIZATIONS_MAX_LIMIT)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Bus:AuthorizationsPerUser must be positive and at most Bus:AuthorizationsMax, "
                                     "which is at most %u, in %s", BUS_AUTHORIZATIONS_MAX_LIMIT, path);
        if (c->bus_log_reads_per_user == 0 || c->bus_log_reads_per_user > c->bus_log_reads_max ||
            c->bus_log_reads_max > BUS_LOG_READS_MAX_LIMIT)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Bus:LogReadsPerUser must be positive and at most Bus:LogReadsMax, "
                                     "which is at most %u, in %s", BUS_LOG_READS_MAX_LIMIT, path);
        if (c->bus_workspace_creations_per_user == 0 ||
            c->bus_workspace_creations_per_user > c->bus_workspace_creations_max ||
            c->bus_workspace_creations_max > BUS_WORKSPACE_CREATIONS_MAX_LIMIT)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Bus:WorkspaceCreationsPerUser must be positive and at most "
                                     "Bus:WorkspaceCreationsMax, which is at most %u, in %s",
                                     BUS_WORKSPACE_CREATIONS_MAX_LIMIT, path);
        if (c->bus_interactive_authorization_timeout_usec < USEC_PER_SEC ||
            c->bus_interactive_authorization_timeout_usec > 600 * USEC_PER_SEC)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Bus:InteractiveAuthorizationTimeoutSec must be between 1s and 10min in %s", path);
        return 0;
}

/* Every worker gets a disk cap: none of them may be off, and the default
 * must fit the bounds a spec is held to. */
static int disk_config_validate(const SbxConfig *c, const char *path, SbxError *error) {
        if (c->disk_default < SBX_DISK_MIN || c->disk_limit < SBX_DISK_MIN)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Defaults:DiskMax and Limits:DiskMax must be at least %" PRIu64
                                     " bytes in %s: every worker's disk is capped", SBX_DISK_MIN, path);
        if (c->disk_default > c->disk_limit)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Defaults:DiskMax exceeds Limits:DiskMax in %s", path);
        if (c->disk_limit > c->disk_total_max)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Limits:DiskMax exceeds Disk:TotalMax in %s: no worker could get it", path);
        return 0;
}

/* The gate holds each body whole: its caps bound the gate's memory. */
#define ENDPOINT_BODY_LIMIT (UINT64_C(256) << 20)

static int endpoints_config_validate(SbxConfig *c, const char *path, SbxError *error) {
        unsigned first, last;
        int n = 0;

        if (!c->endpoints_socket_group || !c->endpoints_socket_group[0] ||
            strspn(c->endpoints_socket_group, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
                    strlen(c->endpoints_socket_group))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Endpoints:SocketGroup in %s must be a group name", path);
        if (c->endpoints_max_request_bytes > ENDPOINT_BODY_LIMIT ||
            c->endpoints_max_response_bytes == 0 || c->endpoints_max_response_bytes > ENDPOINT_BODY_LIMIT)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Endpoints:MaxRequestBytes and MaxResponseBytes in %s must be at most 256M "
                                     "(and MaxResponseBytes positive)", path);
        c->endpoints_port_first = c->endpoints_port_last = 0;
        if (!c->endpoints_port_range || !c->endpoints_port_range[0])
                return 0;
        if (sscanf(c->endpoints_port_range, "%u-%u%n", &first, &last, &n) != 2 ||
            (size_t) n != strlen(c->endpoints_port_range) || first < 1024 || last > 65535 || first > last)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Endpoints:PortRange in %s is \"%.64s\"; give FIRST-LAST within 1024-65535",
                                     path, c->endpoints_port_range);
        c->endpoints_port_first = (uint16_t) first;
        c->endpoints_port_last = (uint16_t) last;
        return 0;
}

int sbx_config_load(SbxConfig *c, const char *path, SbxError *error) {
        dictionary *d;
        int r = 0;

        if (access(path, F_OK) < 0 && errno == ENOENT)
                return 0;
        d = iniparser_load(path);
        if (!d)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Failed to parse configuration file %s", path);

        for (int s = 0; r >= 0 && s < iniparser_getnsec(d); s++) {
                const char *section = iniparser_getsecname(d, s);
                int nkeys = iniparser_getsecnkeys(d, section);
                const char **keys;

                if (nkeys <= 0)
                        continue;
                keys = calloc((size_t) nkeys, sizeof(char *));
                if (!keys) {
                        r = -ENOMEM;
                        break;
                }
                iniparser_getseckeys(d, section, keys);
                for (int i = 0; r >= 0 && i < nkeys; i++) {
                        const ConfigKey *k = config_key_find(keys[i]);
                        const char *value = iniparser_getstring(d, keys[i], "");
                        if (!k)
                                r = sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                                  "Unknown key %s in configuration file %s", keys[i], path);
                        else
                                r = config_set(c, k, value, error);
                }
                free(keys);
        }
        iniparser_freedict(d);
        if (r < 0)
                return r;

        /* Defaults outside the operator's own bounds are a configuration error,
         * not something to clamp silently. */
        if (c->defaults.memory_max > c->maximum.memory_max || c->defaults.tasks_max > c->maximum.tasks_max ||
            c->defaults.cpu_quota_percent > c->maximum.cpu_quota_percent ||
            c->defaults.runtime_max_usec > c->maximum.runtime_max_usec ||
            c->defaults.idle_timeout_usec > c->maximum.idle_timeout_usec)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "A [Defaults] value in %s exceeds its [Limits] bound", path);
        {
                const char *bad = NULL;
                if (syscall_names_validate(c->syscall_allow, &bad) < 0)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Isolation:SystemCallAllow in %s names \"%s\", which is not a system call "
                                             "libseccomp knows on this architecture", path, bad);
        }
        if (c->max_workers == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Limits:MaxWorkers must be positive in %s", path);
        if (c->suspend_image_max == 0)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Limits:SuspendImageMax must be positive in %s", path);
        if (c->runsc_timer_slack_usec > USEC_PER_SEC)
                return sbx_error_set(error, -ERANGE, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "Isolation:RunscTimerSlackSec must be at most 1s in %s", path);
        r = pool_config_validate(c, path, error);
        if (r < 0)
                return r;
        r = bus_config_validate(c, path, error);
        if (r < 0)
                return r;
        r = disk_config_validate(c, path, error);
        if (r < 0)
                return r;
        /* The proxy reads it in its own mount namespace, where a relative
         * path means nothing; an empty value is the system trust store. */
        if (c->egress_broker_ca_file && !c->egress_broker_ca_file[0]) {
                free(c->egress_broker_ca_file);
                c->egress_broker_ca_file = NULL;
        }
        if (c->egress_broker_ca_file && c->egress_broker_ca_file[0] != '/')
                return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Egress:BrokerCAFile in %s is \"%.128s\"; give an absolute path", path,
                                     c->egress_broker_ca_file);
        r = endpoints_config_validate(c, path, error);
        if (r < 0)
                return r;
        return origin_floors_validate(c->origin_floors, path, error);
}

int syscall_names_validate(char * const *names, const char **ret_bad) {
        for (char * const *n = names; n && *n; n++)
                if (seccomp_syscall_resolve_name(*n) == __NR_SCMP_ERROR) {
                        if (ret_bad)
                                *ret_bad = *n;
                        return -EINVAL;
                }
        return 0;
}
