/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the export's tests: a spec built as `sandboxctl export` builds
 * it, and a path lookup into the documents. */

#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "k8s-export.h"
#include "sandboxctl-export.h"

/* 2026-12-01T00:00:00Z, so shutdownTime is the same on every run. */
#define K8S_TEST_NOW_USEC (UINT64_C(1796083200) * USEC_PER_SEC)

/* "spec.containers.0.name": object keys and array indices. */
static inline json_object *k8s_get(json_object *o, const char *path) {
        char buf[512], *save = NULL;

        if (strlen(path) >= sizeof(buf))
                return NULL;
        strcpy(buf, path);
        for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save)) {
                if (json_object_is_type(o, json_type_array))
                        o = json_object_array_get_idx(o, (size_t) strtoul(t, NULL, 10));
                else if (!json_object_object_get_ex(o, t, &o))
                        return NULL;
        }
        return o;
}

static inline const char *k8s_get_str(json_object *o, const char *path) {
        json_object *v = k8s_get(o, path);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static inline void k8s_json_putp(json_object **o) {
        json_object_put(*o);
}

/* One key that itself has dots ("sandboxd.io/role", "policy.json"). */
static inline const char *k8s_key(json_object *o, const char *key) {
        json_object *v;
        return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static inline json_object *k8s_find(const K8sExport *e, const char *kind, const char *name) {
        for (size_t i = 0; i < json_object_array_length(e->documents); i++) {
                json_object *d = json_object_array_get_idx(e->documents, i);
                const char *k = k8s_get_str(d, "kind"), *n = k8s_get_str(d, "metadata.name");

                if (k && strcmp(k, kind) == 0 && (!name || (n && strcmp(n, name) == 0)))
                        return d;
        }
        return NULL;
}

/* Parses ARGV as `sandboxctl export ARGV...` does, loads CONFIG_TEXT (NULL:
 * the defaults) and prepares and builds; returns the first failure. */
static inline int k8s_test_export(char **argv, const char *config_text, K8sExport *ret, SbxError *error) {
        _cleanup_(cli_spec_done) CliSpec cli = {};
        _cleanup_(worker_spec_done) WorkerSpec spec = {};
        _cleanup_(sbx_config_done) SbxConfig config = {};
        _cleanup_(export_args_done) ExportArgs args = {};
        int argc = 0, r;

        while (argv[argc])
                argc++;
        sbx_config_init_defaults(&config);
        worker_spec_init(&spec);
        r = export_parse_args(&args, &cli, argc, argv, NULL, error);
        if (r != 0)
                return r < 0 ? r : -EINVAL;
        if (config_text) {
                char path[] = "/tmp/test-k8s-conf-XXXXXX";
                int fd = mkstemp(path);
                FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

                if (!f)
                        return -errno;
                fputs(config_text, f);
                fclose(f);
                r = sbx_config_load(&config, path, error);
                unlink(path);
                if (r < 0)
                        return r;
        }
        worker_spec_done(&spec);
        r = export_worker_spec_from_cli(&cli, &spec, error);
        if (r < 0)
                return r;
        r = k8s_export_prepare(&spec, &config, error);
        if (r < 0)
                return r;
        if (!args.k8s.name)
                args.k8s.name = "sandboxd-worker";
        if (!args.k8s.egress_image)
                args.k8s.egress_image = "localhost/sandbox-egress:test";
        args.k8s.now_usec = K8S_TEST_NOW_USEC;
        return k8s_export_build(&spec, &config, &args.k8s, ret, error);
}

static inline bool k8s_warned(const K8sExport *e, const char *needle) {
        for (char **w = e->warnings; w && *w; w++)
                if (strstr(*w, needle))
                        return true;
        return false;
}
