/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Suspend and resume of a gVisor worker: "sandbox-launch checkpoint" saves a
 * running sandbox into the worker's image directory, and "run --restore=yes"
 * starts the sandbox again from it (launch-run.c).
 *
 * Measured with runsc 0.0~20240729 (systrap) in the test bed: checkpoint
 * works for a sandbox on gVisor's own network stack (--network=none, and
 * --network=sandbox on the veth a worker with a proxy gets, launch-veth.h);
 * the sandbox exits once it is saved, so "runsc run" returns 0 and the
 * worker's unit ends. On the host network (runsc --network=host, which
 * workers with a proxy used before) runsc refuses: "checkpoint not supported
 * when using hostinet", and the sandbox keeps running. Restore needs the same bundle (mounts, UID),
 * which the launcher writes again from the same arguments. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>

#include <json-c/json.h>

#include "image-fs.h"
#include "launch.h"
#include "launch-state.h"
#include "spawn.h"

#define CHECKPOINT_TIMEOUT_USEC (120 * USEC_PER_SEC)
#define STATS_TIMEOUT_USEC (20 * USEC_PER_SEC)
/* A retried attempt (LAUNCH_CHECKPOINT_ATTEMPTS) waits n * this first, n
 * the attempts so far. The checkpoint unit's timeout (unit-props.c) covers
 * them all. */
#define CHECKPOINT_BACKOFF_USEC (500 * USEC_PER_MSEC)
/* The guard removes a restored sandbox's image once runsc reports it
 * running, which it asks every LAUNCH_STATE_POLL_USEC. */
#define RESTORE_WAIT_USEC (30 * USEC_PER_SEC)
#define MKFS_PATH "/sbin/mkfs.ext4"
/* Less than this free in the image's file system after a failed attempt:
 * the image did not fit its budget, and another attempt would not either. */
#define IMAGE_FS_FULL_BYTES (UINT64_C(1) << 20)

/* A sandbox still booting (a suspend right after its create) on a loaded host. */
#define RUNNING_WAIT_USEC (30 * USEC_PER_SEC)

/* The sentry's own memory accounting ("runsc events --stats"): what a
 * checkpoint writes is about that much, so a sandbox above the cap is
 * refused before anything is saved and while it still runs. */
static int sandbox_memory_usage(const LaunchArgs *a, const char *root, const char *container, uint64_t *ret) {
        char out[16384];
        struct json_object *o, *v;
        static const char * const path[] = { "data", "memory", "usage", "usage" };
        const char *json;
        int status, r;

        char *argv[] = { (char *) a->runtime_path, (char *) root, (char *) "events", (char *) "--stats",
                         (char *) container, NULL };
        r = spawn_capture(argv, STATS_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -ESRCH;
        json = strchr(out, '{');
        o = json ? json_tokener_parse(json) : NULL;
        v = o;
        for (size_t i = 0; v && i < ELEMENTSOF(path); i++)
                if (!json_object_object_get_ex(v, path[i], &v))
                        v = NULL;
        r = v && json_object_is_type(v, json_type_int) ? 0 : -EBADMSG;
        if (r == 0)
                *ret = json_object_get_uint64(v);
        if (o)
                json_object_put(o);
        return r;
}

/* A sandbox restored a moment ago still has its image (a complete one, with
 * the marker): runsc may still be reading it, and its unit's memory guard
 * removes that directory once runsc reports it running (launch-guard.c),
 * whatever it holds by then, a new checkpoint included. So a checkpoint
 * starts only once it is gone. */
static int wait_image_released(const char *dir, uint64_t timeout_usec) {
        char marker[PATH_MAX + sizeof(LAUNCH_IMAGE_MARKER) + 1], buf[4096];
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        _cleanup_close_ int fd = -1;

        snprintf(marker, sizeof(marker), "%s/" LAUNCH_IMAGE_MARKER, dir);
        if (access(marker, F_OK) < 0)
                return 0;               /* none, or what a killed attempt left: not in use */
        fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (inotify_add_watch(fd, LAUNCH_SUSPEND_ROOT, IN_DELETE | IN_MOVED_FROM) < 0)
                return -errno;
        /* Checked after the watch is set: a removal in between is not missed. */
        while (access(dir, F_OK) == 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = POLLIN };

                if (now >= deadline)
                        return -EBUSY;
                if (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) < 0 && errno != EINTR)
                        return -errno;
                while (read(fd, buf, sizeof(buf)) > 0)
                        ;
        }
        return 0;
}

