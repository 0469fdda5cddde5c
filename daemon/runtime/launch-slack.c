/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "launch-slack.h"
#include "parse-util.h"
#include "util.h"

#define WALKS_MAX 8
#define PIDS_MAX 4096

bool launch_slack_deferrable(void) {
        return access("/proc/thread-self/children", R_OK) == 0;
}

/* Sets one thread's slack unless it already has it: 1 set, 0 had it, or a
 * negative errno (-ESRCH: it ended, which is no failure). The file is the
 * thread's own under /proc/TID (a task directory has none). */
static int task_slack_set(pid_t tid, uint64_t slack_ns) {
        char path[64], buf[32];
        _cleanup_close_ int fd = -1;
        uint64_t now;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/timerslack_ns", tid);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        if (parse_uint64(buf, &now) >= 0 && now == slack_ns)
                return 0;
        n = snprintf(buf, sizeof(buf), "%" PRIu64, slack_ns);
        /* A seq_file: no pwrite(). */
        if (lseek(fd, 0, SEEK_SET) < 0 || write(fd, buf, (size_t) n) < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        return 1;
}

/* Appends the children thread TID forked to PIDS (at most PIDS_MAX). */
static void task_children(pid_t pid, pid_t tid, pid_t *pids, size_t *n) {
        char path[64];
        _cleanup_fclose_ FILE *f = NULL;
        int child;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, tid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (*n < PIDS_MAX && fscanf(f, "%d", &child) == 1)
                pids[(*n)++] = child;
}

/* One walk of ROOT's tree: how many threads it set, or a negative errno. */
static int walk(pid_t root, uint64_t slack_ns) {
        _cleanup_free_ pid_t *pids = malloc(PIDS_MAX * sizeof(pid_t));
        size_t n = 0;
        int set = 0;

        if (!pids)
                return -ENOMEM;
        pids[n++] = root;
        for (size_t i = 0; i < n; i++) {
                char dir[64];
                _cleanup_(closedirp) DIR *d = NULL;
                struct dirent *de;

                snprintf(dir, sizeof(dir), "/proc/%d/task", pids[i]);
                d = opendir(dir);
                if (!d) {
                        if (i == 0)
                                return -ESRCH;
                        continue;       /* ended since its parent listed it */
                }
                while ((de = readdir(d))) {
                        uint64_t tid;
                        if (parse_uint64(de->d_name, &tid) < 0 || tid > INT32_MAX)
                                continue;       /* "." and ".." */
                        int r = task_slack_set((pid_t) tid, slack_ns);
                        if (r < 0 && r != -ESRCH)
                                return r;
                        set += r > 0;
                        task_children(pids[i], (pid_t) tid, pids, &n);
                }
        }
        return set;
}

int launch_slack_apply(pid_t root, uint64_t slack_ns) {
        int total = 0;

        for (int i = 0; i < WALKS_MAX; i++) {
                int r = walk(root, slack_ns);
                if (r < 0)
                        return r;
                if (r == 0)
                        return total;
                total += r;
        }
        return total;
}
