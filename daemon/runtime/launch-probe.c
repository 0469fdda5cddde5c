/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <sys/klog.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "launch.h"
#include "oci-bundle.h"
#include "spawn.h"

/* A runtime's --version, --help or delete answers in milliseconds; the bound
 * is for one that hangs. Generous, because a loaded host must not make a
 * working runtime look broken (its classes would be refused). */
#define VERSION_TIMEOUT_USEC (15 * USEC_PER_SEC)
#define PROBE_UID 65534         /* nobody: the probe proves a non-root worker runs */
#define PROBE_HOME "/run/sandboxd-probe"

static int report(bool ok, const char *fmt, ...) _printf_(2, 3);
static int report(bool ok, const char *fmt, ...) {
        char line[512], clean[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        printf("%s %s\n", ok ? "ok" : "unavailable", first_line(line, clean, sizeof(clean)));
        fflush(stdout);
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

static bool exited_ok(int status) {
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Runs "PATH ARG" and puts the first line of its output into version. */
static int runtime_version(const char *path, const char *arg, char *version, size_t n) {
        char out[4096];
        int status, r;
        char *argv[] = { (char *) path, (char *) arg, NULL };

        r = spawn_capture(argv, VERSION_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0)
                return r;
        first_line(out, version, n);
        return exited_ok(status) ? 0 : -EIO;
}

static int write_probe_bundle(const char *dir, const char *nonce, const char *self) {
        char *argv[] = { (char *) self, (char *) "probe-guest", (char *) "--nonce", (char *) nonce, NULL };
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        SbxError error = {};
        OciBundleSpec spec = {
                .profile = OCI_PROFILE_RUNSC,
                .hostname = "sandboxd-probe",
                .argv = argv,
                .uid = PROBE_UID,
                .gid = PROBE_UID,
                .home = PROBE_HOME,
                .pids_max = 16,
                .memory_max = UINT64_C(64) << 20,
                .cpu_percent = 100,
                .disk_max = UINT64_C(1) << 20,  /* a tmpfs home: nothing on the host to create */
        };

        if (fd < 0)
                return -errno;
        return oci_bundle_write(fd, &spec, &error);
}

/* A real probe: a tiny sandbox must start, run this very binary as an
 * unprivileged user and report, from inside, a kernel that is gVisor's. */
static int probe_runsc(const LaunchArgs *a) {
        char version[128], tmpl[] = LAUNCH_STATE_DIR "/probe-XXXXXX", nonce[17], out[4096], detail[256];
        char state[PATH_MAX], container[64], root_arg[PATH_MAX + 8], platform[64], expect[64];
        _cleanup_free_ char *self = NULL;
        const char *line;
        int status, r;

        if (access(a->runtime_path, X_OK) < 0)
                return report(false, "runsc not executable at %s: %s", a->runtime_path, strerror(errno));
        if (runtime_version(a->runtime_path, "--version", version, sizeof(version)) < 0)
                return report(false, "%s --version failed", a->runtime_path);
        if (geteuid() != 0)
                return report(false, "the runsc probe needs root");
        self = realpath("/proc/self/exe", NULL);
        if (!self || random_hex_id(nonce, 16) < 0 || launch_state_dirs() < 0 || !mkdtemp(tmpl))
                return report(false, "cannot prepare a probe bundle: %s", strerror(errno));
        snprintf(state, sizeof(state), "%s/state", tmpl);
        snprintf(root_arg, sizeof(root_arg), "--root=%s", state);
        snprintf(platform, sizeof(platform), "--platform=%s", a->platform);
        snprintf(container, sizeof(container), "sandboxd-probe-%s", nonce);
        r = write_probe_bundle(tmpl, nonce, self);
        if (r < 0) {
                (void) rm_rf(tmpl);
                return report(false, "cannot write the probe bundle: %s", strerror(-r));
        }
        char *run[] = { (char *) a->runtime_path, root_arg, (char *) "--ignore-cgroups", (char *) "--network=none",
                        (char *) "--overlay2=none", platform, (char *) "run", (char *) "--bundle", tmpl, container, NULL };
        r = spawn_capture(run, a->timeout_sec * USEC_PER_SEC, out, sizeof(out), &status);
        if (r < 0) {
                char *del[] = { (char *) a->runtime_path, root_arg, (char *) "delete", (char *) "--force", container, NULL };
                char ignored[256];
                (void) spawn_capture(del, VERSION_TIMEOUT_USEC, ignored, sizeof(ignored), NULL);
        }
        (void) rm_rf(tmpl);
        if (r == -ETIMEDOUT)
                return report(false, "runsc run did not answer within %" PRIu64 " s", a->timeout_sec);
        if (r < 0)
                return report(false, "cannot run runsc: %s", strerror(-r));
        snprintf(expect, sizeof(expect), "sandboxd-probe %s gvisor ", nonce);
        line = strstr(out, expect);
        if (!line || !exited_ok(status)) {
                const char *err = strstr(out, "sandboxd-probe ") ?: out;
                return report(false, "runsc run failed: %s", first_line(err, detail, sizeof(detail)));
        }
        first_line(line + strlen(expect), detail, sizeof(detail));
        return report(true, "%s platform=%s kernel=%s", version, a->platform, detail);
}

static int probe_kata(const LaunchArgs *a) {
        char version[128], out[4096], detail[256];
        int status, r;

        if (access(a->runtime_path, X_OK) < 0)
                return report(false, "kata-runtime not executable at %s: %s", a->runtime_path, strerror(errno));
        if (runtime_version(a->runtime_path, "--version", version, sizeof(version)) < 0)
                return report(false, "%s --version failed", a->runtime_path);
        char *check[] = { (char *) a->runtime_path, (char *) "check", NULL };
        r = spawn_capture(check, a->timeout_sec * USEC_PER_SEC, out, sizeof(out), &status);
        if (r < 0 || !exited_ok(status))
                return report(false, "kata-runtime check failed: %s",
                              r < 0 ? strerror(-r) : first_line(out, detail, sizeof(detail)));
        /* sandbox-launch drives Kata through the OCI verbs; a kata-runtime
         * without them (Kata 2 only ships the containerd shim) cannot run it. */
        char *run_help[] = { (char *) a->runtime_path, (char *) "run", (char *) "--help", NULL };
        r = spawn_capture(run_help, VERSION_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0 || !exited_ok(status))
                return report(false, "%s has no OCI 'run' command", a->runtime_path);
        return report(true, "%s", version);
}

static int probe_wasm(const LaunchArgs *a) {
        char version[128];

        if (access(a->runtime_path, X_OK) < 0)
                return report(false, "wasm runtime not executable at %s: %s", a->runtime_path, strerror(errno));
        if (runtime_version(a->runtime_path, "--version", version, sizeof(version)) < 0)
                return report(false, "%s --version failed", a->runtime_path);
        return report(true, "%s", version);
}

int launch_probe(const LaunchArgs *a) {
        switch (a->runtime) {
        case LAUNCH_RUNTIME_RUNSC:
                return probe_runsc(a);
        case LAUNCH_RUNTIME_KATA:
                return probe_kata(a);
        case LAUNCH_RUNTIME_WASM:
                return probe_wasm(a);
        default:
                return report(false, "unknown runtime");
        }
}

/* Inside the probe sandbox: gVisor announces itself in the kernel log, which
 * a host kernel never does. */
int launch_probe_guest(const LaunchArgs *a) {
        char log[16384];
        struct utsname u;
        int n;

        n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
        log[n > 0 ? n : 0] = 0;
        if (uname(&u) < 0)
                return EXIT_FAILURE;
        printf("sandboxd-probe %s gvisor %s uid=%u\n", a->nonce,
               strstr(log, "gVisor") ? u.release : "absent", (unsigned) getuid());
        return strstr(log, "gVisor") ? EXIT_SUCCESS : EXIT_FAILURE;
}