/* Makes every file of DIR 0600 and sums their sizes. runsc writes regular
 * files only; anything else is not its work. */
static int image_dir_seal(const char *dir, uint64_t *ret_bytes) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        uint64_t total = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1;
        while ((de = readdir(d))) {
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        break;
                }
                if (!S_ISREG(st.st_mode)) {
                        r = -EPERM;
                        break;
                }
                if (fchmodat(dirfd(d), de->d_name, 0600, 0) < 0) {
                        r = -errno;
                        break;
                }
                total += (uint64_t) st.st_blocks * 512 > (uint64_t) st.st_size ? (uint64_t) st.st_blocks * 512
                                                                                 : (uint64_t) st.st_size;
        }
        closedir(d);
        if (r >= 0)
                *ret_bytes = total;
        return r;
}

static int write_marker(const char *dir, uid_t uid) {
        char path[PATH_MAX + sizeof(LAUNCH_IMAGE_MARKER) + 1], text[32];
        _cleanup_close_ int fd = -1;
        int n;

        snprintf(path, sizeof(path), "%s/" LAUNCH_IMAGE_MARKER, dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        n = snprintf(text, sizeof(text), "%u\n", (unsigned) uid);
        if (write(fd, text, (size_t) n) != n)
                return errno > 0 ? -errno : -EIO;
        return fsync(fd) < 0 ? -errno : 0;
}

static int image_root(void) {
        int r = mkdir_checked("/var/lib/sandboxd", 0755, 0022);
        return r < 0 ? r : mkdir_checked(LAUNCH_SUSPEND_ROOT, 0700, 0077);
}

/* runsc 0.0~20240729 cannot save a TCP endpoint that is in a handshake
 * (SYN-SENT, SYN-RECV): with --net-disconnect-ok its beforeSave resets every
 * endpoint that is not idle, and resetting one whose sender and receiver do
 * not exist yet dereferences nil ("encoding error: runtime error: invalid
 * memory address or nil pointer dereference"), and runsc then ends the
 * sandbox, as after any failed save without --leave-running (it kills the
 * kernel): the worker was lost (gVisor fixed it in 2026: "tcp: skip RST in
 * resetConnectionLocked when snd/rcv are nil"). runsc checkpoint
 * pauses the sandbox's tasks and its network stack in one go, so a handshake
 * in flight at that moment is saved as it is. The launcher therefore lets
 * the handshakes end first, in three steps:
 *
 * 1. It waits (at most QUIESCE_TIMEOUT_USEC) for a moment in which no
 *    socket of the sandbox is in a SYN state, read from gVisor's own
 *    /proc/net/tcp{,6} by "runsc exec" (as nobody: the file is the
 *    sentry's, readable by anyone). The worker may end that reader or
 *    feed it lines; that only shortens the wait or makes it time out, and
 *    the parser takes bounded numbers and nothing else from it. That
 *    catches a handshake whose SYN was lost and waits for its
 *    retransmission (which the proxy's kernel answers at once, with SYN-ACK
 *    or RST), e.g. one a workload starts while the link comes up after a
 *    restore.
 * 2. "runsc pause" stops every task at once: nothing can start a handshake
 *    any more. The network stack is not paused with them (only the
 *    checkpoint pauses it), so
 * 3. during QUIESCE_SETTLE_USEC the handshakes started between 1 and 2
 *    complete or fail: the peer is the proxy's kernel across a veth (or the
 *    sandbox itself), which answers within microseconds; a loaded
 *    host gets 300 ms. A listener's half-open connections (SYN-RECV) are
 *    not sockets and not in /proc/net/tcp; their peer is the sandbox itself
 *    (nothing outside connects in: the one way in, an endpoint's gate, is
 *    stopped and drained by sandboxd before this unit starts,
 *    worker-suspend.c), so they end here as well.
 * Then runsc checkpoints the paused sandbox (it takes "paused" as well as
 * "running"), and the launcher resumes it after every attempt, a success, a
 * failure or a timeout, before anything else looks at it
 * (resume_if_paused(): that is how a saved sandbox gets to exit).
 *
 * Not done: blocking new handshakes from outside (an RST for every SYN on
 * the proxy's end of the veth) would need netfilter in the unit's network
 * namespace, i.e. nft or iptables, which sandboxd does not depend on; the
 * pause in step 2 stops them from inside instead, and a dropped SYN is what
 * must never happen (it leaves SYN-SENT), which a pause does not cause. */
#define QUIESCE_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define QUIESCE_POLL_USEC (100 * USEC_PER_MSEC)
#define QUIESCE_SETTLE_USEC (300 * USEC_PER_MSEC)
/* One read of /proc/net/tcp takes well under a second; a slower one is
 * not waited for. Per attempt the steps take at most 10 + 5 s, a pause of
 * at most 20 s and the settling, a runsc state and a resume of at most 20 s
 * each, and after a failed one a second look (sandbox_survived(), at most
 * 21 s): 96.3 s, which unit-props.c counts as 100 s. */
#define EXEC_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define NET_TCP_MAX (1024 * 1024)
#define TCP_SYN_SENT 0x02
#define TCP_SYN_RECV 0x03

/* Runs "runsc ... VERB [ARGS...] CONTAINER [TAIL...]" with the same global
 * flags as the checkpoint; the captured output into out. */
static int runsc_verb(const LaunchArgs *a, char * const *verb, char * const *tail, uint64_t timeout_usec, char *out,
                      size_t out_size, int *ret_status, const char *container) {
        char root[64], platform[64];
        char *argv[24];
        size_t n = 0;

        runtime_root_arg(a, root, sizeof(root));
        snprintf(platform, sizeof(platform), "--platform=%s", a->platform);
        argv[n++] = (char *) a->runtime_path;
        argv[n++] = root;
        argv[n++] = (char *) "--ignore-cgroups";
        argv[n++] = (char *) "--network=none";
        argv[n++] = (char *) "--overlay2=none";
        argv[n++] = platform;
        for (; *verb && n < ELEMENTSOF(argv) - 8; verb++)
                argv[n++] = *verb;
        argv[n++] = (char *) container;
        for (; tail && *tail && n < ELEMENTSOF(argv) - 1; tail++)
                argv[n++] = *tail;
        argv[n] = NULL;
        return spawn_capture(argv, timeout_usec, out, out_size, ret_status);
}

/* The number of the sandbox's TCP sockets in SYN-SENT or SYN-RECV, or a
 * negative errno if they could not be read (or not all of them). */
static int sandbox_handshakes(const LaunchArgs *a, const char *container) {
        static char * const verb[] = { (char *) "exec", (char *) "--user=65534:65534", NULL };
        static char * const tail[] = { (char *) "/bin/cat", (char *) "/proc/net/tcp", (char *) "/proc/net/tcp6",
                                       NULL };
        _cleanup_free_ char *out = malloc(NET_TCP_MAX);
        int status, n = 0, r;

        if (!out)
                return -ENOMEM;
        r = runsc_verb(a, verb, tail, EXEC_TIMEOUT_USEC, out, NET_TCP_MAX, &status, container);
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        if (strlen(out) >= NET_TCP_MAX - 1)
                return -E2BIG;
        /* "  sl  local_address rem_address   st ...": the state is hex. */
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
                unsigned st;

                if (sscanf(line, " %*u: %*s %*s %x", &st) == 1 && (st == TCP_SYN_SENT || st == TCP_SYN_RECV))
                        n++;
        }
        return n;
}

