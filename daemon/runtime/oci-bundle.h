/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The hardened OCI run-spec (config.json) of a sandboxed worker. Pure: it
 * builds a json-c object from a description of the worker and writes it into
 * a bundle directory; it never looks at the host beyond the directory fd it
 * is given. Every worker, whatever the runtime, gets the same walls:
 *   - process.user = the worker's dynamic UID/GID, never root;
 *   - no capabilities in any set, noNewPrivileges;
 *   - an environment that holds only what the spec set plus HOME, PATH (a
 *     default unless the spec set one) and CREDENTIALS_DIRECTORY;
 *   - a read-only root (an image directory, by default the host root), with
 *     the sandboxd state, other homes, /root, /home and /run masked by
 *     read-only empty tmpfs;
 *   - writable places: the home (a read-write bind of the worker's home at
 *     the same path, or a size-capped tmpfs when a disk cap is asked for) and a
 *     noexec,nosuid,nodev tmpfs /tmp;
 *   - positive pids/memory/cpu limits, both as linux.resources and, because
 *     gVisor with --ignore-cgroups only honours rlimits, as RLIMIT_NPROC.
 * Profiles differ only where the runtime needs it: runsc gets a network
 * namespace only with network_ns_path (the launcher's, around the sandbox's
 * end of the veth to the proxy, launch-veth.h; with --network=none it has
 * its own loopback only);
 * Kata gets one (the VM's own) and VM sizing annotations. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "util.h"

typedef enum OciProfile {
        OCI_PROFILE_RUNSC,
        OCI_PROFILE_KATA,
        _OCI_PROFILE_MAX,
        _OCI_PROFILE_INVALID = -1,
} OciProfile;

const char *oci_profile_to_string(OciProfile p);
OciProfile oci_profile_from_string(const char *s);

#define OCI_BUNDLE_CONFIG "config.json"
#define OCI_BUNDLE_CONFIG_PARTIAL ".config.json.partial"
#define OCI_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define OCI_DEFAULT_NOFILE UINT64_C(1024)
#define OCI_DEFAULT_TMP_SIZE (UINT64_C(64) << 20)
#define OCI_CPU_PERIOD_USEC UINT64_C(100000)
/* Room for the largest pool job's credentials (POOL_JOB_SIZE_MAX) and slack. */
#define OCI_POOL_CREDENTIALS_SIZE (UINT64_C(2) << 20)

typedef struct OciBundleSpec {
        OciProfile profile;
        const char *hostname;
        char * const *argv;             /* argv[0] absolute */
        char * const *environment;      /* KEY=VALUE from the worker's spec, may be NULL */
        uid_t uid;
        gid_t gid;
        const char *home;               /* absolute and free of symlinks (see oci-bundle.c) */
        const char *root_image;         /* NULL: the host root, read-only, masked */
        const char *credentials_dir;    /* NULL: the worker has no credentials */
        bool credentials_writable;      /* a warm-pool sandbox: an empty tmpfs the worker owns at
                                         * credentials_dir, where its waiter writes the job's */
        uint64_t pids_max;
        uint64_t memory_max;            /* bytes */
        uint64_t cpu_percent;           /* of one CPU */
        uint64_t disk_max;              /* bytes; 0: the home is a bind of the host home */
        bool noexec_home;               /* nothing in the home can be run (the spec's NoExec) */
        uint64_t tmp_size;              /* bytes; 0: OCI_DEFAULT_TMP_SIZE */
        uint64_t nofile;                /* 0: OCI_DEFAULT_NOFILE */
        const char *network_ns_path;    /* runsc: the sandbox's network namespace (launch-veth.h);
                                         * NULL: none in the spec */
} OciBundleSpec;

/* The paths hidden from every worker; defined in daemon/shared/worker-view.c, whose
 * command search must not find what the bundle hides. */
extern const char * const oci_masked_host_paths[];

/* Validates the spec and builds config.json's object. On a caller's mistake
 * fills *error (SBX_ERROR_INVALID_SPEC or SBX_ERROR_LIMIT_OUT_OF_RANGE) and
 * returns -EINVAL. */
int oci_bundle_build(const OciBundleSpec *spec, struct json_object **ret, SbxError *error);

/* Builds and writes config.json (mode 0600, must not exist yet) into dir_fd. */
int oci_bundle_write(int dir_fd, const OciBundleSpec *spec, SbxError *error);
