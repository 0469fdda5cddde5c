/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "sandboxctl-exit.h"
#include "sandboxctl-export.h"

typedef struct ExportOption {
        const char *name;
        bool has_value;
} ExportOption;

static const ExportOption export_options[] = {
        { "format", true },
        { "image", true },
        { "egress-image", true },
        { "namespace", true },
        { "name", true },
        { "pool", true },
        { "workspace", false },
        { "config", true },
};

void export_args_done(ExportArgs *args) {
        if (!args)
                return;
        free(args->format);
        free(args->config_path);
        *args = (ExportArgs) {};
}

static int set_export_option(ExportArgs *a, const char *name, const char *value, SbxError *error) {
        if (streq(name, "format")) {
                if (!streq(value, "kubernetes"))
                        return sbx_error_set(error, EINVAL, NULL, "--format: only 'kubernetes' is known, got '%s'",
                                             value);
                free(a->format);
                a->format = strdup(value);
                return a->format ? 0 : sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        }
        if (streq(name, "config")) {
                free(a->config_path);
                a->config_path = strdup(value);
                return a->config_path ? 0 : sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        }
        if (streq(name, "pool")) {
                uint64_t n;
                if (parse_uint64(value, &n) < 0 || n == 0 || n > INT32_MAX)
                        return sbx_error_set(error, EINVAL, NULL, "--pool: invalid number of sandboxes '%s'", value);
                a->k8s.pool = (unsigned) n;
                return 0;
        }
        if (streq(name, "workspace")) {
                a->k8s.workspace = true;
                return 0;
        }
        if (streq(name, "image"))
                a->k8s.image = value;
        else if (streq(name, "egress-image"))
                a->k8s.egress_image = value;
        else if (streq(name, "namespace"))
                a->k8s.namespace = value;
        else
                a->k8s.name = value;
        return 0;
}

/* "--NAME VALUE", "--NAME=VALUE" or a flag; 1 when ARGV[*I] is export's,
 * 0 when it is not (left for the spec parser). */
static int take_export_option(ExportArgs *a, int argc, char *argv[], int *i, SbxError *error) {
        const char *arg = argv[*i];

        if (!startswith(arg, "--"))
                return 0;
        for (size_t k = 0; k < ELEMENTSOF(export_options); k++) {
                const ExportOption *o = &export_options[k];
                size_t n = strlen(o->name);
                int r;

                if (strncmp(arg + 2, o->name, n) != 0 || (arg[2 + n] != 0 && arg[2 + n] != '='))
                        continue;
                if (!o->has_value) {
                        if (arg[2 + n] == '=')
                                return sbx_error_set(error, EINVAL, NULL, "Option '--%s' takes no value", o->name);
                        r = set_export_option(a, o->name, NULL, error);
                } else if (arg[2 + n] == '=')
                        r = set_export_option(a, o->name, arg + 3 + n, error);
                else if (*i + 1 >= argc)
                        return sbx_error_set(error, EINVAL, NULL, "Option '%s' requires an argument", arg);
                else
                        r = set_export_option(a, o->name, argv[++*i], error);
                return r < 0 ? r : 1;
        }
        return 0;
}

int export_parse_args(ExportArgs *args, CliSpec *spec, int argc, char *argv[], CliGlobalOption global,
                      SbxError *error) {
        _cleanup_free_ char **rest = calloc((size_t) argc + 1, sizeof(char *));
        int n = 0, i, r;

        if (!rest)
                return sbx_error_set(error, ENOMEM, NULL, "Out of memory");
        rest[n++] = argv[0];
        /* Only up to "--" or the command: what follows is the worker's argv.
         * Spec options that take a value keep it, so a value is never read
         * as an option name. */
        for (i = 1; i < argc; i++) {
                if (streq(argv[i], "--") || argv[i][0] != '-')
                        break;
                r = take_export_option(args, argc, argv, &i, error);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                rest[n++] = argv[i];
                if (!strchr(argv[i], '=') && !streq(argv[i], "-h") && !streq(argv[i], "--help") &&
                    startswith(argv[i], "--") && i + 1 < argc && !cli_spec_option_is_flag(argv[i] + 2))
                        rest[n++] = argv[++i];
        }
        for (; i < argc; i++)
                rest[n++] = argv[i];
        r = cli_spec_parse_args(spec, n, rest, global, error);
        if (r != 0)
                return r;
        if (!args->format)
                return sbx_error_set(error, EINVAL, NULL, "Missing --format (kubernetes)");
        return 0;
}

