/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test-bus.h"
#include "spec-service.h"
#include "errors.h"
#include "unit-props.h"
#include "worker-disk.h"

/* A spec Environment value: a secret, like a credential's. */
#define ENV_SECRET "envsecret-5f3a9c"

static SbxConfig config;
static WorkerSpec spec;
/* PID 1's namespaces as the walls probe reported them. */
static const NsIdSet probed_host_ns = {
        .id = { [NS_NET] = { 4, 4026531992 }, [NS_IPC] = { 4, 4026531839 }, [NS_MNT] = { 4, 4026531841 } },
        .mask = NS_MASK_ALL,
};
static const NsIdSet *host_ns = &probed_host_ns;
static sd_bus *bus;
static int peer = -1;

static int setup(void **state) {
        sbx_config_init_defaults(&config);
        worker_spec_init(&spec);
        spec.argv = calloc(4, sizeof(char *));
        spec.argv[0] = strdup("/bin/sh");
        spec.argv[1] = strdup("-c");
        spec.argv[2] = strdup("echo $HOME");
        spec.environment = calloc(3, sizeof(char *));
        spec.environment[0] = strdup("LANG=C.UTF-8");
        spec.environment[1] = strdup("TOKEN=" ENV_SECRET);
        spec.credentials = calloc(1, sizeof(SbxCredential));
        spec.credentials[0] = (SbxCredential) { .name = strdup("token"), .data = (uint8_t *) strdup("SECRETVALUE"), .size = 11 };
        spec.n_credentials = 1;
        spec.set = SPEC_HAS_ARGV | SPEC_HAS_CLASS;
        spec.class = SBX_CLASS_TRUSTED;
        worker_spec_apply_defaults(&spec, &config);
        spec.limits.memory_max = 64u << 20;
        spec.limits.cpu_quota_percent = 25;
        bus = test_bus_new_offline(&peer);
        return bus ? 0 : -1;
}

static int teardown(void **state) {
        worker_spec_done(&spec);
        sbx_config_done(&config);
        close(peer);
        sd_bus_close_unref(bus);
        return 0;
}

static const char *workspace_image;
static uint64_t disk_bytes;

/* 0: the worker unit, 1: the cleanup unit, 2: the checkpoint unit; a
 * worker unit restores its checkpoint with RESTORE. */
static char *build_any(SbxRuntime runtime, const char *proxy, int kind, bool restore, int *ret) {
        sd_bus_message *m = NULL;
        WorkerUnitParams p = {
                .id = "0123456789ab",
                .unit = "sandbox-0123456789ab.service",
                .user = "sandbox-0123456789ab",
                .home = "/var/lib/sandboxd/workers/0123456789ab",
                .spec = &spec,
                .config = &config,
                .runtime = runtime,
                .launcher_path = "/usr/libexec/sandboxd/sandbox-launch",
                .exec_path = "/usr/libexec/sandboxd/sandbox-exec",
                .stdio = &(ChannelWorkerFds) { 0, 1, 2 },
                .egress_proxy_url = proxy,
                /* As the manager sets it: whenever the worker has the proxy pair. */
                .egress_socket = proxy || spec.n_services > 0 ? "sandbox-0123456789ab-egress.socket" : NULL,
                .host_ns = host_ns,
                .restore = restore,
                .workspace_image = workspace_image,
                .disk_bytes = disk_bytes,
        };
        char *dump = NULL;

        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        *ret = kind == 1 ? worker_cleanup_unit_append_properties(m, &p) :
               kind == 2 ? worker_checkpoint_unit_append_properties(m, &p, UINT64_C(1) << 30) :
                           worker_unit_append_properties(m, &p);
        if (*ret >= 0)
                dump = test_message_dump(m);
        sd_bus_message_unref(m);
        return dump;
}

static char *build_unit(SbxRuntime runtime, const char *proxy, bool cleanup_unit, int *ret) {
        return build_any(runtime, proxy, cleanup_unit ? 1 : 0, false, ret);
}

static char *build(SbxRuntime runtime, const char *proxy, int *ret) {
        return build_unit(runtime, proxy, false, ret);
}

/* In the dump each property is a STRUCT "sv" holding STRING "Name"; and its
 * variant. The fragment must occur inside one of NAME's own structs (a
 * property such as SystemCallFilter may appear more than once). */
static bool prop_has(const char *dump, const char *name, const char *fragment) {
        char key[128];
        snprintf(key, sizeof(key), "STRING \"%s\";", name);
        for (const char *at = strstr(dump, key); at; at = strstr(at + 1, key)) {
                const char *end = strstr(at, "STRUCT \"sv\" {");
                const char *hit = strstr(at, fragment);
                if (hit && (!end || hit < end))
                        return true;
        }
        return false;
}

static void assert_prop(const char *dump, const char *name, const char *fragment) {
        if (!prop_has(dump, name, fragment))
                fail_msg("property %s does not hold %s", name, fragment);
}

/* FRAGMENTS, each a STRING on a line of its own, on consecutive lines of
 * NAME's first struct (an array's opening line between them is skipped):
 * an argv's strings in order. */
static void assert_prop_seq(const char *dump, const char *name, const char * const *fragments) {
        char key[128];
        const char *at, *line;

        snprintf(key, sizeof(key), "STRING \"%s\";", name);
        at = strstr(dump, key);
        if (!at)
                fail_msg("no property %s", name);
        line = strstr(at, fragments[0]);
        for (size_t i = 1; line && fragments[i]; i++) {
                const char *next = strchr(line, '\n');
                line = next ? next + 1 : NULL;
                while (line && *line == ' ')
                        line++;
                if (line && startswith(line, "ARRAY ")) {
                        next = strchr(line, '\n');
                        line = next ? next + 1 : NULL;
                        while (line && *line == ' ')
                                line++;
                }
                if (line && !startswith(line, "STRING "))
                        line = NULL;
                if (line && strncmp(line + strlen("STRING "), fragments[i], strlen(fragments[i])) != 0)
                        line = NULL;
        }
        if (!line)
                fail_msg("property %s does not hold the sequence starting %s", name, fragments[0]);
}

