/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asynchronous name resolution on the proxy's sd-event loop, through
 * c-ares: /etc/hosts first, then the servers of resolv.conf. c-ares keeps
 * its own sockets; this glue watches them with sd-event io sources and
 * drives c-ares' retransmission timer with one sd-event timer. */

#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "resolve-cache.h"

typedef struct Resolver Resolver;
typedef struct ResolveQuery ResolveQuery;

/* status: 0, or a negative errno (-ENOENT no such name, -ETIMEDOUT, -EIO).
 * The addresses are valid only during the call. */
typedef void (*resolve_handler_t)(int status, const ResolvedAddress *addrs, size_t n_addrs, void *userdata);

/* resolv_conf, hosts_file: NULL for the system's. c-ares takes another
 * hosts file only from $CARES_HOSTS, so hosts_file sets that variable in
 * this process (a test option; the worker never influences it). */
/* share_cache_with: another loop's resolver (which must outlive this one)
 * whose answer cache this one uses too, under a lock; NULL for a cache of
 * its own. */
int resolver_new(sd_event *event, const char *resolv_conf, const char *hosts_file, Resolver *share_cache_with,
                 Resolver **ret);
Resolver *resolver_free(Resolver *r);

/* Resolves host for TCP to port, A and AAAA. The handler runs exactly once,
 * unless the query is cancelled first; at once, before this returns, for an
 * answer still in the cache (resolve-cache.h: answers, never decisions, so
 * the caller classifies them as it does fresh ones) and then *ret is NULL. */
int resolver_resolve(Resolver *r, const char *host, uint16_t port, resolve_handler_t handler, void *userdata,
                     ResolveQuery **ret);
/* The handler will not run; the query itself is freed when c-ares lets go of it. */
void resolve_query_cancel(ResolveQuery *q);
