/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image-fs.h"
#include "spawn.h"
#include "util.h"

#define MKFS_TIMEOUT_USEC (60 * USEC_PER_SEC)
#define LOOP_ATTACH_TRIES 16

int image_fs_private_namespace(void) {
        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        /* Slave: the host's later mounts still show here, ours never there. */
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return -errno;
        return 0;
}

/* /dev/loopN, opened: an open device stays bound (LO_FLAGS_AUTOCLEAR
 * detaches at the last close). */
static int loop_open(int n, char *dev, size_t dev_size) {
        int fd;

        snprintf(dev, dev_size, "/dev/loop%d", n);
        fd = open(dev, O_RDWR | O_CLOEXEC);
        /* A /dev without udev (a container's) lacks the nodes of devices
         * the kernel makes later: loop's major is 7. */
        if (fd < 0 && errno == ENOENT && n < 256 &&
            (mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned) n)) == 0 || errno == EEXIST))
                fd = open(dev, O_RDWR | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Whether the kernel names loop device N's backing file PATH: an unbound
 * device has no such file, a deleted backing file (whose inode number a new
 * one may reuse) is named "PATH (deleted)". */
static bool loop_backing_is(int n, const char *path) {
        char sys[64], name[PATH_MAX + 16];
        ssize_t len;

        snprintf(sys, sizeof(sys), "/sys/block/loop%d/loop/backing_file", n);
        _cleanup_close_ int fd = open(sys, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (len = read_full(fd, name, sizeof(name) - 1)) <= 0)
                return false;
        name[len] = 0;
        name[strcspn(name, "\n")] = 0;
        return streq(name, path);
}

/* The loop device already bound to the image at PATH, open, or -ENOENT. */
static int loop_find(const char *path, char *dev, size_t dev_size) {
        _cleanup_(closedirp) DIR *d = opendir("/sys/block");
        struct stat st;
        struct dirent *e;

        if (stat(path, &st) < 0)
                return -errno;
        if (!d)
                return -ENOENT;
        while ((e = readdir(d))) {
                struct loop_info64 info = {};
                int n, fd;

                if (sscanf(e->d_name, "loop%d", &n) != 1 || n < 0 || !loop_backing_is(n, path))
                        continue;
                fd = loop_open(n, dev, dev_size);
                if (fd < 0)
                        continue;
                /* Open, it stays bound: asked again, now with the inode. */
                if (ioctl(fd, LOOP_GET_STATUS64, &info) == 0 && info.lo_device == st.st_dev &&
                    info.lo_inode == st.st_ino && loop_backing_is(n, path))
                        return fd;
                close(fd);
        }
        return -ENOENT;
}

/* A free loop device bound to BACKING_FD that detaches itself once
 * unmounted and closed. */
static int loop_attach(int backing_fd, char *dev, size_t dev_size) {
        _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

        if (ctl < 0)
                return -errno;
        for (int i = 0; i < LOOP_ATTACH_TRIES; i++) {
                struct loop_info64 info = { .lo_flags = LO_FLAGS_AUTOCLEAR };
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                int fd;

                if (n < 0)
                        return -errno;
                fd = loop_open(n, dev, dev_size);
                if (fd < 0)
                        return fd;
                /* One call (Linux 5.8+): LOOP_SET_STATUS64 after LOOP_SET_FD
                 * freezes the device's queue, 17 ms of every disk's setup. */
                struct loop_config config = { .fd = (uint32_t) backing_fd, .info = info };
                if (ioctl(fd, LOOP_CONFIGURE, &config) == 0)
                        return fd;
                if (errno == EBUSY) {
                        close(fd);
                        continue;       /* another took it in between */
                }
                if (errno != EINVAL && errno != ENOTTY) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                if (ioctl(fd, LOOP_SET_FD, backing_fd) < 0) {
                        int r = -errno;
                        close(fd);
                        if (r == -EBUSY)
                                continue;       /* another took it in between */
                        return r;
                }
                if (ioctl(fd, LOOP_SET_STATUS64, &info) < 0) {
                        int r = -errno;
                        (void) ioctl(fd, LOOP_CLR_FD, 0);
                        close(fd);
                        return r;
                }
                return fd;
        }
        return -EBUSY;
}

int image_fs_format(const char *mkfs_path, const char *backing, uint64_t size, const char *label) {
        _cleanup_close_ int fd = -1;
        char out[512];
        int status, r;
        /* No journal: a checkpoint cut short is thrown away, never replayed,
         * and a worker's disk does not outlive a boot. No reserved blocks:
         * the cap is all the workload's. */
        char *argv[] = { (char *) mkfs_path, (char *) "-q", (char *) "-F", (char *) "-m", (char *) "0",
                         (char *) "-O", (char *) "^has_journal", (char *) "-E",
                         (char *) "nodiscard,root_owner=0:0", (char *) "-L", (char *) label,
                         (char *) backing, NULL };

        fd = open(backing, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t) size) < 0)
                return -errno;
        r = spawn_capture(argv, MKFS_TIMEOUT_USEC, out, sizeof(out), &status);
        if (r < 0)
                return r;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