static void test_trusted_unit(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_SYSTEMD, NULL, &r);

        assert_int_equal(r, 0);
        assert_non_null(d);
        assert_prop(d, "Slice", "\"sandbox.slice\"");
        assert_prop(d, "Type", "\"exec\"");
        assert_prop(d, "DynamicUser", "BOOLEAN true");
        assert_prop(d, "User", "\"sandbox-0123456789ab\"");
        assert_prop(d, "StateDirectory", "\"sandboxd/workers/0123456789ab\"");
        assert_prop(d, "StateDirectoryMode", "UINT32 448");
        assert_prop(d, "Environment", "\"HOME=/var/lib/sandboxd/workers/0123456789ab\"");
        assert_prop(d, "NoNewPrivileges", "BOOLEAN true");
        assert_prop(d, "CapabilityBoundingSet", "UINT64 0");
        assert_prop(d, "AmbientCapabilities", "UINT64 0");
        assert_prop(d, "ProtectSystem", "\"strict\"");
        assert_prop(d, "ProtectHome", "\"yes\"");
        assert_prop(d, "PrivateTmp", "BOOLEAN true");
        assert_prop(d, "PrivateDevices", "BOOLEAN true");
        assert_prop(d, "PrivateNetwork", "BOOLEAN true");
        assert_prop(d, "RestrictSUIDSGID", "BOOLEAN true");
        assert_prop(d, "IPAddressDeny", "UINT32 0");
        assert_prop(d, "IPAddressAllow", "UINT32 8");
        assert_prop(d, "IPAddressAllow", "UINT32 128");
        assert_prop(d, "NoExecPaths", "\"/tmp\"");
        assert_prop(d, "ProtectKernelTunables", "BOOLEAN true");
        assert_prop(d, "ProtectKernelModules", "BOOLEAN true");
        assert_prop(d, "SystemCallFilter", "\"@system-service\"");
        /* io_uring is in @system-service on systemd 252: denied by name. */
        assert_prop(d, "SystemCallFilter", "\"io_uring_setup\"");
        assert_prop(d, "SystemCallFilter", "\"io_uring_enter\"");
        assert_prop(d, "SystemCallFilter", "\"io_uring_register\"");
        assert_prop(d, "RestrictNamespaces", "UINT64 0");
        assert_prop(d, "MemoryMax", "UINT64 67108864");
        assert_prop(d, "TasksMax", "UINT64 256");
        assert_prop(d, "CPUQuotaPerSecUSec", "UINT64 250000");
        assert_prop(d, "RuntimeMaxUSec", "UINT64 3600000000");
        assert_prop(d, "StandardInputFileDescriptor", "UNIX_FD");
        assert_prop(d, "StandardOutputFileDescriptor", "UNIX_FD");
        assert_prop(d, "StandardErrorFileDescriptor", "UNIX_FD");
        /* argv verbatim: no $HOME expansion by systemd, after the wrapper
         * that sets the spec's environment from its credential. */
        assert_prop(d, "ExecStartEx", "\"/usr/libexec/sandboxd/sandbox-exec\"");
        assert_prop(d, "ExecStartEx", "\"--id=0123456789ab\"");
        assert_prop(d, "ExecStartEx", "\"--environment\"");
        assert_prop(d, "ExecStartEx", "\"/bin/sh\"");
        /* A command that cannot run fails the start, checked as the worker
         * by the same process (worker-ready.c waits for its token). */
        assert_null(strstr(d, "ExecStartPre"));
        assert_prop(d, "ExecStartEx", "\"echo $HOME\"");
        assert_prop(d, "ExecStartEx", "\"no-env-expand\"");
        assert_null(strstr(d, "\"privileged\""));
        /* Credentials travel by reference to the root-only socket, never by value. */
        assert_prop(d, "LoadCredential", "\"token\"");
        assert_prop(d, "LoadCredential", "\"/run/sandboxd/credentials.sock\"");
        assert_prop(d, "LoadCredential", "\"sandboxd.environment\"");
        assert_null(strstr(d, "SECRETVALUE"));
        assert_null(strstr(d, "SetCredential"));
        assert_null(strstr(d, "HTTPS_PROXY"));
        /* The checker itself: a value of another property does not count. */
        assert_false(prop_has(d, "Slice", "\"exec\""));
}

/* No host socket: /run (journald, the bus, systemd's private and notify
 * sockets, sandboxd's credential socket, /dev/log's target) is an empty
 * read-only tmpfs, /dev/shm is the worker's own, and the host's mqueue and
 * hugetlbfs mounts that PrivateDevices= keeps are hidden. */
static void test_trusted_hides_host_sockets(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_SYSTEMD, NULL, &r);

        assert_int_equal(r, 0);
        assert_prop(d, "TemporaryFileSystem", "\"/run\"");
        assert_prop(d, "TemporaryFileSystem", "\"ro,nosuid,nodev,noexec,mode=0755\"");
        assert_prop(d, "TemporaryFileSystem", "\"/dev/shm\"");
        assert_prop(d, "TemporaryFileSystem", "\"rw,nosuid,nodev,noexec,mode=1777\"");
        assert_prop(d, "InaccessiblePaths", "\"-/dev/mqueue\"");
        assert_prop(d, "InaccessiblePaths", "\"-/dev/hugepages\"");
        assert_prop(d, "PrivateIPC", "BOOLEAN true");
        /* A NoExecPaths= of /dev/shm would displace its tmpfs (systemd keeps
         * one mount per path); the tmpfs's own options say noexec. */
        assert_prop(d, "NoExecPaths", "\"/var/tmp\"");
        assert_false(prop_has(d, "NoExecPaths", "\"/dev/shm\""));
        /* The worker's credentials stay reachable: systemd mounts them over
         * the tmpfs, and nothing hides /run/credentials itself. */
        assert_false(prop_has(d, "InaccessiblePaths", "/run/credentials"));
        assert_prop(d, "LoadCredential", "\"/run/sandboxd/credentials.sock\"");
}

