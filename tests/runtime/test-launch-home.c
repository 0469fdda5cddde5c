/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A launcher's worker's home on its disk (launch-home.h): bound only from a
 * mounted disk, only its own home, never through a symlink a worker planted,
 * and given to the worker's UID only when fresh. Each refusal sits beside
 * the bind that succeeds. Needs root; runs in a mount namespace of its own,
 * with tmpfs mounts standing in for the disks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-fs.h"
#include "launch-home.h"
#include "rmrf.h"
#include "util.h"

#define UID 4242

static char root[] = "/tmp/sbx-test-launch-home.XXXXXX";
static char disks[256];
/* The host's stand-in: a child left in the namespace the test started in
 * (PID 1's /proc entry need not be readable where the tests run). */
static pid_t host_pid = -1;
static char host[16];

static int setup(void **state) {
        if (geteuid() != 0)
                return 0;
        assert_non_null(mkdtemp(root));
        snprintf(disks, sizeof(disks), "%s/disks", root);
        assert_int_equal(mkdir(disks, 0700), 0);
        host_pid = fork();
        assert_true(host_pid >= 0);
        if (host_pid == 0) {
                pause();
                _exit(0);
        }
        snprintf(host, sizeof(host), "%d", (int) host_pid);
        assert_int_equal(image_fs_private_namespace(), 0);
        return 0;
}

static int teardown(void **state) {
        if (host_pid > 0) {
                (void) kill(host_pid, SIGKILL);
                (void) waitpid(host_pid, NULL, 0);
        }
        if (root[sizeof(root) - 2] != 'X')
                (void) rm_rf(root);
        return 0;
}

static void need_root(void) {
        if (root[sizeof(root) - 2] == 'X')
                skip();
}

/* A worker ID's disk: a tmpfs mounted at disks/ID (unless MOUNTED is false)
 * holding home; and its host home, an empty directory. Returns the latter. */
static const char *make_disk(const char *id, bool mounted, char *home, size_t size) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", disks, id);
        assert_int_equal(mkdir(path, 0700), 0);
        if (mounted)
                assert_int_equal(mount("tmpfs", path, "tmpfs", 0, "size=1m,mode=0700"), 0);
        snprintf(path, sizeof(path), "%s/%s/home", disks, id);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(home, size, "%s/home-%s", root, id);
        assert_int_equal(mkdir(home, 0700), 0);
        return home;
}

