/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <linux/capability.h>
#include <sys/socket.h>

#include "egress-units.h"
#include "env-cred.h"
#include "uid-keep.h"
#include "systemd-bus.h"
#include "unit-props.h"
#include "worker-spawn.h"
#include "worker-disk.h"

/* Seccomp for shared-kernel workers: what a normal service needs, minus the
 * groups no agent workload has a reason to touch. systemd resolves the group
 * names against the running kernel's libseccomp. io_uring is in
 * @system-service on systemd 252 but is a large kernel attack surface of its
 * own (and its requests bypass a seccomp filter once a ring exists), so it
 * goes by name. */
static const char * const syscall_allow[] = { "@system-service", NULL };
static const char * const syscall_deny[] = {
        "@privileged", "@mount", "@module", "@raw-io", "@reboot", "@swap", "@obsolete",
        "@clock", "@cpu-emulation", "@debug", "@keyring",
        "io_uring_setup", "io_uring_enter", "io_uring_register", NULL
};

/* Host sockets: journald, the system bus, the manager's private and notify
 * sockets, userdb, resolved, sandboxd's credential socket, /dev/log's target
 * all live under /run (/var/run is a symlink to it); a read-only mount does
 * not stop connect(), so /run is replaced. systemd still mounts the unit's
 * own /run/credentials/<unit> on top. */
static const char * const hidden_tmpfs[] = { "/run", "ro,nosuid,nodev,noexec,mode=0755" };
/* PrivateDevices= bind-mounts the host's /dev/shm into the private /dev, so
 * POSIX shared memory would be one namespace for every worker. */
static const char * const private_shm[] = { "/dev/shm", "rw,nosuid,nodev,noexec,mode=1777" };
/* PrivateDevices= also carries over the host's mqueue and hugetlbfs mounts:
 * files there are message queues and pages every worker would share. */
static const char * const hidden_dev[] = { "-/dev/mqueue", "-/dev/hugepages", NULL };
/* Where a runtime's privileged launcher keeps the host's /run (see below),
 * the sockets are hidden one by one from the unit's unprivileged commands
 * (systemd exempts "+" commands from InaccessiblePaths=). Not /run/systemd
 * as a whole: systemd's own inaccessible nodes, the sources of these very
 * mounts, live in /run/systemd/inaccessible. */
static const char * const hidden_sockets[] = {
        "-/run/systemd/journal", "-/run/systemd/private", "-/run/systemd/notify", "-/run/systemd/userdb",
        "-/run/systemd/resolve", "-/run/systemd/io.system.ManagedOOM", "-/run/dbus", "-/run/sandboxd",
        "-/run/host", "-/run/sandboxd-endpoints", NULL
};

static int append_bool(sd_bus_message *m, const char *name, int b) {
        return sd_bus_message_append(m, "(sv)", name, "b", b);
}

static int append_string(sd_bus_message *m, const char *name, const char *s) {
        return sd_bus_message_append(m, "(sv)", name, "s", s);
}

static int append_u64(sd_bus_message *m, const char *name, uint64_t v) {
        return sd_bus_message_append(m, "(sv)", name, "t", v);
}

static int append_strv(sd_bus_message *m, const char *name, const char * const *l) {
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **) l);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* SystemCallFilter= is (bas): allow-list flag plus names. */
static int append_syscall_filter(sd_bus_message *m, int allow, const char * const *names) {
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "SystemCallFilter");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "(bas)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "bas");
        if (r >= 0)
                r = sd_bus_message_append(m, "b", allow);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **) names);
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* TemporaryFileSystem=a(ss): a mount point and its tmpfs options. */
static int append_tmpfs(sd_bus_message *m, const char * const *fs) {
        return sd_bus_message_append(m, "(sv)", "TemporaryFileSystem", "a(ss)", 1, fs[0], fs[1]);
}

static int append_address_families(sd_bus_message *m) {
        static const char * const families[] = { "AF_UNIX", "AF_INET", "AF_INET6", NULL };
        return sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1,
                                     3, families[0], families[1], families[2]);
}

typedef struct IpPrefix {
        int family;
        uint8_t addr[16];
        uint32_t prefixlen;
} IpPrefix;

