/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a worker sees of the host's file system, and the one search for a
 * bare command name made in that view. A worker gets no $PATH lookup of the
 * caller's: sandboxd resolves Argv[0] itself against a fixed search path,
 * as the worker of the chosen runtime will see it, and the unit (or the OCI
 * bundle) is given the absolute path. */

#include <stdbool.h>

#include "class.h"
#include "config.h"
#include "util.h"

#define SBX_EXEC_SEARCH_PATH "/usr/local/bin:/usr/bin:/bin"

/* The host paths an OCI bundle masks with an empty tmpfs for every worker. */
extern const char * const oci_masked_host_paths[];

typedef struct WorkerView {
        const char *root;               /* the host directory that is the worker's "/" */
        const char * const *hidden;     /* the worker's paths whose host contents it never sees */
        bool need_exec;                 /* a program; else a file the runtime reads (a wasm module) */
} WorkerView;

/* The view of a worker run by RUNTIME under configuration C (which must
 * outlive the view). -EOPNOTSUPP for a runtime that has none. */
int worker_view_for_runtime(SbxRuntime runtime, const SbxConfig *c, WorkerView *ret);

/* A name to search for: no '/' at all. A name with a '/' is a path. */
bool exec_name_is_bare(const char *name);

/* Searches SBX_EXEC_SEARCH_PATH in VIEW for NAME, as execvp would as the
 * worker: the first DIR/NAME that is a regular file the worker may execute
 * (or read, for a module) wins; directories and files it may not use are
 * skipped. Symbolic links are followed inside the view only, and a path
 * through a hidden directory does not exist. Returns the absolute path
 * DIR/NAME (not the link's target: a multi-call program keeps its name) or
 * -ENOENT with ERROR set to ExecutableNotFound. */
int worker_view_find_executable(const WorkerView *view, const char *name, char **ret, SbxError *error);
