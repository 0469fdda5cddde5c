/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every invariant of the hardened run-spec, checked on the JSON that
 * oci_bundle_build produces (and, for oci_bundle_write, on what lands on
 * disk), parsed back with json-c. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "errors.h"
#include "oci-bundle.h"
#include "util.h"

#define HOME "/var/lib/private/sandboxd/workers/abc123"
#define CREDS "/run/credentials/sandbox-abc123.service"
#define UID 64143
#define GID 64143

static char *argv_sh[] = { (char *) "/bin/sh", (char *) "-c", (char *) "echo hi", NULL };
static char *env_foo[] = { (char *) "FOO=bar", NULL };

static OciBundleSpec base_spec(void) {
        return (OciBundleSpec) {
                .profile = OCI_PROFILE_RUNSC,
                .hostname = "sandbox-abc123",
                .argv = argv_sh,
                .environment = env_foo,
                .uid = UID,
                .gid = GID,
                .home = HOME,
                .pids_max = 64,
                .memory_max = UINT64_C(256) << 20,
                .cpu_percent = 50,
        };
}

static struct json_object *build_ok(const OciBundleSpec *s) {
        struct json_object *o = NULL;
        SbxError e = {};
        int r = oci_bundle_build(s, &o, &e);
        if (r < 0)
                fail_msg("oci_bundle_build failed: %d %s", r, e.message);
        assert_non_null(o);
        /* Round-trip through text, as the runtime will read it. */
        struct json_object *parsed = json_tokener_parse(json_object_to_json_string(o));
        json_object_put(o);
        assert_non_null(parsed);
        return parsed;
}

static struct json_object *get(struct json_object *o, ...) {
        va_list ap;
        va_start(ap, o);
        for (const char *k = va_arg(ap, const char *); k && o; k = va_arg(ap, const char *))
                if (!json_object_object_get_ex(o, k, &o))
                        o = NULL;
        va_end(ap);
        return o;
}

static bool array_has_string(struct json_object *arr, const char *s) {
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(arr, i)), s))
                        return true;
        return false;
}

static bool array_has_prefix(struct json_object *arr, const char *prefix) {
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                if (startswith(json_object_get_string(json_object_array_get_idx(arr, i)), prefix))
                        return true;
        return false;
}

static struct json_object *find_mount(struct json_object *cfg, const char *destination, size_t *ret_index) {
        struct json_object *mounts = get(cfg, "mounts", NULL);
        for (size_t i = 0; mounts && i < json_object_array_length(mounts); i++) {
                struct json_object *m = json_object_array_get_idx(mounts, i);
                if (streq(json_object_get_string(get(m, "destination", NULL)), destination)) {
                        if (ret_index)
                                *ret_index = i;
                        return m;
                }
        }
        return NULL;
}

static bool has_namespace(struct json_object *cfg, const char *type) {
        struct json_object *ns = get(cfg, "linux", "namespaces", NULL);
        for (size_t i = 0; ns && i < json_object_array_length(ns); i++)
                if (streq(json_object_get_string(get(json_object_array_get_idx(ns, i), "type", NULL)), type))
                        return true;
        return false;
}

static int64_t rlimit_of(struct json_object *cfg, const char *type) {
        struct json_object *rl = get(cfg, "process", "rlimits", NULL);
        for (size_t i = 0; rl && i < json_object_array_length(rl); i++) {
                struct json_object *r = json_object_array_get_idx(rl, i);
                if (streq(json_object_get_string(get(r, "type", NULL)), type)) {
                        assert_int_equal(json_object_get_int64(get(r, "hard", NULL)),
                                         json_object_get_int64(get(r, "soft", NULL)));
                        return json_object_get_int64(get(r, "hard", NULL));
                }
        }
        return -1;
}