/* IPAddressAllow=/IPAddressDeny= are a(iayu): family, address bytes, prefix. */
static int append_ip_property(sd_bus_message *m, const char *name, const IpPrefix *list, size_t n) {
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(iayu)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(iayu)");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = sd_bus_message_open_container(m, 'r', "iayu");
                if (r >= 0)
                        r = sd_bus_message_append(m, "i", list[i].family);
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', list[i].addr, list[i].family == AF_INET ? 4 : 16);
                if (r >= 0)
                        r = sd_bus_message_append(m, "u", list[i].prefixlen);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* IPAddressDeny=any with IPAddressAllow=localhost: a second wall where the
 * kernel has the BPF firewall (the private namespace is the first). Loopback
 * stays open because the egress proxy listens there, inside the namespace. */
static int append_ip_firewall(sd_bus_message *m) {
        static const IpPrefix localhost[] = {
                { AF_INET, { 127, 0, 0, 0 }, 8 },
                { AF_INET6, { [15] = 1 }, 128 },
        };
        static const IpPrefix any[] = {
                { AF_INET, {}, 0 },
                { AF_INET6, {}, 0 },
        };
        int r = append_ip_property(m, "IPAddressAllow", localhost, ELEMENTSOF(localhost));
        return r < 0 ? r : append_ip_property(m, "IPAddressDeny", any, ELEMENTSOF(any));
}

int unit_append_helper_oneshot(sd_bus_message *m, const char *description, uint64_t timeout_usec, const char *path,
                               char * const *argv) {
        int r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)",
                                      "Description", "s", description,
                                      "Type", "s", "oneshot",
                                      "CollectMode", "s", "inactive-or-failed",
                                      "PrivateNetwork", "b", 1,
                                      "TimeoutStartUSec", "t", timeout_usec);
        if (r >= 0)
                r = systemd_append_no_bus(m);
        return r < 0 ? r : unit_append_exec(m, "ExecStart", path, argv, NULL);
}

/* LoadCredential=a(ss): every credential points at sandboxd's socket; systemd
 * connects to it when the unit starts and names unit and credential in its
 * own socket address, so the value never touches a file or a bus property.
 * The spec's Environment is one more such credential (env-cred.h). */
static int append_credentials(sd_bus_message *m, const WorkerSpec *s) {
        bool env = strv_length(s->environment) > 0;
        int r;

        if (s->n_credentials == 0 && !env)
                return 0;
        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "LoadCredential");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(ss)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i < s->n_credentials; i++)
                r = sd_bus_message_append(m, "(ss)", s->credentials[i].name, SBX_CREDENTIAL_SOCKET);
        if (r >= 0 && env)
                r = sd_bus_message_append(m, "(ss)", SBX_ENV_CREDENTIAL, SBX_CREDENTIAL_SOCKET);
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

int worker_state_directory(const char *id, char **ret) {
        return asprintf(ret, "sandboxd/workers/%s", id) < 0 ? -ENOMEM : 0;
}

/* Only what sandboxd itself sets: Environment= is world-readable (the
 * transient unit file, the unit's bus property) and reaches the privileged
 * launcher, so the spec's values travel as a credential instead. */
static int build_environment(const WorkerUnitParams *p, char ***ret) {
        char **env = calloc(4 + p->spec->n_services, sizeof(char *));
        size_t k = 0;

        if (!env)
                return -ENOMEM;
        if (asprintf(&env[k++], "HOME=%s", p->home) < 0)
                goto oom;
        if (p->egress_proxy_url) {
                if (asprintf(&env[k++], "HTTPS_PROXY=%s", p->egress_proxy_url) < 0 ||
                    asprintf(&env[k++], "https_proxy=%s", p->egress_proxy_url) < 0)
                        goto oom;
        }
        /* Addresses, not secrets: the broker holds the credential. */
        for (size_t i = 0; i < p->spec->n_services; i++)
                if (worker_service_url_env(&p->spec->services[i], i, p->runtime, &env[k++]) < 0)
                        goto oom;
        *ret = env;
        return 0;
oom:
        env[k ? k - 1 : 0] = NULL;
        strv_free(env);
        return -ENOMEM;
}

/* A growing argv for the launcher's command line. */
typedef struct Argv {
        char **v;
        size_t n;
        int error;
} Argv;

