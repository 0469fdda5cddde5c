/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "workspace-mkfs.h"

struct WorkspaceMkfs {
        sd_event_source *child;
        workspace_mkfs_done_t done;
        void *userdata;
};

WorkspaceMkfs *workspace_mkfs_free(WorkspaceMkfs *j) {
        if (!j)
                return NULL;
        /* The source owns the process: unref kills and reaps it. */
        sd_event_source_disable_unref(j->child);
        free(j);
        return NULL;
}

static int on_mkfs_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        WorkspaceMkfs *j = userdata;
        int r = si->si_code == CLD_EXITED && si->si_status == 0 ? 0 : -EIO;

        /* Reaped: nothing left to kill. */
        (void) sd_event_source_set_child_process_own(s, false);
        j->done(j, r, j->userdata);
        return 0;
}

/* mkfs runs with a fixed environment and no terminal: nothing of the client's
 * reaches it but the size, which the daemon checked. */
static pid_t mkfs_fork(const char *mkfs_path, const char *image) {
        char * const argv[] = {
                (char *) mkfs_path, (char *) "-q", (char *) "-F", (char *) "-m", (char *) "0",
                (char *) "-E", (char *) "nodiscard,root_owner=0:0", (char *) "-L", (char *) "sandboxd-ws",
                (char *) image, NULL
        };
        char * const envp[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *) "LC_ALL=C", NULL };
        sigset_t all;
        pid_t pid;

        pid = fork();
        if (pid != 0)
                return pid;
        /* The daemon blocks SIGCHLD, SIGTERM and more for sd-event; mkfs gets a clean mask. */
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                _exit(127);
        execve(mkfs_path, argv, envp);
        _exit(127);
}

int workspace_mkfs_start(sd_event *e, const char *mkfs_path, const char *image, workspace_mkfs_done_t done,
                         void *userdata, WorkspaceMkfs **ret) {
        _cleanup_free_ WorkspaceMkfs *j = NULL;
        pid_t pid;
        int r;

        assert(e && mkfs_path && image && done && ret);

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (WorkspaceMkfs) { .done = done, .userdata = userdata };
        pid = mkfs_fork(mkfs_path, image);
        if (pid < 0)
                return -errno;
        r = sd_event_add_child(e, &j->child, pid, WEXITED, on_mkfs_exit, j);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return r;
        }
        (void) sd_event_source_set_child_process_own(j->child, true);
        (void) sd_event_source_set_description(j->child, "workspace-mkfs");
        *ret = TAKE_PTR(j);
        return 0;
}
