/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker spec as Kubernetes objects for a cluster with Agent Sandbox
 * (agents.x-k8s.io/v1beta1): pure, no I/O, so every mapping is unit-tested.
 * What the cluster cannot enforce as strongly as the host is either refused
 * (an error) or listed in warnings for the caller to print, never dropped. */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "config.h"
#include "spec.h"
#include "util.h"

/* The fixed non-root UID/GID of every exported pod (the host gives each
 * worker its own DynamicUser UID instead: a listed weakening). */
#define K8S_WORKER_UID 65532
#define K8S_HOME "/home/sandbox"
#define K8S_CREDENTIALS_DIR "/run/credentials"
#define K8S_EGRESS_POLICY_DIR "/run/sandbox-egress"
/* The label a node carries when it has the runtime handler: the second half
 * of the gate, since a RuntimeClass alone does not keep pods off nodes
 * without the handler. */
#define K8S_RUNTIME_LABEL_PREFIX "sandboxd.io/runtime-"

typedef struct K8sExportOptions {
        const char *name;               /* DNS-1123 label; every object's name starts with it */
        const char *namespace;          /* NULL: no metadata.namespace */
        const char *image;              /* the worker container's image */
        const char *egress_image;       /* sandbox-egress's image (Containerfile) */
        unsigned pool;                  /* 0: one Sandbox; N: a SandboxWarmPool of N and a SandboxClaim */
        bool workspace;                 /* the home on a PersistentVolumeClaim of DiskMax */
        uint64_t now_usec;              /* wall clock for shutdownTime, CLOCK_REALTIME */
} K8sExportOptions;

typedef struct K8sExport {
        json_object *documents;         /* array, in the order to apply them */
        char **warnings;                /* what the cluster enforces more weakly than the host */
} K8sExport;

void k8s_export_done(K8sExport *e);

/* Applies the configuration's defaults and the origin floor to S as the
 * daemon does, then validates it; refuses a class explicitly asked for
 * below the origin's floor, since a manifest states its class outright. */
int k8s_export_prepare(WorkerSpec *s, const SbxConfig *c, SbxError *error);

/* Builds the objects for a prepared spec. */
int k8s_export_build(const WorkerSpec *s, const SbxConfig *c, const K8sExportOptions *o, K8sExport *ret,
                     SbxError *error);

/* The documents as one multi-document YAML stream: each document is JSON,
 * which is YAML too, so every string is quoted by json-c's escaper. */
int k8s_export_to_yaml(const K8sExport *e, char **ret);

/* The RuntimeClass name and handler of a class; NULL for trusted (the
 * cluster's default runtime) and for classes with no export (wasm). */
const char *k8s_runtime_class(SbxClass c);

bool k8s_name_is_valid(const char *s);
