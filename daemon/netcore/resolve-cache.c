/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "resolve-cache.h"

void resolve_cache_init(ResolveCache *c) {
        assert(c);
        memset(c, 0, sizeof(*c));
}

void resolve_cache_check_hosts_file(ResolveCache *c, const ResolveFileId *id) {
        assert(c);
        assert(id);
        if (c->hosts_file_known && memcmp(&c->hosts_file, id, sizeof(*id)) == 0)
                return;
        c->n_entries = 0;
        c->hosts_file = *id;
        c->hosts_file_known = true;
}

static void drop_entry(ResolveCache *c, size_t i) {
        c->entries[i] = c->entries[--c->n_entries];
}

const ResolveCacheEntry *resolve_cache_lookup(ResolveCache *c, const char *host, uint64_t now_usec) {
        assert(c);
        assert(host);
        for (size_t i = 0; i < c->n_entries; i++) {
                ResolveCacheEntry *e = &c->entries[i];
                if (strcmp(e->host, host) != 0)
                        continue;
                if (now_usec >= e->expires_usec) {
                        drop_entry(c, i);
                        return NULL;
                }
                e->used_usec = now_usec;
                return e;
        }
        return NULL;
}

static ResolveCacheEntry *slot_for(ResolveCache *c, const char *host, uint64_t now_usec) {
        size_t lru = 0;

        for (size_t i = 0; i < c->n_entries; i++)
                if (strcmp(c->entries[i].host, host) == 0)
                        return &c->entries[i];
        for (size_t i = c->n_entries; i-- > 0;)
                if (now_usec >= c->entries[i].expires_usec)
                        drop_entry(c, i);
        if (c->n_entries < RESOLVE_CACHE_MAX)
                return &c->entries[c->n_entries++];
        for (size_t i = 1; i < c->n_entries; i++)
                if (c->entries[i].used_usec < c->entries[lru].used_usec)
                        lru = i;
        return &c->entries[lru];
}

void resolve_cache_store(ResolveCache *c, const char *host, const ResolvedAddress *addrs, size_t n,
                         uint64_t ttl_usec, uint64_t now_usec) {
        assert(c);
        assert(host);
        assert(addrs || n == 0);
        if (ttl_usec == 0 || n == 0 || n > RESOLVE_ADDRESSES_MAX || strlen(host) > RESOLVE_CACHE_HOST_MAX)
                return;
        if (ttl_usec > RESOLVE_CACHE_TTL_MAX_USEC)
                ttl_usec = RESOLVE_CACHE_TTL_MAX_USEC;
        ResolveCacheEntry *e = slot_for(c, host, now_usec);
        snprintf(e->host, sizeof(e->host), "%s", host);
        memcpy(e->addrs, addrs, n * sizeof(addrs[0]));
        e->n_addrs = n;
        e->expires_usec = now_usec + ttl_usec;
        e->used_usec = now_usec;
}
