/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Keeps a HostAddrSet equal to the host's addresses: an rtnetlink socket
 * subscribed to the IPv4 and IPv6 ifaddr groups before it asks for the
 * dump, so no change between the two is missed. The first dump is read
 * before host_addr_watch_new() returns: the proxy must know the host's
 * addresses before it accepts its first CONNECT. */

#include <systemd/sd-event.h>

#include "host-addrs.h"

typedef struct HostAddrWatch HostAddrWatch;

int host_addr_watch_new(sd_event *event, HostAddrSet *set, HostAddrWatch **ret);
HostAddrWatch *host_addr_watch_free(HostAddrWatch *w);
