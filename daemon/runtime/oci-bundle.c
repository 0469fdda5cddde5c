/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <sys/resource.h>

#include "errors.h"
#include "oci-bundle.h"
#include "util.h"

static const char * const profile_names[_OCI_PROFILE_MAX] = {
        [OCI_PROFILE_RUNSC] = "runsc",
        [OCI_PROFILE_KATA] = "kata",
};

const char *oci_profile_to_string(OciProfile p) {
        return p >= 0 && p < _OCI_PROFILE_MAX ? profile_names[p] : NULL;
}

OciProfile oci_profile_from_string(const char *s) {
        for (int p = 0; s && p < _OCI_PROFILE_MAX; p++)
                if (streq(s, profile_names[p]))
                        return (OciProfile) p;
        return _OCI_PROFILE_INVALID;
}

/* Kernel interfaces a worker has no business reading or writing; the same
 * list runc and containerd use. gVisor synthesises its own /proc, Kata's
 * guest kernel is real, so both get it. */
static const char * const masked_kernel_paths[] = {
        "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
        "/sys/firmware", NULL,
};
static const char * const readonly_kernel_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

#define MIN_MEMORY (UINT64_C(32) << 20)
#define MIN_DISK (UINT64_C(1) << 20)
#define MAX_PIDS UINT64_C(4194304)
#define MAX_CPU_PERCENT UINT64_C(102400)
#define MAX_NOFILE UINT64_C(1048576)
/* Kata boots a guest kernel and agent beside the workload inside the VM. */
#define KATA_GUEST_OVERHEAD_MIB UINT64_C(128)

static void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* json-c returns NULL on allocation failure and json_object_object_add takes
 * ownership even when it fails, so each helper reports -ENOMEM once. */
static int add(struct json_object *obj, const char *key, struct json_object *val) {
        if (!val)
                return -ENOMEM;
        return json_object_object_add(obj, key, val) < 0 ? -ENOMEM : 0;
}

static int append(struct json_object *arr, struct json_object *val) {
        if (!val)
                return -ENOMEM;
        if (json_object_array_add(arr, val) < 0) {
                json_object_put(val);
                return -ENOMEM;
        }
        return 0;
}

static struct json_object *string_array(const char * const *l) {
        struct json_object *arr = json_object_new_array();
        for (size_t i = 0; arr && l && l[i]; i++)
                if (append(arr, json_object_new_string(l[i])) < 0) {
                        json_object_put(arr);
                        return NULL;
                }
        return arr;
}

static bool path_is_normalized_absolute(const char *p) {
        if (isempty(p) || p[0] != '/')
                return false;
        if (strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../"))
                return false;
        size_t n = strlen(p);
        if (n > 1 && p[n - 1] == '/')
                return false;
        if ((n >= 2 && streq(p + n - 2, "/.")) || (n >= 3 && streq(p + n - 3, "/..")))
                return false;
        return n < PATH_MAX;
}

/* true if path is strictly below dir */
static bool path_is_below(const char *path, const char *dir) {
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static bool env_name_valid(const char *s, size_t n) {
        if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

static bool env_has(char * const *env, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
                        return true;
        return false;
}

static bool hostname_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 63 || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] == '-' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      (s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

static int validate_paths(const OciBundleSpec *s, SbxError *error) {
        if (!s->argv || !s->argv[0])
                return sbx_error_set(error, EINVAL, SBX_ERROR_MISSING_ARGV, "The command line is empty.");
        if (s->argv[0][0] != '/')
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "The command must be an absolute path, got '%s'.", s->argv[0]);
        if (!path_is_normalized_absolute(s->home) || streq(s->home, "/") || streq(s->home, "/tmp") ||
            path_is_below(s->home, "/tmp") || path_is_below(s->home, "/proc") || path_is_below(s->home, "/dev"))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "The home '%s' must be a normalized absolute path of its own.",
                                     s->home ?: "(none)");
        for (size_t i = 0; oci_masked_host_paths[i]; i++)
                if (streq(s->home, oci_masked_host_paths[i]))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                             "The home cannot be the masked path '%s' itself.", s->home);
        if (s->root_image && !path_is_normalized_absolute(s->root_image))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "The root image '%s' must be a normalized absolute path.", s->root_image);
        /* A VM must not be handed the host's whole root over a shared file
         * system: hostile workloads get a dedicated image or nothing. */
        if (s->profile == OCI_PROFILE_KATA && (!s->root_image || streq(s->root_image, "/")))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "Kata workers need a dedicated root image, not the host root.");
        if (s->credentials_dir && (!path_is_normalized_absolute(s->credentials_dir) ||
                                   !path_is_below(s->credentials_dir, "/run/credentials")))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "The credentials directory '%s' is not below /run/credentials.",
                                     s->credentials_dir);
        return 0;
}

