/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "errors.h"
#include "spec-bus.h"
#include "spec-service.h"
#include "workspace-name.h"

typedef int (*SpecReader)(WorkerSpec *s, sd_bus_message *m, SbxError *error);

static int read_strv(sd_bus_message *m, char ***ret) {
        char **l = calloc(1, sizeof(char *));
        size_t n = 0;
        const char *s;
        int r;

        if (!l)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                goto fail;
        while ((r = sd_bus_message_read_basic(m, 's', &s)) > 0) {
                char **nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl) {
                        r = -ENOMEM;
                        goto fail;
                }
                l = nl;
                l[n] = strdup(s);
                if (!l[n]) {
                        r = -ENOMEM;
                        goto fail;
                }
                l[++n] = NULL;
        }
        if (r < 0)
                goto fail;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                goto fail;
        *ret = l;
        return 0;
fail:
        strv_free(l);
        return r;
}

static int read_argv(WorkerSpec *s, sd_bus_message *m, SbxError *e) {
        s->set |= SPEC_HAS_ARGV;
        return read_strv(m, &s->argv);
}

static int read_environment(WorkerSpec *s, sd_bus_message *m, SbxError *e) {
        s->set |= SPEC_HAS_ENVIRONMENT;
        return read_strv(m, &s->environment);
}

static int read_egress_allow(WorkerSpec *s, sd_bus_message *m, SbxError *e) {
        s->set |= SPEC_HAS_EGRESS_ALLOW;
        return read_strv(m, &s->egress_allow);
}

static int read_class(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        const char *v;
        int r = sd_bus_message_read_basic(m, 's', &v);
        if (r < 0)
                return r;
        s->class = sbx_class_from_string(v);
        if (s->class < 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_CLASS,
                                     "Unknown isolation class \"%.64s\"; use trusted, standard, devcontainer, untrusted, hostile or wasm", v);
        s->set |= SPEC_HAS_CLASS;
        return 0;
}

static int read_origin(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        const char *v;
        int r = sd_bus_message_read_basic(m, 's', &v);
        if (r < 0)
                return r;
        if (!sbx_origin_name_is_valid(v))
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_ORIGIN,
                                     "Origin \"%.64s\" is not an origin name: use 1-64 characters of [a-z0-9-]", v);
        s->origin = strdup(v);
        if (!s->origin)
                return -ENOMEM;
        s->set |= SPEC_HAS_ORIGIN;
        return 0;
}

static int read_workspace(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        const char *v;
        int r = sd_bus_message_read_basic(m, 's', &v);
        if (r < 0)
                return r;
        s->workspace = strndup(v, SBX_WORKSPACE_NAME_MAX + 1);
        if (!s->workspace)
                return -ENOMEM;
        s->set |= SPEC_HAS_WORKSPACE;
        return 0;
}

/* A string key with one of two values; *ret_on tells whether it is the second. */
static int read_either(sd_bus_message *m, const char *key, const char *off, const char *on, const char *error_name,
                       bool *ret_on, SbxError *error) {
        const char *v;
        int r = sd_bus_message_read_basic(m, 's', &v);
        if (r < 0)
                return r;
        if (!streq(v, off) && !streq(v, on))
                return sbx_error_set(error, -EINVAL, error_name, "%s \"%.64s\" is invalid; use %s or %s", key, v, off,
                                     on);
        *ret_on = streq(v, on);
        return 0;
}

static int read_egress_mode(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        int r = read_either(m, "EgressMode", "enforce", "report", SBX_ERROR_INVALID_EGRESS, &s->egress_report_only,
                            error);
        if (r >= 0)
                s->set |= SPEC_HAS_EGRESS_MODE;
        return r;
}

typedef int (*NamedItemReader)(WorkerSpec *s, const char *name, sd_bus_message *m, SbxError *error);

/* An array of ARRAY_CONTENTS, structs of ITEM_CONTENTS that begin with a
 * name: READ takes each after its name. */
static int read_named_items(WorkerSpec *s, sd_bus_message *m, const char *array_contents, const char *item_contents,
                            NamedItemReader read, SbxError *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', array_contents);
        if (r < 0)
                return r;
        for (;;) {
                const char *name;

                r = sd_bus_message_enter_container(m, 'r', item_contents);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, 's', &name);
                if (r < 0)
                        return r;
                r = read(s, name, m, error);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(m);
}

static int read_credential(WorkerSpec *s, const char *name, sd_bus_message *m, SbxError *error) {
        const void *data;
        size_t size;
        SbxCredential *n;
        int r;

        r = sd_bus_message_read_array(m, 'y', &data, &size);
        if (r < 0)
                return r;
        if (s->n_credentials >= SBX_CREDENTIALS_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_CREDENTIAL,
                                     "More than %d credentials given", SBX_CREDENTIALS_MAX);
        n = realloc(s->credentials, (s->n_credentials + 1) * sizeof(SbxCredential));
        if (!n)
                return -ENOMEM;
        s->credentials = n;
        n = &s->credentials[s->n_credentials];
        *n = (SbxCredential) { .name = strdup(name), .data = malloc(size ?: 1), .size = size };
        s->n_credentials++;
        if (!n->name || !n->data)
                return -ENOMEM;
        memcpy(n->data, data, size);
        return 0;
}