int image_fs_loop_mount(int backing_fd, const char *mnt, unsigned long flags) {
        _cleanup_close_ int loop = -1;
        char dev[32];

        loop = loop_attach(backing_fd, dev, sizeof(dev));
        if (loop < 0)
                return loop;
        if (mount(dev, mnt, "ext4", flags, NULL) < 0) {
                int r = -errno;
                (void) ioctl(loop, LOOP_CLR_FD, 0);
                return r;
        }
        return 0;
}

int image_fs_loop_mount_again(const char *image, const char *mnt, unsigned long flags) {
        _cleanup_close_ int loop = -1, fd = -1;
        char dev[32];

        /* Held open from here on, the device cannot be detached (and bound
         * to another file) before the mount has it. */
        loop = loop_find(image, dev, sizeof(dev));
        if (loop >= 0)
                return mount(dev, mnt, "ext4", flags, NULL) < 0 ? -errno : 1;
        if (loop != -ENOENT)
                return loop;
        fd = open(image, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return image_fs_loop_mount(fd, mnt, flags);
}

int image_fs_mount(const char *mkfs_path, const char *backing, const char *mnt, uint64_t size) {
        _cleanup_close_ int fd = -1;
        int r;

        r = image_fs_format(mkfs_path, backing, size, "sandboxd-ckpt");
        if (r >= 0) {
                fd = open(backing, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
                r = fd < 0 ? -errno : 0;
        }
        if (r >= 0 && mkdir(mnt, 0700) < 0)
                r = -errno;
        if (r >= 0)
                r = image_fs_loop_mount(fd, mnt, MS_NOSUID | MS_NODEV | MS_NOEXEC);
        if (r < 0 && r != -EEXIST)
                (void) rmdir(mnt);
        /* Mounted or not, the blocks live on only as long as the loop device. */
        (void) unlink(backing);
        return r;
}

int image_fs_unmount(const char *mnt) {
        if (umount2(mnt, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
                return -errno;
        if (rmdir(mnt) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int copy_fd(int in, int out) {
        char buf[1 << 16];

        for (;;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, SIZE_MAX >> 1, 0);
                if (n == 0)
                        return 0;
                if (n > 0)
                        continue;
                if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                        return -errno;
                break;
        }
        /* Across file systems of different kinds: plain reads and writes. */
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                int r;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                r = loop_write(out, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int image_fs_copy_out(const char *from, const char *to) {
        _cleanup_close_ int dst = open(to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (dst < 0)
                return -errno;
        d = opendir(from);
        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_close_ int in = -1, out = -1;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") || streq(de->d_name, "lost+found"))
                        continue;
                in = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (in < 0 || fstat(in, &st) < 0) {
                        r = -errno;
                        break;
                }
                if (!S_ISREG(st.st_mode)) {
                        r = -EPERM;
                        break;
                }
                out = openat(dst, de->d_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0) {
                        r = -errno;
                        break;
                }
                r = copy_fd(in, out);
                if (r >= 0 && fsync(out) < 0)
                        r = -errno;
        }
        closedir(d);
        return r;
}
