/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pager.h"
#include "util.h"

static bool pager_is_none(const char *cmd) {
        return isempty(cmd) || streq(cmd, "cat");
}

const char *pager_pick(const char *sandboxctl_pager, const char *pager, bool *ret_default) {
        *ret_default = false;
        if (sandboxctl_pager)
                return pager_is_none(sandboxctl_pager) ? NULL : sandboxctl_pager;
        if (pager)
                return pager_is_none(pager) ? NULL : pager;
        *ret_default = true;
        return "less -FRX";
}

/* In the child: the pipe is its stdin; what sandboxctl ignores or blocks
 * must not carry over into the pager. Reports a failed exec on REPORT_FD. */
__attribute__((noreturn)) static void pager_exec(int read_fd, int report_fd, const char *cmd, bool dflt) {
        sigset_t none;
        int e;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        if (dup2(read_fd, STDIN_FILENO) < 0)
                _exit(EXIT_FAILURE);
        if (read_fd != STDIN_FILENO)
                close(read_fd);
        if (dflt)
                execlp("less", "less", "-FRX", (char *) NULL);
        else
                execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
        e = errno;
        (void) !write(report_fd, &e, sizeof(e));
        _exit(EXIT_FAILURE);
}

int pager_open(Pager *p) {
        const char *cmd;
        struct sigaction ign = { .sa_handler = SIG_IGN };
        int data[2], report[2], e;
        bool dflt;
        ssize_t n;
        pid_t pid;

        *p = (Pager) { .saved_stdout = -1 };
        if (!isatty(STDOUT_FILENO))
                return 0;
        cmd = pager_pick(getenv("SANDBOXCTL_PAGER"), getenv("PAGER"), &dflt);
        if (!cmd)
                return 0;
        if (pipe2(data, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(report, O_CLOEXEC) < 0) {
                e = -errno;
                close(data[0]), close(data[1]);
                return e;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                e = -errno;
                close(data[0]), close(data[1]), close(report[0]), close(report[1]);
                return e;
        }
        if (pid == 0) {
                close(data[1]);
                close(report[0]);
                pager_exec(data[0], report[1], cmd, dflt);
        }
        close(data[0]);
        close(report[1]);
        /* EOF: the exec succeeded (the pipe was close-on-exec). */
        do
                n = read(report[0], &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        close(report[0]);
        if (n > 0) {
                close(data[1]);
                (void) waitpid(pid, NULL, 0);
                return 0;
        }
        p->saved_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (p->saved_stdout < 0 || dup2(data[1], STDOUT_FILENO) < 0) {
                e = -errno;
                close(data[1]);
                if (p->saved_stdout >= 0)
                        close(p->saved_stdout);
                (void) waitpid(pid, NULL, 0);
                *p = (Pager) { .saved_stdout = -1 };
                return e;
        }
        close(data[1]);
        p->pid = pid;
        /* Ctrl-C and Ctrl-\ are the pager's to handle: were sandboxctl to die
         * of them, the shell would take the terminal back from a running pager. */
        (void) sigaction(SIGINT, &ign, &p->saved_int);
        (void) sigaction(SIGQUIT, &ign, &p->saved_quit);
        return 1;
}

void pager_close(Pager *p) {
        if (p->pid <= 0)
                return;
        (void) fflush(stdout);
        clearerr(stdout);
        /* Replacing fd 1 closes the pipe's last write end: the pager sees EOF. */
        (void) dup2(p->saved_stdout, STDOUT_FILENO);
        close(p->saved_stdout);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        (void) sigaction(SIGINT, &p->saved_int, NULL);
        (void) sigaction(SIGQUIT, &p->saved_quit, NULL);
        *p = (Pager) { .saved_stdout = -1 };
}