_printf_(2, 3)
static void argv_addf(Argv *a, const char *fmt, ...) {
        char **nv;
        va_list ap;
        int k;

        if (a->error)
                return;
        nv = realloc(a->v, (a->n + 2) * sizeof(char *));
        if (!nv) {
                a->error = -ENOMEM;
                return;
        }
        a->v = nv;
        va_start(ap, fmt);
        k = vasprintf(&a->v[a->n], fmt, ap);
        va_end(ap);
        if (k < 0) {
                a->v[a->n] = NULL;
                a->error = -ENOMEM;
                return;
        }
        a->v[++a->n] = NULL;
}

/* Sandboxed runtimes: sandbox-launch runs privileged (it must set up the
 * runtime), learns the worker's dynamic UID, writes the OCI bundle and execs
 * the runtime, so the workload itself runs as that UID behind the runtime's
 * wall. The spec's environment is read by the launcher from the unit's
 * credential (never a command line); sandboxd's own, not secret, values
 * travel as --setenv. The launcher's own environment never reaches the sandbox. */
static int build_launcher_argv(const WorkerUnitParams *p, const char *verb, Argv *a) {
        const WorkerSpec *s = p->spec;
        const char *runtime = p->runtime == SBX_RUNTIME_KATA ? "kata" : "runsc";
        const char *path = p->runtime == SBX_RUNTIME_KATA ? p->config->kata_path : p->config->runsc_path;

        argv_addf(a, "%s", p->launcher_path);
        argv_addf(a, "%s", verb);
        argv_addf(a, "--id=%s", p->id);
        argv_addf(a, "--runtime=%s", runtime);
        argv_addf(a, "--runtime-path=%s", path);
        if (streq(verb, "cleanup"))
                return a->error;
        if (p->runtime == SBX_RUNTIME_RUNSC)
                argv_addf(a, "--platform=%s", p->config->runsc_platform);
        if (streq(verb, "checkpoint"))
                return a->error;
        if (p->restore)
                argv_addf(a, "--restore=yes");
        if (p->runtime == SBX_RUNTIME_RUNSC) {
                /* Only a worker with a proxy gets a link, the veth to the
                 * proxy's listeners (worker-veth.h); any other has gVisor's
                 * own loopback alone. */
                argv_addf(a, "--network=%s", p->egress_socket || p->gate_socket ? "veth" : "none");
                if (p->config->runsc_timer_slack_usec > 0)
                        argv_addf(a, "--timer-slack-usec=%" PRIu64, p->config->runsc_timer_slack_usec);
        }
        argv_addf(a, "--root-image=%s", p->config->root_image);
        argv_addf(a, "--home=%s", p->home);
        if (p->disk_bytes > 0 && worker_disk_bound_by_launcher(p->runtime))
                argv_addf(a, "--home-disk=yes");
        if (s->no_exec)
                argv_addf(a, "--noexec-home=yes");
        argv_addf(a, "--pids=%" PRIu64, s->limits.tasks_max);
        argv_addf(a, "--memory=%" PRIu64, s->limits.memory_max);
        argv_addf(a, "--cpu-percent=%" PRIu32, s->limits.cpu_quota_percent);
        /* The home's cap is its disk (worker-disk.h), under the bundle's
         * bind of the home: not the launcher's tmpfs (--disk), which would
         * be paid for in the sandbox's memory. */
        /* A pooled sandbox waits under its share of the pool's memory, from
         * which the bundle would size /tmp: it gets a default worker's /tmp
         * instead (oci-bundle.c: a quarter of MemoryMax, at most 64 MiB). */
        if (p->pool)
                argv_addf(a, "--pool=wait");
        if (p->pool)
                argv_addf(a, "--tmp-size=%" PRIu64, MIN(UINT64_C(64) << 20, p->config->defaults.memory_max / 4));
        if (p->egress_proxy_url) {
                argv_addf(a, "--setenv=HTTPS_PROXY=%s", p->egress_proxy_url);
                argv_addf(a, "--setenv=https_proxy=%s", p->egress_proxy_url);
        }
        for (size_t i = 0; i < s->n_services; i++) {
                _cleanup_free_ char *e = NULL;
                if (worker_service_url_env(&s->services[i], i, p->runtime, &e) < 0)
                        return -ENOMEM;
                argv_addf(a, "--setenv=%s", e);
        }
        argv_addf(a, "--");
        for (char **e = s->argv; e && *e; e++)
                argv_addf(a, "%s", *e);
        return a->error;
}