/* The walls every profile shares. */
static void assert_invariants(struct json_object *cfg, const OciBundleSpec *s) {
        static const char * const cap_sets[] = { "bounding", "effective", "permitted", "inheritable", "ambient" };
        struct json_object *mounts = get(cfg, "mounts", NULL), *tmp, *opts;

        assert_string_equal(json_object_get_string(get(cfg, "ociVersion", NULL)), "1.0.2");
        /* never root: the worker's own dynamic UID/GID and no extra groups */
        assert_int_equal(json_object_get_int64(get(cfg, "process", "user", "uid", NULL)), s->uid);
        assert_int_equal(json_object_get_int64(get(cfg, "process", "user", "gid", NULL)), s->gid);
        assert_int_equal(json_object_array_length(get(cfg, "process", "user", "additionalGids", NULL)), 0);
        assert_false(json_object_get_boolean(get(cfg, "process", "terminal", NULL)));
        /* no capabilities at all, and no way to gain any */
        for (size_t i = 0; i < ELEMENTSOF(cap_sets); i++) {
                struct json_object *set = get(cfg, "process", "capabilities", cap_sets[i], NULL);
                assert_non_null(set);
                assert_true(json_object_is_type(set, json_type_array));
                assert_int_equal(json_object_array_length(set), 0);
        }
        assert_true(json_object_is_type(get(cfg, "process", "noNewPrivileges", NULL), json_type_boolean));
        assert_true(json_object_get_boolean(get(cfg, "process", "noNewPrivileges", NULL)));
        /* cwd and HOME are the home */
        assert_string_equal(json_object_get_string(get(cfg, "process", "cwd", NULL)), s->home);
        char home_env[512];
        snprintf(home_env, sizeof(home_env), "HOME=%s", s->home);
        assert_true(array_has_string(get(cfg, "process", "env", NULL), home_env));
        /* read-only root */
        assert_true(json_object_get_boolean(get(cfg, "root", "readonly", NULL)));
        assert_string_equal(json_object_get_string(get(cfg, "root", "path", NULL)), s->root_image ?: "/");
        /* /tmp: a size-capped tmpfs, noexec, nosuid, nodev */
        tmp = find_mount(cfg, "/tmp", NULL);
        assert_non_null(tmp);
        assert_string_equal(json_object_get_string(get(tmp, "type", NULL)), "tmpfs");
        opts = get(tmp, "options", NULL);
        assert_true(array_has_string(opts, "noexec"));
        assert_true(array_has_string(opts, "nosuid"));
        assert_true(array_has_string(opts, "nodev"));
        assert_true(array_has_prefix(opts, "size="));
        /* nothing is mounted suid, and the only writable mounts are the home,
         * /tmp and the runtime's own /dev, /dev/shm and /dev/pts */
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                struct json_object *m = json_object_array_get_idx(mounts, i);
                const char *dest = json_object_get_string(get(m, "destination", NULL));
                struct json_object *o = get(m, "options", NULL);
                assert_true(array_has_string(o, "nosuid"));
                assert_false(array_has_string(o, "suid"));
                assert_false(array_has_string(o, "exec"));
                if (!array_has_string(o, "ro") && !streq(dest, "/proc"))
                        assert_true(streq(dest, s->home) || streq(dest, "/tmp") || streq(dest, "/dev") ||
                                    streq(dest, "/dev/shm") || streq(dest, "/dev/pts"));
        }
        /* positive limits, inside (rlimits) and as resources */
        assert_int_equal(rlimit_of(cfg, "RLIMIT_NPROC"), s->pids_max);
        assert_true(rlimit_of(cfg, "RLIMIT_NOFILE") > 0);
        assert_int_equal(rlimit_of(cfg, "RLIMIT_CORE"), 0);
        assert_int_equal(json_object_get_int64(get(cfg, "linux", "resources", "pids", "limit", NULL)), s->pids_max);
        assert_int_equal(json_object_get_int64(get(cfg, "linux", "resources", "memory", "limit", NULL)), s->memory_max);
        assert_int_equal(json_object_get_int64(get(cfg, "linux", "resources", "cpu", "quota", NULL)),
                         s->cpu_percent * 1000);
        assert_int_equal(json_object_get_int64(get(cfg, "linux", "resources", "cpu", "period", NULL)), 100000);
        /* isolated pid/ipc/uts/mount, never the host's user namespace tricks */
        assert_true(has_namespace(cfg, "pid"));
        assert_true(has_namespace(cfg, "ipc"));
        assert_true(has_namespace(cfg, "uts"));
        assert_true(has_namespace(cfg, "mount"));
        assert_true(array_has_string(get(cfg, "linux", "maskedPaths", NULL), "/proc/kcore"));
        assert_true(array_has_string(get(cfg, "linux", "readonlyPaths", NULL), "/proc/sys"));
        assert_true(array_has_string(get(cfg, "linux", "readonlyPaths", NULL), "/proc/sysrq-trigger"));
}

