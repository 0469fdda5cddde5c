/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* `sandboxctl export`: a worker spec, given as run/create's options, as the
 * objects of another platform (k8s-export.h). It talks to no daemon: the
 * operator's policy comes from sandboxd.conf, read as the daemon reads it. */

#include "k8s-export.h"
#include "sandboxctl-spec.h"

#define EXPORT_CONFIG_DEFAULT "/etc/sandboxd.conf"

typedef struct ExportArgs {
        char *format;
        char *config_path;
        bool workspace;
        K8sExportOptions k8s;   /* its strings point into the argv given */
} ExportArgs;

/* Takes export's own options out of ARGV (before "--" only) and parses the
 * rest as run/create's; return values as cli_spec_parse_args(). */
int export_parse_args(ExportArgs *args, CliSpec *spec, int argc, char *argv[], CliGlobalOption global,
                      SbxError *error);
void export_args_done(ExportArgs *args);

/* The CLI's parsed spec as the daemon's WorkerSpec, read by sandboxd's own
 * spec reader from the message CreateWorker would get. A field the export
 * cannot carry is refused later, by k8s_export_prepare(). */
int export_worker_spec_from_cli(const CliSpec *cli, WorkerSpec *ret, SbxError *error);

/* The whole verb: parse, prepare, build, print the YAML on stdout and the
 * warnings on stderr. Returns the exit status; HELP prints the usage. */
int export_run(int argc, char *argv[], CliGlobalOption global, void (*help)(void), const char *version);
