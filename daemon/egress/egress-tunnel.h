/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One client connection through its life: read the CONNECT request,
 * check the host, resolve and classify every address, connect to exactly
 * the checked one, answer 200, read and check the ClientHello, then move
 * bytes both ways with splice(2) under the destination's token bucket.
 * Every decision is logged once; the close is logged with byte counts. */

#include "egress-proxy.h"

/* Takes ownership of the accepted, non-blocking client fd. When the
 * worker's tunnel cap is reached, answers 403 and closes it. */
int tunnel_start(Proxy *p, int client_fd);
Tunnel *tunnel_free(Tunnel *t);
/* Ends a tunnel because the proxy itself stops (its worker ended): one that
 * was established still gets its close entry with the bytes it moved. */
void tunnel_end_at_shutdown(Tunnel *t);
/* The loop's policy was replaced (proxy_set_policy()): a tunnel whose host
 * it now refuses ends (may free T), one that forwards takes its bucket anew. */
void tunnel_policy_changed(Tunnel *t);
Tunnel *tunnel_next(const Tunnel *t);