static void assert_masks(struct json_object *cfg) {
        for (size_t i = 0; oci_masked_host_paths[i]; i++) {
                struct json_object *m = find_mount(cfg, oci_masked_host_paths[i], NULL);
                assert_non_null(m);
                assert_string_equal(json_object_get_string(get(m, "type", NULL)), "tmpfs");
                assert_true(array_has_string(get(m, "options", NULL), "ro"));
                assert_true(array_has_string(get(m, "options", NULL), "noexec"));
        }
}

/* With a proxy the launcher names its own namespace, which it moved into the
 * sandbox's (launch-veth.h): runsc takes exactly that one. */
static void test_runsc_network_ns(void **state) {
        OciBundleSpec s = base_spec();
        s.network_ns_path = "/proc/4242/ns/net";
        struct json_object *cfg = build_ok(&s), *ns = get(cfg, "linux", "namespaces", NULL);
        size_t found = 0;

        assert_invariants(cfg, &s);
        for (size_t i = 0; i < json_object_array_length(ns); i++) {
                struct json_object *n = json_object_array_get_idx(ns, i);
                if (!streq(json_object_get_string(get(n, "type", NULL)), "network"))
                        continue;
                found++;
                assert_string_equal(json_object_get_string(get(n, "path", NULL)), "/proc/4242/ns/net");
        }
        assert_int_equal(found, 1);
        json_object_put(cfg);
}

static void test_runsc_default(void **state) {
        OciBundleSpec s = base_spec();
        struct json_object *cfg = build_ok(&s), *env, *home;
        size_t home_idx, mask_idx;

        assert_invariants(cfg, &s);
        assert_masks(cfg);
        /* runsc without a proxy: no network namespace (--network=none ignores it) */
        assert_false(has_namespace(cfg, "network"));
        assert_false(has_namespace(cfg, "user"));
        assert_null(get(cfg, "annotations", NULL));
        assert_string_equal(json_object_get_string(get(cfg, "hostname", NULL)), "sandbox-abc123");
        /* the environment is the spec's plus HOME and a default PATH, nothing else */
        env = get(cfg, "process", "env", NULL);
        assert_int_equal(json_object_array_length(env), 3);
        assert_true(array_has_string(env, "FOO=bar"));
        assert_true(array_has_string(env, "PATH=" OCI_DEFAULT_PATH));
        assert_false(array_has_prefix(env, "CREDENTIALS_DIRECTORY="));
        /* the home: the host directory, read-write, at the same path, mounted
         * after (so inside) the mask of /var/lib/private */
        home = find_mount(cfg, HOME, &home_idx);
        assert_non_null(home);
        assert_string_equal(json_object_get_string(get(home, "type", NULL)), "bind");
        assert_string_equal(json_object_get_string(get(home, "source", NULL)), HOME);
        assert_true(array_has_string(get(home, "options", NULL), "rw"));
        assert_non_null(find_mount(cfg, "/var/lib/private", &mask_idx));
        assert_true(mask_idx < home_idx);
        /* argv exactly as given */
        assert_int_equal(json_object_array_length(get(cfg, "process", "args", NULL)), 3);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(get(cfg, "process", "args", NULL), 2)),
                            "echo hi");
        json_object_put(cfg);
}

static void test_runsc_credentials(void **state) {
        OciBundleSpec s = base_spec();
        struct json_object *cfg, *m;
        size_t creds_idx, run_idx;

        s.credentials_dir = CREDS;
        cfg = build_ok(&s);
        assert_invariants(cfg, &s);
        assert_true(array_has_string(get(cfg, "process", "env", NULL), "CREDENTIALS_DIRECTORY=" CREDS));
        m = find_mount(cfg, CREDS, &creds_idx);
        assert_non_null(m);
        assert_string_equal(json_object_get_string(get(m, "type", NULL)), "bind");
        assert_string_equal(json_object_get_string(get(m, "source", NULL)), CREDS);
        assert_true(array_has_string(get(m, "options", NULL), "ro"));
        assert_true(array_has_string(get(m, "options", NULL), "noexec"));
        assert_non_null(find_mount(cfg, "/run", &run_idx));
        assert_true(run_idx < creds_idx);
        json_object_put(cfg);
}

