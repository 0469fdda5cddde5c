/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A worker's disk (daemon/shared/worker-disk-layout.h), run as root by its
 * unit sandbox-<id>-disk.service:
 *   sandbox-disk setup DIR MNT HOME SIZE MKFS   make DIR/image once, mount it on MNT,
 *                                               bind MNT/home on HOME ("-": the launcher
 *                                               binds it in its own namespace)
 *   sandbox-disk stop DIR MNT HOME              unmount; remove all but a kept image
 *   sandbox-disk own MNT STATE [HOST_ROOT]      give MNT/home to STATE's owner (the worker's
 *                                               dynamic UID), where the worker's unit binds it
 * A program, not a script inline in the transient unit: systemd 252 writes an
 * inline script's "$" and ";" into the unit's transient file escaped in a way
 * its own parser does not undo, so after any daemon-reload the stop no longer
 * parsed and the disk's home and image stayed. And not a shell script: its
 * dozen commands took 35-40 ms of every cold start, the mkfs in it 4. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-fs.h"
#include "launch-home.h"
#include "worker-disk-layout.h"
#include "parse-util.h"
#include "util.h"

#define UNMOUNT_RETRY_USEC USEC_PER_SEC

/* Whether PATH is the root of a mount; a missing PATH is not. */
static int is_mount_point(const char *path) {
        struct statx sx;

        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return -EOPNOTSUPP;     /* before Linux 5.8 */
        return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* mkdir -p -m MODE: PATH made MODE, missing parents 0755 (as mkdir -p does
 * under the usual umask). */
static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
                if (s)
                        *s = 0;
                if (mkdir(p, s ? 0755 : mode) < 0 && errno != EEXIST)
                        return -errno;
                if (!s)
                        return 0;
                *s = '/';
        }
}

/* An existing one keeps its mode (the home's is its worker's). */
static int mkdir_mode(const char *path, mode_t mode) {
        return mkdir(path, mode) < 0 && errno != EEXIST ? -errno : 0;
}

static int path_join(char *buf, size_t size, const char *dir, const char *name) {
        return snprintf(buf, size, "%s/%s", dir, name) >= (int) size ? -ENAMETOOLONG : 0;
}

/* Made once (a resume finds it), as image.new renamed into place when whole;
 * lost+found stays at the file system's root, outside the home. */
