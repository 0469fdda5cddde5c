/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* More event loops, one thread each, for a worker that opens many short
 * tunnels: one loop gets one scheduler share and one CPU, where tinyproxy's
 * forked children get one each. The first loop accepts every connection
 * and serves it itself unless it is in the middle of another's handshake;
 * then it hands the socket to the next loop in turn, which keeps the
 * tunnel to its end. Started before the seccomp filter (which then covers
 * every thread), after the capability drop, so the threads inherit it. The
 * broker stays in the first loop. */

#include <stddef.h>

#include "egress-proxy.h"

#define PROXY_LOOPS_MAX 4

typedef struct ProxyLoops ProxyLoops;

/* How many loops in all, the first included: one per CPU the process may
 * run on, at most PROXY_LOOPS_MAX; one when the policy sets a rate (the
 * per-destination buckets are one loop's, unlocked). */
unsigned proxy_loops_wanted(const Proxy *first);
/* Starts n - 1 loops beside first and has first hand connections to them;
 * returns once each thread runs its loop. */
int proxy_loops_start(Proxy *first, unsigned n, const char *resolv_conf, const char *hosts_file, ProxyLoops **ret);
/* The loops started beside the first (0 for NULL). */
unsigned proxy_loops_count(const ProxyLoops *loops);
/* Hands POLICIES[i] (owned; set to NULL) to the i-th loop started beside
 * the first (proxy_loops_count() of them) and returns once each has taken it
 * on its own thread (proxy_set_policy()). The first loop's own comes after,
 * from its caller, so that no loop still reads it when it goes. */
void proxy_loops_set_policy(ProxyLoops *loops, EgressPolicy **policies);
/* Ends each loop (its tunnels get their close entries) and joins it. */
ProxyLoops *proxy_loops_stop(ProxyLoops *loops);