/* The hardening properties, each a wall of the trusted class. */
static const char * const hardening[] = {
        "DynamicUser", "UMask", "NoNewPrivileges", "CapabilityBoundingSet", "AmbientCapabilities",
        "ProtectSystem", "ProtectHome", "ProtectProc", "PrivateTmp", "NoExecPaths", "PrivateDevices",
        "TemporaryFileSystem", "InaccessiblePaths", "PrivateNetwork", "PrivateIPC", "IPAddressAllow",
        "IPAddressDeny", "RestrictSUIDSGID", "ProtectKernelTunables", "ProtectKernelModules",
        "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname", "LockPersonality",
        "RestrictRealtime", "KeyringMode", "RestrictAddressFamilies", "RestrictNamespaces",
        "SystemCallFilter", "SystemCallErrorNumber", "SystemCallArchitectures", "MemorySwapMax",
        "LimitCORE", "LimitCORESoft", NULL
};

#define PROP_START "STRUCT \"sv\" {"

/* The name of the property whose dump starts at AT. */
static bool chunk_is(const char *at, const char *name) {
        char key[128];
        const char *next = strstr(at + 1, PROP_START);
        const char *hit;

        snprintf(key, sizeof(key), "STRING \"%s\";", name);
        hit = strstr(at, key);
        return hit && (!next || hit < next);
}

/* The first hardening property of the trusted unit, value and all, that
 * DUMP lacks, ignoring a TemporaryFileSystem= over EXCEPT_TMPFS (when set);
 * NULL when DUMP has them all. */
static char *first_missing_wall(const char *trusted, const char *dump, const char *except_tmpfs) {
        size_t checked = 0;

        for (const char *at = strstr(trusted, PROP_START); at; at = strstr(at + 1, PROP_START)) {
                const char *next = strstr(at + 1, PROP_START);
                _cleanup_free_ char *chunk = strndup(at, next ? (size_t) (next - at) : strlen(at));
                bool is_hardening = false;

                assert_non_null(chunk);
                for (size_t i = 0; hardening[i]; i++)
                        is_hardening = is_hardening || chunk_is(at, hardening[i]);
                if (!is_hardening)
                        continue;
                checked++;
                if (except_tmpfs && chunk_is(at, "TemporaryFileSystem") && strstr(chunk, except_tmpfs))
                        continue;
                if (!strstr(dump, chunk))
                        return TAKE_PTR(chunk);
        }
        /* Every listed property is one the trusted unit has, so the list
         * cannot go stale and check nothing. */
        for (size_t i = 0; hardening[i]; i++) {
                char key[128];
                snprintf(key, sizeof(key), "STRING \"%s\";", hardening[i]);
                if (!strstr(trusted, key))
                        fail_msg("the trusted unit has no %s", hardening[i]);
        }
        assert_true(checked >= 35);
        return NULL;
}

static void assert_has_trusted_walls(const char *trusted, const char *dump, const char *except_tmpfs,
                                     const char *what) {
        _cleanup_free_ char *missing = first_missing_wall(trusted, dump, except_tmpfs);
        if (missing)
                fail_msg("%s lacks the trusted wall %s", what, missing);
}

/* Every class gets at least the trusted walls around its runtime. wasm runs
 * its runtime unprivileged, so it gets all of them; runsc and kata miss only
 * the /run tmpfs, which would reach their privileged launcher. */
static void test_every_class_has_trusted_walls(void **state) {
        int r;
        _cleanup_free_ char *trusted = build(SBX_RUNTIME_SYSTEMD, NULL, &r);
        assert_int_equal(r, 0);
        _cleanup_free_ char *wasm = build(SBX_RUNTIME_WASM, NULL, &r);
        assert_int_equal(r, 0);
        _cleanup_free_ char *runsc = build(SBX_RUNTIME_RUNSC, "http://10.255.255.1:3128", &r);
        assert_int_equal(r, 0);
        _cleanup_free_ char *kata = build(SBX_RUNTIME_KATA, NULL, &r);
        assert_int_equal(r, 0);
        _cleanup_free_ char *bare = build_unit(SBX_RUNTIME_RUNSC, NULL, true, &r);
        assert_int_equal(r, 0);

        assert_has_trusted_walls(trusted, wasm, NULL, "the wasm unit");
        assert_has_trusted_walls(trusted, runsc, "\"/run\"", "the runsc unit");
        assert_has_trusted_walls(trusted, kata, "\"/run\"", "the kata unit");
        assert_prop(wasm, "TemporaryFileSystem", "\"/run\"");
        assert_false(prop_has(wasm, "ExecStartEx", "\"privileged\""));
        /* The checker itself: the exception is only for the runtimes that
         * have a launcher, and a unit without the walls fails. */
        _cleanup_free_ char *no_run = first_missing_wall(trusted, runsc, NULL);
        assert_non_null(no_run);
        assert_non_null(strstr(no_run, "\"/run\""));
        _cleanup_free_ char *none = first_missing_wall(trusted, bare, "\"/run\"");
        assert_non_null(none);
}

/* The operator's extra allow-list reaches every class's filter. */
static void test_operator_syscall_allow_every_class(void **state) {
        char *extra[] = { (char *) "@resources", NULL };
        SbxRuntime runtimes[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_WASM, SBX_RUNTIME_RUNSC, SBX_RUNTIME_KATA };
        char **saved = config.syscall_allow;

        config.syscall_allow = extra;
        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                int r;
                _cleanup_free_ char *d = build(runtimes[i], NULL, &r);
                assert_int_equal(r, 0);
                assert_prop(d, "SystemCallFilter", "\"@resources\"");
        }
        config.syscall_allow = saved;
}

static void test_proxy_environment(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_SYSTEMD, "http://127.0.0.1:3128", &r);

        assert_int_equal(r, 0);
        assert_prop(d, "Environment", "\"HTTPS_PROXY=http://127.0.0.1:3128\"");
        assert_prop(d, "Environment", "\"https_proxy=http://127.0.0.1:3128\"");
}