static int copy_strv(char * const *from, char ***to) {
        if (!from)
                return 0;
        *to = strv_copy(from);
        return *to ? 0 : -ENOMEM;
}

static int copy_string(const char *from, char **to) {
        if (!from)
                return 0;
        *to = strdup(from);
        return *to ? 0 : -ENOMEM;
}

int export_worker_spec_from_cli(const CliSpec *cli, WorkerSpec *s, SbxError *error) {
        const struct { SpecU64 field; unsigned bit; uint64_t *dest; } u64s[] = {
                { cli->memory_max, SPEC_HAS_MEMORY_MAX, &s->limits.memory_max },
                { cli->tasks_max, SPEC_HAS_TASKS_MAX, &s->limits.tasks_max },
                { cli->runtime_max_usec, SPEC_HAS_RUNTIME_MAX, &s->limits.runtime_max_usec },
                { cli->idle_timeout_usec, SPEC_HAS_IDLE_TIMEOUT, &s->limits.idle_timeout_usec },
                { cli->disk_max, SPEC_HAS_DISK_MAX, &s->disk_max },
                { cli->egress_rate_bps, SPEC_HAS_EGRESS_RATE, &s->egress_rate_bps },
        };
        int r;

        worker_spec_init(s);
        /* The broker's secrets would have to live in the cluster's proxy,
         * which has no mapping for them: exporting without them would drop
         * a wall, so they are refused, never left out. */
        if (cli->n_services > 0)
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_ISOLATION_UNAVAILABLE,
                                     "Services (the credential broker) have no Kubernetes export: leave them out");
        /* Agent Sandbox has no checkpoint of a pod: dropping it would turn
         * "sleeps when idle" into "dies when idle" without saying so. */
        if (cli->idle_action && streq(cli->idle_action, "suspend"))
                return sbx_error_set(error, -EOPNOTSUPP, SBX_ERROR_NOT_SUPPORTED,
                                     "--idle-action suspend has no Kubernetes export: leave it out");
        s->set = SPEC_HAS_ARGV;
        if ((r = copy_strv(cli->argv, &s->argv)) < 0 || (r = copy_strv(cli->environment, &s->environment)) < 0 ||
            (r = copy_strv(cli->egress_allow, &s->egress_allow)) < 0 || (r = copy_string(cli->origin, &s->origin)) < 0)
                return r;
        if (cli->environment)
                s->set |= SPEC_HAS_ENVIRONMENT;
        if (cli->egress_allow)
                s->set |= SPEC_HAS_EGRESS_ALLOW;
        if (cli->origin)
                s->set |= SPEC_HAS_ORIGIN;
        if (cli->class) {
                s->class = sbx_class_from_string(cli->class);
                s->set |= SPEC_HAS_CLASS;
        }
        for (size_t i = 0; i < ELEMENTSOF(u64s); i++)
                if (u64s[i].field.set) {
                        *u64s[i].dest = u64s[i].field.value;
                        s->set |= u64s[i].bit;
                }
        if (cli->cpu_quota_percent.set) {
                s->limits.cpu_quota_percent = (uint32_t) cli->cpu_quota_percent.value;
                s->set |= SPEC_HAS_CPU_QUOTA;
        }
        if (cli->egress_mode) {
                s->egress_report_only = streq(cli->egress_mode, "report");
                s->set |= SPEC_HAS_EGRESS_MODE;
        }
        if (cli->n_credentials > 0) {
                s->credentials = calloc(cli->n_credentials, sizeof(SbxCredential));
                if (!s->credentials)
                        return -ENOMEM;
                s->set |= SPEC_HAS_CREDENTIALS;
                for (size_t i = 0; i < cli->n_credentials; i++) {
                        SbxCredential *c = &s->credentials[s->n_credentials];

                        c->name = strdup(cli->credentials[i].name);
                        c->data = malloc(cli->credentials[i].size ?: 1);
                        if (!c->name || !c->data) {
                                free(c->name);
                                free(c->data);
                                return -ENOMEM;
                        }
                        memcpy(c->data, cli->credentials[i].data, cli->credentials[i].size);
                        c->size = cli->credentials[i].size;
                        s->n_credentials++;
                }
        }
        return 0;
}

