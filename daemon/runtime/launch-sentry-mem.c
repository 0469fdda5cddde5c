/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the memory guard follows, without a second runsc per worker.
 *
 * "runsc events --interval=1" is a whole Go process per worker (about 5 MiB
 * of PSS and 20 MiB of RSS at 50 idle workers, a quarter of an idle worker:
 * bench/density.sh), and it asks the sentry for its statistics every second.
 * The number it reports, memory.usage.usage, is the sentry's memory file's
 * allocated size plus the counter the sentry keeps in a shared memfd of its
 * own (runsc 0.0~20240729; measured equal to the byte on idle and allocating
 * workers). Both are files the sentry holds open, so the launcher (root, with
 * CAP_SYS_PTRACE) opens them once through /proc/SENTRY/fd and reads them
 * itself: fstat() and one pread() a second. Where they are not there (another
 * runsc), the guard falls back to runsc events. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch-sentry-mem.h"
#include "util.h"

#define MEMORY_FILE "/memfd:runsc-memory (deleted)"
#define USAGE_FILE "/memfd:memory-usage (deleted)"

static bool is_sentry(pid_t pid) {
        char path[64], argv0[64] = "";
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, argv0, sizeof(argv0) - 1);
        if (n <= 0)
                return false;
        argv0[n] = 0;
        return streq(argv0, "runsc-sandbox");
}

/* runsc forks from whichever of its threads runs: its children are listed
 * per thread. */
static pid_t find_sentry(pid_t runtime_pid) {
        char path[64];
        struct dirent *de;
        pid_t found = 0;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) runtime_pid);
        DIR *d = opendir(path);
        if (!d)
                return 0;
        while (!found && (de = readdir(d))) {
                char children[320], buf[512];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(children, sizeof(children), "/proc/%d/task/%s/children", (int) runtime_pid, de->d_name);
                _cleanup_fclose_ FILE *f = fopen(children, "re");
                if (!f || !fgets(buf, sizeof(buf), f))
                        continue;
                for (char *tok = strtok(buf, " \n"); tok && !found; tok = strtok(NULL, " \n")) {
                        pid_t child = (pid_t) atoi(tok);
                        if (child > 0 && is_sentry(child))
                                found = child;
                }
        }
        closedir(d);
        return found;
}

int sentry_mem_open(pid_t runtime_pid, SentryMem *ret) {
        char path[64];
        struct dirent *de;
        _cleanup_close_ int file_fd = -1, usage_fd = -1;
        pid_t sentry;

        assert(ret);
        sentry = find_sentry(runtime_pid);
        if (sentry <= 0)
                return -ESRCH;
        snprintf(path, sizeof(path), "/proc/%d/fd", (int) sentry);
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d)) && (file_fd < 0 || usage_fd < 0)) {
                char target[128];
                ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
                if (n <= 0)
                        continue;
                target[n] = 0;
                int *slot = streq(target, MEMORY_FILE) ? &file_fd : streq(target, USAGE_FILE) ? &usage_fd : NULL;
                if (!slot || *slot >= 0)
                        continue;
                *slot = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
        }
        closedir(d);
        if (file_fd < 0 || usage_fd < 0)
                return -ENOENT;
        *ret = (SentryMem) { .file_fd = TAKE_FD(file_fd), .usage_fd = TAKE_FD(usage_fd) };
        return 0;
}

int sentry_mem_read(const SentryMem *m, uint64_t *ret) {
        struct stat st;
        uint64_t counter;

        assert(m);
        assert(ret);
        if (fstat(m->file_fd, &st) < 0)
                return -errno;
        if (pread(m->usage_fd, &counter, sizeof(counter), 0) != (ssize_t) sizeof(counter))
                return -EIO;
        *ret = (uint64_t) st.st_blocks * 512 + counter;
        return 0;
}

void sentry_mem_close(SentryMem *m) {
        assert(m);
        m->file_fd = safe_close(m->file_fd);
        m->usage_fd = safe_close(m->usage_fd);
}
