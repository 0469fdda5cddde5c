/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <systemd/sd-daemon.h>

#include "fdstore.h"
#include "util.h"

int fdstore_push(const char *name, int fd) {
        _cleanup_free_ char *state = NULL;

        if (asprintf(&state, "FDSTORE=1\nFDNAME=%s", name) < 0)
                return -ENOMEM;
        /* 0: not run by systemd (no NOTIFY_SOCKET); nothing can be kept then. */
        return sd_pid_notify_with_fds(0, false, state, &fd, 1);
}

int fdstore_remove(const char *name) {
        return sd_notifyf(false, "FDSTOREREMOVE=1\nFDNAME=%s", name);
}

int fdstore_load(FdStore *s) {
        char **names = NULL;
        int n;

        *s = (FdStore) {};
        n = sd_listen_fds_with_names(true, &names);
        if (n <= 0) {
                strv_free(names);
                return n;
        }
        s->entries = calloc((size_t) n, sizeof(FdStoreEntry));
        if (!s->entries) {
                for (int i = 0; i < n; i++)
                        close(SD_LISTEN_FDS_START + i);
                strv_free(names);
                return -ENOMEM;
        }
        for (int i = 0; i < n; i++) {
                s->entries[i] = (FdStoreEntry) { .name = names[i], .fd = SD_LISTEN_FDS_START + i };
                names[i] = NULL;
                (void) fcntl(s->entries[i].fd, F_SETFD, FD_CLOEXEC);
        }
        s->n = (size_t) n;
        strv_free(names);
        return n;
}

int fdstore_take(FdStore *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (s->entries[i].fd >= 0 && s->entries[i].name && streq(s->entries[i].name, name))
                        return TAKE_FD(s->entries[i].fd);
        return -1;
}

bool fdstore_has(const FdStore *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (s->entries[i].fd >= 0 && s->entries[i].name && streq(s->entries[i].name, name))
                        return true;
        return false;
}

void fdstore_done(FdStore *s) {
        for (size_t i = 0; i < s->n; i++) {
                if (s->entries[i].fd >= 0) {
                        log_struct(LOG_NOTICE, "Dropping a stored fd nothing accounts for",
                                   "SANDBOXD_FDNAME", s->entries[i].name ?: "", NULL);
                        if (s->entries[i].name)
                                (void) fdstore_remove(s->entries[i].name);
                        safe_close(s->entries[i].fd);
                }
                free(s->entries[i].name);
        }
        free(s->entries);
        *s = (FdStore) {};
}