/* Steps 1-3 above; returns whether the sandbox is paused (1) or not (0).
 * Whatever it could not do is logged and the checkpoint goes ahead: it is
 * no worse than one without these steps. */
static int quiesce_and_pause(const LaunchArgs *a, const char *container) {
        static char * const pause_verb[] = { (char *) "pause", NULL };
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        char out[1024], line[256], ms[32], busy[16], reads[16], seen[16];
        unsigned n_reads = 0;
        int status, n, most = 0, r;

        for (;;) {
                n = sandbox_handshakes(a, container);
                n_reads++;
                most = MAX(most, n);
                /* Unreadable (no /bin/cat, a slow exec): asking again would
                 * only delay the suspend by the whole wait. */
                if (n <= 0 || now_usec(CLOCK_MONOTONIC) - start >= QUIESCE_TIMEOUT_USEC)
                        break;
                (void) usleep((useconds_t) QUIESCE_POLL_USEC);
        }
        /* What an operator (and bench/checkpoint-handshakes.sh) reads: the
         * handshakes left, how long it took, how many reads, and the most
         * handshakes one read saw (above 0: the wait was needed). */
        snprintf(ms, sizeof(ms), "%" PRIu64, (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC);
        snprintf(busy, sizeof(busy), "%d", n);
        snprintf(reads, sizeof(reads), "%u", n_reads);
        snprintf(seen, sizeof(seen), "%d", most);
        if (n < 0)
                log_struct(LOG_WARNING, "Could not read the sandbox's TCP sockets before the checkpoint",
                           "SANDBOXD_EVENT", "checkpoint-quiesce", "SANDBOXD_HANDSHAKES", "unknown",
                           "SANDBOXD_WAIT_MSEC", ms, "SANDBOXD_READS", reads, "SANDBOXD_HANDSHAKES_SEEN", seen,
                           NULL);
        else if (n > 0)
                log_struct(LOG_WARNING, "TCP handshakes still in flight in the sandbox after the wait; pausing anyway",
                           "SANDBOXD_EVENT", "checkpoint-quiesce", "SANDBOXD_HANDSHAKES", busy,
                           "SANDBOXD_WAIT_MSEC", ms, "SANDBOXD_READS", reads, "SANDBOXD_HANDSHAKES_SEEN", seen,
                           NULL);
        else
                log_struct(LOG_INFO, "No TCP handshake in flight in the sandbox; pausing it", "SANDBOXD_EVENT",
                           "checkpoint-quiesce", "SANDBOXD_HANDSHAKES", "0", "SANDBOXD_WAIT_MSEC", ms,
                           "SANDBOXD_READS", reads, "SANDBOXD_HANDSHAKES_SEEN", seen, NULL);

        r = runsc_verb(a, pause_verb, NULL, STATS_TIMEOUT_USEC, out, sizeof(out), &status, container);
        if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                log_warning("runsc could not pause %s before the checkpoint: %s", container,
                            r < 0 ? strerror(-r) : first_line(out, line, sizeof(line)));
                return 0;
        }
        (void) usleep((useconds_t) QUIESCE_SETTLE_USEC);
        return 1;
}