static void test_runsc_unit(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_RUNSC, "http://10.255.255.1:3128", &r);

        assert_int_equal(r, 0);
        /* The launcher runs privileged and execs runsc; the workload's argv
         * follows "--" untouched; only sandboxd's own values travel as
         * --setenv, the spec's as the environment credential. */
        assert_prop(d, "ExecStartEx", "\"/usr/libexec/sandboxd/sandbox-launch\"");
        assert_prop(d, "ExecStartEx", "\"run\"");
        assert_prop(d, "ExecStartEx", "\"--runtime=runsc\"");
        assert_prop(d, "ExecStartEx", "\"--runtime-path=/usr/bin/runsc\"");
        assert_prop(d, "ExecStartEx", "\"--platform=systrap\"");
        /* the default slack that batches an idle systrap sentry's wakeups */
        assert_prop(d, "ExecStartEx", "\"--timer-slack-usec=20000\"");
        /* with a proxy, the sandbox gets the veth to its listeners */
        assert_prop(d, "ExecStartEx", "\"--network=veth\"");
        assert_false(prop_has(d, "ExecStartEx", "--network=none"));
        assert_prop(d, "ExecStartEx", "\"--pids=256\"");
        assert_prop(d, "ExecStartEx", "\"--memory=67108864\"");
        assert_prop(d, "ExecStartEx", "\"--cpu-percent=25\"");
        assert_false(prop_has(d, "ExecStartEx", "LANG=C.UTF-8"));
        assert_prop(d, "ExecStartEx", "\"--setenv=HTTPS_PROXY=http://10.255.255.1:3128\"");
        assert_prop(d, "LoadCredential", "\"sandboxd.environment\"");
        assert_prop(d, "ExecStartEx", "\"echo $HOME\"");
        assert_prop(d, "ExecStartEx", "\"privileged\"");
        assert_prop(d, "ExecStartEx", "\"no-env-expand\"");
        assert_prop(d, "ExecStopPostEx", "\"cleanup\"");
        assert_prop(d, "ExecStopPostEx", "\"--id=0123456789ab\"");
        /* The unit still is the outer wall: own UID, caps, no network. */
        assert_prop(d, "DynamicUser", "BOOLEAN true");
        assert_prop(d, "PrivateNetwork", "BOOLEAN true");
        assert_prop(d, "MemoryMax", "UINT64 67108864");
        /* The spec's 256 holds inside gVisor; the host cap leaves runsc room. */
        assert_prop(d, "TasksMax", "UINT64 1088");
        assert_prop(d, "ExecStartEx", "\"--pids=256\"");
        assert_prop(d, "CapabilityBoundingSet", "UINT64 0");
        assert_null(strstr(d, "sandbox-exec"));
        /* The launcher is privileged, which exempts it from these, so they
         * bind only the unit's unprivileged commands (runsc builds namespaces
         * and ptraces); the /run tmpfs would reach the launcher too. */
        assert_prop(d, "SystemCallFilter", "\"@system-service\"");
        assert_prop(d, "RestrictNamespaces", "UINT64 0");
        assert_false(prop_has(d, "TemporaryFileSystem", "\"/run\""));
        assert_prop(d, "InaccessiblePaths", "\"-/run/systemd/journal\"");
        assert_prop(d, "InaccessiblePaths", "\"-/run/sandboxd\"");
        assert_prop(d, "TemporaryFileSystem", "\"/dev/shm\"");
        /* Egress: the worker waits for and joins its proxy's listener, and
         * does not start without it. */
        assert_prop(d, "Requires", "\"sandbox-0123456789ab-egress.socket\"");
        assert_null(strstr(d, "\"Wants\""));
        assert_prop(d, "After", "\"sandbox-0123456789ab-egress.socket\"");
        assert_prop(d, "JoinsNamespaceOf", "\"sandbox-0123456789ab-egress.socket\"");
}

#define SERVICE_SECRET "svcsecret-8d2c71"

static void add_service(const char *name) {
        SbxService *n = realloc(spec.services, (spec.n_services + 1) * sizeof(SbxService));

        assert_non_null(n);
        spec.services = n;
        spec.services[spec.n_services++] = (SbxService) {
                .set = SERVICE_HAS_URL | SERVICE_HAS_CREDENTIAL,
                .name = strdup(name),
                .url = strdup("https://api.example.test/v1"),
                .credential = (uint8_t *) strdup(SERVICE_SECRET),
                .credential_size = strlen(SERVICE_SECRET),
        };
        spec.set |= SPEC_HAS_SERVICES;
}

static void drop_services(void) {
        for (size_t i = 0; i < spec.n_services; i++)
                sbx_service_done(&spec.services[i]);
        free(spec.services);
        spec.services = NULL;
        spec.n_services = 0;
        spec.set &= ~SPEC_HAS_SERVICES;
}

/* Services: every class finds each one's base URL in its environment (the
 * unit's for the shared kernel, the launcher's --setenv for a sandbox), the
 * worker joins the proxy's listeners even without egress, a gVisor sandbox
 * uses the unit's namespace where they listen, and the secret is nowhere. */
static void test_service_environment(void **state) {
        static const SbxRuntime runtimes[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_RUNSC, SBX_RUNTIME_KATA, SBX_RUNTIME_WASM };

        add_service("github");
        add_service("pypi");
        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                bool launcher = runtimes[i] == SBX_RUNTIME_RUNSC || runtimes[i] == SBX_RUNTIME_KATA;
                const char *prop = launcher ? "ExecStartEx" : "Environment";
                bool veth = runtimes[i] == SBX_RUNTIME_RUNSC;
                const char *github = veth   ? "\"--setenv=SANDBOX_SERVICE_GITHUB_URL=http://10.255.255.1:3129\""
                                     : launcher ? "\"--setenv=SANDBOX_SERVICE_GITHUB_URL=http://127.0.0.1:3129\""
                                              : "\"SANDBOX_SERVICE_GITHUB_URL=http://127.0.0.1:3129\"";
                const char *pypi = veth   ? "\"--setenv=SANDBOX_SERVICE_PYPI_URL=http://10.255.255.1:3130\""
                                   : launcher ? "\"--setenv=SANDBOX_SERVICE_PYPI_URL=http://127.0.0.1:3130\""
                                            : "\"SANDBOX_SERVICE_PYPI_URL=http://127.0.0.1:3130\"";
                int r;
                _cleanup_free_ char *d = build(runtimes[i], NULL, &r);

                assert_int_equal(r, 0);
                assert_prop(d, prop, github);
                assert_prop(d, prop, pypi);
                /* No CONNECT egress: no proxy variables. */
                assert_null(strstr(d, "HTTPS_PROXY"));
                assert_prop(d, "Requires", "\"sandbox-0123456789ab-egress.socket\"");
                assert_prop(d, "JoinsNamespaceOf", "\"sandbox-0123456789ab-egress.socket\"");
                if (runtimes[i] == SBX_RUNTIME_RUNSC)
                        assert_prop(d, "ExecStartEx", "\"--network=veth\"");
                if (strstr(d, SERVICE_SECRET))
                        fail_msg("runtime %s: a service's secret is in the unit", sbx_runtime_to_string(runtimes[i]));
                /* The worker itself never loads the broker's secrets. */
                assert_false(prop_has(d, "LoadCredential", "broker-"));
        }
        drop_services();
}