static int read_credentials(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        s->set |= SPEC_HAS_CREDENTIALS;
        return read_named_items(s, m, "(say)", "say", read_credential, error);
}

static int read_service_string(sd_bus_message *m, char **field) {
        const char *v;
        int r = sd_bus_message_read_basic(m, 's', &v);
        if (r < 0)
                return r;
        *field = strdup(v);
        return *field ? 0 : -ENOMEM;
}

static int read_service_credential(sd_bus_message *m, SbxService *svc) {
        const void *data;
        size_t size;
        int r = sd_bus_message_read_array(m, 'y', &data, &size);
        if (r < 0)
                return r;
        svc->credential = malloc(size ?: 1);
        if (!svc->credential)
                return -ENOMEM;
        memcpy(svc->credential, data, size);
        svc->credential_size = size;
        return 0;
}

static const struct {
        const char *key;
        const char *signature;
        SbxServiceField flag;
} service_keys[] = {
        { "Url", "s", SERVICE_HAS_URL },
        { "Credential", "ay", SERVICE_HAS_CREDENTIAL },
        { "Header", "s", SERVICE_HAS_HEADER },
        { "Methods", "as", SERVICE_HAS_METHODS },
        { "Paths", "as", SERVICE_HAS_PATHS },
        { "MaxRequestBytes", "t", SERVICE_HAS_MAX_REQUEST },
        { "MaxResponseBytes", "t", SERVICE_HAS_MAX_RESPONSE },
        { "RateBps", "t", SERVICE_HAS_RATE },
};

static int read_service_value(SbxService *svc, SbxServiceField flag, sd_bus_message *m) {
        switch (flag) {
        case SERVICE_HAS_URL:
                return read_service_string(m, &svc->url);
        case SERVICE_HAS_CREDENTIAL:
                return read_service_credential(m, svc);
        case SERVICE_HAS_HEADER:
                return read_service_string(m, &svc->header);
        case SERVICE_HAS_METHODS:
                return read_strv(m, &svc->methods);
        case SERVICE_HAS_PATHS:
                return read_strv(m, &svc->paths);
        case SERVICE_HAS_MAX_REQUEST:
                return sd_bus_message_read_basic(m, 't', &svc->max_request_bytes);
        case SERVICE_HAS_MAX_RESPONSE:
                return sd_bus_message_read_basic(m, 't', &svc->max_response_bytes);
        case SERVICE_HAS_RATE:
                return sd_bus_message_read_basic(m, 't', &svc->rate_bps);
        }
        return -EINVAL;
}

/* One service's a{sv}: its keys are checked like the spec's own. */
static int read_service_settings(SbxService *svc, sd_bus_message *m, SbxError *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *key, *contents;
                size_t i;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, 's', &key);
                if (r < 0)
                        return r;
                for (i = 0; i < ELEMENTSOF(service_keys); i++)
                        if (streq(service_keys[i].key, key))
                                break;
                if (i == ELEMENTSOF(service_keys))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                             "Service %s: unknown key \"%.64s\"; use Url, Credential, Header, Methods, "
                                             "Paths, MaxRequestBytes, MaxResponseBytes or RateBps", svc->name, key);
                if (svc->set & service_keys[i].flag)
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SERVICE,
                                             "Service %s: key %s is given more than once", svc->name, key);
                svc->set |= service_keys[i].flag;
                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return r;
                if (!streq(contents, service_keys[i].signature))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_WRONG_TYPE,
                                             "Service %s: key %s must be of type %s, not %s",
                                             svc->name, key, service_keys[i].signature, contents);
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        return r;
                r = read_service_value(svc, service_keys[i].flag, m);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(m);
}

static int read_service(WorkerSpec *s, const char *name, sd_bus_message *m, SbxError *error) {
        SbxService *n;

        if (s->n_services >= SBX_SERVICES_MAX)
                return sbx_error_set(error, -E2BIG, SBX_ERROR_INVALID_SERVICE,
                                     "More than %d services given", SBX_SERVICES_MAX);
        n = realloc(s->services, (s->n_services + 1) * sizeof(SbxService));
        if (!n)
                return -ENOMEM;
        s->services = n;
        n = &s->services[s->n_services++];
        *n = (SbxService) { .name = strdup(name) };
        if (!n->name)
                return -ENOMEM;
        return read_service_settings(n, m, error);
}