/* Trusted and wasm workers start through sandbox-exec, the unit's one
 * command: it verifies the walls, checks that ARGV[0] (PREFIX's, or the
 * spec's) can be executed, turns the environment credential into the
 * workload's environment, writes the readiness token to its stdout and
 * execs ARGV (PREFIX, then the spec's argv) verbatim.
 *
 * The walls: systemd runs a unit in the host's namespaces where it cannot
 * make private ones (a container without the capability: systemd 254+ only
 * logs a notice); unprivileged, the wrapper sees only its own namespaces, so
 * it is given PID 1's identities and refuses if any of them is its own. The
 * command: with the wrapper as the Type=exec main process, systemd counts
 * the start as done once the wrapper runs, so sandboxd waits for the token
 * as well (worker-ready.c): a failed check writes none and exits, and the
 * start fails (StartFailed, nothing left) as when the check was an
 * ExecStartPre=. It is not one because systemd sets up the unit's whole
 * mount namespace again for every command: a second one cost as much as
 * the start itself. (A sandboxed runtime's launcher runs privileged, sees
 * /proc/1 and checks its own.) */
static int append_wrapped_exec(sd_bus_message *m, const WorkerUnitParams *p, const char * const *prefix) {
        static const char * const no_expand[] = { "no-env-expand", NULL };
        Argv w = {};
        int r;

        /* Without PID 1's identities the check cannot be made: refuse. */
        if (!p->host_ns || (p->host_ns->mask & WALLS_NS_MASK) != WALLS_NS_MASK)
                return -EINVAL;
        argv_addf(&w, "%s", p->exec_path);
        argv_addf(&w, "--id=%s", p->id);
        for (NsKind k = 0; k < _NS_KIND_MAX; k++)
                if (WALLS_NS_MASK & NS_MASK(k))
                        argv_addf(&w, "--%s=%" PRIu64 ":%" PRIu64, ns_kind_to_string(k), p->host_ns->id[k].dev,
                                  p->host_ns->id[k].ino);
        if (strv_length(p->spec->environment) > 0)
                argv_addf(&w, "--environment");
        argv_addf(&w, "--");
        for (const char * const *e = prefix; e && *e; e++)
                argv_addf(&w, "%s", *e);
        for (char **e = p->spec->argv; e && *e; e++)
                argv_addf(&w, "%s", *e);
        r = w.error ?: unit_append_exec(m, "ExecStartEx", p->exec_path, w.v, no_expand);
        strv_free(w.v);
        return r;
}

static int append_exec(sd_bus_message *m, const WorkerUnitParams *p) {
        static const char * const launcher_flags[] = { "privileged", "no-env-expand", NULL };
        Argv run = {}, cleanup = {};
        int r;

        switch (p->runtime) {
        case SBX_RUNTIME_SYSTEMD:
                return append_wrapped_exec(m, p, NULL);
        case SBX_RUNTIME_RUNSC:
        case SBX_RUNTIME_KATA:
                r = build_launcher_argv(p, "run", &run);
                if (r >= 0)
                        r = build_launcher_argv(p, "cleanup", &cleanup);
                if (r >= 0)
                        r = unit_append_exec(m, "ExecStartEx", p->launcher_path, run.v, launcher_flags);
                /* The bundle and the runtime's state go with the worker, however it ended. */
                if (r >= 0)
                        r = unit_append_exec(m, "ExecStopPostEx", p->launcher_path, cleanup.v, launcher_flags);
                strv_free(run.v);
                strv_free(cleanup.v);
                return r;
        case SBX_RUNTIME_WASM: {
                /* The module is Argv[0]; the wasm runtime's own capability
                 * sandbox sees only the home, inside the unit's walls. */
                _cleanup_free_ char *dir = NULL;
                if (asprintf(&dir, "--dir=%s", p->home) < 0)
                        return -ENOMEM;
                const char * const prefix[] = { p->config->wasm_path, "run", dir, "--", NULL };
                return append_wrapped_exec(m, p, prefix);
        }
        default:
                return -EOPNOTSUPP;
        }
}

/* A restore reads the whole image (up to SuspendImageMax) before it runs. */
#define RESTORE_START_TIMEOUT_USEC (300 * USEC_PER_SEC)