/* Without egress a gVisor worker gets gVisor's own loopback and nothing of
 * the host's network stack, not even the unit's empty namespace. */
static void test_runsc_unit_without_egress(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_RUNSC, NULL, &r);

        assert_int_equal(r, 0);
        assert_prop(d, "ExecStartEx", "\"--network=none\"");
        assert_false(prop_has(d, "ExecStartEx", "--network=veth"));
        assert_false(prop_has(d, "ExecStartEx", "HTTPS_PROXY"));
        assert_prop(d, "PrivateNetwork", "BOOLEAN true");
        assert_null(strstr(d, "egress.socket"));
}

/* The cleanup unit runs the launcher's cleanup with a plain ExecStart=, the
 * one form systemd 252 reads back from a transient unit file on reload. */
static void test_cleanup_unit(void **state) {
        int r;
        _cleanup_free_ char *d = build_unit(SBX_RUNTIME_RUNSC, NULL, true, &r);

        assert_int_equal(r, 0);
        assert_prop(d, "Type", "\"oneshot\"");
        assert_prop(d, "ExecStart", "\"/usr/libexec/sandboxd/sandbox-launch\"");
        assert_prop(d, "ExecStart", "\"cleanup\"");
        assert_prop(d, "ExecStart", "\"--id=0123456789ab\"");
        assert_prop(d, "ExecStart", "\"--runtime-path=/usr/bin/runsc\"");
        assert_null(strstr(d, "ExecStartEx"));
        assert_null(strstr(d, "ExecStopPostEx"));
        assert_false(prop_has(d, "ExecStart", "\"run\""));
        /* A helper has no path to the system bus or to PID 1 (issue 22). */
        assert_prop(d, "InaccessiblePaths", "\"-/run/dbus\"");
        assert_prop(d, "InaccessiblePaths", "\"-/run/systemd/private\"");
        assert_null(build_unit(SBX_RUNTIME_SYSTEMD, NULL, true, &r));
        assert_int_equal(r, -EINVAL);
}

/* Suspend: a oneshot with a plain ExecStart= of the launcher's checkpoint,
 * capped; resume: the worker's own unit, whose launcher restores. */
static void test_checkpoint_and_restore_units(void **state) {
        int r;
        _cleanup_free_ char *ck = build_any(SBX_RUNTIME_RUNSC, NULL, 2, false, &r);
        _cleanup_free_ char *resumed = NULL, *plain = NULL;

        assert_int_equal(r, 0);
        assert_prop(ck, "Type", "\"oneshot\"");
        assert_prop(ck, "ExecStart", "\"checkpoint\"");
        assert_prop(ck, "ExecStart", "\"--id=0123456789ab\"");
        assert_prop(ck, "ExecStart", "\"--platform=systrap\"");
        assert_prop(ck, "ExecStart", "\"--image-max=1073741824\"");
        assert_prop(ck, "InaccessiblePaths", "\"-/run/dbus\"");
        assert_prop(ck, "InaccessiblePaths", "\"-/run/systemd/private\"");
        assert_false(prop_has(ck, "ExecStart", "\"--home="));
        assert_false(prop_has(ck, "ExecStart", "\"--\""));
        assert_null(build_any(SBX_RUNTIME_SYSTEMD, NULL, 2, false, &r));
        assert_int_equal(r, -EOPNOTSUPP);

        resumed = build_any(SBX_RUNTIME_RUNSC, NULL, 0, true, &r);
        assert_int_equal(r, 0);
        assert_prop(resumed, "ExecStartEx", "\"run\"");
        assert_prop(resumed, "ExecStartEx", "\"--restore=yes\"");
        assert_prop(resumed, "ExecStartEx", "\"--network=none\"");
        /* Started only once the launcher saw the restore run (READY=1). */
        assert_prop(resumed, "Type", "\"notify\"");
        assert_prop(resumed, "NotifyAccess", "\"main\"");
        assert_true(prop_has(resumed, "TimeoutStartUSec", ""));
        plain = build(SBX_RUNTIME_RUNSC, NULL, &r);
        assert_false(prop_has(plain, "ExecStartEx", "--restore"));
        assert_prop(plain, "Type", "\"exec\"");
        assert_false(prop_has(plain, "NotifyAccess", ""));
}

static void test_kata_unit(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_KATA, NULL, &r);

        assert_int_equal(r, 0);
        assert_prop(d, "ExecStartEx", "\"--runtime=kata\"");
        assert_prop(d, "ExecStartEx", "\"--runtime-path=/usr/bin/kata-runtime\"");
        assert_false(prop_has(d, "ExecStartEx", "--platform"));
        assert_false(prop_has(d, "ExecStartEx", "--network"));
        assert_false(prop_has(d, "ExecStartEx", "--timer-slack-usec"));
        assert_prop(d, "ExecStopPostEx", "\"--runtime=kata\"");
        assert_prop(d, "PrivateNetwork", "BOOLEAN true");
        assert_prop(d, "NoNewPrivileges", "BOOLEAN true");
        assert_null(strstr(d, "egress.socket"));
}

