/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A gVisor worker with a proxy (egress or Services) runs on gVisor's own
 * network stack (runsc --network=sandbox), which runsc can checkpoint, unlike
 * the host network it used before ("checkpoint not supported when using
 * hostinet"). The launcher gives the sandbox a namespace of its own holding one
 * end of a veth pair; the other end stays in the unit's namespace, where the
 * proxy's socket unit listens on its address and nothing else lives. Every
 * worker has its own pair of namespaces, so every worker uses the same /30. */
#define SBX_VETH_PROXY_ADDR "10.255.255.1"     /* the unit's end: the proxy's listeners */
#define SBX_VETH_SANDBOX_ADDR "10.255.255.2"   /* the sandbox's end */
#define SBX_VETH_PREFIX 30
#define SBX_VETH_PROXY_IFNAME "sbx-proxy"
#define SBX_VETH_SANDBOX_IFNAME "eth0"
