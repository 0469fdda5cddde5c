/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The checkpoint's file system (image-fs.h): a writer cannot pass its size,
 * and nothing of it outlives its mount. Needs root and a loop device; runs
 * in a mount namespace of its own, so the host sees none of its mounts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-fs.h"
#include "spawn.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)

static char root[] = "/tmp/sbx-test-image-fs.XXXXXX";
static char mnt[PATH_MAX], backing[PATH_MAX], out[PATH_MAX];

static const char *mkfs(void) {
        return access("/sbin/mkfs.ext4", X_OK) == 0 ? "/sbin/mkfs.ext4" : "/usr/sbin/mkfs.ext4";
}

static int setup(void **state) {
        if (geteuid() != 0 || access("/dev/loop-control", W_OK) < 0 || access(mkfs(), X_OK) < 0)
                return 0;
        assert_non_null(mkdtemp(root));
        snprintf(mnt, sizeof(mnt), "%s/staging", root);
        snprintf(backing, sizeof(backing), "%s/staging.img", root);
        snprintf(out, sizeof(out), "%s/image", root);
        assert_int_equal(image_fs_private_namespace(), 0);
        return 0;
}

static int teardown(void **state) {
        if (root[sizeof(root) - 2] != 'X')
                (void) rm_rf(root);
        return 0;
}

static void need_root(void) {
        if (root[sizeof(root) - 2] == 'X')
                skip();
}

static size_t n_entries(const char *dir) {
        DIR *d = opendir(dir);
        size_t n = 0;

        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d)); )
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

/* Writes up to BYTES into PATH; returns what fit, errno in *ERR. */
static uint64_t fill(const char *path, uint64_t bytes, int *err) {
        static char buf[1 << 16];
        uint64_t done = 0;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        assert_true(fd >= 0);
        memset(buf, 0x5a, sizeof(buf));
        *err = 0;
        while (done < bytes) {
                ssize_t n = write(fd, buf, sizeof(buf));
                if (n < 0) {
                        *err = errno;
                        break;
                }
                done += (uint64_t) n;
        }
        if (*err == 0 && fsync(fd) < 0)
                *err = errno;
        close(fd);
        return done;
}

/* The writer gets ENOSPC at the budget; the backing file is gone already. */
static void test_bounded(void **state) {
        char file[PATH_MAX + 16];
        int err;

        need_root();
        assert_int_equal(image_fs_mount(mkfs(), backing, mnt, 16 * MiB), 0);
        assert_int_equal(access(backing, F_OK), -1);
        snprintf(file, sizeof(file), "%s/pages.img", mnt);
        assert_true(fill(file, 64 * MiB, &err) <= 16 * MiB);
        assert_int_equal(err, ENOSPC);
        assert_int_equal(image_fs_unmount(mnt), 0);
        /* Nothing left: no mount point, no backing file. */
        assert_int_equal(n_entries(root), 0);
}

/* What fits is copied out whole, 0600, and the file system goes. */
static void test_copy_out(void **state) {
        char file[PATH_MAX + 16];
        struct stat st;
        int err;

        need_root();
        assert_int_equal(image_fs_mount(mkfs(), backing, mnt, 32 * MiB), 0);
        snprintf(file, sizeof(file), "%s/pages.img", mnt);
        assert_int_equal(fill(file, 8 * MiB, &err), 8 * MiB);
        assert_int_equal(err, 0);
        assert_int_equal(mkdir(out, 0700), 0);
        assert_int_equal(image_fs_copy_out(mnt, out), 0);
        assert_int_equal(image_fs_unmount(mnt), 0);
        snprintf(file, sizeof(file), "%s/pages.img", out);
        assert_int_equal(stat(file, &st), 0);
        assert_int_equal((uint64_t) st.st_size, 8 * MiB);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* lost+found is ext4's, not the image's. */
        assert_int_equal(n_entries(out), 1);
        assert_int_equal(rm_rf(out), 0);
        assert_int_equal(n_entries(root), 0);
}

/* A failed set-up (mkfs fails) leaves nothing. */
static void test_mount_failure_leaves_nothing(void **state) {
        need_root();
        assert_true(image_fs_mount("/bin/false", backing, mnt, 16 * MiB) < 0);
        assert_int_equal(n_entries(root), 0);
}

static void put(const char *dir, const char *name, const char *text) {
        char path[PATH_MAX + 64];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_non_null(f = fopen(path, "we"));
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static bool has(const char *dir, const char *name) {
        char path[PATH_MAX + 64];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

static dev_t dev_of(const char *path) {
        struct stat st;

        assert_int_equal(stat(path, &st), 0);
        return st.st_dev;
}

/* A disk mounted while its last mount is still held elsewhere (a mount
 * namespace's copy, here a second mount point) gets that loop device, so
 * one file system: what one side writes the other sees at once. A deleted
 * image's device, still bound, is never taken for a new image at the same
 * path (a reused inode number). */
static void test_mount_again(void **state) {
        char disk[PATH_MAX], m1[PATH_MAX], m2[PATH_MAX];

        need_root();
        snprintf(disk, sizeof(disk), "%s/disk.img", root);
        snprintf(m1, sizeof(m1), "%s/m1", root);
        snprintf(m2, sizeof(m2), "%s/m2", root);
        assert_int_equal(mkdir(m1, 0700), 0);
        assert_int_equal(mkdir(m2, 0700), 0);
        assert_int_equal(image_fs_format(mkfs(), disk, 16 * MiB, "t"), 0);

        /* The first mount binds a loop device of its own. */
        assert_int_equal(image_fs_loop_mount_again(disk, m1, 0), 0);
        put(m1, "before", "1\n");
        /* Still mounted there: the same device, the same file system. */
        assert_int_equal(image_fs_loop_mount_again(disk, m2, 0), 1);
        assert_true(dev_of(m1) == dev_of(m2));
        assert_true(has(m2, "before"));
        put(m2, "after", "2\n");
        assert_true(has(m1, "after"));
        /* Unmounted here, held there (as a sandbox's copy would): again. */
        assert_int_equal(umount2(m1, 0), 0);
        assert_int_equal(image_fs_loop_mount_again(disk, m1, 0), 1);
        assert_true(dev_of(m1) == dev_of(m2));
        assert_int_equal(umount2(m1, 0), 0);
        assert_int_equal(umount2(m2, 0), 0);

        /* The image deleted under a mount that holds it, a new one at its
         * path: a loop device of its own, a file system of its own. */
        assert_int_equal(image_fs_loop_mount_again(disk, m1, 0), 0);
        assert_int_equal(unlink(disk), 0);
        assert_int_equal(image_fs_format(mkfs(), disk, 16 * MiB, "t"), 0);
        assert_int_equal(image_fs_loop_mount_again(disk, m2, 0), 0);
        assert_true(dev_of(m1) != dev_of(m2));
        assert_true(has(m1, "after"));
        assert_false(has(m2, "after"));
        assert_int_equal(umount2(m1, 0), 0);
        assert_int_equal(umount2(m2, 0), 0);
        assert_int_equal(rm_rf(m1), 0);
        assert_int_equal(rm_rf(m2), 0);
        assert_int_equal(unlink(disk), 0);
        assert_int_equal(n_entries(root), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_copy_out),
                cmocka_unit_test(test_mount_failure_leaves_nothing),
                cmocka_unit_test(test_mount_again),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