/* No value of the spec's Environment anywhere in what goes to systemd: the
 * dump holds every string of the message (property names, values, argv,
 * flags), for every class and with or without a proxy. The names may show
 * (they are not secret); the unit's Environment= keeps sandboxd's own. */
static void test_environment_values_absent(void **state) {
        static const SbxRuntime runtimes[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_RUNSC, SBX_RUNTIME_KATA, SBX_RUNTIME_WASM };
        static const char * const proxies[] = { NULL, "http://127.0.0.1:3128" };

        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++)
                for (size_t j = 0; j < ELEMENTSOF(proxies); j++) {
                        int r;
                        _cleanup_free_ char *d = build(runtimes[i], proxies[j], &r);

                        assert_int_equal(r, 0);
                        assert_non_null(strstr(d, "\"HOME=/var/lib/sandboxd/workers/0123456789ab\""));
                        if (strstr(d, ENV_SECRET) || strstr(d, "C.UTF-8"))
                                fail_msg("runtime %s (proxy %s): a spec environment value is in the unit: %s",
                                         sbx_runtime_to_string(runtimes[i]), proxies[j] ?: "none", d);
                        assert_prop(d, "LoadCredential", "\"sandboxd.environment\"");
                }
        /* Without Environment there is no environment credential to load. */
        char **saved = spec.environment;
        int r;
        spec.environment = NULL;
        _cleanup_free_ char *d = build(SBX_RUNTIME_SYSTEMD, NULL, &r);
        spec.environment = saved;
        assert_int_equal(r, 0);
        assert_false(prop_has(d, "LoadCredential", "sandboxd.environment"));
        assert_false(prop_has(d, "ExecStartEx", "--environment"));
        assert_prop(d, "LoadCredential", "\"token\"");
}

/* wasm: the runtime's command line follows the wrapper, module last. */
static void test_wasm_unit(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_WASM, NULL, &r);

        assert_int_equal(r, 0);
        assert_prop(d, "ExecStartEx", "\"/usr/libexec/sandboxd/sandbox-exec\"");
        assert_prop(d, "ExecStartEx", "\"--dir=/var/lib/sandboxd/workers/0123456789ab\"");
        /* The runtime is what must be executable: ARGV[0] after the "--". */
        assert_prop_seq(d, "ExecStartEx", (const char * const[]) { "\"--\"", "\"/usr/bin/wasmtime\"", NULL });
        assert_null(strstr(d, "ExecStartPre"));
        assert_prop(d, "ExecStartEx", "\"no-env-expand\"");
        assert_null(strstr(d, "\"privileged\""));
}

/* A shared-kernel worker has one command: sandbox-exec checks, inside its
 * walls and unprivileged, that none of its namespaces is PID 1's and that
 * its command can run, then becomes the command. No ExecStartPre=, since
 * each extra command sets up the unit's mount namespace again (but for a
 * disk's, which is "+" and sets none up: test_disk). */
static void test_namespace_check(void **state) {
        static const SbxRuntime shared_kernel[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_WASM };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(shared_kernel); i++) {
                _cleanup_free_ char *d = build(shared_kernel[i], NULL, &r);

                assert_int_equal(r, 0);
                assert_prop_seq(d, "ExecStartEx", (const char * const[]) {
                        "\"/usr/libexec/sandboxd/sandbox-exec\"", "\"/usr/libexec/sandboxd/sandbox-exec\"",
                        "\"--id=0123456789ab\"", "\"--net=4:4026531992\"", "\"--ipc=4:4026531839\"",
                        "\"--mnt=4:4026531841\"", NULL });
                assert_false(prop_has(d, "ExecStartEx", "privileged"));
                assert_false(prop_has(d, "ExecStartEx", "--check"));
                /* Exactly one command. */
                assert_null(strstr(d, "ExecStartPre"));
                assert_null(strstr(d, "sandbox-walls"));
                assert_null(strstr(strstr(d, "\"ExecStartEx\"") + 1, "\"ExecStartEx\""));
                assert_null(strstr(d, "\"ExecStart\""));
        }
}

/* The launcher checks its own: no ExecStartPre for sandboxed runtimes. */
static void test_no_namespace_check_for_launcher(void **state) {
        int r;
        _cleanup_free_ char *d = build(SBX_RUNTIME_RUNSC, NULL, &r);

        assert_int_equal(r, 0);
        assert_null(strstr(d, "ExecStartPre"));
        assert_null(strstr(d, "sandbox-walls"));
}

/* Without PID 1's identities the check cannot be made, and the unit is not
 * built at all rather than built without it. */
static void test_namespace_check_fails_closed(void **state) {
        NsIdSet partial = probed_host_ns;
        int r;

        host_ns = NULL;
        assert_null(build(SBX_RUNTIME_SYSTEMD, NULL, &r));
        assert_int_equal(r, -EINVAL);
        partial.mask &= ~NS_MASK(NS_MNT);
        host_ns = &partial;
        assert_null(build(SBX_RUNTIME_WASM, NULL, &r));
        assert_int_equal(r, -EINVAL);
        host_ns = &probed_host_ns;
}

/* A workspace is mounted on the home by a unit of its own, in the host's
 * namespace, which the worker requires and starts after, for the shared
 * kernel and gVisor alike; only ext4, never a probed type. */
static char *build_workspace_unit(int *ret) {
        WorkerUnitParams p = {
                .id = "0123456789ab",
                .workspace_image = "/var/lib/sandboxd/workspaces/proj.img",
        };
        sd_bus_message *m = NULL;
        char *dump = NULL;

        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(sa(sv))") >= 0);
        *ret = worker_workspace_append_aux_unit(m, &p);
        if (*ret >= 0 && sd_bus_message_close_container(m) >= 0)
                dump = test_message_dump(m);
        sd_bus_message_unref(m);
        return dump;
}