static int make_image(const char *image, const char *fresh, const char *mkfs, uint64_t size) {
        int r;

        if (access(image, F_OK) == 0)
                return 0;
        (void) unlink(fresh);
        r = image_fs_format(mkfs, fresh, size, "sandboxd-disk");
        if (r >= 0 && rename(fresh, image) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(fresh);
        return r;
}

static int mount_image(const char *image, const char *fs) {
        int r = is_mount_point(fs);

        if (r != 0)
                return r < 0 ? r : 0;
        r = image_fs_loop_mount_again(image, fs, MS_NOSUID | MS_NODEV | MS_NOATIME);
        if (r > 0)
                log_warning("the disk's last mount is still held in another mount namespace: mounted its loop "
                            "device again, so the home has one file system, not two over the same image");
        return r;
}

/* The mount root is 0700 root whoever made it first: a shared-kernel worker
 * sees the host's tree, and only this mode keeps it out of a sibling's disk. */
static int make_mount_point(const char *mnt) {
        _cleanup_free_ char *root = strdup(mnt);
        char *slash = root ? strrchr(root, '/') : NULL;
        struct stat st;
        int r;

        if (!slash || slash == root)
                return -EINVAL;
        *slash = 0;
        r = mkdir_parents(root, 0700);
        if (r < 0)
                return r;
        if (lstat(root, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
                return -EPERM;
        if ((st.st_mode & 07777) != 0700 && chmod(root, 0700) < 0)
                return -errno;
        return mkdir_mode(mnt, 0700);
}

static int setup(const char *dir, const char *mnt, const char *home, const char *size_arg, const char *mkfs) {
        char image[PATH_MAX], fresh[PATH_MAX], fs_home[PATH_MAX], fs_tmp[PATH_MAX];
        bool bind_home = !streq(home, "-");
        uint64_t size;
        int r;

        if (parse_uint64(size_arg, &size) < 0 || size == 0) {
                fprintf(stderr, "SIZE must be a number of bytes, got '%s'\n", size_arg);
                return 2;
        }
        if (path_join(image, sizeof(image), dir, "image") < 0 || path_join(fresh, sizeof(fresh), dir, "image.new") < 0 ||
            path_join(fs_home, sizeof(fs_home), mnt, SBX_DISK_HOME) < 0 ||
            path_join(fs_tmp, sizeof(fs_tmp), mnt, SBX_DISK_TMP) < 0)
                return log_error_errno(ENAMETOOLONG, "%s or %s is too long", dir, mnt), 1;
        r = mkdir_parents(dir, 0700);
        if (r < 0)
                return log_error_errno(r, "cannot make %s: %m", dir), 1;
        r = make_image(image, fresh, mkfs, size);
        if (r < 0)
                return log_error_errno(r, "cannot make the image of %" PRIu64 " bytes in %s with %s: %m",
                                       size, dir, mkfs), 1;
        if ((r = make_mount_point(mnt)) < 0)
                return log_error_errno(r, "cannot make %s: %m", mnt), 1;
        if (bind_home && (r = mkdir_parents(home, 0700)) < 0)
                return log_error_errno(r, "cannot make %s: %m", home), 1;
        r = mount_image(image, mnt);
        if (r < 0)
                return log_error_errno(r, "cannot mount %s on %s: %m", image, mnt), 1;
        /* The file system's root as its mount point is (mkfs makes it 0755);
         * 1777 as /tmp is: only its worker ever sees it. */
        if (chmod(mnt, 0700) < 0)
                return log_error_errno(errno, "cannot make %s 0700: %m", mnt), 1;
        if ((r = mkdir_mode(fs_home, 0700)) < 0 || (r = mkdir_mode(fs_tmp, 01777)) < 0 ||
            (chmod(fs_tmp, 01777) < 0 && (r = -errno) < 0))
                return log_error_errno(r, "cannot make %s or %s: %m", fs_home, fs_tmp), 1;
        if (!bind_home)
                return 0;
        r = is_mount_point(home);
        if (r == 0 && mount(fs_home, home, NULL, MS_BIND, NULL) < 0)
                r = -errno;
        if (r < 0)
                return log_error_errno(r, "cannot bind %s on %s: %m", fs_home, home), 1;
        return 0;
}

/* A mount still busy a moment after the worker's unit stopped (its last
 * process going) is asked again, then detached lazily: the kernel lets go of
 * it and of the loop device when that process does, and the home goes now. */
static int unmount(const char *path) {
        int r = is_mount_point(path);

        if (r <= 0)
                return r;
        if (umount2(path, UMOUNT_NOFOLLOW) == 0)
                return 0;
        (void) usleep(UNMOUNT_RETRY_USEC);
        if (umount2(path, UMOUNT_NOFOLLOW) == 0 || umount2(path, UMOUNT_NOFOLLOW | MNT_DETACH) == 0)
                return 0;
        return -errno;
}

/* Only a suspend keeps the image: sandboxd marks it "keep" before the
 * checkpoint (worker_disk_mark_kept()) and the home then stays as an empty
 * directory owned as the disk's home is, as a plain home would: systemd tries
 * that owner's UID first at the resume. Without the mark the worker ended and
 * everything goes, here or by sandboxd's own removal, whichever comes second.
 * Also run after a setup that failed or was stopped half-way (ExecStopPost=). */
static int stop(const char *dir, const char *mnt, const char *home) {
        char fs_home[PATH_MAX], keep[PATH_MAX], image[PATH_MAX], fresh[PATH_MAX];
        bool bind_home = !streq(home, "-");
        struct stat owner;
        bool owned;
        int r;

        if (path_join(fs_home, sizeof(fs_home), mnt, SBX_DISK_HOME) < 0 ||
            path_join(keep, sizeof(keep), dir, "keep") < 0 || path_join(image, sizeof(image), dir, "image") < 0 ||
            path_join(fresh, sizeof(fresh), dir, "image.new") < 0)
                return log_error_errno(ENAMETOOLONG, "%s or %s is too long", dir, mnt), 1;
        owned = stat(fs_home, &owner) == 0;
        if (bind_home && (r = unmount(home)) < 0)
                return log_error_errno(r, "cannot unmount %s: %m", home), 1;
        if ((r = unmount(mnt)) < 0)
                return log_error_errno(r, "cannot unmount %s: %m", mnt), 1;
        /* Every time, a kept disk's too: removing the mount point detaches
         * the idle copies of the mount that other namespaces made while it
         * was mounted (a sibling's runsc's), and the loop device goes with
         * the last user. */
        (void) rmdir(mnt);
        if (access(keep, F_OK) == 0 && access(image, F_OK) == 0) {
                if (bind_home && owned && chown(home, owner.st_uid, owner.st_gid) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "cannot hand %s to its owner: %m", home);
                return 0;
        }
        (void) unlink(image);
        (void) unlink(fresh);
        (void) unlink(keep);
        if (bind_home)
                (void) rmdir(home);
        (void) rmdir(dir);
        return 0;
}

/* A shared-kernel worker's unit binds its disk's home itself (BindPaths=,
 * worker-disk.h), so no mount of it is left in the host's table under
 * /var/lib/private, which systemd unmounts below one at a time in every
 * DynamicUser unit it sets up. Its ExecStartPre=+ runs this once systemd has
 * realized the worker's dynamic user and handed it the state directory
 * STATE: the home on the disk mounted at MNT becomes STATE's owner's
 * (launch_home_disk_claim(), the checks a launcher makes). A "+" command of
 * such a unit runs as root in a mount namespace of the unit's binds and
 * temporary file systems: there STATE is the disk's home already (root's
 * until this), and the unit's /run tmpfs hides nss-systemd's socket, so the
 * user has no name to resolve. STATE is read as the host has it, through
 * PID 1's root (HOST_ROOT: the tests' host has no such view of its PID 1),
 * where it is the plain directory systemd chowned. */
static int own(const char *mnt, const char *state, const char *host_root) {
        _cleanup_free_ char *root = strdup(mnt), *host_state = NULL;
        char *slash = root ? strrchr(root, '/') : NULL;
        struct stat st;
        int r;

        if (mnt[0] != '/' || !slash || slash == root || !slash[1] || state[0] != '/')
                return log_error_errno(EINVAL, "MNT and STATE must be absolute paths, got '%s' and '%s'", mnt,
                                       state), 2;
        *slash = 0;
        if (asprintf(&host_state, "%s%s", host_root, state) < 0)
                return log_error_errno(ENOMEM, "out of memory"), 1;
        if (lstat(host_state, &st) < 0)
                return log_error_errno(errno, "cannot stat %s: %m", host_state), 1;
        if (!S_ISDIR(st.st_mode) || st.st_uid == 0 || (st.st_mode & 0077) != 0)
                return log_error("%s is not a 0700 directory of a worker's own UID", state), 1;
        r = launch_home_disk_claim(root, slash + 1, st.st_uid, st.st_gid, NULL);
        if (r < 0)
                return 1;
        close(r);
        return 0;
}

/* The form before the mount point had a place of its own, DIR/fs: a disk
 * unit started by an older sandboxd (still running across an upgrade, or
 * adopted) stops, or starts again, with the arguments it was made with. */
static int old_mount_point(const char *dir, char *buf, size_t size) {
        return path_join(buf, size, dir, "fs") < 0 ? log_error_errno(ENAMETOOLONG, "%s is too long", dir), -1 : 0;
}

int main(int argc, char *argv[]) {
        char old_mnt[PATH_MAX];

        /* Every directory and the image get the mode asked for, exactly. */
        umask(0);
        /* DIR is SBX_DISK_ROOT/<id>: the worker an operator searches by. */
        if (argc >= 3)
                log_tag_worker(basename(argv[2]));
        if (argc == 7 && streq(argv[1], "setup"))
                return setup(argv[2], argv[3], argv[4], argv[5], argv[6]);
        if (argc == 5 && streq(argv[1], "stop"))
                return stop(argv[2], argv[3], argv[4]);
        if ((argc == 4 || argc == 5) && streq(argv[1], "own"))
                return own(argv[2], argv[3], argc == 5 ? argv[4] : "/proc/1/root");
        if (argc == 6 && streq(argv[1], "setup"))
                return old_mount_point(argv[2], old_mnt, sizeof(old_mnt)) < 0 ? 1 :
                       setup(argv[2], old_mnt, argv[3], argv[4], argv[5]);
        if (argc == 4 && streq(argv[1], "stop"))
                return old_mount_point(argv[2], old_mnt, sizeof(old_mnt)) < 0 ? 1 :
                       stop(argv[2], old_mnt, argv[3]);
        fprintf(stderr, "usage: sandbox-disk setup DIR MNT HOME|- SIZE MKFS | stop DIR MNT HOME|- | own MNT STATE [HOST_ROOT]\n");
        return 2;
}
