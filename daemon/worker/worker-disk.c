/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>
#include <sys/stat.h>

#include "errors.h"
#include "rmrf.h"
#include "unit-props.h"
#include "worker-disk.h"

int worker_disk_unit_name(const char *id, char **ret) {
        return asprintf(ret, "sandbox-%s-disk.service", id) < 0 ? -ENOMEM : 0;
}

void worker_disk_start_job_why(const char *id, uint64_t disk_bytes, const char *result, char *buf, size_t size) {
        if (disk_bytes > 0 && streq(result, "dependency"))
                snprintf(buf, size, "start job dependency: a unit it requires failed, such as its disk "
                         "sandbox-%s-disk.service (an ext4 image on a loop device; are loop devices available?)", id);
        else
                snprintf(buf, size, "start job %s", result);
}

/* The disk's steps are a program installed beside the other helpers
 * (daemon/runtime/sandbox-disk.c), never a script inline in the transient
 * unit: systemd 252 serialises an inline script's "$" and ";" into the unit's
 * transient file in a form its own parser does not undo, so after a
 * daemon-reload the stop no longer parsed and every home and image stayed. */
#define SANDBOX_DISK_PATH SANDBOXD_LIBEXECDIR "/sandbox-disk"

int worker_disk_append_aux_unit(sd_bus_message *m, const char *id, uint64_t bytes, const char *mkfs_path) {
        _cleanup_free_ char *name = NULL, *dir = NULL, *mnt = NULL, *description = NULL, *size = NULL;
        char *no_host_bind = (char *) "-";     /* the unit or the launcher binds the home */
        int r;

        if (bytes == 0)
                return 0;
        if (worker_disk_unit_name(id, &name) < 0 || asprintf(&dir, SBX_DISK_ROOT "/%s", id) < 0 ||
            asprintf(&mnt, SBX_DISK_MOUNT_ROOT "/%s", id) < 0 ||
            asprintf(&description, "sandboxd disk of worker %s", id) < 0 || asprintf(&size, "%" PRIu64, bytes) < 0)
                return -ENOMEM;
        char *setup_argv[] = { (char *) SANDBOX_DISK_PATH, (char *) "setup", dir, mnt, no_host_bind, size,
                               (char *) mkfs_path, NULL };
        char *stop_argv[] = { (char *) SANDBOX_DISK_PATH, (char *) "stop", dir, mnt, no_host_bind, NULL };

        r = unit_open_mount_aux(m, name, description);
        if (r >= 0)
                r = unit_append_exec(m, "ExecStart", setup_argv[0], setup_argv, NULL);
        if (r >= 0)
                /* After the stop, and also after a setup that failed or was
                 * stopped half-way, which ExecStop= would not clean up. */
                r = unit_append_exec(m, "ExecStopPost", stop_argv[0], stop_argv, NULL);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

bool worker_disk_bound_by_launcher(SbxRuntime runtime) {
        return runtime == SBX_RUNTIME_RUNSC || runtime == SBX_RUNTIME_KATA;
}

int worker_disk_append_dependency(sd_bus_message *m, const char *id, bool shared_kernel) {
        _cleanup_free_ char *name = NULL, *mnt = NULL, *tmp = NULL, *home = NULL, *link = NULL, *state = NULL;
        static const char * const privileged[] = { "privileged", NULL };
        int r;

        if (worker_disk_unit_name(id, &name) < 0 || asprintf(&mnt, SBX_DISK_MOUNT_ROOT "/%s", id) < 0 ||
            asprintf(&tmp, "%s/" SBX_DISK_TMP, mnt) < 0 || asprintf(&home, "%s/" SBX_DISK_HOME, mnt) < 0 ||
            asprintf(&link, SBX_STATE_ROOT "/%s", id) < 0 || asprintf(&state, SBX_PRIVATE_STATE_ROOT "/%s", id) < 0)
                return -ENOMEM;
        /* Without its disk the worker does not start: it would write into the
         * host's file system with no cap. */
        r = sd_bus_message_append(m, "(sv)", "Requires", "as", 1, name);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "After", "as", 1, name);
        if (r < 0 || !shared_kernel)
                return r;
        /* The home is bound in the unit's own namespace, never on the host:
         * a bind under /var/lib/private there is one more mount that systemd
         * unmounts, reading the whole table again, in every DynamicUser unit
         * it sets up (worker-disk-layout.h). The destination is the home's
         * link, not the state directory it points to: systemd follows it one
         * step at a time and mounts there after its own bind of the state
         * directory, over it, where the same path given twice would leave
         * which one wins to its sort. The home becomes the worker's dynamic
         * UID's first, in its ExecStartPre=+, once systemd has chowned the
         * state directory to it. */
        char *own_argv[] = { (char *) SANDBOX_DISK_PATH, (char *) "own", mnt, state, NULL };
        r = sd_bus_message_append(m, "(sv)", "BindPaths", "a(ssbt)", 2, tmp, "/tmp", 0, UINT64_C(0), home, link, 0,
                                  UINT64_C(0));
        if (r >= 0)
                r = unit_append_exec(m, "ExecStartPreEx", own_argv[0], own_argv, privileged);
        return r;
}

int worker_disk_mark_kept(const char *id, bool keep) {
        _cleanup_free_ char *mark = NULL;
        _cleanup_close_ int fd = -1;

        if (asprintf(&mark, SBX_DISK_ROOT "/%s/keep", id) < 0)
                return -ENOMEM;
        if (!keep)
                return unlink(mark) < 0 && errno != ENOENT ? -errno : 0;
        fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        return fd < 0 ? -errno : 0;
}

int worker_disk_remove(const char *id) {
        _cleanup_free_ char *dir = NULL;

        if (asprintf(&dir, SBX_DISK_ROOT "/%s", id) < 0)
                return -ENOMEM;
        return rm_rf(dir);
}

uint64_t worker_disk_unwritten(const char *id, uint64_t bytes) {
        _cleanup_free_ char *image = NULL;
        struct stat st;
        uint64_t taken;

        /* Not made yet (or unreadable): all of it may still be taken. */
        if (asprintf(&image, SBX_DISK_ROOT "/%s/image", id) < 0 || stat(image, &st) < 0)
                return bytes;
        taken = (uint64_t) st.st_blocks * 512;
        return (uint64_t) st.st_size > taken ? (uint64_t) st.st_size - taken : 0;
}

int worker_disk_admit(const SbxConfig *c, uint64_t committed, uint64_t unwritten, uint64_t want, uint64_t free,
                      SbxError *error) {
        if (committed > c->disk_total_max || want > c->disk_total_max - committed)
                return sbx_error_set(error, -ENOSPC, SBX_ERROR_LIMIT_OUT_OF_RANGE,
                                     "The workers' disks would exceed Disk:TotalMax (%" PRIu64 " bytes): %" PRIu64
                                     " are held, %" PRIu64 " more were asked for", c->disk_total_max, committed, want);
        /* Sparse images take the host's space as they are written: every one
         * filled to its cap must still leave KeepFree. */
        uint64_t need;
        if (__builtin_add_overflow(unwritten, want, &need) || __builtin_add_overflow(need, c->disk_keep_free, &need) ||
            need > free)
                return sbx_error_set(error, -ENOSPC, SBX_ERROR_INSUFFICIENT_SPACE,
                                     "No room for a worker's disk of %" PRIu64 " bytes: the host has %" PRIu64
                                     " bytes free, of which the workers' disks, workspaces and checkpoint images may still take %" PRIu64
                                     " and Disk:KeepFree keeps %" PRIu64, want, free, unwritten, c->disk_keep_free);
        return 0;
}