/* Under gVisor the workload's processes are not host tasks: the spec's
 * TasksMax is enforced inside the sandbox (sandbox-launch passes it on), and
 * the unit's own cap must leave room for runsc's threads (about 32) and the
 * systrap helper threads each sandboxed process costs on the host (about 4). */
#define RUNSC_HOST_TASKS_BASE 64
#define RUNSC_HOST_TASKS_PER_PROCESS 4

uint64_t unit_tasks_max(const WorkerUnitParams *p) {
        uint64_t t = p->spec->limits.tasks_max;

        if (p->runtime != SBX_RUNTIME_RUNSC)
                return t;
        return t * RUNSC_HOST_TASKS_PER_PROCESS + RUNSC_HOST_TASKS_BASE;
}

int worker_cleanup_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p) {
        Argv cleanup = {};
        int r;

        if (p->runtime != SBX_RUNTIME_RUNSC && p->runtime != SBX_RUNTIME_KATA)
                return -EINVAL;
        r = build_launcher_argv(p, "cleanup", &cleanup);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = unit_append_helper_oneshot(m, "sandboxd cleanup of a sandboxed worker", UINT64_C(60) * USEC_PER_SEC,
                                               p->launcher_path, cleanup.v);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        strv_free(cleanup.v);
        return r;
}

int worker_checkpoint_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p, uint64_t image_max) {
        Argv ck = {};
        int r;

        if (p->runtime != SBX_RUNTIME_RUNSC)
                return -EOPNOTSUPP;
        r = build_launcher_argv(p, "checkpoint", &ck);
        if (r >= 0)
                argv_addf(&ck, "--image-max=%" PRIu64, image_max);
        r = r < 0 ? r : ck.error;
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        /* Writing a checkpoint costs about a second per GiB here; a big
         * sandbox on a slow disk gets its time, for each of the launcher's
         * up to three attempts of at most 120 s, and what comes around them
         * (launch-suspend.c: the wait for the last restore's image, 30 s,
         * the wait for the sandbox to run, 30 s and one runsc state of 20 s,
         * the stats, 20 s, a runsc state after each failed attempt, 20 s,
         * the backoff): 502 s at worst; and for each attempt the wait for
         * the sandbox's TCP handshakes to end, its pause and resume, and
         * after a failed one a second look whether it survived
         * (launch-suspend.c, at most 100 s): 802 s at worst. */
        if (r >= 0)
                r = unit_append_helper_oneshot(m, "sandboxd checkpoint of a suspended worker",
                                               UINT64_C(840) * USEC_PER_SEC, p->launcher_path, ck.v);
        /* Its UID is reserved before the checkpoint ends the worker's unit. */
        if (r >= 0)
                r = uid_keep_append_dependency(m, p->id);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        strv_free(ck.v);
        return r;
}

static int append_caps(sd_bus_message *m, const WorkerUnitParams *p);

/* A workspace's image is mounted on the worker's state directory by a unit
 * of its own, sandbox-<id>-workspace.service, in the host's mount namespace
 * before the worker's unit starts (inside a unit, systemd would bind the
 * bare host directory over it, and PrivateDevices= denies the loop device):
 * so every command of the worker, and gVisor's bundle, sees the workspace as
 * the home, and systemd's StateDirectory= set-up chowns its files to this
 * worker's dynamic UID (the ownership choice: README, "Workspaces"). ext4
 * only, never a probed type. libmount reuses the loop device of an image
 * that is attached already, so an image is never open through two block
 * devices at once. The worker requires the mount unit, which stops when it
 * is no longer needed: it unmounts, then removes the empty mount point and
 * the home's link. If the unmount fails, nothing below is removed. */
#define SBX_MOUNT_PATH "/bin/mount"
#define SBX_UMOUNT_PATH "/bin/umount"

int unit_open_mount_aux(sd_bus_message *m, const char *name, const char *description) {
        int r = sd_bus_message_open_container(m, 'r', "sa(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                /* Beside the workers: realizing a new unit in system.slice
                 * on a legacy cgroup hierarchy re-realized the slice and its
                 * siblings, 17 ms of every cold start in the test bed. */
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                          "Description", "s", description,
                                          "Slice", "s", SBX_SLICE,
                                          "Type", "s", "oneshot",
                                          "RemainAfterExit", "b", 1,
                                          "StopWhenUnneeded", "b", 1,
                                          "CollectMode", "s", "inactive-or-failed",
                                          "TimeoutStartUSec", "t", 60 * USEC_PER_SEC);
        return r;
}

