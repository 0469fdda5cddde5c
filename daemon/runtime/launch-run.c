/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "env-cred.h"
#include "errors.h"
#include "launch-caps.h"
#include "launch-cgroup.h"
#include "launch-env.h"
#include "launch-exec.h"
#include "launch-guard.h"
#include "launch-home.h"
#include "launch-slack.h"
#include "launch-veth.h"
#include "launch.h"
#include "oci-bundle.h"
#include "spawn.h"
#include "worker-disk-layout.h"

#define DELETE_TIMEOUT_USEC (20 * USEC_PER_SEC)
/* How long the unit's processes get to end after systemd's SIGTERM, and then
 * after SIGKILL, before the cleanup goes ahead without them. */
#define STRAY_GRACE_USEC (2 * USEC_PER_SEC)

/* Creates path with mode, or accepts an existing root-owned directory
 * without any of the forbidden mode bits. An existing one is not chmod'ed:
 * runsc sets its root to 0711 itself while other workers are running. */
int mkdir_checked(const char *path, mode_t mode, mode_t forbidden) {
        struct stat st;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(path, &st) < 0)
                return -errno;
        /* Somebody else's directory or a symlink here would hand them the bundle. */
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & forbidden) != 0)
                return -EPERM;
        return 0;
}

int launch_state_dirs(void) {
        int r = mkdir_checked(LAUNCH_STATE_DIR, 0755, 0022);
        if (r >= 0)
                r = mkdir_checked(LAUNCH_BUNDLES_DIR, 0700, 0077);
        if (r >= 0)
                r = mkdir_checked(LAUNCH_RUNSC_ROOT, 0700, 0066);
        return r;
}

/* systemd has allocated the worker's dynamic user before running a '+'
 * command; nss-systemd resolves it by name. The home must already be that
 * user's private directory: if either check fails, this is not the worker
 * unit it claims to be. */