static bool is_mount_point(const char *path) {
        struct stat a, b;
        char parent[PATH_MAX];

        snprintf(parent, sizeof(parent), "%s/..", path);
        return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static void test_fresh_home(void **state) {
        char home[512], file[PATH_MAX], seen[PATH_MAX];
        struct stat st;

        need_root();
        make_disk("fresh", true, home, sizeof(home));
        assert_int_equal(launch_home_disk(disks, host, "fresh", UID, UID, home), 0);
        assert_true(is_mount_point(home));
        assert_int_equal(stat(home, &st), 0);
        assert_int_equal(st.st_uid, UID);
        assert_int_equal(st.st_gid, UID);
        assert_int_equal(st.st_mode & 07777, 0700);
        /* The same directory: a file made through the home is the disk's. */
        snprintf(file, sizeof(file), "%s/f", home);
        snprintf(seen, sizeof(seen), "%s/fresh/home/f", disks);
        FILE *f = fopen(file, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(access(seen, F_OK), 0);
}

/* A resume: the home is already the worker's, and stays so. Its refusal
 * beside it: a home of another UID is never handed over. */
static void test_owner(void **state) {
        char home[512], path[PATH_MAX];

        need_root();
        make_disk("same", true, home, sizeof(home));
        snprintf(path, sizeof(path), "%s/same/home", disks);
        assert_int_equal(chown(path, UID, UID), 0);
        assert_int_equal(launch_home_disk(disks, host, "same", UID, UID, home), 0);
        assert_true(is_mount_point(home));

        make_disk("other", true, home, sizeof(home));
        snprintf(path, sizeof(path), "%s/other/home", disks);
        assert_int_equal(chown(path, 5000, 5000), 0);
        assert_int_equal(launch_home_disk(disks, host, "other", UID, UID, home), -EPERM);
        assert_false(is_mount_point(home));
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_uid, 5000);
}

/* No disk mounted: the home would be the host's file system, uncapped. */
static void test_not_mounted(void **state) {
        char home[512];

        need_root();
        make_disk("bare", false, home, sizeof(home));
        assert_int_equal(launch_home_disk(disks, host, "bare", UID, UID, home), -ENOTBLK);
        assert_false(is_mount_point(home));
        assert_int_equal(launch_home_disk(disks, host, "missing", UID, UID, home), -ENOENT);
}

/* A worker that planted a symlink for its home (to the host's /etc), or a
 * mount of something else there, gets nothing bound and nothing chowned. */
static void test_planted_home(void **state) {
        char home[512], path[PATH_MAX];
        struct stat st;

        need_root();
        make_disk("link", true, home, sizeof(home));
        snprintf(path, sizeof(path), "%s/link/home", disks);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(symlink("/etc", path), 0);
        assert_true(launch_home_disk(disks, host, "link", UID, UID, home) < 0);
        assert_false(is_mount_point(home));
        assert_int_equal(stat("/etc", &st), 0);
        assert_int_equal(st.st_uid, 0);

        make_disk("elsewhere", true, home, sizeof(home));
        snprintf(path, sizeof(path), "%s/elsewhere/home", disks);
        assert_int_equal(mount("tmpfs", path, "tmpfs", 0, "size=1m"), 0);
        assert_int_equal(launch_home_disk(disks, host, "elsewhere", UID, UID, home), -EXDEV);
        assert_false(is_mount_point(home));
}

/* The claim alone (a shared-kernel worker's ExecStartPre=+, whose unit binds
 * the home itself): the fresh home becomes the worker's and nothing is bound
 * anywhere; the home is never given to root (the control is the claim before
 * it), and the refusals of launch_home_disk() hold as they do there. */
static void test_claim(void **state) {
        char home[512], path[PATH_MAX];
        struct stat st;
        int fd;

        need_root();
        make_disk("claim", true, home, sizeof(home));
        snprintf(path, sizeof(path), "%s/claim/home", disks);
        assert_int_equal(launch_home_disk_claim(disks, "claim", 0, 0, NULL), -EPERM);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_uid, 0);
        fd = launch_home_disk_claim(disks, "claim", UID, UID, NULL);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        close(fd);
        assert_int_equal(st.st_uid, UID);
        assert_int_equal(st.st_mode & 07777, 0700);
        assert_false(is_mount_point(home));
        /* Again (a restart of the unit): the home is the worker's already. */
        fd = launch_home_disk_claim(disks, "claim", UID, UID, NULL);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(launch_home_disk_claim(disks, "claim", UID + 1, UID + 1, NULL), -EPERM);
        make_disk("claim-bare", false, home, sizeof(home));
        assert_int_equal(launch_home_disk_claim(disks, "claim-bare", UID, UID, NULL), -ENOTBLK);
}

/* A launcher left in the host's mount namespace binds nothing: the bind would
 * be the host's. Its control is every bind above, made in a namespace of the
 * test's own. Run in a child that joins the host stand-in's namespace. */
static void test_host_namespace(void **state) {
        char home[512];
        int status;
        pid_t pid;

        need_root();
        make_disk("host", true, home, sizeof(home));
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char ns[64];
                snprintf(ns, sizeof(ns), "/proc/%s/ns/mnt", host);
                int fd = open(ns, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || setns(fd, CLONE_NEWNS) < 0)
                        _exit(2);
                if (launch_home_disk(disks, host, "host", UID, UID, home) != -EHOSTDOWN)
                        _exit(3);
                _exit(is_mount_point(home) ? 4 : 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        /* The same disk, from the test's own namespace: bound. */
        assert_int_equal(launch_home_disk(disks, host, "host", UID, UID, home), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fresh_home),
                cmocka_unit_test(test_claim),
                cmocka_unit_test(test_owner),
                cmocka_unit_test(test_not_mounted),
                cmocka_unit_test(test_planted_home),
                cmocka_unit_test(test_host_namespace),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
