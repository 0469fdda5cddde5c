/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* runsc --network=veth (daemon/shared/worker-veth.h): gVisor's own network stack on
 * one end of a veth pair, in a namespace of the sandbox's own; the other end,
 * with the proxy's address, stays in the unit's namespace. */

/* Moves the calling process into a new network namespace holding the
 * sandbox's end of the pair (SBX_VETH_SANDBOX_ADDR/30, up, no IPv6 address),
 * with the peer (SBX_VETH_PROXY_ADDR/30, up, no IPv6 address) left in the
 * namespace it was called in. No route beyond the /30 exists on either side.
 * Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. Logs why it failed. */
int launch_veth_setup(const char *id);

/* For the runsc child, before exec: covers /proc/sys/net/core in a mount
 * namespace of its own. runsc 0.0~20240729 takes any namespace that shows
 * net.core.rmem_default for the host's ("cannot run with network enabled in
 * root network namespace"), and kernels since 5.x show it in every one;
 * runsc reads nothing else there. Needs CAP_SYS_ADMIN. */
int launch_veth_hide_rootns_test(void);
