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
        free(spec->egress_mode);
        for (size_t i = 0; i < spec->n_credentials; i++) {
                free(spec->credentials[i].name);
                erase_and_free(spec->credentials[i].data, spec->credentials[i].size);
        }
        free(spec->credentials);
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

static int strv_push_dup(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char **grown, *copy;

        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        grown = realloc(*l, (n + 2) * sizeof(char *));
        if (!grown) {
                free(copy);
                return -ENOMEM;
        }
        grown[n] = copy;
        grown[n + 1] = NULL;
        *l = grown;
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
                r = strv_push_dup(&spec->environment, arg);
                break;
        case ARG_CREDENTIAL:
                return spec_add_credential(spec, arg, error);
        case ARG_DISK:
                return set_size_option(&spec->disk_max, "disk", arg, error);
        case ARG_ALLOW:
                if (isempty(arg))
                        return sbx_error_set(error, EINVAL, NULL, "--allow expects a host pattern");
                r = strv_push_dup(&spec->egress_allow, arg);
                break;
        case ARG_EGRESS_RATE:
                return set_size_option(&spec->egress_rate_bps, "egress-rate", arg, error);
        case ARG_EGRESS_MODE:
                if (!streq(arg, "enforce") && !streq(arg, "report"))
                        return sbx_error_set(error, EINVAL, NULL,
                                             "--egress-mode expects 'enforce' or 'report', got '%s'", arg);
                r = set_string(&spec->egress_mode, arg);
                break;
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
            (r = append_string(m, "EgressMode", spec->egress_mode)) < 0)
                return r;
        return sd_bus_message_close_container(m);
}