int worker_workspace_unit_name(const char *id, char **ret) {
        return asprintf(ret, "sandbox-%s-workspace.service", id) < 0 ? -ENOMEM : 0;
}

int worker_workspace_append_aux_unit(sd_bus_message *m, const WorkerUnitParams *p) {
        _cleanup_free_ char *name = NULL, *dir = NULL, *link = NULL, *description = NULL;
        int r;

        if (!p->workspace_image)
                return 0;
        if (worker_workspace_unit_name(p->id, &name) < 0 || asprintf(&dir, SBX_PRIVATE_STATE_ROOT "/%s", p->id) < 0 ||
            asprintf(&link, SBX_STATE_ROOT "/%s", p->id) < 0 ||
            asprintf(&description, "sandboxd workspace of worker %s", p->id) < 0)
                return -ENOMEM;
        char *mkdir_argv[] = { (char *) "/bin/mkdir", (char *) "-p", (char *) "-m", (char *) "0700", dir, NULL };
        char *mount_argv[] = { (char *) SBX_MOUNT_PATH, (char *) "-t", (char *) "ext4", (char *) "-o",
                               (char *) "loop,nosuid,nodev,noatime", (char *) p->workspace_image, dir, NULL };
        char *umount_argv[] = { (char *) SBX_UMOUNT_PATH, dir, NULL };
        char *rmdir_argv[] = { (char *) "/bin/rmdir", dir, NULL };
        char *rm_argv[] = { (char *) "/bin/rm", (char *) "-f", link, NULL };

        r = unit_open_mount_aux(m, name, description);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStart", mkdir_argv[0], mkdir_argv, NULL);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStart", mount_argv[0], mount_argv, NULL);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStop", umount_argv[0], umount_argv, NULL);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStop", rmdir_argv[0], rmdir_argv, NULL);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStop", rm_argv[0], rm_argv, NULL);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int append_workspace_dependency(sd_bus_message *m, const WorkerUnitParams *p) {
        _cleanup_free_ char *name = NULL;
        int r;

        if (!p->workspace_image)
                return 0;
        if (worker_workspace_unit_name(p->id, &name) < 0)
                return -ENOMEM;
        /* Without its workspace mounted the worker does not start at all:
         * it would otherwise write into a bare directory that is deleted. */
        r = sd_bus_message_append(m, "(sv)", "Requires", "as", 1, name);
        return r < 0 ? r : sd_bus_message_append(m, "(sv)", "After", "as", 1, name);
}