static void test_runsc_disk_cap(void **state) {
        OciBundleSpec s = base_spec();
        struct json_object *cfg, *home, *opts;

        s.disk_max = UINT64_C(8) << 20;
        cfg = build_ok(&s);
        assert_invariants(cfg, &s);
        home = find_mount(cfg, HOME, NULL);
        assert_non_null(home);
        /* enforced by the runtime: a tmpfs of exactly the cap, the worker's own */
        assert_string_equal(json_object_get_string(get(home, "type", NULL)), "tmpfs");
        opts = get(home, "options", NULL);
        assert_true(array_has_string(opts, "size=8388608"));
        assert_true(array_has_string(opts, "uid=64143"));
        assert_true(array_has_string(opts, "gid=64143"));
        assert_true(array_has_string(opts, "mode=0700"));
        json_object_put(cfg);
}

static void test_runsc_spec_path_and_sizes(void **state) {
        char *env[] = { (char *) "PATH=/opt/bin", (char *) "LANG=C.UTF-8", NULL };
        OciBundleSpec s = base_spec();
        struct json_object *cfg;

        s.environment = env;
        s.tmp_size = UINT64_C(16) << 20;
        s.nofile = 4096;
        s.root_image = "/srv/images/debian";
        cfg = build_ok(&s);
        assert_invariants(cfg, &s);
        assert_true(array_has_string(get(cfg, "process", "env", NULL), "PATH=/opt/bin"));
        assert_false(array_has_string(get(cfg, "process", "env", NULL), "PATH=" OCI_DEFAULT_PATH));
        assert_int_equal(json_object_array_length(get(cfg, "process", "env", NULL)), 3);
        assert_true(array_has_string(get(find_mount(cfg, "/tmp", NULL), "options", NULL), "size=16777216"));
        assert_int_equal(rlimit_of(cfg, "RLIMIT_NOFILE"), 4096);
        /* masked in any image: they are also the home's traversable parents */
        assert_masks(cfg);
        json_object_put(cfg);
}

static void test_kata_profile(void **state) {
        OciBundleSpec s = base_spec();
        struct json_object *cfg;

        s.profile = OCI_PROFILE_KATA;
        s.root_image = "/var/lib/sandboxd-images/hostile";
        s.cpu_percent = 150;
        cfg = build_ok(&s);
        assert_invariants(cfg, &s);
        /* the VM gets a network namespace of its own (empty in the unit) */
        assert_true(has_namespace(cfg, "network"));
        assert_string_equal(json_object_get_string(get(cfg, "annotations",
                                                       "io.katacontainers.config.hypervisor.default_memory", NULL)),
                            "384");
        assert_string_equal(json_object_get_string(get(cfg, "annotations",
                                                       "io.katacontainers.config.hypervisor.default_vcpus", NULL)),
                            "2");
        json_object_put(cfg);
}

static void assert_refused(const OciBundleSpec *s, const char *error_name) {
        struct json_object *o = NULL;
        SbxError e = {};

        assert_int_equal(oci_bundle_build(s, &o, &e), -EINVAL);
        assert_null(o);
        assert_non_null(e.name);
        assert_string_equal(e.name, error_name);
        assert_true(strlen(e.message) > 10);
}

