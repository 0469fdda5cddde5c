/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "sandboxctl-args.h"
#include "sandboxctl-spec.h"

void cli_spec_done(CliSpec *spec) {
        if (!spec)
                return;
        strv_free(spec->argv);
        strv_free(spec->environment);
        strv_free(spec->egress_allow);
        free(spec->class);
        free(spec->origin);
        free(spec->workspace);
        free(spec->egress_mode);
        free(spec->idle_action);
        for (size_t i = 0; i < spec->n_credentials; i++) {
                free(spec->credentials[i].name);
                erase_and_free(spec->credentials[i].data, spec->credentials[i].size);
        }
        free(spec->credentials);
        for (size_t i = 0; i < spec->n_services; i++) {
                CliService *svc = &spec->services[i];
                free(svc->name);
                free(svc->url);
                erase_and_free(svc->credential, svc->credential_size);
                free(svc->header);
                strv_free(svc->methods);
                strv_free(svc->paths);
        }
        free(spec->services);
        cli_publish_done(&spec->publish);
        *spec = (CliSpec) {};
}

int credential_read_file(const char *path, uint8_t **ret_data, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        uint8_t *data = NULL;
        size_t size = 0, allocated = 0;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > SPEC_CREDENTIAL_SIZE_MAX)
                return -EFBIG;

        for (;;) {
                ssize_t n;

                if (size == allocated) {
                        /* Grow by copying rather than realloc(), so no stale copy of the
                         * secret stays behind in freed memory. */
                        size_t bigger = allocated ? allocated * 2 : 4096;
                        uint8_t *p;

                        if (allocated >= SPEC_CREDENTIAL_SIZE_MAX + 1) {
                                erase_and_free(data, allocated);
                                return -EFBIG;
                        }
                        bigger = MIN(bigger, (size_t) SPEC_CREDENTIAL_SIZE_MAX + 1);
                        p = malloc(bigger);
                        if (!p) {
                                erase_and_free(data, allocated);
                                return -ENOMEM;
                        }
                        if (data)
                                memcpy(p, data, size);
                        erase_and_free(data, allocated);
                        data = p;
                        allocated = bigger;
                }
                n = read(fd, data + size, allocated - size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int saved = -errno;
                        erase_and_free(data, allocated);
                        return saved;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        if (size > SPEC_CREDENTIAL_SIZE_MAX) {
                erase_and_free(data, allocated);
                return -EFBIG;
        }
        /* Callers wipe `size` bytes; clear the slack now so that is enough. */
        explicit_bzero(data + size, allocated - size);
        *ret_data = data;
        *ret_size = size;
        return 0;
}

static int set_string(char **field, const char *value) {
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

static int spec_add_credential(CliSpec *spec, const char *arg, SbxError *error) {
        const char *colon = strchr(arg, ':');
        SpecCredential *grown, c = {};
        int r;

        if (!colon || colon == arg || !colon[1])
                return sbx_error_set(error, EINVAL, NULL,
                                     "--credential expects NAME:PATH, got '%s'", arg);
        c.name = strndup(arg, (size_t) (colon - arg));
        if (!c.name)
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        r = credential_read_file(colon + 1, &c.data, &c.size);
        if (r < 0) {
                free(c.name);
                return sbx_error_set(error, r == -EINVAL ? -EIO : r, NULL,
                                     "Failed to read credential '%.*s' from %s: %s",
                                     (int) (colon - arg), arg, colon + 1, strerror(-r));
        }
        grown = realloc(spec->credentials, (spec->n_credentials + 1) * sizeof(SpecCredential));
        if (!grown) {
                free(c.name);
                erase_and_free(c.data, c.size);
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        }
        spec->credentials = grown;
        spec->credentials[spec->n_credentials++] = c;
        return 0;
}

/* The service NAME names, created on first mention so the options can come
 * in any order; cli_spec_parse_args() checks that each got its URL. */
static CliService *spec_service(CliSpec *spec, const char *name, size_t len) {
        CliService *grown;

        for (size_t i = 0; i < spec->n_services; i++)
                if (strlen(spec->services[i].name) == len && strncmp(spec->services[i].name, name, len) == 0)
                        return &spec->services[i];
        grown = realloc(spec->services, (spec->n_services + 1) * sizeof(CliService));
        if (!grown)
                return NULL;
        spec->services = grown;
        grown = &spec->services[spec->n_services];
        *grown = (CliService) { .name = strndup(name, len) };
        if (!grown->name)
                return NULL;
        spec->n_services++;
        return grown;
}

/* Splits "NAME<sep>VALUE" for --service-* options; NAME has no ':' or '='
 * (sandboxd allows [A-Za-z0-9_]), so the first separator ends it. */
static int service_option(CliSpec *spec, const char *option, const char *arg, char sep, CliService **ret_svc,
                          const char **ret_value, SbxError *error) {
        const char *p = strchr(arg, sep);

        if (!p || p == arg || !p[1])
                return sbx_error_set(error, EINVAL, NULL, "--%s expects NAME%cVALUE, got '%s'", option, sep, arg);
        *ret_svc = spec_service(spec, arg, (size_t) (p - arg));
        if (!*ret_svc)
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        *ret_value = p + 1;
        return 0;
}

/* Methods as "GET,POST": one word each, upper-cased as HTTP spells them. */
static int service_add_methods(CliService *svc, const char *list) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                for (char *c = w; *c; c++)
                        *c = (char) toupper((unsigned char) *c);
                if (strv_extend(&svc->methods, w) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A key file usually ends with a newline the editor or `echo` added; it is
 * not part of the key, and sandboxd refuses a header value with one. */
static int service_read_credential(CliService *svc, const char *path) {
        int r;

        erase_and_free(svc->credential, svc->credential_size);
        svc->credential = NULL;
        svc->credential_size = 0;
        r = credential_read_file(path, &svc->credential, &svc->credential_size);
        if (r < 0)
                return r;
        if (svc->credential_size > 0 && svc->credential[svc->credential_size - 1] == '\n')
                svc->credential[--svc->credential_size] = 0;
        if (svc->credential_size > 0 && svc->credential[svc->credential_size - 1] == '\r')
                svc->credential[--svc->credential_size] = 0;
        return 0;
}

static int spec_apply_service_option(CliSpec *spec, int option, const char *arg, SbxError *error);

enum {
        ARG_CLASS = 0x100,
        ARG_ORIGIN,
        ARG_MEMORY,
        ARG_TASKS,
        ARG_CPU,
        ARG_RUNTIME,
        ARG_IDLE,
        ARG_SETENV,
        ARG_CREDENTIAL,
        ARG_DISK,
        ARG_ALLOW,
        ARG_EGRESS_RATE,
        ARG_EGRESS_MODE,
        ARG_IDLE_ACTION,
        ARG_SERVICE,
        ARG_SERVICE_CREDENTIAL,
        ARG_SERVICE_HEADER,
        ARG_SERVICE_METHOD,
        ARG_SERVICE_PATH,
        ARG_SERVICE_MAX_REQUEST,
        ARG_SERVICE_MAX_RESPONSE,
        ARG_SERVICE_RATE,
        ARG_WORKSPACE,
        ARG_PUBLISH,                    /* in CliPublishOption's order */
        ARG_PUBLISH_TOKEN_FILE,
        ARG_PUBLISH_MAX_REQUEST,
        ARG_PUBLISH_MAX_RESPONSE,
        ARG_PUBLISH_TIMEOUT,
        ARG_PUBLISH_MAX_CONCURRENT,
        ARG_PUBLISH_PUBLIC,
        ARG_PUBLISH_NAME,
};

static const struct option spec_options[] = {
        { "help",        no_argument,       NULL, 'h' },
        { "class",       required_argument, NULL, ARG_CLASS },
        { "origin",      required_argument, NULL, ARG_ORIGIN },
        { "memory",      required_argument, NULL, ARG_MEMORY },
        { "tasks",       required_argument, NULL, ARG_TASKS },
        { "cpu",         required_argument, NULL, ARG_CPU },
        { "runtime",     required_argument, NULL, ARG_RUNTIME },
        { "idle",        required_argument, NULL, ARG_IDLE },
        { "setenv",      required_argument, NULL, ARG_SETENV },
        { "credential",  required_argument, NULL, ARG_CREDENTIAL },
        { "disk",        required_argument, NULL, ARG_DISK },
        { "allow",       required_argument, NULL, ARG_ALLOW },
        { "egress-rate", required_argument, NULL, ARG_EGRESS_RATE },
        { "egress-mode", required_argument, NULL, ARG_EGRESS_MODE },
        { "idle-action", required_argument, NULL, ARG_IDLE_ACTION },
        { "service",              required_argument, NULL, ARG_SERVICE },
        { "service-credential",   required_argument, NULL, ARG_SERVICE_CREDENTIAL },
        { "service-header",       required_argument, NULL, ARG_SERVICE_HEADER },
        { "service-method",       required_argument, NULL, ARG_SERVICE_METHOD },
        { "service-path",         required_argument, NULL, ARG_SERVICE_PATH },
        { "service-max-request",  required_argument, NULL, ARG_SERVICE_MAX_REQUEST },
        { "service-max-response", required_argument, NULL, ARG_SERVICE_MAX_RESPONSE },
        { "service-rate",         required_argument, NULL, ARG_SERVICE_RATE },
        { "workspace",   required_argument, NULL, ARG_WORKSPACE },
        { "publish",                required_argument, NULL, ARG_PUBLISH },
        { "publish-token-file",     required_argument, NULL, ARG_PUBLISH_TOKEN_FILE },
        { "publish-max-request",    required_argument, NULL, ARG_PUBLISH_MAX_REQUEST },
        { "publish-max-response",   required_argument, NULL, ARG_PUBLISH_MAX_RESPONSE },
        { "publish-timeout",        required_argument, NULL, ARG_PUBLISH_TIMEOUT },
        { "publish-max-concurrent", required_argument, NULL, ARG_PUBLISH_MAX_CONCURRENT },
        { "publish-public",         no_argument,       NULL, ARG_PUBLISH_PUBLIC },
        { "publish-name",           required_argument, NULL, ARG_PUBLISH_NAME },
        SANDBOXCTL_GLOBAL_OPTIONS,
        {}
};

bool cli_spec_option_is_flag(const char *name) {
        for (const struct option *o = spec_options; o->name; o++)
                if (streq(o->name, name))
                        return o->has_arg == no_argument;
        return true;
}

static int set_size_option(SpecU64 *field, const char *option, const char *arg, SbxError *error) {
        int r = parse_size(arg, &field->value);
        if (r < 0)
                return sbx_error_set(error, EINVAL, NULL, "--%s: %s size '%s' (use bytes or a K, M, G, T suffix)",
                                     option, r == -ERANGE ? "too large a" : "invalid", arg);
        field->set = true;
        return 0;
}

static int set_duration_option(SpecU64 *field, const char *option, const char *arg, SbxError *error) {
        int r = parse_duration_usec(arg, &field->value);
        if (r < 0)
                return sbx_error_set(error, EINVAL, NULL,
                                     "--%s: %s duration '%s' (use seconds or a suffix: ms, s, min, h, d)",
                                     option, r == -ERANGE ? "too long a" : "invalid", arg);
        field->set = true;
        return 0;
}

static int set_cpu_option(SpecU64 *field, const char *arg, SbxError *error) {
        _cleanup_free_ char *digits = strdup(arg);
        size_t n;

        if (!digits)
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        n = strlen(digits);
        if (n > 0 && digits[n - 1] == '%')
                digits[n - 1] = 0;
        if (parse_uint64(digits, &field->value) < 0 || field->value > UINT32_MAX)
                return sbx_error_set(error, EINVAL, NULL, "--cpu: invalid percentage '%s'", arg);
        field->set = true;
        return 0;
}

static int spec_apply_option(CliSpec *spec, int option, const char *arg, SbxError *error) {
        int r;

        switch (option) {
        case ARG_CLASS:
                r = set_string(&spec->class, arg);
                break;
        case ARG_ORIGIN:
                r = set_string(&spec->origin, arg);
                break;
        case ARG_MEMORY:
                return set_size_option(&spec->memory_max, "memory", arg, error);
        case ARG_TASKS:
                if (parse_uint64(arg, &spec->tasks_max.value) < 0)
                        return sbx_error_set(error, EINVAL, NULL, "--tasks: invalid number '%s'", arg);
                spec->tasks_max.set = true;
                return 0;
        case ARG_CPU:
                return set_cpu_option(&spec->cpu_quota_percent, arg, error);
        case ARG_RUNTIME:
                return set_duration_option(&spec->runtime_max_usec, "runtime", arg, error);
        case ARG_IDLE:
                return set_duration_option(&spec->idle_timeout_usec, "idle", arg, error);
        case ARG_SETENV:
                if (!strchr(arg, '=') || arg[0] == '=')
                        return sbx_error_set(error, EINVAL, NULL, "--setenv expects KEY=VALUE, got '%s'", arg);
                r = strv_extend(&spec->environment, arg);
                break;
        case ARG_CREDENTIAL:
                return spec_add_credential(spec, arg, error);
        case ARG_DISK:
                return set_size_option(&spec->disk_max, "disk", arg, error);
        case ARG_WORKSPACE:
                r = set_string(&spec->workspace, arg);
                break;
        case ARG_ALLOW:
                if (isempty(arg))
                        return sbx_error_set(error, EINVAL, NULL, "--allow expects a host pattern");
                r = strv_extend(&spec->egress_allow, arg);
                break;
        case ARG_EGRESS_RATE:
                return set_size_option(&spec->egress_rate_bps, "egress-rate", arg, error);
        case ARG_EGRESS_MODE:
                if (!streq(arg, "enforce") && !streq(arg, "report"))
                        return sbx_error_set(error, EINVAL, NULL,
                                             "--egress-mode expects 'enforce' or 'report', got '%s'", arg);
                r = set_string(&spec->egress_mode, arg);
                break;
        case ARG_IDLE_ACTION:
                if (!streq(arg, "stop") && !streq(arg, "suspend"))
                        return sbx_error_set(error, EINVAL, NULL,
                                             "--idle-action expects 'stop' or 'suspend', got '%s'", arg);
                r = set_string(&spec->idle_action, arg);
                break;
        case ARG_SERVICE ... ARG_SERVICE_RATE:
                return spec_apply_service_option(spec, option, arg, error);
        case ARG_PUBLISH ... ARG_PUBLISH_NAME:
                return cli_publish_apply(&spec->publish, (CliPublishOption) (option - ARG_PUBLISH), arg, error);
        default:
                return sbx_error_set(error, EINVAL, NULL, "Unhandled option");
        }
        if (r < 0)
                return sbx_error_set(error, r, NULL, "Out of memory");
        return 0;
}

static int spec_apply_service_option(CliSpec *spec, int option, const char *arg, SbxError *error) {
        static const char * const names[] = {
                [ARG_SERVICE - ARG_SERVICE] = "service",
                [ARG_SERVICE_CREDENTIAL - ARG_SERVICE] = "service-credential",
                [ARG_SERVICE_HEADER - ARG_SERVICE] = "service-header",
                [ARG_SERVICE_METHOD - ARG_SERVICE] = "service-method",
                [ARG_SERVICE_PATH - ARG_SERVICE] = "service-path",
                [ARG_SERVICE_MAX_REQUEST - ARG_SERVICE] = "service-max-request",
                [ARG_SERVICE_MAX_RESPONSE - ARG_SERVICE] = "service-max-response",
                [ARG_SERVICE_RATE - ARG_SERVICE] = "service-rate",
        };
        const char *name = names[option - ARG_SERVICE], *value = NULL;
        CliService *svc = NULL;
        int r;

        r = service_option(spec, name, arg, option == ARG_SERVICE ? '=' : ':', &svc, &value, error);
        if (r < 0)
                return r;
        switch (option) {
        case ARG_SERVICE:
                if (svc->url)
                        return sbx_error_set(error, EINVAL, NULL, "--service %s is given twice", svc->name);
                r = set_string(&svc->url, value);
                break;
        case ARG_SERVICE_CREDENTIAL:
                r = service_read_credential(svc, value);
                if (r < 0)
                        return sbx_error_set(error, r == -EINVAL ? -EIO : r, NULL,
                                             "Failed to read the credential of service %s from %s: %s",
                                             svc->name, value, strerror(-r));
                return 0;
        case ARG_SERVICE_HEADER:
                r = set_string(&svc->header, value);
                break;
        case ARG_SERVICE_METHOD:
                r = service_add_methods(svc, value);
                break;
        case ARG_SERVICE_PATH:
                r = strv_extend(&svc->paths, value);
                break;
        case ARG_SERVICE_MAX_REQUEST:
                return set_size_option(&svc->max_request_bytes, name, value, error);
        case ARG_SERVICE_MAX_RESPONSE:
                return set_size_option(&svc->max_response_bytes, name, value, error);
        case ARG_SERVICE_RATE:
                return set_size_option(&svc->rate_bps, name, value, error);
        default:
                return sbx_error_set(error, EINVAL, NULL, "Unhandled option");
        }
        if (r < 0)
                return sbx_error_set(error, r, NULL, "Out of memory");
        return 0;
}

int cli_spec_parse_args(CliSpec *spec, int argc, char *argv[], CliGlobalOption global, SbxError *error) {
        int c, r;

        /* '+': the command's own options (sh -c ...) are not ours even without "--";
         * ':': report problems ourselves, so tests and callers get one clear message. */
        optind = 0;
        while ((c = getopt_long(argc, argv, "+:h", spec_options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        return 1;
                case ':':
                        return sbx_error_set(error, EINVAL, NULL, "Option '%s' requires an argument",
                                             argv[optind - 1]);
                case '?':
                unknown:
                        return sbx_error_set(error, EINVAL, NULL, "Unknown option '%s'", argv[optind - 1]);
                default:
                        if (is_global_option(c)) {
                                if (!global)
                                        goto unknown;
                                if (global(c) > 0)
                                        return 2;
                                continue;
                        }
                        r = spec_apply_option(spec, c, optarg, error);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < spec->n_services; i++)
                if (!spec->services[i].url)
                        return sbx_error_set(error, EINVAL, NULL,
                                             "Service %s has options but no --service %s=https://HOST[/BASE]",
                                             spec->services[i].name, spec->services[i].name);
        r = cli_publish_check(&spec->publish, error);
        if (r < 0)
                return r;
        if (optind >= argc)
                return sbx_error_set(error, EINVAL, NULL, "Missing command: %s [OPTIONS] -- COMMAND [ARGUMENTS...]",
                                     argv[0]);
        spec->argv = strv_copy(argv + optind);
        if (!spec->argv)
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        return 0;
}

static int append_strv(sd_bus_message *m, const char *key, char **l) {
        int r;

        if (!l)
                return 0;
        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", key);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', "as");
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(m, l);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int append_string(sd_bus_message *m, const char *key, const char *value) {
        if (!value)
                return 0;
        return sd_bus_message_append(m, "{sv}", key, "s", value);
}

static int append_u64(sd_bus_message *m, const char *key, SpecU64 field) {
        if (!field.set)
                return 0;
        return sd_bus_message_append(m, "{sv}", key, "t", field.value);
}

static int append_credentials(sd_bus_message *m, const CliSpec *spec) {
        int r;

        if (spec->n_credentials == 0)
                return 0;
        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", "Credentials");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', "a(say)");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(say)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < spec->n_credentials; i++) {
                const SpecCredential *c = &spec->credentials[i];

                r = sd_bus_message_open_container(m, 'r', "say");
                if (r < 0)
                        return r;
                r = sd_bus_message_append(m, "s", c->name);
                if (r < 0)
                        return r;
                r = sd_bus_message_append_array(m, 'y', c->data, c->size);
                if (r < 0)
                        return r;
                r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

#define CHECK(expr) do { r = (expr); if (r < 0) return r; } while (0)

static int append_service(sd_bus_message *m, const CliService *svc) {
        int r;

        CHECK(sd_bus_message_open_container(m, 'r', "sa{sv}"));
        CHECK(sd_bus_message_append(m, "s", svc->name));
        CHECK(sd_bus_message_open_container(m, 'a', "{sv}"));
        CHECK(append_string(m, "Url", svc->url));
        if (svc->credential) {
                CHECK(sd_bus_message_open_container(m, 'e', "sv"));
                CHECK(sd_bus_message_append(m, "s", "Credential"));
                CHECK(sd_bus_message_open_container(m, 'v', "ay"));
                CHECK(sd_bus_message_append_array(m, 'y', svc->credential, svc->credential_size));
                CHECK(sd_bus_message_close_container(m));
                CHECK(sd_bus_message_close_container(m));
        }
        CHECK(append_string(m, "Header", svc->header));
        CHECK(append_strv(m, "Methods", svc->methods));
        CHECK(append_strv(m, "Paths", svc->paths));
        CHECK(append_u64(m, "MaxRequestBytes", svc->max_request_bytes));
        CHECK(append_u64(m, "MaxResponseBytes", svc->max_response_bytes));
        CHECK(append_u64(m, "RateBps", svc->rate_bps));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

static int append_services(sd_bus_message *m, const CliSpec *spec) {
        int r;

        if (spec->n_services == 0)
                return 0;
        CHECK(sd_bus_message_open_container(m, 'e', "sv"));
        CHECK(sd_bus_message_append(m, "s", "Services"));
        CHECK(sd_bus_message_open_container(m, 'v', "a(sa{sv})"));
        CHECK(sd_bus_message_open_container(m, 'a', "(sa{sv})"));
        for (size_t i = 0; i < spec->n_services; i++)
                CHECK(append_service(m, &spec->services[i]));
        CHECK(sd_bus_message_close_container(m));
        CHECK(sd_bus_message_close_container(m));
        return sd_bus_message_close_container(m);
}

int cli_spec_append(sd_bus_message *m, const CliSpec *spec) {
        int r;

        if (!m || !spec)
                return -EINVAL;
        /* The spec may carry secrets (credentials, environment): have sd-bus
         * wipe the message's memory when it is freed. */
        r = sd_bus_message_sensitive(m);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        if ((r = append_strv(m, "Argv", spec->argv)) < 0 ||
            (r = append_strv(m, "Environment", spec->environment)) < 0 ||
            (r = append_string(m, "Class", spec->class)) < 0 ||
            (r = append_string(m, "Origin", spec->origin)) < 0 ||
            (r = append_credentials(m, spec)) < 0 ||
            (r = append_u64(m, "MemoryMax", spec->memory_max)) < 0 ||
            (r = append_u64(m, "TasksMax", spec->tasks_max)) < 0 ||
            (spec->cpu_quota_percent.set &&
             (r = sd_bus_message_append(m, "{sv}", "CPUQuotaPercent", "u",
                                        (uint32_t) spec->cpu_quota_percent.value)) < 0) ||
            (r = append_u64(m, "RuntimeMaxUSec", spec->runtime_max_usec)) < 0 ||
            (r = append_u64(m, "IdleTimeoutUSec", spec->idle_timeout_usec)) < 0 ||
            (r = append_u64(m, "DiskMax", spec->disk_max)) < 0 ||
            (r = append_strv(m, "EgressAllow", spec->egress_allow)) < 0 ||
            (r = append_u64(m, "EgressRateBps", spec->egress_rate_bps)) < 0 ||
            (r = append_string(m, "EgressMode", spec->egress_mode)) < 0 ||
            (r = append_string(m, "IdleAction", spec->idle_action)) < 0 ||
            (r = append_string(m, "Workspace", spec->workspace)) < 0 ||
            (r = append_services(m, spec)) < 0 ||
            (r = cli_publish_append(m, &spec->publish)) < 0)
                return r;
        return sd_bus_message_close_container(m);
}