static int validate_limits(const OciBundleSpec *s, SbxError *error) {
        if (s->pids_max < 1 || s->pids_max > MAX_PIDS)
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The pids limit must be between 1 and %" PRIu64 ".", MAX_PIDS);
        if (s->memory_max < MIN_MEMORY || s->memory_max > (UINT64_C(1) << 50))
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The memory limit must be at least %" PRIu64 " bytes.", MIN_MEMORY);
        if (s->cpu_percent < 1 || s->cpu_percent > MAX_CPU_PERCENT)
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The CPU quota must be between 1 and %" PRIu64 " percent.", MAX_CPU_PERCENT);
        /* The capped home and /tmp are tmpfs inside the sandbox: their pages
         * are the sandbox's memory, so a cap above the memory limit would be
         * a promise the memory limit breaks first. */
        if (s->disk_max != 0 && (s->disk_max < MIN_DISK || s->disk_max > s->memory_max))
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The disk cap must be between %" PRIu64 " bytes and the memory limit "
                                     "(%" PRIu64 "): the capped home lives in the sandbox's memory.",
                                     MIN_DISK, s->memory_max);
        if (s->tmp_size != 0 && (s->tmp_size < MIN_DISK || s->tmp_size > s->memory_max))
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The /tmp size must be between %" PRIu64 " bytes and the memory limit.",
                                     MIN_DISK);
        if (s->nofile > MAX_NOFILE)
                return sbx_error_set(error, EINVAL, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The open file limit must be at most %" PRIu64 ".", MAX_NOFILE);
        return 0;
}

static int validate(const OciBundleSpec *s, SbxError *error) {
        int r;

        if (!oci_profile_to_string(s->profile))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "Unknown runtime profile.");
        if (s->uid == 0 || s->gid == 0 || s->uid == (uid_t) -1 || s->gid == (gid_t) -1)
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC,
                                     "A worker never runs as root or as an invalid user.");
        if (s->hostname && !hostname_valid(s->hostname))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_SPEC, "Invalid hostname '%s'.", s->hostname);
        r = validate_paths(s, error);
        if (r < 0)
                return r;
        for (size_t i = 0; s->environment && s->environment[i]; i++) {
                const char *eq = strchr(s->environment[i], '=');
                if (!eq || !env_name_valid(s->environment[i], (size_t) (eq - s->environment[i])))
                        return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_ENVIRONMENT,
                                             "Environment entry #%zu is not NAME=VALUE.", i);
        }
        if (env_has(s->environment, "HOME") || env_has(s->environment, "CREDENTIALS_DIRECTORY"))
                return sbx_error_set(error, EINVAL, SBX_ERROR_INVALID_ENVIRONMENT,
                                     "HOME and CREDENTIALS_DIRECTORY are set by sandboxd, not by the spec.");
        return validate_limits(s, error);
}

static struct json_object *build_env(const OciBundleSpec *s) {
        _cleanup_json_ struct json_object *env = json_object_new_array();
        _cleanup_free_ char *home = NULL, *creds = NULL;

        if (!env || asprintf(&home, "HOME=%s", s->home) < 0)
                return NULL;
        if (append(env, json_object_new_string(home)) < 0)
                return NULL;
        if (!env_has(s->environment, "PATH") && append(env, json_object_new_string("PATH=" OCI_DEFAULT_PATH)) < 0)
                return NULL;
        /* A pooled sandbox's waiter sets it with the job, if it has credentials. */
        if (s->credentials_dir && !s->credentials_writable) {
                if (asprintf(&creds, "CREDENTIALS_DIRECTORY=%s", s->credentials_dir) < 0 ||
                    append(env, json_object_new_string(creds)) < 0)
                        return NULL;
        }
        for (size_t i = 0; s->environment && s->environment[i]; i++)
                if (append(env, json_object_new_string(s->environment[i])) < 0)
                        return NULL;
        return TAKE_PTR(env);
}