static void test_refusals(void **state) {
        char *empty_argv[] = { NULL };
        char *relative_argv[] = { (char *) "sh", NULL };
        char *env_home[] = { (char *) "HOME=/root", NULL };
        char *env_creds[] = { (char *) "CREDENTIALS_DIRECTORY=/tmp", NULL };
        char *env_noeq[] = { (char *) "FOO", NULL };
        char *env_badname[] = { (char *) "1X=y", NULL };
        static const char * const bad_homes[] = {
                "relative", "/", "/tmp", "/tmp/x", "/var/lib/private", "/run", "/a/../b", "/a//b", "/a/", "/proc/1",
        };
        OciBundleSpec s;

#define REFUSE(field, value, name) do { s = base_spec(); s.field = value; assert_refused(&s, name); } while (0)
        REFUSE(uid, 0, SBX_ERROR_INVALID_SPEC);
        REFUSE(gid, 0, SBX_ERROR_INVALID_SPEC);
        REFUSE(uid, (uid_t) -1, SBX_ERROR_INVALID_SPEC);
        REFUSE(argv, empty_argv, SBX_ERROR_MISSING_ARGV);
        REFUSE(argv, NULL, SBX_ERROR_MISSING_ARGV);
        REFUSE(argv, relative_argv, SBX_ERROR_INVALID_SPEC);
        REFUSE(environment, env_home, SBX_ERROR_INVALID_ENVIRONMENT);
        REFUSE(environment, env_creds, SBX_ERROR_INVALID_ENVIRONMENT);
        REFUSE(environment, env_noeq, SBX_ERROR_INVALID_ENVIRONMENT);
        REFUSE(environment, env_badname, SBX_ERROR_INVALID_ENVIRONMENT);
        REFUSE(home, NULL, SBX_ERROR_INVALID_SPEC);
        for (size_t i = 0; i < ELEMENTSOF(bad_homes); i++)
                REFUSE(home, bad_homes[i], SBX_ERROR_INVALID_SPEC);
        REFUSE(root_image, "images/x", SBX_ERROR_INVALID_SPEC);
        REFUSE(credentials_dir, "/tmp/creds", SBX_ERROR_INVALID_SPEC);
        REFUSE(credentials_dir, "/run/credentials/../x", SBX_ERROR_INVALID_SPEC);
        REFUSE(hostname, "bad host", SBX_ERROR_INVALID_SPEC);
        REFUSE(profile, _OCI_PROFILE_INVALID, SBX_ERROR_INVALID_SPEC);
        REFUSE(pids_max, 0, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(pids_max, UINT64_C(1) << 40, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(memory_max, 0, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(memory_max, UINT64_C(1) << 20, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(cpu_percent, 0, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(disk_max, 512, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(disk_max, UINT64_C(512) << 20, SBX_ERROR_LIMIT_OUT_OF_RANGE);  /* above the memory limit */
        REFUSE(tmp_size, UINT64_C(1) << 30, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        REFUSE(nofile, UINT64_C(1) << 30, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        /* a hostile worker never gets the host root, even read-only */
        s = base_spec();
        s.profile = OCI_PROFILE_KATA;
        assert_refused(&s, SBX_ERROR_INVALID_SPEC);
        s.root_image = "/";
        assert_refused(&s, SBX_ERROR_INVALID_SPEC);
#undef REFUSE
}

static void test_write(void **state) {
        char dir[] = "/tmp/test-oci-bundle-XXXXXX";
        OciBundleSpec s = base_spec();
        SbxError e = {};
        struct stat st;
        int fd;

        assert_non_null(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(oci_bundle_write(fd, &s, &e), 0);
        assert_int_equal(fstatat(fd, OCI_BUNDLE_CONFIG, &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0600);

        char path[512];
        snprintf(path, sizeof(path), "%s/" OCI_BUNDLE_CONFIG, dir);
        struct json_object *cfg = json_object_from_file(path);
        assert_non_null(cfg);
        assert_invariants(cfg, &s);
        json_object_put(cfg);

        /* never overwrite: a second writer means two launchers for one id */
        assert_int_equal(oci_bundle_write(fd, &s, &e), -EEXIST);
        assert_int_equal(faccessat(fd, OCI_BUNDLE_CONFIG_PARTIAL, F_OK, 0), -1);
        /* a refused spec leaves nothing behind */
        assert_int_equal(unlinkat(fd, OCI_BUNDLE_CONFIG, 0), 0);
        s.uid = 0;
        assert_int_equal(oci_bundle_write(fd, &s, &e), -EINVAL);
        assert_int_equal(faccessat(fd, OCI_BUNDLE_CONFIG, F_OK, 0), -1);
        close(fd);
        assert_int_equal(rmdir(dir), 0);
}

static void test_profile_names(void **state) {
        assert_int_equal(oci_profile_from_string("runsc"), OCI_PROFILE_RUNSC);
        assert_int_equal(oci_profile_from_string("kata"), OCI_PROFILE_KATA);
        assert_int_equal(oci_profile_from_string("runc"), _OCI_PROFILE_INVALID);
        assert_int_equal(oci_profile_from_string(NULL), _OCI_PROFILE_INVALID);
        assert_string_equal(oci_profile_to_string(OCI_PROFILE_KATA), "kata");
        assert_null(oci_profile_to_string(_OCI_PROFILE_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_runsc_default),
                cmocka_unit_test(test_runsc_network_ns),
                cmocka_unit_test(test_runsc_credentials),
                cmocka_unit_test(test_runsc_disk_cap),
                cmocka_unit_test(test_runsc_spec_path_and_sizes),
                cmocka_unit_test(test_kata_profile),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_write),
                cmocka_unit_test(test_profile_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
