/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-started.h"
#include "util.h"

pid_t exec_started_read_pid_file(void *path) {
        char buf[32] = "";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        return n > 0 && atoi(buf) > 0 ? atoi(buf) : 0;
}

pid_t exec_started_wait(pid_t runsc, ExecStartedReadPid read_pid, void *userdata, uint64_t timeout_usec,
                        int *ret_status, bool *ret_reaped) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + timeout_usec;

        *ret_reaped = false;
        for (;;) {
                /* runsc first, then its file: what runsc wrote before it
                 * ended is there by the time the file is read. */
                *ret_reaped = waitpid(runsc, ret_status, WNOHANG) == runsc;
                pid_t inside = read_pid(userdata);
                if (inside > 0 || *ret_reaped || now_usec(CLOCK_MONOTONIC) >= end)
                        return inside;
                usleep(2000);
        }
}
