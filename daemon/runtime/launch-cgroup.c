/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "launch-cgroup.h"
#include "util.h"

#define POLL_USEC (20 * USEC_PER_MSEC)

int launch_cgroup_paths_parse(const char *text, char **ret_unified, char **ret_systemd) {
        _cleanup_free_ char *unified = NULL, *systemd = NULL;

        /* Lines are "ID:CONTROLLERS:PATH"; the path may itself contain ':'. */
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t) (end - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (end - c1 - 1)) : NULL;

                if (c2 && c2 + 1 < end && c2[1] == '/') {
                        size_t controllers_len = (size_t) (c2 - c1 - 1);
                        char **slot = NULL;

                        if (c1 - line == 1 && line[0] == '0' && controllers_len == 0)
                                slot = &unified;
                        else if (controllers_len == strlen("name=systemd") &&
                                 strncmp(c1 + 1, "name=systemd", controllers_len) == 0)
                                slot = &systemd;
                        if (slot && !*slot) {
                                *slot = strndup(c2 + 1, (size_t) (end - c2 - 1));
                                if (!*slot)
                                        return -ENOMEM;
                        }
                }
                line = *end ? end + 1 : end;
        }
        if (!unified && !systemd)
                return -EINVAL;
        *ret_unified = TAKE_PTR(unified);
        *ret_systemd = TAKE_PTR(systemd);
        return 0;
}

bool launch_cgroup_is_unit(const char *path, const char *unit) {
        const char *last = strrchr(path, '/');

        return last && streq(last + 1, unit);
}

int launch_cgroup_own_procs(const char *unit, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL, *unified = NULL, *systemd = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t len = 0;
        int r;

        f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        if (getdelim(&text, &len, '\0', f) < 0)
                return -EIO;
        r = launch_cgroup_paths_parse(text, &unified, &systemd);
        if (r < 0)
                return r;
        /* Pure cgroup v2, then the hybrid layout's unified mount, then v1. */
        const struct { const char *mount, *path; } candidates[] = {
                { "/sys/fs/cgroup", unified },
                { "/sys/fs/cgroup/unified", unified },
                { "/sys/fs/cgroup/systemd", systemd },
        };
        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                const char *path = candidates[i].path;

                if (!path || !launch_cgroup_is_unit(path, unit))
                        continue;
                if (snprintf(buf, size, "%s%s/cgroup.procs", candidates[i].mount, path) >= (int) size)
                        return -ENAMETOOLONG;
                if (access(buf, R_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

/* The processes procs_path lists other than this one; with kill_them, each is
 * sent SIGKILL. Returns their number, or a negative errno. */
static int others_in(const char *procs_path, bool kill_them) {
        _cleanup_fclose_ FILE *f = fopen(procs_path, "re");
        pid_t self = getpid();
        int pid, n = 0;

        if (!f)
                return errno == ENOENT ? 0 : -errno;    /* the cgroup itself is gone */
        while (fscanf(f, "%d", &pid) == 1) {
                if (pid == self)
                        continue;
                n++;
                if (kill_them)
                        (void) kill(pid, SIGKILL);
        }
        return n;
}

int launch_cgroup_wait_alone(const char *procs_path, uint64_t grace_usec) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), killed_at = 0;
        bool sent_kill = false;
        int killed = 0, n;

        /* The give-up deadline counts from the kill, not from the start: a
         * launcher that was descheduled past both graces must still kill
         * before it returns. */
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                n = others_in(procs_path, false);
                if (n <= 0)
                        return n < 0 ? n : killed;
                if (!sent_kill && now - start >= grace_usec) {
                        killed = others_in(procs_path, true);
                        if (killed < 0)
                                return killed;
                        sent_kill = true;
                        killed_at = now;
                } else if (sent_kill && now - killed_at >= grace_usec)
                        return -ETIMEDOUT;
                (void) usleep(POLL_USEC);
        }
}
