/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "authz.h"

/* Who may learn of a worker owned by OWNER: VIEWER itself, root, and a
 * viewer that may see all workers (manage-workers, decided by polkit once:
 * at ListWorkers for that listing, at Subscribe for that subscription).
 * The one rule for ListWorkers, ListWorkersEx and every signal. */
bool sbx_sees_worker(uid_t viewer, bool sees_all, uid_t owner);

/* A workspace is seen by its owner and root only: manage-workspaces is not
 * asked at Subscribe (one call waits for one polkit answer). */
bool sbx_sees_workspace(uid_t viewer, uid_t owner);

/* At most this many subscriptions per UID other than root's, and in all:
 * every signal is one message to each entitled subscriber, so the bound is
 * on the daemon's work per change as much as on its memory. */
#define SUBSCRIBERS_MAX_PER_UID 128
#define SUBSCRIBERS_MAX 4096

typedef struct Subscriber {
        char *name;             /* the client's unique bus name */
        uid_t uid;
        bool sees_all;
} Subscriber;

/* Clients that called Subscribe and whose name has not vanished since. */
typedef struct Subscribers {
        Subscriber *items;
        size_t n, allocated;
        size_t max_per_uid, max_total;  /* SUBSCRIBERS_MAX_PER_UID, SUBSCRIBERS_MAX unless a test says */
} Subscribers;

typedef enum Audience {
        AUDIENCE_WORKER,        /* sbx_sees_worker() of the owner */
        AUDIENCE_WORKSPACE,     /* sbx_sees_workspace() of the owner */
        AUDIENCE_EVERYONE,      /* nothing about anyone's worker: NWorkers */
} Audience;

void subscribers_init(Subscribers *s);
void subscribers_done(Subscribers *s);
/* Adds NAME, or updates its entry when it subscribed before (0 both
 * ways). -EUSERS when UID holds max_per_uid subscriptions (root is not
 * counted per UID), -ENOSPC when there are max_total, -EINVAL for an empty
 * name or an invalid UID. */
int subscribers_add(Subscribers *s, const char *name, uid_t uid, bool sees_all);
/* true when NAME was subscribed. */
bool subscribers_remove(Subscribers *s, const char *name);
const Subscriber *subscribers_find(const Subscribers *s, const char *name);
size_t subscribers_count_uid(const Subscribers *s, uid_t uid);
bool subscriber_entitled(const Subscriber *sub, Audience audience, uid_t owner);