static void test_workspace_mount(void **state) {
        static const SbxRuntime runtimes[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_RUNSC };
        int r;

        workspace_image = "/var/lib/sandboxd/workspaces/proj.img";
        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                _cleanup_free_ char *d = build(runtimes[i], NULL, &r);

                assert_int_equal(r, 0);
                assert_prop(d, "Requires", "\"sandbox-0123456789ab-workspace.service\"");
                assert_prop(d, "After", "\"sandbox-0123456789ab-workspace.service\"");
                /* The home systemd makes and chowns is still the state directory. */
                assert_prop(d, "StateDirectory", "\"sandboxd/workers/0123456789ab\"");
                assert_null(strstr(d, "/bin/mount"));
        }
        workspace_image = NULL;
        _cleanup_free_ char *plain = build(SBX_RUNTIME_SYSTEMD, NULL, &r);
        assert_int_equal(r, 0);
        assert_null(strstr(plain, "workspace.service"));

        _cleanup_free_ char *ws = build_workspace_unit(&r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(ws, "\"sandbox-0123456789ab-workspace.service\""));
        assert_prop(ws, "Type", "\"oneshot\"");
        assert_prop(ws, "RemainAfterExit", "true");
        assert_prop(ws, "StopWhenUnneeded", "true");
        assert_prop(ws, "ExecStart", "\"/bin/mkdir\"");
        assert_prop(ws, "ExecStart", "\"/bin/mount\"");
        assert_prop(ws, "ExecStart", "\"ext4\"");
        assert_prop(ws, "ExecStart", "\"loop,nosuid,nodev,noatime\"");
        assert_prop(ws, "ExecStart", "\"/var/lib/sandboxd/workspaces/proj.img\"");
        assert_prop(ws, "ExecStart", "\"/var/lib/private/sandboxd/workers/0123456789ab\"");
        assert_prop(ws, "ExecStop", "\"/bin/umount\"");
        assert_prop(ws, "ExecStop", "\"/bin/rmdir\"");
        /* The unmount comes first: nothing is removed below a mount that stayed. */
        assert_true(strstr(ws, "/bin/umount") < strstr(ws, "/bin/rmdir"));
        /* Nothing of the host namespace is taken away from it: it must mount there. */
        assert_null(strstr(ws, "PrivateDevices"));
        assert_null(strstr(ws, "ProtectSystem"));

        WorkerUnitParams none = { .id = "0123456789ab" };
        sd_bus_message *m = NULL;
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_int_equal(worker_workspace_append_aux_unit(m, &none), 0);
        sd_bus_message_unref(m);
}

/* Every worker's disk (worker-disk.h): the worker requires and starts after
 * its disk unit; where the runtime has no home or /tmp of its own (the shared
 * kernel, wasm) the unit binds the disk's home on the home's link and its tmp
 * on /tmp (a bind that wins over PrivateTmp=), after an ExecStartPre=+ that
 * gives the home to the worker's UID; a gVisor home is the bundle's bind of
 * it, which the launcher binds in its own namespace (--home-disk). No one
 * binds it on the host. */
static void test_disk(void **state) {
        static const SbxRuntime bind_tmp[] = { SBX_RUNTIME_SYSTEMD, SBX_RUNTIME_WASM };
        static const SbxRuntime own_tmp[] = { SBX_RUNTIME_RUNSC, SBX_RUNTIME_KATA };
        int r;

        disk_bytes = UINT64_C(64) << 20;
        for (size_t i = 0; i < ELEMENTSOF(bind_tmp) + ELEMENTSOF(own_tmp); i++) {
                bool bind = i < ELEMENTSOF(bind_tmp);
                SbxRuntime rt = bind ? bind_tmp[i] : own_tmp[i - ELEMENTSOF(bind_tmp)];
                _cleanup_free_ char *d = build(rt, NULL, &r);

                assert_int_equal(r, 0);
                assert_prop(d, "Requires", "\"sandbox-0123456789ab-disk.service\"");
                assert_prop(d, "After", "\"sandbox-0123456789ab-disk.service\"");
                assert_prop(d, "StateDirectory", "\"sandboxd/workers/0123456789ab\"");
                if (bind) {
                        static const char * const own[] = { "\"" SANDBOXD_LIBEXECDIR "/sandbox-disk\"",
                                                            "\"" SANDBOXD_LIBEXECDIR "/sandbox-disk\"", "\"own\"",
                                                            "\"/var/lib/sandboxd/disks/0123456789ab\"",
                                                            "\"/var/lib/private/sandboxd/workers/0123456789ab\"",
                                                            NULL };
                        assert_prop(d, "BindPaths", "\"/var/lib/sandboxd/disks/0123456789ab/tmp\"");
                        assert_prop(d, "BindPaths", "\"/tmp\"");
                        /* On the link, which systemd follows after binding
                         * the state directory, not on the state directory. */
                        assert_prop(d, "BindPaths", "\"/var/lib/sandboxd/disks/0123456789ab/home\"");
                        assert_prop(d, "BindPaths", "\"/var/lib/sandboxd/workers/0123456789ab\"");
                        assert_prop_seq(d, "ExecStartPreEx", own);
                        assert_prop(d, "ExecStartPreEx", "\"privileged\"");
                        assert_null(strstr(d, "--home-disk"));
                } else {
                        assert_null(strstr(d, "BindPaths"));
                        assert_null(strstr(d, "ExecStartPre"));
                        assert_prop(d, "ExecStartEx", "\"--home-disk=yes\"");
                }
                assert_int_equal(worker_disk_bound_by_launcher(rt), !bind);
                assert_null(strstr(d, "--disk="));
        }
        disk_bytes = 0;
        _cleanup_free_ char *none = build(SBX_RUNTIME_SYSTEMD, NULL, &r);
        assert_int_equal(r, 0);
        assert_null(strstr(none, "disk.service"));
        assert_null(strstr(none, "BindPaths"));
        assert_null(strstr(none, "--home-disk"));
        _cleanup_free_ char *none_runsc = build(SBX_RUNTIME_RUNSC, NULL, &r);
        assert_int_equal(r, 0);
        assert_null(strstr(none_runsc, "--home-disk"));

        assert_null(strstr(none, "ExecStartPre"));
        /* The disk unit: made and mounted in the host's namespace, once, its
         * home bound by no one there. */
        sd_bus_message *m = NULL;
        char *dump;
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit"), 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(sa(sv))") >= 0);
        assert_int_equal(worker_disk_append_aux_unit(m, "0123456789ab", UINT64_C(64) << 20, "/sbin/mkfs.ext4"), 0);
        /* No disk of its own (a workspace): nothing appended. */
        assert_int_equal(worker_disk_append_aux_unit(m, "0123456789ab", 0, "/sbin/mkfs.ext4"), 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        dump = test_message_dump(m);
        sd_bus_message_unref(m);
        assert_non_null(strstr(dump, "\"sandbox-0123456789ab-disk.service\""));
        assert_prop(dump, "Type", "\"oneshot\"");
        assert_prop(dump, "RemainAfterExit", "true");
        assert_prop(dump, "StopWhenUnneeded", "true");
        /* Beside the workers, not in system.slice (unit_open_mount_aux). */
        assert_prop(dump, "Slice", "\"sandbox.slice\"");
        /* A program, not a script inline: systemd 252 mangles an inline
         * script's "$" in the transient file a daemon-reload reads back. */
        assert_prop(dump, "ExecStart", "\"" SANDBOXD_LIBEXECDIR "/sandbox-disk\"");
        assert_prop(dump, "ExecStart", "\"setup\"");
        assert_null(strstr(dump, "/bin/sh"));
        assert_prop(dump, "ExecStart", "\"/var/lib/private/sandboxd/disks/0123456789ab\"");
        /* Mounted outside /var/lib/private (worker-disk-layout.h). */
        assert_prop(dump, "ExecStart", "\"/var/lib/sandboxd/disks/0123456789ab\"");
        assert_prop(dump, "ExecStart", "\"-\"");
        assert_prop(dump, "ExecStopPost", "\"-\"");
        assert_null(strstr(dump, "/var/lib/private/sandboxd/workers"));
        assert_prop(dump, "ExecStart", "\"67108864\"");
        assert_prop(dump, "ExecStart", "\"/sbin/mkfs.ext4\"");
        /* Its cleanup also after a setup that failed or was stopped half-way. */
        assert_prop(dump, "ExecStopPost", "\"" SANDBOXD_LIBEXECDIR "/sandbox-disk\"");
        assert_prop(dump, "ExecStopPost", "\"stop\"");
        assert_null(strstr(dump, "\"ExecStop\""));
        assert_null(strstr(dump, "PrivateDevices"));
        assert_null(strstr(strstr(dump, "disk.service") + 1, "disk.service"));
        free(dump);
}

