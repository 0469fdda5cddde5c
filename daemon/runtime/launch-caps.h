/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <sys/capability.h>

/* What runsc itself needs, and nothing else: its gofer's file capabilities
 * (CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID, SYS_CHROOT, the set
 * runsc gives its gofer) and what it needs to build the sandbox (SYS_ADMIN for
 * namespaces and mounts, SYS_PTRACE for the systrap/ptrace platforms,
 * SETUID/SETGID/SETPCAP to drop to its own user and capabilities, KILL to
 * signal the sandbox, SETFCAP to map root into the user namespace runsc gives
 * a sandbox with its own network stack, --network=none: since Linux 5.12 a
 * uid_map that maps uid 0 needs it; without it the gofer fails to start with
 * EPERM). Measured here: runsc ran a worker with only
 * SYS_ADMIN, SYS_CHROOT, SYS_PTRACE, DAC_OVERRIDE and CHOWN; the rest are kept
 * because runsc asks for them on paths a probe does not take. */
extern const cap_value_t launch_runsc_caps[];
extern const size_t launch_runsc_caps_n;
/* The same plus what runsc --network=sandbox uses on the sandbox's veth
 * (launch-veth.h): NET_ADMIN to move its addresses and routes into gVisor,
 * NET_RAW for the packet socket gVisor's stack sends and receives on. */
extern const cap_value_t launch_runsc_netstack_caps[];
extern const size_t launch_runsc_netstack_caps_n;

bool launch_caps_contains(const cap_value_t *set, size_t n, cap_value_t c);

/* What the launcher keeps for itself and no program it runs gets: NICE, to set
 * the timer slack of runsc's threads once the sandbox booted (launch-slack.h). */
extern const cap_value_t launch_own_caps[];
extern const size_t launch_own_caps_n;

/* Shrinks the bounding set to keep (n entries), empties the inheritable and
 * ambient sets and leaves only keep and own in permitted/effective, so that
 * nothing exec'd afterwards can regain a dropped capability; own (own_n
 * entries) stays with this process alone: the bounding set no longer has it. */
int launch_caps_limit(const cap_value_t *keep, size_t n, const cap_value_t *own, size_t own_n);
