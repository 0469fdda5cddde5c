/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One proxy process serves every connection of one worker: the listeners
 * handed over by socket activation (or --listen), the worker's policy, a
 * resolver, the live tunnels, and one token bucket per destination host
 * shared by all tunnels to that host. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "egress-netlink.h"
#include "egress-policy.h"
#include "egress-resolve.h"
#include "host-addrs.h"
#include "journal-batch.h"
#include "log-limit.h"
#include "pipe-pool.h"
#include "token-bucket.h"

#define PROXY_BUCKETS_MAX 1024
/* Pipes start at the kernel's default size and grow to this (the default
 * unprivileged pipe-max-size) once a direction fills one in a single
 * splice: bulk transfers need about 40% less CPU per byte than with 256 KiB,
 * while the many short tunnels stay far below the per-user pipe quota
 * (pipe-user-pages-soft), beyond which new pipes get only two pages. */
#define PROXY_PIPE_SIZE_BULK (1024 * 1024)
typedef struct Tunnel Tunnel;

typedef struct DestBucket {
        struct DestBucket *next;
        char host[EGRESS_HOST_MAX + 1];
        TokenBucket bucket;
        unsigned users;
} DestBucket;

/* What the event loops of one proxy (egress-loops.h) have in common: the
 * worker's refusal log bound and its tunnel count are the worker's, not a
 * loop's. Owned by the first loop's Proxy. */
typedef struct ProxyShared {
        pthread_mutex_t lock;        /* refusal_log */
        LogLimit refusal_log;        /* bounds the deny entries this worker can cause */
        atomic_uint n_tunnels;       /* every loop's tunnels, against max_tunnels */
        /* What sandboxd reads over the control channel (egress-control.h):
         * every loop's bytes through established tunnels and their number. */
        atomic_uint_fast64_t bytes_sent;
        atomic_uint_fast64_t bytes_received;
        atomic_uint_fast64_t connections;
} ProxyShared;

typedef struct Proxy {
        sd_event *event;
        EgressPolicy *policy;        /* the first loop's, which frees it; each loop's own once replaced */
        EgressPolicy *initial_policy;/* the first loop's policy as it started, once replaced: the
                                      * broker's services point into it, so it lives as long as the loop */
        ProxyShared *shared;
        bool is_first;               /* owns policy and shared */
        bool owns_policy;            /* policy came from proxy_set_policy() */
        Resolver *resolver;
        HostAddrSet host_addrs;      /* refused as destinations: the proxy runs in the host's namespace */
        HostAddrWatch *host_watch;
        JournalBatch journal;        /* every entry of a tunnel or refusal goes through it */
        sd_event_source *summary_timer;
        sd_event_source **listeners;
        size_t n_listeners;
        bool accepted_nodelay;       /* every listener has TCP_NODELAY, which accepted sockets inherit */
        Tunnel *tunnels;
        unsigned n_tunnels;          /* this loop's */
        unsigned n_established;      /* of them past the handshake, in which the CPU goes */
        /* When set, an accepted connection is first offered to it: true if
         * another loop took it (egress-loops.h), false to serve it here. */
        bool (*dispatch)(void *userdata, int fd);
        void *dispatch_userdata;
        DestBucket *buckets;
        size_t n_buckets;
        PipePool pipes;              /* this loop's spare splice pipes */
} Proxy;

/* Takes ownership of policy. */
int proxy_new(sd_event *event, EgressPolicy *policy, const char *resolv_conf, const char *hosts_file, Proxy **ret);
/* Another loop of the same proxy, on its own event loop (and thread): its
 * own resolver, host-address watch, journal batch, pipes and tunnels,
 * first's policy, refusal bound and tunnel count. first must outlive it. */
int proxy_new_sibling(Proxy *first, sd_event *event, const char *resolv_conf, const char *hosts_file, Proxy **ret);
Proxy *proxy_free(Proxy *p);
/* Replaces this loop's policy (takes ownership) on its own thread: the
 * per-destination buckets take the new rate, and every tunnel whose host the
 * new policy refuses is ended (journaled as EGRESS_DECISION=revoke once
 * established, as a deny before). New tunnels follow the new list. */
void proxy_set_policy(Proxy *p, EgressPolicy *policy);
/* Takes ownership of a listening socket fd (made non-blocking here). */
int proxy_add_listener(Proxy *p, int fd);

/* The bucket for a host, created full on first use; NULL when no rate is
 * set. Buckets outlive their tunnels while they hold debt, so closing and
 * reopening a connection does not reset the rate. */
DestBucket *proxy_acquire_bucket(Proxy *p, const char *host);
void proxy_release_bucket(Proxy *p, DestBucket *b);

/* Whether a refusal is to be logged in full; if not, it is counted and a
 * summary entry follows when the window ends (or the proxy stops). */
bool proxy_refusal_log_admit(Proxy *p, const char *reason);

void proxy_tunnel_link(Proxy *p, Tunnel *t);
void proxy_tunnel_unlink(Proxy *p, Tunnel *t);