/* Admission: the sum of the caps within Disk:TotalMax, and every disk filled
 * to its cap still leaving Disk:KeepFree of the host's free space. */
static void test_disk_admission(void **state) {
        const uint64_t G = UINT64_C(1) << 30;
        SbxConfig c;
        SbxError e = {};

        sbx_config_init_defaults(&c);
        c.disk_total_max = 4 * G;
        c.disk_keep_free = 1 * G;
        assert_int_equal(worker_disk_admit(&c, 3 * G, 0, 1 * G, 100 * G, &e), 0);
        assert_true(worker_disk_admit(&c, 3 * G, 0, 1 * G + 1, 100 * G, &e) < 0);
        assert_string_equal(e.name, SBX_ERROR_LIMIT_OUT_OF_RANGE);
        assert_non_null(strstr(e.message, "TotalMax"));
        e = (SbxError) {};
        /* Held caps not yet written count against the free space. */
        assert_int_equal(worker_disk_admit(&c, 2 * G, 2 * G, 1 * G, 4 * G, &e), 0);
        assert_true(worker_disk_admit(&c, 2 * G, 2 * G, 1 * G, 4 * G - 1, &e) < 0);
        /* A lack of room is named as such, as for a workspace. */
        assert_string_equal(e.name, SBX_ERROR_INSUFFICIENT_SPACE);
        assert_non_null(strstr(e.message, "KeepFree"));
        e = (SbxError) {};
        /* No overflow: absurd numbers are refused, not wrapped. */
        assert_true(worker_disk_admit(&c, UINT64_MAX, 0, 1, UINT64_MAX, &e) < 0);
        e = (SbxError) {};
        c.disk_total_max = UINT64_MAX;
        assert_true(worker_disk_admit(&c, 0, UINT64_MAX, 2, UINT64_MAX, &e) < 0);
        e = (SbxError) {};
        assert_true(worker_disk_admit(&c, 0, UINT64_MAX - 5, 1, UINT64_MAX, &e) < 0);
        e = (SbxError) {};
        sbx_config_done(&c);

        /* A failed disk unit shows in the worker's start failure by name. */
        char why[256];
        worker_disk_start_job_why("0123456789ab", G, "dependency", why, sizeof(why));
        assert_non_null(strstr(why, "sandbox-0123456789ab-disk.service"));
        assert_non_null(strstr(why, "loop devices"));
        worker_disk_start_job_why("0123456789ab", 0, "dependency", why, sizeof(why));
        assert_string_equal(why, "start job dependency");
        worker_disk_start_job_why("0123456789ab", G, "timeout", why, sizeof(why));
        assert_string_equal(why, "start job timeout");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_disk),
                cmocka_unit_test(test_disk_admission),
                cmocka_unit_test(test_workspace_mount),
                cmocka_unit_test(test_trusted_unit),
                cmocka_unit_test(test_trusted_hides_host_sockets),
                cmocka_unit_test(test_every_class_has_trusted_walls),
                cmocka_unit_test(test_operator_syscall_allow_every_class),
                cmocka_unit_test(test_namespace_check),
                cmocka_unit_test(test_no_namespace_check_for_launcher),
                cmocka_unit_test(test_namespace_check_fails_closed),
                cmocka_unit_test(test_proxy_environment),
                cmocka_unit_test(test_service_environment),
                cmocka_unit_test(test_runsc_unit),
                cmocka_unit_test(test_runsc_unit_without_egress),
                cmocka_unit_test(test_kata_unit),
                cmocka_unit_test(test_cleanup_unit),
                cmocka_unit_test(test_checkpoint_and_restore_units),
                cmocka_unit_test(test_environment_values_absent),
                cmocka_unit_test(test_wasm_unit),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