static int exit_code_from_sbx_error(const SbxError *e, int r) {
        if (e->name && (streq(e->name, SBX_ERROR_ISOLATION_UNAVAILABLE) || r == -EPERM))
                return EXIT_REFUSED;
        if (e->name && streq(e->name, SBX_ERROR_INVALID_ARGUMENT))
                return EXIT_USAGE;
        if (e->name)
                return EXIT_INVALID;
        return EXIT_FAILED;
}

int export_run(int argc, char *argv[], CliGlobalOption global, void (*help)(void), const char *version) {
        _cleanup_(cli_spec_done) CliSpec cli = {};
        _cleanup_(worker_spec_done) WorkerSpec spec = {};
        _cleanup_(sbx_config_done) SbxConfig config = {};
        _cleanup_(export_args_done) ExportArgs args = {};
        _cleanup_(k8s_export_done) K8sExport out = {};
        _cleanup_free_ char *yaml = NULL, *default_egress_image = NULL;
        SbxError error = {};
        struct timespec now;
        int r;

        worker_spec_init(&spec);
        sbx_config_init_defaults(&config);
        r = export_parse_args(&args, &cli, argc, argv, global, &error);
        if (r == 1)
                help();
        if (r > 0)
                return EXIT_OK;
        if (r < 0) {
                fprintf(stderr, "sandboxctl: %s\n", error.message);
                return r == -EINVAL || r == EINVAL ? EXIT_USAGE : exit_code_from_errno(r);
        }
        r = sbx_config_load(&config, args.config_path ?: EXPORT_CONFIG_DEFAULT, &error);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: %s\n", error.message);
                return EXIT_INVALID;
        }
        worker_spec_done(&spec);
        r = export_worker_spec_from_cli(&cli, &spec, &error);
        cli_spec_done(&cli);
        if (r < 0 && error.name) {
                fprintf(stderr, "sandboxctl: %s: %s\n", error.name, error.message);
                return exit_code_from_sbx_error(&error, r);
        }
        if (r < 0) {
                fprintf(stderr, "sandboxctl: Out of memory\n");
                return EXIT_FAILED;
        }
        r = k8s_export_prepare(&spec, &config, &error);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: %s: %s\n", error.name ?: "export", error.message);
                return exit_code_from_sbx_error(&error, r);
        }
        if (!args.k8s.name)
                args.k8s.name = "sandboxd-worker";
        if (!args.k8s.egress_image) {
                if (asprintf(&default_egress_image, "localhost/sandbox-egress:%s", version) < 0)
                        return EXIT_FAILED;
                args.k8s.egress_image = default_egress_image;
        }
        (void) clock_gettime(CLOCK_REALTIME, &now);
        args.k8s.now_usec = (uint64_t) now.tv_sec * USEC_PER_SEC;
        r = k8s_export_build(&spec, &config, &args.k8s, &out, &error);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: %s: %s\n", error.name ?: "export", error.message);
                return exit_code_from_sbx_error(&error, r);
        }
        r = k8s_export_to_yaml(&out, &yaml);
        if (r < 0) {
                fprintf(stderr, "sandboxctl: Out of memory\n");
                return EXIT_FAILED;
        }
        for (char **w = out.warnings; w && *w; w++)
                fprintf(stderr, "sandboxctl: WARNING: weaker on Kubernetes: %s\n", *w);
        if (spec.n_credentials > 0 || spec.environment)
                fprintf(stderr, "sandboxctl: note: the output holds the credentials and environment values "
                        "(base64 in Secrets): keep it secret\n");
        /* As run/create hint: with no floor the proxy allows nothing. */
        if (spec.egress_allow && strv_length(config.egress_floor) == 0)
                fprintf(stderr, "sandboxctl: note: Egress:Floor in %s is empty: the egress gateway will "
                        "allow nothing\n", args.config_path ?: EXPORT_CONFIG_DEFAULT);
        if (fputs(yaml, stdout) == EOF || fflush(stdout) == EOF) {
                fprintf(stderr, "sandboxctl: Failed to write the export: %m\n");
                return EXIT_FAILED;
        }
        return EXIT_OK;
}
