/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "launch-home.h"
#include "ns-ident.h"
#include "util.h"
#include "worker-disk-layout.h"

/* The bind must stay in this process's own mount namespace: one made on the
 * host would never be removed (the disk's stop leaves a launcher's home
 * alone) and would cost every later unit's start. */
static int check_own_mount_namespace(const char *host_proc, const char *id) {
        char reason[320];
        NsIdSet own, host;
        int r;

        r = ns_id_set_read("self", NS_MASK(NS_MNT), &own);
        if (r >= 0)
                r = ns_id_set_read(host_proc, NS_MASK(NS_MNT), &host);
        if (r < 0)
                return log_error_errno(r, "Worker %s: cannot read the mount namespaces: %m", id);
        r = ns_id_set_compare(&own, &host, NS_MASK(NS_MNT), reason, sizeof(reason));
        if (r < 0)
                log_error("Worker %s: refusing to bind its disk's home: %s.", id, reason);
        return r;
}

int launch_home_disk_claim(const char *mount_root, const char *id, uid_t uid, gid_t gid, struct stat *ret_st) {
        char mnt[PATH_MAX];
        _cleanup_close_ int mnt_fd = -1, home_fd = -1;
        struct statx sx;
        struct stat st;

        if (snprintf(mnt, sizeof(mnt), "%s/%s", mount_root, id) >= (int) sizeof(mnt))
                return log_error_errno(ENAMETOOLONG, "Worker %s: %s/%s is too long", id, mount_root, id);
        if (uid == 0 || gid == 0) {
                log_error("Worker %s: refusing to give its disk's home to root.", id);
                return -EPERM;
        }
        mnt_fd = open(mnt, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mnt_fd < 0)
                return log_error_errno(errno, "Worker %s: its disk is not at %s: %m", id, mnt);
        /* Without its disk the home would be the host's file system, uncapped. */
        if (statx(mnt_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0)
                return log_error_errno(errno, "Worker %s: cannot stat %s: %m", id, mnt);
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
                log_error("Worker %s: %s is not a mounted disk; refusing to run it on the host's file system.", id, mnt);
                return -ENOTBLK;
        }
        home_fd = openat(mnt_fd, SBX_DISK_HOME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (home_fd < 0 || fstat(home_fd, &st) < 0)
                return log_error_errno(errno, "Worker %s: cannot open its disk's home in %s: %m", id, mnt);
        if (major(st.st_dev) != sx.stx_dev_major || minor(st.st_dev) != sx.stx_dev_minor) {
                log_error("Worker %s: %s/" SBX_DISK_HOME " is not on its disk.", id, mnt);
                return -EXDEV;
        }
        if (st.st_uid == 0 && st.st_gid == 0) {
                if (fchown(home_fd, uid, gid) < 0)
                        return log_error_errno(errno, "Worker %s: cannot give its disk's home to UID %u: %m", id,
                                               (unsigned) uid);
        } else if (st.st_uid != uid) {
                log_error("Worker %s: its disk's home belongs to UID %u, the worker is UID %u; refusing.", id,
                          (unsigned) st.st_uid, (unsigned) uid);
                return -EPERM;
        }
        /* As systemd sets a state directory's mode at every start. */
        if ((st.st_mode & 07777) != 0700 && fchmod(home_fd, 0700) < 0)
                return log_error_errno(errno, "Worker %s: cannot make its disk's home 0700: %m", id);
        if (ret_st)
                *ret_st = st;
        return TAKE_FD(home_fd);
}

int launch_home_disk(const char *mount_root, const char *host_proc, const char *id, uid_t uid, gid_t gid,
                     const char *home) {
        _cleanup_close_ int home_fd = -1;
        char source[64];
        struct stat st, bound;
        int r;

        r = check_own_mount_namespace(host_proc, id);
        if (r < 0)
                return r;
        home_fd = launch_home_disk_claim(mount_root, id, uid, gid, &st);
        if (home_fd < 0)
                return home_fd;
        snprintf(source, sizeof(source), "/proc/self/fd/%d", home_fd);
        if (mount(source, home, NULL, MS_BIND, NULL) < 0)
                return log_error_errno(errno, "Worker %s: cannot bind its disk's home on %s: %m", id, home);
        if (stat(home, &bound) < 0 || bound.st_dev != st.st_dev || bound.st_ino != st.st_ino) {
                log_error("Worker %s: %s is not its disk's home after the bind.", id, home);
                return -EIO;
        }
        return 0;
}
