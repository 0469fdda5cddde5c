/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "subscribers.h"

bool sbx_sees_worker(uid_t viewer, bool sees_all, uid_t owner) {
        if (viewer == UID_INVALID)
                return false;
        return viewer == 0 || sees_all || viewer == owner;
}

bool sbx_sees_workspace(uid_t viewer, uid_t owner) {
        return sbx_sees_worker(viewer, false, owner);
}

void subscribers_init(Subscribers *s) {
        *s = (Subscribers) { .max_per_uid = SUBSCRIBERS_MAX_PER_UID, .max_total = SUBSCRIBERS_MAX };
}

void subscribers_done(Subscribers *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->items[i].name);
        free(s->items);
        s->items = NULL;
        s->n = s->allocated = 0;
}

static Subscriber *find(const Subscribers *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->items[i].name, name) == 0)
                        return &s->items[i];
        return NULL;
}

const Subscriber *subscribers_find(const Subscribers *s, const char *name) {
        return name ? find(s, name) : NULL;
}

size_t subscribers_count_uid(const Subscribers *s, uid_t uid) {
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++)
                n += s->items[i].uid == uid;
        return n;
}

int subscribers_add(Subscribers *s, const char *name, uid_t uid, bool sees_all) {
        Subscriber *sub;
        char *copy;

        if (!name || !*name || uid == UID_INVALID)
                return -EINVAL;
        sub = find(s, name);
        if (sub) {
                /* A unique name is never reused: still the same client. */
                sub->sees_all = sees_all;
                return 0;
        }
        if (uid != 0 && subscribers_count_uid(s, uid) >= s->max_per_uid)
                return -EUSERS;
        if (s->n >= s->max_total)
                return -ENOSPC;
        if (s->n == s->allocated) {
                size_t k = s->allocated ? s->allocated * 2 : 16;
                Subscriber *items = reallocarray(s->items, k, sizeof(Subscriber));
                if (!items)
                        return -ENOMEM;
                s->items = items;
                s->allocated = k;
        }
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        s->items[s->n++] = (Subscriber) { .name = copy, .uid = uid, .sees_all = sees_all };
        return 0;
}

bool subscribers_remove(Subscribers *s, const char *name) {
        Subscriber *sub = name ? find(s, name) : NULL;

        if (!sub)
                return false;
        free(sub->name);
        /* Order does not matter: the last one takes its place. */
        *sub = s->items[--s->n];
        return true;
}

bool subscriber_entitled(const Subscriber *sub, Audience audience, uid_t owner) {
        switch (audience) {
        case AUDIENCE_WORKER:
                return sbx_sees_worker(sub->uid, sub->sees_all, owner);
        case AUDIENCE_WORKSPACE:
                return sbx_sees_workspace(sub->uid, owner);
        case AUDIENCE_EVERYONE:
                return true;
        }
        return false;
}
