/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "addr-class.h"
#include "class.h"
#include "config.h"
#include "spec.h"
#include "worker-veth.h"

#define SBX_EGRESS_PORT 3128

/* Where the worker reaches its proxy's listeners: a gVisor worker on the veth
 * its launcher makes (worker-veth.h; gVisor's own network stack, which runsc
 * can checkpoint), any other on the loopback of the unit's namespace. */
static inline const char *worker_proxy_host(SbxRuntime runtime) {
        return runtime == SBX_RUNTIME_RUNSC ? SBX_VETH_PROXY_ADDR : "127.0.0.1";
}
static inline const char *worker_egress_proxy_url(SbxRuntime runtime) {
        return runtime == SBX_RUNTIME_RUNSC ? "http://" SBX_VETH_PROXY_ADDR ":3128" : "http://127.0.0.1:3128";
}

/* The worker's egress policy as the JSON sandbox-egress loads: the spec's
 * allow-list inside the operator's floor, deny rules and private ranges,
 * the rate, and the Services the broker serves (never their secrets). Bad
 * patterns are refused with InvalidEgressRule. */
int worker_egress_policy_json(const WorkerSpec *s, const SbxConfig *c, const char *worker_id, char **ret,
                              SbxError *error);

/* Whether the worker gets the CONNECT listener: only if its spec allows a destination. */
static inline bool worker_wants_egress(const WorkerSpec *s) {
        return s->egress_allow && s->egress_allow[0];
}

/* Whether it gets the proxy pair at all: for egress, or to broker its Services. */
static inline bool worker_wants_proxy(const WorkerSpec *s) {
        return worker_wants_egress(s) || s->n_services > 0;
}

/* Service I (in the spec's order) listens on port 3129+I of the proxy's host
 * (worker_proxy_host()) in the worker's namespace; the proxy tells its
 * listeners apart by that port. */
#define SBX_SERVICE_PORT_FIRST 3129
static inline uint16_t worker_service_port(size_t i) {
        return (uint16_t) (SBX_SERVICE_PORT_FIRST + i);
}

/* The proxy's credential holding service NAME's secret: "broker-<NAME>". */
#define SBX_BROKER_CREDENTIAL_PREFIX "broker-"

/* "SANDBOX_SERVICE_<NAME>_URL=http://<proxy host>:<port>" for service I, NAME
 * upper-cased: how a worker of RUNTIME finds the service, in every class. */
int worker_service_url_env(const SbxService *s, size_t i, SbxRuntime runtime, char **ret);

/* The nameserver addresses of a resolv.conf, the only private addresses the
 * proxy unit's IPAddressDeny= lets through (a resolver at 10.0.0.2 or
 * 169.254.169.253 is common in clouds). A missing file is no resolvers.
 * Returns the number found (at most max) or a negative errno. */
int egress_resolver_addresses(const char *resolv_conf, EgressCidr *ret, size_t max);

/* Unit names of the worker's proxy pair. */
int worker_egress_unit_names(const char *id, char **ret_socket, char **ret_service);

/* Appends the aux units of StartTransientUnit (a(sa(sv))): the proxy's socket,
 * listening inside the worker's network namespace on worker_proxy_host(RUNTIME)
 * (the CONNECT listener if SPEC allows egress, one listener per service), and
 * its service, which runs in the host's namespace and loads the policy and
 * each service's secret from CREDENTIAL_SOCKET. With EGRESS_PATH NULL, an
 * empty array. */
int worker_egress_append_aux_units(sd_bus_message *m, const char *id, const char *worker_unit, const WorkerSpec *spec,
                                   SbxRuntime runtime, const char *egress_path, const char *credential_socket);
/* The same entries without the array around them, for a caller adding more. */
int worker_egress_append_aux_entries(sd_bus_message *m, const char *id, const char *worker_unit,
                                     const WorkerSpec *spec, SbxRuntime runtime, const char *egress_path,
                                     const char *credential_socket);