/* After an attempt, whatever its result: a sandbox this launcher paused
 * and that is still paused runs again. runsc ends a sandbox after its save
 * (without --leave-running, after a failed save as well) by killing its
 * kernel's tasks and then undoing its own pause of them; a task dies once it
 * runs, and ours is the pause that is left, so without this resume the
 * killed sandbox would stay paused and its unit would never end (seen in the
 * test bed). A sandbox that runsc did not kill (an attempt that failed
 * before the save) runs on and may be tried again. */
static void resume_if_paused(const LaunchArgs *a, const char *root, const char *container, int result) {
        static char * const resume_verb[] = { (char *) "resume", NULL };
        char st[32], out[1024], line[256];
        int status, r;

        if (launch_container_status(a->runtime_path, root, container, st, sizeof(st)) < 0 || !streq(st, "paused"))
                return;
        r = runsc_verb(a, resume_verb, NULL, STATS_TIMEOUT_USEC, out, sizeof(out), &status, container);
        if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                log_error("runsc could not resume %s after the %s checkpoint; it stays paused: %s", container,
                          result < 0 ? "failed" : "completed",
                          r < 0 ? strerror(-r) : first_line(out, line, sizeof(line)));
}

/* Whether the sandbox still runs after a failed attempt. One that runsc
 * killed while this launcher held it paused dies only once resumed, within
 * moments: a sandbox resumed a moment ago is watched for up to
 * SURVIVE_WAIT_USEC before it counts as having survived. */
#define SURVIVE_WAIT_USEC (1 * USEC_PER_SEC)
static bool sandbox_survived(const LaunchArgs *a, const char *root, const char *container, bool resumed) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (resumed ? SURVIVE_WAIT_USEC : 0);

        for (;;) {
                if (launch_container_running(a->runtime_path, root, container) <= 0)
                        return false;
                if (now_usec(CLOCK_MONOTONIC) >= deadline)
                        return true;
                (void) usleep((useconds_t) QUIESCE_POLL_USEC);
        }
}

static int checkpoint(const LaunchArgs *a, const char *container, const char *dir) {
        char root[64], platform[64], image[PATH_MAX + 16], out[1024], line[1024];
        int status, r;

        runtime_root_arg(a, root, sizeof(root));
        snprintf(platform, sizeof(platform), "--platform=%s", a->platform);
        snprintf(image, sizeof(image), "--image-path=%s", dir);
        /* --compression=none: runsc's default (flate-best-speed) deflates
         * every page at checkpoint and inflates it again at restore; without
         * it the pages go to pages.img as they are, at the cost of disk
         * (bench/suspend.sh: about the sandbox's memory). Not
         * --leave-running: the point is that the sandbox's memory goes. */
        char *argv[] = { (char *) a->runtime_path, root, (char *) "--ignore-cgroups", (char *) "--network=none",
                         (char *) "--overlay2=none", platform, (char *) "checkpoint", (char *) "--compression=none",
                         image, (char *) container, NULL };
        r = spawn_capture(argv, CHECKPOINT_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0)
                return log_error_errno(r, "Failed to run %s checkpoint for %s: %m", a->runtime_path, container);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                /* runsc's reason is not always its first line: all of what
                 * it said (as much as out holds), on one line. */
                for (char *c = out; *c; c++)
                        if (*c == '\n')
                                *c = ' ';
                log_error("runsc could not checkpoint %s (status %d): %s", container,
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                          first_line(out, line, sizeof(line)));
                return -EIO;
        }
        return 0;
}

