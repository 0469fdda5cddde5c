/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* systemd's file descriptor store: what sandboxd hands PID 1 to keep across
 * its own restarts (FileDescriptorStoreMax= in sandboxd.service), each fd
 * under a name, and what it gets back at the next start. */
typedef struct FdStoreEntry {
        char *name;
        int fd;                         /* -1 once taken */
} FdStoreEntry;

typedef struct FdStore {
        FdStoreEntry *entries;
        size_t n;
} FdStore;

int fdstore_push(const char *name, int fd);
int fdstore_remove(const char *name);

/* The fds systemd passed at start (LISTEN_FDS, LISTEN_FDNAMES). */
int fdstore_load(FdStore *s);
/* Takes the fd named NAME, or -1 if none was passed. */
int fdstore_take(FdStore *s, const char *name);
bool fdstore_has(const FdStore *s, const char *name);
/* Closes what nobody took, also removing it from systemd's store. */
void fdstore_done(FdStore *s);
