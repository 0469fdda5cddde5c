/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The proxy's end of its control channel with sandboxd (egress-ctl.h): a
 * socket-activated AF_UNIX SOCK_SEQPACKET listener that only root can
 * connect to (its file is 0600 in a 0700 directory; the peer's uid is
 * checked again here). It answers "stats" with the counters of every loop
 * and replaces the running policy with the one sandboxd sends: the loops
 * beside the first take theirs first, on their own threads, then the first
 * loop (egress-loops.h). Served by the first loop. */

#include <stdbool.h>

#include "egress-loops.h"
#include "egress-proxy.h"

typedef struct EgressControl EgressControl;

/* Whether FD is a control listener (AF_UNIX, SOCK_SEQPACKET) rather than a
 * CONNECT or service one. */
bool egress_control_is_listener(int fd);

/* Takes ownership of LISTEN_FD. LOOPS is read when a policy arrives (the
 * loops start after the listeners are set up). */
int egress_control_new(Proxy *first, ProxyLoops *const *loops, int listen_fd, EgressControl **ret);
EgressControl *egress_control_free(EgressControl *c);