int worker_unit_append_properties(sd_bus_message *m, const WorkerUnitParams *p) {
        _cleanup_free_ char *description = NULL, *state_dir = NULL;
        _cleanup_strv_free_ char **env = NULL;
        const char *state_dirs[2] = {};
        const WorkerSpec *s = p->spec;
        int r;

        if (asprintf(&description, "sandboxd %s %s (%s)", p->pool ? "pool sandbox" : "worker", p->id,
                     sbx_class_to_string(s->class)) < 0)
                return -ENOMEM;
        r = worker_state_directory(p->id, &state_dir);
        if (r < 0)
                return r;
        state_dirs[0] = state_dir;
        r = build_environment(p, &env);
        if (r < 0)
                return r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;

#define CHECK(expr) do { r = (expr); if (r < 0) return r; } while (0)
        CHECK(append_string(m, "Description", description));
        CHECK(append_string(m, "Slice", SBX_SLICE));
        /* A restore is started once runsc reports the sandbox running (the
         * launcher's READY=1, launch-guard.c): only then is the resume
         * answered, and may a suspend ask runsc about it (launch-state.h). */
        CHECK(append_string(m, "Type", p->restore ? "notify" : "exec"));
        if (p->restore) {
                CHECK(append_string(m, "NotifyAccess", "main"));
                CHECK(append_u64(m, "TimeoutStartUSec", RESTORE_START_TIMEOUT_USEC));
        }
        /* Failed workers must not linger as failed units either. */
        CHECK(append_string(m, "CollectMode", "inactive-or-failed"));
        CHECK(append_u64(m, "TimeoutStopUSec", 5 * USEC_PER_SEC));

        /* Identity and home: a UID of its own, a 0700 home systemd creates and
         * chowns before anything runs, credentials only after that. */
        CHECK(append_bool(m, "DynamicUser", 1));
        CHECK(append_string(m, "User", p->user));
        CHECK(append_strv(m, "StateDirectory", state_dirs));
        CHECK(sd_bus_message_append(m, "(sv)", "StateDirectoryMode", "u", 0700));
        CHECK(append_string(m, "WorkingDirectory", p->home));
        CHECK(sd_bus_message_append(m, "(sv)", "UMask", "u", 0077));
        CHECK(append_strv(m, "Environment", (const char * const *) env));
        CHECK(append_credentials(m, s));
        if (p->egress_socket) {
                /* The proxy's listener must exist in the namespace before the
                 * worker runs; a worker whose listener failed does not start
                 * (StartFailed, result "dependency") rather than run without. */
                CHECK(sd_bus_message_append(m, "(sv)", "Requires", "as", 1, p->egress_socket));
                CHECK(sd_bus_message_append(m, "(sv)", "After", "as", 1, p->egress_socket));
                /* Both sides name each other: whichever starts first makes the
                 * namespace, the other joins it. */
                CHECK(sd_bus_message_append(m, "(sv)", "JoinsNamespaceOf", "as", 1, p->egress_socket));
        }

        if (p->gate_socket) {
                /* The endpoint's listener exists before the worker runs; a
                 * worker whose endpoint cannot listen does not start. */
                CHECK(sd_bus_message_append(m, "(sv)", "Requires", "as", 1, p->gate_socket));
                CHECK(sd_bus_message_append(m, "(sv)", "After", "as", 1, p->gate_socket));
        }
        /* NoExec: a handler gets nowhere to drop a binary and run it (seed
         * 003); /tmp and /var/tmp are noexec for every worker already. */
        if (s->no_exec)
                CHECK(sd_bus_message_append(m, "(sv)", "NoExecPaths", "as", 1, p->home));

        /* The channel: stdin, stdout and stderr are the daemon's pipes. */
        CHECK(sd_bus_message_append(m, "(sv)", "StandardInputFileDescriptor", "h", p->stdio->stdin_fd));
        CHECK(sd_bus_message_append(m, "(sv)", "StandardOutputFileDescriptor", "h", p->stdio->stdout_fd));
        CHECK(sd_bus_message_append(m, "(sv)", "StandardErrorFileDescriptor", "h", p->stdio->stderr_fd));
        CHECK(append_workspace_dependency(m, p));
        /* The exec channel (worker-spawn.h), for every runtime that has one. */
        if (p->runtime != SBX_RUNTIME_KATA)
                CHECK(worker_exec_append_dependency(m, p->id));
        /* gVisor and Kata give /tmp a tmpfs in the sandbox's memory; the
         * others would have systemd's PrivateTmp= on the host's /tmp. */
        if (p->disk_bytes > 0)
                CHECK(worker_disk_append_dependency(m, p->id, !worker_disk_bound_by_launcher(p->runtime)));
        CHECK(append_exec(m, p));
        CHECK(unit_append_hardening(m, p));
        CHECK(append_caps(m, p));
        return sd_bus_message_close_container(m);
}