static bool image_fs_full(const char *mnt) {
        struct statvfs st;
        return statvfs(mnt, &st) == 0 && (uint64_t) st.f_bavail * st.f_frsize < IMAGE_FS_FULL_BYTES;
}

int launch_checkpoint(const LaunchArgs *a) {
        char user[sizeof(LAUNCH_CONTAINER_PREFIX) + LAUNCH_ID_MAX], dir[PATH_MAX], root[64], n[16];
        char staging[PATH_MAX], backing[PATH_MAX];
        uint64_t usage = 0, bytes = 0;
        struct passwd *pw;
        unsigned attempt;
        int paused, r;

        if (geteuid() != 0) {
                log_error("sandbox-launch checkpoint needs root.");
                return EXIT_FAILURE;
        }
        snprintf(user, sizeof(user), LAUNCH_CONTAINER_PREFIX "%s", a->id);
        /* The worker's dynamic user exists only while its unit runs. */
        pw = getpwnam(user);
        if (!pw || pw->pw_uid == 0) {
                log_error("Worker %s is not running (no user %s): nothing to checkpoint.", a->id, user);
                return EXIT_FAILURE;
        }
        snprintf(dir, sizeof(dir), LAUNCH_SUSPEND_ROOT "/%s", a->id);
        r = wait_image_released(dir, RESTORE_WAIT_USEC);
        if (r < 0) {
                log_error_errno(r, "Worker %s is still being restored from its image %s: %m", a->id, dir);
                return EXIT_FAILURE;
        }
        runtime_root_arg(a, root, sizeof(root));
        /* A sandbox that runsc still boots or restores is not asked for its
         * stats: that would end the restore (launch-state.h). */
        r = launch_wait_container_running(a->runtime_path, root, user, RUNNING_WAIT_USEC);
        if (r < 0) {
                log_error_errno(r, "Sandbox %s does not run (yet): %m", user);
                return EXIT_FAILURE;
        }
        r = sandbox_memory_usage(a, root, user, &usage);
        if (r < 0) {
                log_error_errno(r, "Cannot read the memory usage of sandbox %s: %m", user);
                return EXIT_FAILURE;
        }
        if (usage > a->image_max) {
                log_error("Refusing to suspend worker %s: its sandbox uses %" PRIu64 " bytes of memory, more than "
                          "the image cap of %" PRIu64 " bytes (SuspendImageMax=, or what is left of the owner's "
                          "or the host's checkpoint budget, [Quota]).", a->id, usage, a->image_max);
                return EXIT_FAILURE;
        }
        r = image_root();
        if (r < 0) {
                log_error_errno(r, "Refusing the image root " LAUNCH_SUSPEND_ROOT ": %m");
                return EXIT_FAILURE;
        }
        /* runsc creates its files 0644; none may be readable by others for
         * even a moment, so the umask takes that away first. */
        (void) umask(0077);
        /* The image's file system is the launcher's alone (image-fs.h). */
        r = image_fs_private_namespace();
        if (r < 0) {
                log_error_errno(r, "Cannot make a mount namespace for the checkpoint's file system: %m");
                return EXIT_FAILURE;
        }
        snprintf(staging, sizeof(staging), LAUNCH_SUSPEND_ROOT "/.%s.staging", a->id);
        snprintf(backing, sizeof(backing), LAUNCH_SUSPEND_ROOT "/.%s.staging.img", a->id);
        (void) rm_rf(dir);
        for (attempt = 1;; attempt++) {
                /* Each attempt starts from an empty file system of the
                 * budget's size: nothing a failed one wrote can end up in
                 * the image, and runsc cannot write more than the budget. */
                (void) image_fs_unmount(staging);
                (void) unlink(backing);
                r = image_fs_mount(MKFS_PATH, backing, staging, a->image_max);
                if (r < 0) {
                        log_error_errno(r, "Failed to make the checkpoint's file system of %" PRIu64 " bytes: %m",
                                        a->image_max);
                        return EXIT_FAILURE;
                }
                paused = quiesce_and_pause(a, user);
                r = checkpoint(a, user, staging);
                if (paused)
                        resume_if_paused(a, root, user, r);
                if (r == -EIO && image_fs_full(staging)) {
                        log_error("The checkpoint of worker %s does not fit its budget of %" PRIu64 " bytes "
                                  "(SuspendImageMax=, [Quota] CheckpointBytesPerOwner=, CheckpointBytesTotal=); "
                                  "nothing of it is kept.", a->id, a->image_max);
                        r = -EFBIG;
                }
                if (r != -EIO || attempt >= LAUNCH_CHECKPOINT_ATTEMPTS)
                        break;
                (void) image_fs_unmount(staging);
                /* A sandbox that went away with its attempt has nothing left to save. */
                if (!sandbox_survived(a, root, user, paused)) {
                        log_error("Sandbox %s is no longer running after the failed checkpoint; not trying again.",
                                  user);
                        break;
                }
                snprintf(n, sizeof(n), "%u", attempt + 1);
                log_struct(LOG_WARNING, "The checkpoint failed and the sandbox runs on; trying again",
                           "SANDBOXD_EVENT", "suspend-retry", "SANDBOXD_ATTEMPT", n, NULL);
                (void) usleep((useconds_t) (attempt * CHECKPOINT_BACKOFF_USEC));
        }
        /* Out of the budget's file system into the image directory. */
        if (r >= 0 && mkdir(dir, 0700) < 0)
                r = log_error_errno(errno, "Failed to create %s: %m", dir);
        if (r >= 0) {
                r = image_fs_copy_out(staging, dir);
                if (r < 0)
                        log_error_errno(r, "Failed to copy the checkpoint image to %s: %m", dir);
        }
        (void) image_fs_unmount(staging);
        if (r >= 0) {
                r = image_dir_seal(dir, &bytes);
                if (r < 0)
                        log_error_errno(r, "Failed to seal the checkpoint image %s: %m", dir);
        }
        if (r >= 0 && bytes > a->image_max) {
                log_error("The checkpoint of worker %s takes %" PRIu64 " bytes, more than the image cap of %" PRIu64
                          " bytes; it is deleted.", a->id, bytes, a->image_max);
                r = -EFBIG;
        }
        if (r >= 0) {
                r = write_marker(dir, pw->pw_uid);
                if (r < 0)
                        log_error_errno(r, "Failed to complete the checkpoint image %s: %m", dir);
        }
        if (r < 0) {
                if (r == -EIO && attempt >= LAUNCH_CHECKPOINT_ATTEMPTS)
                        log_error("runsc failed to checkpoint %s %u times; giving up.", user, attempt);
                (void) rm_rf(dir);
                return EXIT_FAILURE;
        }
        {
                char b[32];
                snprintf(b, sizeof(b), "%" PRIu64, bytes);
                snprintf(n, sizeof(n), "%u", attempt);
                log_struct(LOG_INFO, "Checkpointed the worker's sandbox", "SANDBOXD_IMAGE_BYTES", b,
                           "SANDBOXD_ATTEMPT", n, NULL);
        }
        return EXIT_SUCCESS;
}

int launch_restore_check(const char *id, uid_t uid, char *dir, size_t dir_size) {
        char path[PATH_MAX + sizeof(LAUNCH_IMAGE_MARKER) + 1], text[32] = "";
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t n;

        snprintf(dir, dir_size, LAUNCH_SUSPEND_ROOT "/%s", id);
        if (lstat(dir, &st) < 0)
                return log_error_errno(errno, "Worker %s has no checkpoint image in %s: %m", id, dir);
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0) {
                log_error("The checkpoint image %s is not a root-only directory; refusing it.", dir);
                return -EPERM;
        }
        snprintf(path, sizeof(path), "%s/" LAUNCH_IMAGE_MARKER, dir);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "The checkpoint image %s is incomplete (%s): %m", dir, path);
        n = read(fd, text, sizeof(text) - 1);
        if (n <= 0 || strtoul(text, NULL, 10) != (unsigned long) uid) {
                /* The sandbox's processes keep the UID they were saved with:
                 * under another one their home would not be theirs. */
                log_error("Worker %s was suspended as UID %s, its unit now has UID %u; refusing to restore it.",
                          id, n > 0 ? strtok(text, "\n") : "?", (unsigned) uid);
                return -ESTALE;
        }
        return 0;
}
