/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "errors.h"
#include "sandboxctl-exit.h"
#include "sandboxctl-export.h"
#include "spec-bus.h"

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

/* sd-bus builds messages only on a started bus; one over a socketpair with
 * nobody on the other end is enough to marshal and read back. */
static int offline_bus(sd_bus **ret, int *ret_peer) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_fd(bus, sv[0], sv[0]);
        if (r < 0) {
                safe_close(sv[0]);
                safe_close(sv[1]);
                return r;
        }
        r = sd_bus_start(bus);
        if (r < 0) {
                safe_close(sv[1]);
                return r;
        }
        *ret = TAKE_PTR(bus);
        *ret_peer = sv[1];
        return 0;
}

/* The spec goes through the same a{sv} that CreateWorker would receive and
 * sandboxd's own reader: an option the CLI knows reaches the export as it
 * would reach the daemon, and can never be dropped on the way. */
int export_worker_spec_from_cli(const CliSpec *cli, WorkerSpec *s, SbxError *error) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_close_ int peer = -EBADF;
        int r;

        worker_spec_init(s);
        r = offline_bus(&bus, &peer);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.sandboxd1", "/org/sandboxd1",
                                           "org.sandboxd1.Manager", "CreateWorker");
        if (r < 0)
                return r;
        r = cli_spec_append(m, cli);
        if (r < 0)
                return r;
        r = sd_bus_message_seal(m, 1, 0);
        if (r < 0)
                return r;
        r = sd_bus_message_rewind(m, true);
        if (r < 0)
                return r;
        return worker_spec_from_bus(s, m, error);
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