int unit_append_hardening(sd_bus_message *m, const WorkerUnitParams *p) {
        int r;

        /* Hardening that holds for every class. For runsc and kata the
         * unit's commands are the launcher, run privileged ("+"): systemd
         * applies none of the unit's credential, capability, seccomp or
         * namespace-restriction settings to a "+" command (runsc builds
         * namespaces, ptraces and installs its own seccomp filter), nor
         * InaccessiblePaths=/NoExecPaths=/ProtectSystem=. They are set all
         * the same: they bind every unprivileged command of the unit, and the
         * workload's own walls are gVisor's (or the VM's) and the OCI bundle's,
         * which masks /run. The one exception is the /run tmpfs:
         * TemporaryFileSystem= does reach "+" commands, and the launcher needs
         * the host's /run/sandboxd (bundles, runsc's state) and the unit's
         * /run/credentials; those units hide the sockets one by one instead. */
        bool launcher = p->runtime == SBX_RUNTIME_RUNSC || p->runtime == SBX_RUNTIME_KATA;
        CHECK(append_bool(m, "NoNewPrivileges", 1));
        CHECK(append_u64(m, "CapabilityBoundingSet", 0));
        CHECK(append_u64(m, "AmbientCapabilities", 0));
        CHECK(append_string(m, "ProtectSystem", "strict"));
        CHECK(append_string(m, "ProtectHome", "yes"));
        CHECK(append_string(m, "ProtectProc", "invisible"));
        CHECK(append_bool(m, "PrivateTmp", 1));
        /* Writable places are the home, a private /tmp and a private
         * /dev/shm, nothing can be run from. (DynamicUser= forces PrivateTmp=,
         * which takes /tmp over from any TemporaryFileSystem=, so noexec comes
         * as NoExecPaths= there; a NoExecPaths= of /dev/shm would in turn
         * displace its TemporaryFileSystem=, whose options say noexec.) */
        CHECK(sd_bus_message_append(m, "(sv)", "NoExecPaths", "as", 2, "/tmp", "/var/tmp"));
        CHECK(append_bool(m, "PrivateDevices", 1));
        CHECK(append_tmpfs(m, private_shm));
        if (!launcher)
                CHECK(append_tmpfs(m, hidden_tmpfs));
        else
                CHECK(append_strv(m, "InaccessiblePaths", hidden_sockets));
        CHECK(append_strv(m, "InaccessiblePaths", hidden_dev));
        CHECK(append_bool(m, "PrivateNetwork", 1));
        CHECK(append_bool(m, "PrivateIPC", 1));
        CHECK(append_ip_firewall(m));
        CHECK(append_bool(m, "RestrictSUIDSGID", 1));
        CHECK(append_bool(m, "ProtectKernelTunables", 1));
        CHECK(append_bool(m, "ProtectKernelModules", 1));
        CHECK(append_bool(m, "ProtectKernelLogs", 1));
        CHECK(append_bool(m, "ProtectControlGroups", 1));
        CHECK(append_bool(m, "ProtectClock", 1));
        CHECK(append_bool(m, "ProtectHostname", 1));
        CHECK(append_bool(m, "LockPersonality", 1));
        CHECK(append_bool(m, "RestrictRealtime", 1));
        CHECK(append_string(m, "KeyringMode", "private"));
        CHECK(append_address_families(m));
        /* The value is the set of namespace types permitted: none. */
        CHECK(sd_bus_message_append(m, "(sv)", "RestrictNamespaces", "t", (uint64_t) 0));
        CHECK(append_syscall_filter(m, 1, syscall_allow));
        if (p->config->syscall_allow && p->config->syscall_allow[0])
                CHECK(append_syscall_filter(m, 1, (const char * const *) p->config->syscall_allow));
        CHECK(append_syscall_filter(m, 0, syscall_deny));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallErrorNumber", "i", EPERM));
        CHECK(sd_bus_message_append(m, "(sv)", "SystemCallArchitectures", "as", 1, "native"));
        return 0;
}

static int append_caps(sd_bus_message *m, const WorkerUnitParams *p) {
        const WorkerSpec *s = p->spec;
        int r;

        /* Caps, with accounting so an operator sees what each worker uses. */
        CHECK(append_bool(m, "CPUAccounting", 1));
        CHECK(append_bool(m, "MemoryAccounting", 1));
        CHECK(append_bool(m, "TasksAccounting", 1));
        /* A blkio (v1) or io (v2) cgroup of the unit's own, which
         * IOReadBytes and IOWriteBytes read (worker-metrics.h). */
        CHECK(append_bool(m, "IOAccounting", 1));
        CHECK(append_u64(m, "MemoryMax", s->limits.memory_max));
        CHECK(append_u64(m, "MemorySwapMax", 0));
        CHECK(append_u64(m, "TasksMax", unit_tasks_max(p)));
        CHECK(append_u64(m, "CPUQuotaPerSecUSec", (uint64_t) s->limits.cpu_quota_percent * 10000));
        CHECK(append_u64(m, "RuntimeMaxUSec", s->limits.runtime_max_usec));
        CHECK(sd_bus_message_append(m, "(sv)", "LimitCORE", "t", (uint64_t) 0));
        CHECK(sd_bus_message_append(m, "(sv)", "LimitCORESoft", "t", (uint64_t) 0));
#undef CHECK
        return 0;
}
