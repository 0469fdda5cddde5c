/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "launch-env.h"
#include "spawn.h"
#include "util.h"

static _Noreturn void child_exec(char * const *argv, int out_fd) {
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* Its own group, so a timeout can kill everything it started. */
        (void) setpgid(0, 0);
        if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
            dup2(out_fd, STDERR_FILENO) < 0)
                _exit(127);
        execve(argv[0], argv, launch_runtime_environment);
        _exit(127);
}

static int read_until_eof(int fd, uint64_t deadline, char *out, size_t out_size, size_t *len) {
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char discard[4096];
                ssize_t n;
                int r;

                if (now >= deadline)
                        return -ETIMEDOUT;
                r = poll(&p, 1, (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT32_MAX));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
                if (*len + 1 < out_size)
                        n = read(fd, out + *len, out_size - 1 - *len);
                else
                        n = read(fd, discard, sizeof(discard));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                if (*len + 1 < out_size)
                        *len += (size_t) n;
        }
}

int spawn_capture(char * const *argv, uint64_t timeout_usec, char *out, size_t out_size, int *ret_status) {
        _cleanup_close_ int rfd = -1, wfd = -1;
        int pipefd[2], status, r;
        size_t len = 0;
        pid_t pid;

        if (!argv || !argv[0] || argv[0][0] != '/' || !out || out_size == 0)
                return -EINVAL;
        out[0] = 0;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        rfd = pipefd[0];
        wfd = pipefd[1];
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child_exec(argv, wfd);
        wfd = safe_close(wfd);
        (void) setpgid(pid, pid);       /* also here: no race with the kill below */

        r = read_until_eof(rfd, now_usec(CLOCK_MONOTONIC) + timeout_usec, out, out_size, &len);
        out[len] = 0;
        if (r == -ETIMEDOUT) {
                (void) kill(-pid, SIGKILL);
                (void) kill(pid, SIGKILL);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r < 0)
                return r;
        if (ret_status)
                *ret_status = status;
        return 0;
}

static int rm_rf_children(int dir_fd) {
        DIR *d = fdopendir(dir_fd);
        int ret = 0;

        if (!d) {
                safe_close(dir_fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        continue;
                if (errno != EISDIR && errno != EPERM) {
                        ret = ret ?: -errno;
                        continue;
                }
                int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0) {
                        ret = ret ?: -errno;
                        continue;
                }
                int r = rm_rf_children(sub);
                if (r < 0)
                        ret = ret ?: r;
                if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                        ret = ret ?: -errno;
        }
        closedir(d);
        return ret;
}

int rm_rf(const char *dir_path) {
        int fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r;

        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = rm_rf_children(fd);
        if (rmdir(dir_path) < 0 && errno != ENOENT)
                return r ?: -errno;
        return r;
}

const char *first_line(const char *s, char *buf, size_t n) {
        size_t i = 0;

        if (n == 0)
                return "";
        while (s && *s == '\n')
                s++;
        for (; s && s[i] && s[i] != '\n' && i + 1 < n; i++)
                buf[i] = (unsigned char) s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
        buf[i] = 0;
        return buf;
}