static int resolve_worker(const LaunchArgs *a, uid_t *ret_uid, gid_t *ret_gid, char **ret_home) {
        char user[sizeof(LAUNCH_CONTAINER_PREFIX) + LAUNCH_ID_MAX];
        _cleanup_free_ char *home = NULL;
        struct passwd *pw;
        struct stat st;

        snprintf(user, sizeof(user), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        errno = 0;
        pw = getpwnam(user);
        if (!pw) {
                log_error("User %s does not exist: sandbox-launch run must be the ExecStart=+ of a "
                          "DynamicUser=yes unit with User=%s.", user, user);
                return -ESRCH;
        }
        if (pw->pw_uid == 0 || pw->pw_gid == 0) {
                log_error("User %s is root; refusing.", user);
                return -EPERM;
        }
        /* Mount destinations are resolved on the host by the runtime, so the
         * home is used by its real path (StateDirectory= of a DynamicUser unit
         * is a symlink into /var/lib/private). */
        home = realpath(a->home, NULL);
        if (!home)
                return log_error_errno(errno, "Cannot resolve home %s: %m", a->home);
        if (stat(home, &st) < 0)
                return log_error_errno(errno, "Cannot stat home %s: %m", home);
        if (!S_ISDIR(st.st_mode) || st.st_uid != pw->pw_uid || (st.st_mode & 0077) != 0) {
                log_error("Home %s is not a 0700 directory owned by %s (uid %u).", home, user, (unsigned) pw->pw_uid);
                return -EPERM;
        }
        *ret_uid = pw->pw_uid;
        *ret_gid = pw->pw_gid;
        *ret_home = TAKE_PTR(home);
        return 0;
}

/* The worker unit's own credentials directory, where systemd put what
 * sandboxd served for it; the workload gets it read-only. Derived from the id,
 * never from $CREDENTIALS_DIRECTORY: the launcher runs as root and trusts no
 * variable it is given. NULL in *ret when the unit has no credentials. */
static int credentials_dir(const LaunchArgs *a, char **ret) {
        _cleanup_free_ char *d = NULL;
        struct stat st;
        int r;

        r = env_credential_dir(a->id, &d);
        if (r < 0)
                return r;
        if (lstat(d, &st) < 0) {
                if (errno != ENOENT)
                        return -errno;
                *ret = NULL;
                return 0;
        }
        /* systemd mounts it and chowns it to the worker's user; a symlink or
         * anything else here is not its work. */
        if (!S_ISDIR(st.st_mode))
                return -EPERM;
        *ret = TAKE_PTR(d);
        return 0;
}

/* The workload's environment: sandboxd's own values from --setenv, then the
 * spec's from the unit's credential. *ret borrows the strings of both lists. */
static int workload_environment(const LaunchArgs *a, const char *creds_dir, char ***ret_spec, char ***ret) {
        _cleanup_strv_free_erase_ char **spec = NULL;
        size_t n = strv_length(a->setenv), k = 0;
        char **all;
        int r;

        if (creds_dir) {
                r = env_credential_read(creds_dir, &spec);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        all = calloc(n + strv_length(spec) + 1, sizeof(char *));
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                all[k++] = a->setenv[i];
        for (char **e = spec; e && *e; e++)
                all[k++] = *e;
        *ret_spec = TAKE_PTR(spec);
        *ret = all;
        return 0;
}

void runtime_root_arg(const LaunchArgs *a, char *buf, size_t n) {
        snprintf(buf, n, "--root=%s", a->runtime == LAUNCH_RUNTIME_KATA ? LAUNCH_KATA_ROOT : LAUNCH_RUNSC_ROOT);
}

/* runsc's files for a container in its root: the state runsc delete works
 * from ("<id>_sandbox:<id>.state"), the sandbox's control socket
 * ("runsc-<id>.sock") and the state's lock. Kata's layout is not known
 * here: runtime_state_exists assumes there is state. */
static void runsc_state_path(const LaunchArgs *a, const char *kind, char *path, size_t size) {
        const char *c = LAUNCH_CONTAINER_PREFIX;

        if (streq(kind, "sock"))
                snprintf(path, size, LAUNCH_RUNSC_ROOT "/runsc-%s%s.sock", c, a->id);
        else
                snprintf(path, size, LAUNCH_RUNSC_ROOT "/%s%s_sandbox:%s%s.%s", c, a->id, c, a->id, kind);
}

static bool runtime_state_exists(const LaunchArgs *a) {
        char path[PATH_MAX];

        if (a->runtime != LAUNCH_RUNTIME_RUNSC)
                return true;
        runsc_state_path(a, "state", path, sizeof(path));
        if (access(path, F_OK) == 0)
                return true;
        runsc_state_path(a, "sock", path, sizeof(path));
        return access(path, F_OK) == 0;
}

/* A sandbox killed while runsc was still creating it leaves its control
 * socket and lock file but no state: "runsc delete" does not know such a
 * container, and nothing else removes them. Cleanup runs once the unit's
 * processes are gone, so with the state gone they are inert. */
static void remove_runsc_leftovers(const LaunchArgs *a) {
        char path[PATH_MAX];

        runsc_state_path(a, "state", path, sizeof(path));
        if (access(path, F_OK) == 0)
                return;
        runsc_state_path(a, "sock", path, sizeof(path));
        if (unlink(path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove %s: %m", path);
        runsc_state_path(a, "lock", path, sizeof(path));
        if (unlink(path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove %s: %m", path);
}

/* out: what the runtime printed, for the log when its state outlives it. */
static int runtime_delete(const LaunchArgs *a, const char *container, char *out, size_t out_size) {
        char root[64];
        int status, r;

        runtime_root_arg(a, root, sizeof(root));
        char *argv[] = { (char *) a->runtime_path, root, (char *) "delete", (char *) "--force", (char *) container, NULL };
        r = spawn_capture(argv, DELETE_TIMEOUT_USEC, out, out_size, &status);
        if (r < 0)
                return r;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ESRCH;
}

static int remove_bundle(const LaunchArgs *a) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), LAUNCH_BUNDLES_DIR "/%s", a->id);
        return rm_rf(dir);
}

/* Removes the runtime's container and the bundle, once nothing runs them. */
static int remove_runtime_state(const LaunchArgs *a) {
        char container[sizeof(LAUNCH_CONTAINER_PREFIX) + LAUNCH_ID_MAX];
        char out[512] = "";
        int r;

        snprintf(container, sizeof(container), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        /* "runsc run" deletes its container when the workload exits; this is
         * for a runtime that was killed (a stop, a timeout, the memory guard). */
        if (runtime_state_exists(a)) {
                r = runtime_delete(a, container, out, sizeof(out));
                if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "Failed to run %s delete for %s: %m", a->runtime_path, container);
        }
        if (a->runtime == LAUNCH_RUNTIME_RUNSC) {
                remove_runsc_leftovers(a);
                if (runtime_state_exists(a)) {
                        log_error("The runsc container %s survived its deletion: %s", container,
                                  out[0] ? out : "(runsc said nothing)");
                        (void) remove_bundle(a);
                        return EXIT_FAILURE;
                }
        }
        r = remove_bundle(a);
        if (r < 0) {
                log_error_errno(r, "Failed to remove the bundle of %s: %m", container);
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

int launch_cleanup(const LaunchArgs *a) {
        char unit[sizeof(LAUNCH_CONTAINER_PREFIX ".service") + LAUNCH_ID_MAX], procs[PATH_MAX];
        int r;

        /* As the worker unit's ExecStopPost=: its other processes may still be
         * exiting (see launch-cgroup.h), and runsc cannot delete a container
         * its dying sandbox still holds. Run elsewhere, nothing is ours to wait for. */
        snprintf(unit, sizeof(unit), LAUNCH_CONTAINER_PREFIX "%s.service", a->id);
        if (launch_cgroup_own_procs(unit, procs, sizeof(procs)) == 0) {
                r = launch_cgroup_wait_alone(procs, STRAY_GRACE_USEC);
                if (r > 0)
                        log_warning("Killed %d process(es) of %s that outlived its stop by %" PRIu64 " ms.", r,
                                    unit, STRAY_GRACE_USEC / USEC_PER_MSEC);
                else if (r < 0)
                        log_warning_errno(r, "Processes of %s survived SIGKILL; cleaning up anyway: %m", unit);
        }
        return remove_runtime_state(a);
}

static bool stale_state_exists(const LaunchArgs *a) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), LAUNCH_BUNDLES_DIR "/%s", a->id);
        return access(path, F_OK) == 0 || runtime_state_exists(a);
}

static int write_bundle(const LaunchArgs *a, uid_t uid, gid_t gid, const char *home, char *dir, size_t dir_size) {
        char hostname[sizeof(LAUNCH_CONTAINER_PREFIX) + LAUNCH_ID_MAX], netns[64];
        _cleanup_strv_free_erase_ char **spec_env = NULL;
        _cleanup_free_ char **env = NULL;
        _cleanup_free_ char *creds = NULL;
        _cleanup_close_ int fd = -1;
        SbxError error = {};
        int r;

        /* A pooled sandbox has no credentials of its unit's: its job brings
         * them, and its waiter writes them into a tmpfs at the same place. */
        r = a->pool ? env_credential_dir(a->id, &creds) : credentials_dir(a, &creds);
        if (r < 0)
                return log_error_errno(r, "Refusing the credentials directory of worker %s: %m", a->id);
        r = workload_environment(a, a->pool ? NULL : creds, &spec_env, &env);
        if (r == -EBADMSG)
                log_error("Refusing to start worker %s: its environment credential %s/" SBX_ENV_CREDENTIAL
                          " is malformed.", a->id, creds);
        else if (r < 0)
                log_error_errno(r, "Failed to read the environment of worker %s: %m", a->id);
        if (r < 0)
                return r;

        snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int) getpid());
        snprintf(hostname, sizeof(hostname), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        for (char *c = hostname; *c; c++)
                if (*c == '_')
                        *c = '-';
        OciBundleSpec spec = {
                .profile = a->runtime == LAUNCH_RUNTIME_KATA ? OCI_PROFILE_KATA : OCI_PROFILE_RUNSC,
                .hostname = hostname,
                .argv = a->argv,
                .environment = env,
                .uid = uid,
                .gid = gid,
                .home = home,
                .root_image = a->root_image,
                .credentials_dir = creds,
                .credentials_writable = a->pool != NULL,
                .pids_max = a->pids,
                .memory_max = a->memory,
                .cpu_percent = a->cpu_percent,
                .disk_max = a->disk,
                .noexec_home = a->noexec_home,
                .tmp_size = a->tmp_size,
                .nofile = a->nofile,
                /* The launcher's own: launch_veth_setup() moves it into the
                 * sandbox's namespace before runsc starts, and it outlives
                 * runsc, so the path names that namespace all along. */
                .network_ns_path = streq_ptr(a->network, "veth") ? netns : NULL,
        };

        snprintf(dir, dir_size, LAUNCH_BUNDLES_DIR "/%s", a->id);
        if (mkdir(dir, 0700) < 0)
                return log_error_errno(errno, "Failed to create bundle %s: %m", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open bundle %s: %m", dir);
        r = oci_bundle_write(fd, &spec, &error);
        if (r < 0 && error.name) {
                log_error("Refusing to start worker %s: %s", a->id, error.message);
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to write %s/" OCI_BUNDLE_CONFIG ": %m", dir);
        return 0;
}

/* Whether runsc starts with the kernel's timer slack and gets the worker's
 * from the guard once booted (launch-slack.h). */
static bool defer_slack(const LaunchArgs *a) {
        return a->runtime == LAUNCH_RUNTIME_RUNSC && a->timer_slack_usec > 0 && launch_slack_deferrable();
}

/* SLACK_LATER: defer_slack(), decided once by launch_run() for every
 * process of the start (the launcher's capabilities, runsc's exec, the guard). */
static _Noreturn void exec_runtime(const LaunchArgs *a, const char *bundle, const char *container, const char *root,
                                   bool slack_later) {
        char platform[64], network[32];

        if (a->runtime == LAUNCH_RUNTIME_RUNSC) {
                /* Where the guard cannot set it once the sandbox booted
                 * (launch-slack.h), runsc gets it from the start, boot and
                 * all. Only here: the launcher's memory guard keeps its own. */
                if (a->timer_slack_usec > 0 && !slack_later &&
                    prctl(PR_SET_TIMERSLACK, (unsigned long) a->timer_slack_usec * 1000UL, 0, 0, 0) < 0) {
                        log_error_errno(errno, "Failed to set the timer slack of worker %s's runtime: %m", a->id);
                        _exit(LAUNCH_EXIT_SETUP);
                }
                snprintf(platform, sizeof(platform), "--platform=%s", a->platform);
                bool veth = streq(a->network, "veth");
                snprintf(network, sizeof(network), "--network=%s", veth ? "sandbox" : a->network);
                /* --ignore-cgroups: the unit's cgroup already holds runsc and
                 * its sandbox. --network=none: the sandbox has gVisor's own
                 * loopback and nothing else, and the sentry makes no host
                 * network calls at all. veth is for a worker with a proxy:
                 * gVisor's own stack on the veth launch_veth_setup() made,
                 * which runsc can checkpoint; --net-disconnect-ok lets it do
                 * so while connections are open, resetting them (without it
                 * any open or recently closed TCP connection refuses the
                 * checkpoint for as long as it lasts, about 60 s after a
                 * close). --overlay2=none: the root stays the read-only
                 * image, with no writable layer (its default would put one in
                 * the image dir). */
                if (veth) {
                        int r = launch_veth_hide_rootns_test();
                        if (r < 0) {
                                log_error_errno(r, "Failed to hide /proc/sys/net/core from runsc: %m");
                                _exit(LAUNCH_EXIT_SETUP);
                        }
                }
                /* A resumed worker: the same sandbox, from its checkpoint. */
                char image[PATH_MAX + 16];
                snprintf(image, sizeof(image), "--image-path=" LAUNCH_SUSPEND_ROOT "/%s", a->id);
                char *argv[16];
                size_t n = 0;
                argv[n++] = (char *) a->runtime_path;
                argv[n++] = (char *) root;
                argv[n++] = (char *) "--ignore-cgroups";
                argv[n++] = network;
                if (veth)
                        argv[n++] = (char *) "--net-disconnect-ok";
                argv[n++] = (char *) "--overlay2=none";
                argv[n++] = platform;
                argv[n++] = a->restore ? (char *) "restore" : (char *) "run";
                if (a->restore)
                        argv[n++] = image;
                argv[n++] = (char *) "--bundle";
                argv[n++] = (char *) bundle;
                argv[n++] = (char *) container;
                argv[n] = NULL;
                execve(argv[0], argv, launch_runtime_environment);
        } else {
                char *argv[] = { (char *) a->runtime_path, (char *) root, (char *) "run", (char *) "--bundle",
                                 (char *) bundle, (char *) container, NULL };
                execve(argv[0], argv, launch_runtime_environment);
        }
        log_error_errno(errno, "Failed to execute %s: %m", a->runtime_path);
        _exit(LAUNCH_EXIT_SETUP);
}

/* Whether A and B are one open file description (dup()s of each other, or
 * both a socket systemd accepted): flipping O_NONBLOCK on one shows on the
 * other. That flag is exactly what leaks, so it is what is tested. */
static bool fds_share_flags(int a, int b) {
        int flags_a = fcntl(a, F_GETFL), flags_b = fcntl(b, F_GETFL);
        bool shared;

        if (flags_a < 0 || flags_b < 0 || fcntl(a, F_SETFL, flags_a ^ O_NONBLOCK) < 0)
                return false;
        shared = ((fcntl(b, F_GETFL) ^ flags_b) & O_NONBLOCK) != 0;
        (void) fcntl(a, F_SETFL, flags_a);
        return shared;
}

/* gVisor imports each stdio fd with the flags it has, then makes the host
 * side non-blocking for its own poller. Two stdio fds on one description
 * therefore reach the workload with O_NONBLOCK on whichever was imported
 * second (the order varies), and a shell's read of stdin fails with EAGAIN,
 * which it takes for the end of input. sandboxd gives workers a pipe pair and
 * stderr to the journal; anything else is refused rather than run with
 * stdio that randomly drops input. */
static int check_stdio_descriptions(void) {
        static const char *const names[] = { "stdin", "stdout", "stderr" };
        for (int a = 0; a < 3; a++)
                for (int b = a + 1; b < 3; b++)
                        if (fds_share_flags(a, b)) {
                                log_error("The worker's %s and %s are one open file description (a socket "
                                          "or a dup); gVisor would make one of them non-blocking for the "
                                          "workload. Give them separate descriptions (e.g. a pipe pair).",
                                          names[a], names[b]);
                                return -EINVAL;
                        }
        return 0;
}

/* runsc: the runtime runs as a child so the memory guard can follow the
 * sandbox (launch-guard.c); its stdin/stdout are the unit's, untouched. A Kata
 * VM has a real kernel that enforces the memory limit itself: exec. */
static int start_runtime(const LaunchArgs *a, const char *bundle, bool slack_later) {
        char container[sizeof(LAUNCH_CONTAINER_PREFIX) + LAUNCH_ID_MAX], root[64];
        char limit_path[sizeof(LAUNCH_BUNDLES_DIR "/" LAUNCH_POOL_LIMIT_FILE) + LAUNCH_ID_MAX + 1];
        char images[sizeof(LAUNCH_SUSPEND_ROOT "/") + LAUNCH_ID_MAX + 1];
        pid_t pid;

        snprintf(container, sizeof(container), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        runtime_root_arg(a, root, sizeof(root));
        /* The sandbox imports stdin/stdout with their flags as they are: a
         * non-blocking one would make the workload's read() fail with EAGAIN,
         * which shells take for the end of input. The workload gets plain
         * blocking stdio. */
        (void) fd_nonblock(STDIN_FILENO, false);
        (void) fd_nonblock(STDOUT_FILENO, false);
        if (a->runtime == LAUNCH_RUNTIME_RUNSC && check_stdio_descriptions() < 0)
                return LAUNCH_EXIT_SETUP;
        if (a->runtime != LAUNCH_RUNTIME_RUNSC)
                exec_runtime(a, bundle, container, root, false);
        pid = fork();
        if (pid < 0) {
                log_error_errno(errno, "Failed to fork: %m");
                return LAUNCH_EXIT_SETUP;
        }
        if (pid == 0)
                exec_runtime(a, bundle, container, root, slack_later);
        /* Only the sandbox holds the worker's channel, so that its end of it
         * closing is seen as such by the daemon. */
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd >= 0) {
                (void) dup2(null_fd, STDIN_FILENO);
                (void) dup2(null_fd, STDOUT_FILENO);
                safe_close(null_fd);
        }
        /* The exec channel: runsc exec into this sandbox (launch-exec.c). */
        if (launch_exec_start(a, a->exec_fd) < 0)
                log_warning("Cannot serve worker %s's exec channel: Exec will fail for it.", a->id);
        if (a->pool)
                snprintf(limit_path, sizeof(limit_path), LAUNCH_BUNDLES_DIR "/%s/" LAUNCH_POOL_LIMIT_FILE, a->id);
        if (a->restore)
                snprintf(images, sizeof(images), LAUNCH_SUSPEND_ROOT "/%s", a->id);
        return launch_guard_run(a->runtime_path, root, container, a->memory, a->pool ? limit_path : NULL, pid,
                                a->restore ? images : NULL, slack_later ? a->timer_slack_usec * 1000 : 0);
}

int launch_run(const LaunchArgs *a) {
        _cleanup_free_ char *home = NULL;
        char bundle[PATH_MAX];
        uid_t uid = 0;
        gid_t gid = 0;
        int r;

        if (geteuid() != 0) {
                log_error("sandbox-launch run needs root: it is the unit's ExecStart=+ command.");
                return LAUNCH_EXIT_SETUP;
        }
        if (access(a->runtime_path, X_OK) < 0) {
                log_error_errno(errno, "Runtime %s is not executable: %m", a->runtime_path);
                return LAUNCH_EXIT_SETUP;
        }
        if (resolve_worker(a, &uid, &gid, &home) < 0)
                return LAUNCH_EXIT_SETUP;
        if (a->restore) {
                char images[PATH_MAX];
                /* Its unit is Type=notify: without the socket it would wait
                 * out its start timeout; refused now, the image is kept. */
                if (!getenv("NOTIFY_SOCKET")) {
                        log_error("A restore runs as a Type=notify unit's main process; NOTIFY_SOCKET is not set.");
                        return LAUNCH_EXIT_SETUP;
                }
                if (launch_restore_check(a->id, uid, images, sizeof(images)) < 0)
                        return LAUNCH_EXIT_SETUP;
        }
        if (a->home_disk && launch_home_disk(SBX_DISK_MOUNT_ROOT, "1", a->id, uid, gid, home) < 0)
                return LAUNCH_EXIT_SETUP;
        r = launch_state_dirs();
        if (r < 0) {
                log_error_errno(r, "Failed to set up " LAUNCH_STATE_DIR ": %m");
                return LAUNCH_EXIT_SETUP;
        }
        /* A bundle or container left by a launcher that was killed: clear
         * them so the id can run again. Only then: "runsc delete" costs a
         * runsc start, on every worker's path to its first byte. */
        if (stale_state_exists(a))
                (void) remove_runtime_state(a);
        if (write_bundle(a, uid, gid, home, bundle, sizeof(bundle)) < 0) {
                (void) remove_bundle(a);
                return LAUNCH_EXIT_SETUP;
        }
        /* Kata's needs are not known on this host (no Kata here), so only
         * runsc gets the measured set; see launch-caps.h. */
        bool veth = a->runtime == LAUNCH_RUNTIME_RUNSC && streq(a->network, "veth");
        bool slack_later = defer_slack(a);
        if (a->runtime == LAUNCH_RUNTIME_RUNSC) {
                const cap_value_t *own = slack_later ? launch_own_caps : NULL;
                size_t own_n = slack_later ? launch_own_caps_n : 0;
                r = veth ? launch_caps_limit(launch_runsc_netstack_caps, launch_runsc_netstack_caps_n, own, own_n)
                         : launch_caps_limit(launch_runsc_caps, launch_runsc_caps_n, own, own_n);
                if (r < 0) {
                        log_error_errno(r, "Failed to limit capabilities: %m");
                        (void) remove_bundle(a);
                        return LAUNCH_EXIT_SETUP;
                }
        }
        if (launch_check_namespaces(a->id) < 0) {
                (void) remove_bundle(a);
                return LAUNCH_EXIT_SETUP;
        }
        /* After the check: the sandbox's namespace is a new one, the check
         * is of the unit's, which holds the proxy's end. */
        if (veth && launch_veth_setup(a->id) < 0) {
                (void) remove_bundle(a);
                return LAUNCH_EXIT_SETUP;
        }
        return start_runtime(a, bundle, slack_later);
}