static int read_services(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        s->set |= SPEC_HAS_SERVICES;
        return read_named_items(s, m, "(sa{sv})", "sa{sv}", read_service, error);
}

#define DEFINE_READ_U64(fn, field, flag)                                              \
        static int fn(WorkerSpec *s, sd_bus_message *m, SbxError *e) {                \
                uint64_t v;                                                           \
                int r = sd_bus_message_read_basic(m, 't', &v);                        \
                if (r < 0)                                                            \
                        return r;                                                     \
                s->field = v;                                                         \
                s->set |= flag;                                                       \
                return 0;                                                             \
        }

DEFINE_READ_U64(read_memory_max, limits.memory_max, SPEC_HAS_MEMORY_MAX)
DEFINE_READ_U64(read_tasks_max, limits.tasks_max, SPEC_HAS_TASKS_MAX)
DEFINE_READ_U64(read_runtime_max, limits.runtime_max_usec, SPEC_HAS_RUNTIME_MAX)
DEFINE_READ_U64(read_idle_timeout, limits.idle_timeout_usec, SPEC_HAS_IDLE_TIMEOUT)
DEFINE_READ_U64(read_disk_max, disk_max, SPEC_HAS_DISK_MAX)
DEFINE_READ_U64(read_egress_rate, egress_rate_bps, SPEC_HAS_EGRESS_RATE)

static int read_cpu_quota(WorkerSpec *s, sd_bus_message *m, SbxError *e) {
        uint32_t v;
        int r = sd_bus_message_read_basic(m, 'u', &v);
        if (r < 0)
                return r;
        s->limits.cpu_quota_percent = v;
        s->set |= SPEC_HAS_CPU_QUOTA;
        return 0;
}

static int read_idle_action(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        int r = read_either(m, "IdleAction", "stop", "suspend", SBX_ERROR_INVALID_SPEC, &s->idle_suspend, error);
        if (r >= 0)
                s->set |= SPEC_HAS_IDLE_ACTION;
        return r;
}

static int read_endpoint(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        s->set |= SPEC_HAS_ENDPOINT;
        return sbx_endpoint_from_bus(&s->endpoint, m, error);
}

static int read_no_exec(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        int b, r = sd_bus_message_read_basic(m, 'b', &b);
        if (r < 0)
                return r;
        s->no_exec = b;
        s->set |= SPEC_HAS_NO_EXEC;
        return 0;
}

static const struct {
        const char *key;
        const char *signature;
        SpecReader read;
} spec_keys[] = {
        { "Argv", "as", read_argv },
        { "Environment", "as", read_environment },
        { "Class", "s", read_class },
        { "Origin", "s", read_origin },
        { "Credentials", "a(say)", read_credentials },
        { "MemoryMax", "t", read_memory_max },
        { "TasksMax", "t", read_tasks_max },
        { "CPUQuotaPercent", "u", read_cpu_quota },
        { "RuntimeMaxUSec", "t", read_runtime_max },
        { "IdleTimeoutUSec", "t", read_idle_timeout },
        { "DiskMax", "t", read_disk_max },
        { "EgressAllow", "as", read_egress_allow },
        { "EgressRateBps", "t", read_egress_rate },
        { "EgressMode", "s", read_egress_mode },
        { "Services", "a(sa{sv})", read_services },
        { "IdleAction", "s", read_idle_action },
        { "Workspace", "s", read_workspace },
        { "Endpoint", "a{sv}", read_endpoint },
        { "NoExec", "b", read_no_exec },
};

int worker_spec_from_bus(WorkerSpec *s, sd_bus_message *m, SbxError *error) {
        uint64_t seen = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "The spec must be of type a{sv}");
        for (;;) {
                const char *key, *contents;
                size_t i;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed spec entry");
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, 's', &key);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed spec key");
                for (i = 0; i < ELEMENTSOF(spec_keys); i++)
                        if (streq(spec_keys[i].key, key))
                                break;
                if (i == ELEMENTSOF(spec_keys))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_KEY,
                                             "Unknown spec key \"%.64s\"; see org.sandboxd1(5) for the supported keys", key);
                if (seen & (UINT64_C(1) << i))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "Spec key %s is given more than once", key);
                seen |= UINT64_C(1) << i;

                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed value for %s", key);
                if (!streq(contents, spec_keys[i].signature))
                        return sbx_error_set(error, -EINVAL, SBX_ERROR_WRONG_TYPE,
                                             "Spec key %s must be of type %s, not %s",
                                             key, spec_keys[i].signature, contents);
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed value for %s", key);
                r = spec_keys[i].read(s, m, error);
                if (r < 0) {
                        if (error && !error->name)
                                sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed value for %s", key);
                        return r;
                }
                r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed value for %s", key);
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return sbx_error_set(error, r, SBX_ERROR_INVALID_SPEC, "Malformed spec");
        return 0;
}
