/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The answers of earlier lookups, so that a worker opening many tunnels to
 * one host does not pay a DNS round trip (or a read of the hosts file) for
 * each. Only what a lookup returned is kept, never a decision: the proxy
 * classifies every answer again on every use, so a host address that
 * appears later, or an operator range, still refuses a cached name.
 * DNS answers live for their TTL (the smallest of the answer's records,
 * capped at RESOLVE_CACHE_TTL_MAX_USEC); a TTL of 0 is not cached. Answers
 * from the hosts file have no TTL: they are kept while the file is the one
 * they were read from (the caller passes its identity on every lookup, and a
 * change flushes everything, DNS answers too, because the file takes
 * precedence over DNS). Failures are never cached. Pure, on a
 * caller-supplied monotonic clock; bounded to RESOLVE_CACHE_MAX names. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RESOLVE_ADDRESSES_MAX 16
#define RESOLVE_CACHE_MAX 64
#define RESOLVE_CACHE_TTL_MAX_USEC (300ULL * 1000 * 1000)
#define RESOLVE_CACHE_HOST_MAX 253

typedef struct ResolvedAddress {
        struct sockaddr_storage sa;
        socklen_t len;
} ResolvedAddress;

/* What tells one version of the hosts file from another (stat(2) fields);
 * all zero for a file that does not exist. */
typedef struct ResolveFileId {
        uint64_t dev, ino, size;
        int64_t mtime_nsec, ctime_nsec;   /* ctime too: touch can set mtime back */
} ResolveFileId;

typedef struct ResolveCacheEntry {
        char host[RESOLVE_CACHE_HOST_MAX + 1];
        ResolvedAddress addrs[RESOLVE_ADDRESSES_MAX];
        size_t n_addrs;
        uint64_t expires_usec;
        uint64_t used_usec;      /* for eviction: the least recently used goes first */
} ResolveCacheEntry;

typedef struct ResolveCache {
        ResolveCacheEntry entries[RESOLVE_CACHE_MAX];
        size_t n_entries;
        ResolveFileId hosts_file;
        bool hosts_file_known;
} ResolveCache;

void resolve_cache_init(ResolveCache *c);
/* Flushes every entry if the hosts file is not the one seen last. */
void resolve_cache_check_hosts_file(ResolveCache *c, const ResolveFileId *id);
/* The live entry for host, or NULL. The addresses carry the port of the
 * lookup that stored them: callers set their own. */
const ResolveCacheEntry *resolve_cache_lookup(ResolveCache *c, const char *host, uint64_t now_usec);
/* Keeps n (1..RESOLVE_ADDRESSES_MAX) addresses for host for ttl_usec
 * (capped; 0 keeps nothing). Replaces an entry for the same host; when full,
 * drops expired entries, then the least recently used. */
void resolve_cache_store(ResolveCache *c, const char *host, const ResolvedAddress *addrs, size_t n,
                         uint64_t ttl_usec, uint64_t now_usec);