static struct json_object *rlimit(const char *type, uint64_t value) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o || add(o, "type", json_object_new_string(type)) < 0 ||
            add(o, "hard", json_object_new_uint64(value)) < 0 || add(o, "soft", json_object_new_uint64(value)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static struct json_object *build_process(const OciBundleSpec *s) {
        static const char * const cap_sets[] = { "bounding", "effective", "permitted", "inheritable", "ambient" };
        _cleanup_json_ struct json_object *p = json_object_new_object(), *user = json_object_new_object(),
                                          *caps = json_object_new_object(), *rl = json_object_new_array();

        if (!p || !user || !caps || !rl)
                return NULL;
        if (add(user, "uid", json_object_new_int64(s->uid)) < 0 || add(user, "gid", json_object_new_int64(s->gid)) < 0 ||
            add(user, "additionalGids", json_object_new_array()) < 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(cap_sets); i++)
                if (add(caps, cap_sets[i], json_object_new_array()) < 0)
                        return NULL;
        /* RLIMIT_NPROC is what bounds the task count inside gVisor: its tasks
         * are not host tasks, so the unit's TasksMax cannot see them. */
        if (append(rl, rlimit("RLIMIT_NOFILE", s->nofile ?: OCI_DEFAULT_NOFILE)) < 0 ||
            append(rl, rlimit("RLIMIT_NPROC", s->pids_max)) < 0 || append(rl, rlimit("RLIMIT_CORE", 0)) < 0)
                return NULL;
        if (add(p, "terminal", json_object_new_boolean(false)) < 0 || add(p, "user", TAKE_PTR(user)) < 0 ||
            add(p, "args", string_array((const char * const *) s->argv)) < 0 || add(p, "env", build_env(s)) < 0 ||
            add(p, "cwd", json_object_new_string(s->home)) < 0 || add(p, "capabilities", TAKE_PTR(caps)) < 0 ||
            add(p, "rlimits", TAKE_PTR(rl)) < 0 || add(p, "noNewPrivileges", json_object_new_boolean(true)) < 0)
                return NULL;
        return TAKE_PTR(p);
}

static int add_mount(struct json_object *mounts, const char *destination, const char *type, const char *source,
                     const char * const *options) {
        _cleanup_json_ struct json_object *m = json_object_new_object();
        if (!m || add(m, "destination", json_object_new_string(destination)) < 0 ||
            add(m, "type", json_object_new_string(type)) < 0 || add(m, "source", json_object_new_string(source)) < 0 ||
            add(m, "options", string_array(options)) < 0)
                return -ENOMEM;
        return append(mounts, TAKE_PTR(m));
}

/* Masks are read-only even when the home or the credentials are mounted
 * below them: the runtime creates those mount points before it applies "ro",
 * and the intermediate directories it creates must not become a writable
 * place of the worker's. */
static int add_masks(struct json_object *mounts) {
        const char *opts[] = { "nosuid", "nodev", "noexec", "ro", "mode=0755", "size=64k", NULL };

        for (size_t i = 0; oci_masked_host_paths[i]; i++) {
                int r = add_mount(mounts, oci_masked_host_paths[i], "tmpfs", "tmpfs", opts);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_home(struct json_object *mounts, const OciBundleSpec *s) {
        if (s->disk_max == 0) {
                const char *opts[] = { "rbind", "rw", "nosuid", "nodev", NULL };
                return add_mount(mounts, s->home, "bind", s->home, opts);
        }
        /* A disk cap the runtime enforces itself: a tmpfs of exactly that size,
         * owned by the worker, instead of the host directory. */
        char size[64], uid[32], gid[32];
        snprintf(size, sizeof(size), "size=%" PRIu64, s->disk_max);
        snprintf(uid, sizeof(uid), "uid=%u", (unsigned) s->uid);
        snprintf(gid, sizeof(gid), "gid=%u", (unsigned) s->gid);
        const char *opts[] = { "nosuid", "nodev", "mode=0700", uid, gid, size, NULL };
        return add_mount(mounts, s->home, "tmpfs", "tmpfs", opts);
}

/* What a pooled sandbox's credentials arrive in: the worker's own, empty,
 * sized for one job. */
static int add_credentials_tmpfs(struct json_object *mounts, const OciBundleSpec *s) {
        char size[64], uid[32], gid[32];

        snprintf(size, sizeof(size), "size=%" PRIu64, OCI_POOL_CREDENTIALS_SIZE);
        snprintf(uid, sizeof(uid), "uid=%u", (unsigned) s->uid);
        snprintf(gid, sizeof(gid), "gid=%u", (unsigned) s->gid);
        const char *opts[] = { "nosuid", "nodev", "noexec", "mode=0700", uid, gid, size, NULL };
        return add_mount(mounts, s->credentials_dir, "tmpfs", "tmpfs", opts);
}

static struct json_object *build_mounts(const OciBundleSpec *s) {
        _cleanup_json_ struct json_object *mounts = json_object_new_array();
        char tmp_size[64], shm_size[64];
        uint64_t tmp = s->tmp_size ?: MIN(OCI_DEFAULT_TMP_SIZE, s->memory_max / 4);

        snprintf(tmp_size, sizeof(tmp_size), "size=%" PRIu64, tmp);
        snprintf(shm_size, sizeof(shm_size), "size=%" PRIu64, MIN(tmp, OCI_DEFAULT_TMP_SIZE));
        const char *proc[] = { "nosuid", "noexec", "nodev", NULL };
        const char *dev[] = { "nosuid", "strictatime", "mode=0755", "size=65536k", NULL };
        const char *pts[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL };
        const char *shm[] = { "nosuid", "noexec", "nodev", "mode=1777", shm_size, NULL };
        const char *sys[] = { "nosuid", "noexec", "nodev", "ro", NULL };
        const char *tmpfs[] = { "nosuid", "noexec", "nodev", "mode=1777", tmp_size, NULL };
        const char *creds[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };

        if (!mounts || add_mount(mounts, "/proc", "proc", "proc", proc) < 0 ||
            add_mount(mounts, "/dev", "tmpfs", "tmpfs", dev) < 0 ||
            add_mount(mounts, "/dev/pts", "devpts", "devpts", pts) < 0 ||
            add_mount(mounts, "/dev/shm", "tmpfs", "shm", shm) < 0 ||
            add_mount(mounts, "/sys", "sysfs", "sysfs", sys) < 0 ||
            add_mount(mounts, "/tmp", "tmpfs", "tmpfs", tmpfs) < 0)
                return NULL;
        /* Masked whatever the image: on the host root they hide its secrets,
         * and in any image they are the 0755 parents the home and the
         * credentials need (the real /var/lib/private is 0700). */
        if (add_masks(mounts) < 0)
                return NULL;
        if (add_home(mounts, s) < 0)
                return NULL;
        if (s->credentials_dir && !s->credentials_writable &&
            add_mount(mounts, s->credentials_dir, "bind", s->credentials_dir, creds) < 0)
                return NULL;
        if (s->credentials_dir && s->credentials_writable && add_credentials_tmpfs(mounts, s) < 0)
                return NULL;
        return TAKE_PTR(mounts);
}

static struct json_object *namespace(const char *type) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o || add(o, "type", json_object_new_string(type)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static struct json_object *build_resources(const OciBundleSpec *s) {
        _cleanup_json_ struct json_object *res = json_object_new_object(), *pids = json_object_new_object(),
                                          *mem = json_object_new_object(), *cpu = json_object_new_object();
        if (!res || !pids || !mem || !cpu)
                return NULL;
        if (add(pids, "limit", json_object_new_int64((int64_t) s->pids_max)) < 0 ||
            add(mem, "limit", json_object_new_int64((int64_t) s->memory_max)) < 0 ||
            add(mem, "swap", json_object_new_int64((int64_t) s->memory_max)) < 0 ||
            add(cpu, "quota", json_object_new_int64((int64_t) (s->cpu_percent * OCI_CPU_PERIOD_USEC / 100))) < 0 ||
            add(cpu, "period", json_object_new_uint64(OCI_CPU_PERIOD_USEC)) < 0)
                return NULL;
        if (add(res, "pids", TAKE_PTR(pids)) < 0 || add(res, "memory", TAKE_PTR(mem)) < 0 ||
            add(res, "cpu", TAKE_PTR(cpu)) < 0)
                return NULL;
        return TAKE_PTR(res);
}

static struct json_object *build_linux(const OciBundleSpec *s) {
        _cleanup_json_ struct json_object *lx = json_object_new_object(), *ns = json_object_new_array();
        if (!lx || !ns)
                return NULL;
        if (append(ns, namespace("pid")) < 0 || append(ns, namespace("ipc")) < 0 ||
            append(ns, namespace("uts")) < 0 || append(ns, namespace("mount")) < 0)
                return NULL;
        /* runsc with --network=none ignores a network entry. With a proxy
         * (--network=sandbox) it takes the namespace named here, the one the
         * launcher made around the sandbox's end of the veth; runsc 0.0~20240729
         * refuses to take the one it runs in without a path ("cannot run with
         * network enabled in root network namespace"). A Kata VM always has
         * its own. */
        if (s->profile == OCI_PROFILE_KATA && append(ns, namespace("network")) < 0)
                return NULL;
        if (s->profile == OCI_PROFILE_RUNSC && s->network_ns_path) {
                _cleanup_json_ struct json_object *net = namespace("network");
                if (!net || add(net, "path", json_object_new_string(s->network_ns_path)) < 0 ||
                    append(ns, TAKE_PTR(net)) < 0)
                        return NULL;
        }
        if (add(lx, "namespaces", TAKE_PTR(ns)) < 0 || add(lx, "resources", build_resources(s)) < 0 ||
            add(lx, "maskedPaths", string_array(masked_kernel_paths)) < 0 ||
            add(lx, "readonlyPaths", string_array(readonly_kernel_paths)) < 0)
                return NULL;
        return TAKE_PTR(lx);
}

static struct json_object *build_kata_annotations(const OciBundleSpec *s) {
        _cleanup_json_ struct json_object *a = json_object_new_object();
        char memory[32], vcpus[32];

        snprintf(memory, sizeof(memory), "%" PRIu64, (s->memory_max + (UINT64_C(1) << 20) - 1) / (UINT64_C(1) << 20) +
                                                      KATA_GUEST_OVERHEAD_MIB);
        snprintf(vcpus, sizeof(vcpus), "%" PRIu64, (s->cpu_percent + 99) / 100);
        if (!a || add(a, "io.katacontainers.config.hypervisor.default_memory", json_object_new_string(memory)) < 0 ||
            add(a, "io.katacontainers.config.hypervisor.default_vcpus", json_object_new_string(vcpus)) < 0 ||
            add(a, "io.katacontainers.config.runtime.disable_guest_seccomp", json_object_new_string("false")) < 0)
                return NULL;
        return TAKE_PTR(a);
}

int oci_bundle_build(const OciBundleSpec *s, struct json_object **ret, SbxError *error) {
        _cleanup_json_ struct json_object *root = NULL, *config = NULL;
        int r;

        assert(s);
        assert(ret);

        r = validate(s, error);
        if (r < 0)
                return r;
        root = json_object_new_object();
        config = json_object_new_object();
        if (!root || !config)
                return -ENOMEM;
        if (add(root, "path", json_object_new_string(s->root_image ?: "/")) < 0 ||
            add(root, "readonly", json_object_new_boolean(true)) < 0)
                return -ENOMEM;
        if (add(config, "ociVersion", json_object_new_string("1.0.2")) < 0 ||
            add(config, "process", build_process(s)) < 0 || add(config, "root", TAKE_PTR(root)) < 0 ||
            add(config, "hostname", json_object_new_string(s->hostname ?: "sandbox")) < 0 ||
            add(config, "mounts", build_mounts(s)) < 0 || add(config, "linux", build_linux(s)) < 0)
                return -ENOMEM;
        if (s->profile == OCI_PROFILE_KATA && add(config, "annotations", build_kata_annotations(s)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(config);
        return 0;
}

int oci_bundle_write(int dir_fd, const OciBundleSpec *s, SbxError *error) {
        _cleanup_json_ struct json_object *config = NULL;
        _cleanup_close_ int fd = -1;
        const char *text;
        size_t len;
        int r;

        assert(dir_fd >= 0);
        r = oci_bundle_build(s, &config, error);
        if (r < 0)
                return r;
        text = json_object_to_json_string_length(config, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                 &len);
        if (!text)
                return -ENOMEM;
        /* Written aside and renamed into place, so whoever looks (runsc, an
         * operator, a test) finds no file or a whole one, never a part. */
        fd = openat(dir_fd, OCI_BUNDLE_CONFIG_PARTIAL, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, text, len);
        if (r < 0)
                goto fail;
        if (fsync(fd) < 0 || renameat2(dir_fd, OCI_BUNDLE_CONFIG_PARTIAL, dir_fd, OCI_BUNDLE_CONFIG, RENAME_NOREPLACE) < 0) {
                r = -errno;
                goto fail;
        }
        return 0;
fail:
        (void) unlinkat(dir_fd, OCI_BUNDLE_CONFIG_PARTIAL, 0);
        return r;
}
