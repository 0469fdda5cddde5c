/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One worker's egress policy: what sandboxd computes from the worker's spec
 * and the operator's sandboxd.conf, writes as JSON, and hands to that
 * worker's sandbox-egress as the systemd credential "egress-policy".
 *
 * Host decisions, in order: the host must be a DNS name (IP literals and
 * numeric spellings are refused); deny rules first (a deny rule without a
 * port denies every port); then the allow list (a rule without a port
 * allows only 443); then the operator floor, which must match too (a floor
 * entry without a port bounds the host only; "*" is no bound at all; an
 * empty floor allows nothing). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr-class.h"
#include "egress-host.h"

#define EGRESS_POLICY_CREDENTIAL "egress-policy"
#define EGRESS_WORKER_ID_MAX 64
#define EGRESS_POLICY_ENTRIES_MAX 1024
#define EGRESS_POLICY_FILE_MAX (1024 * 1024)

/* The CONNECT listener's port; service i listens on EGRESS_SERVICE_PORT_FIRST + i. */
#define EGRESS_PROXY_PORT 3128
#define EGRESS_SERVICE_PORT_FIRST 3129
#define EGRESS_SERVICES_MAX 16
#define EGRESS_SERVICE_NAME_MAX 32
#define EGRESS_SERVICE_HEADER_MAX 256
#define EGRESS_SERVICE_METHODS_MAX 8
#define EGRESS_SERVICE_PATHS_MAX 64
#define EGRESS_SERVICE_PATH_MAX 1024
/* The request body is held whole before it goes upstream (a 413 comes
 * before the upstream sees a byte); the response is streamed. */
#define EGRESS_SERVICE_REQUEST_MAX (UINT64_C(16) << 20)
#define EGRESS_SERVICE_RESPONSE_MAX (UINT64_C(1) << 30)

typedef enum EgressMode {
        EGRESS_MODE_ENFORCE,
        EGRESS_MODE_REPORT,     /* log what enforce would deny, and allow it */
} EgressMode;

/* One upstream the credential broker serves on its own loopback listener.
 * No secret here: the proxy reads it from its credential "broker-<name>". */
typedef struct EgressService {
        char *name;                     /* 1-32 of [A-Za-z0-9_], starting with a letter */
        uint16_t listen_port;           /* the listener's port in the worker's namespace */
        char *host;                     /* upstream DNS name, normalised */
        uint16_t port;
        char *base;                     /* "" or "/v1": prefixed to the worker's path */
        char *header_name;              /* e.g. "Authorization" */
        char *header_template;          /* exactly one "{}", e.g. "Bearer {}" */
        char **methods;                 /* NULL-terminated, at least one */
        size_t n_methods;
        char **paths;                   /* allowed prefixes, NULL-terminated, at least one */
        size_t n_paths;
        uint64_t max_request_bytes;
        uint64_t max_response_bytes;
        uint64_t rate_bps;              /* 0: unlimited */
} EgressService;

typedef struct EgressPolicy {
        char *worker_id;
        EgressMode mode;
        bool require_tls;
        EgressPattern *allow;
        size_t n_allow;
        EgressPattern *deny;
        size_t n_deny;
        EgressPattern *floor;
        size_t n_floor;
        EgressCidr *private_ranges;     /* blocked on top of the built-in ranges */
        size_t n_private_ranges;
        uint64_t rate_bps;              /* per destination host; 0 = unlimited */
        uint64_t rate_burst;            /* bytes; 0 = a quarter second of rate */
        unsigned max_tunnels;           /* concurrent, for the whole worker */
        uint64_t request_timeout_usec;  /* to read the CONNECT request */
        uint64_t connect_timeout_usec;  /* DNS plus TCP connect */
        uint64_t hello_timeout_usec;    /* to read the ClientHello after the 200 */
        unsigned refusal_log_burst;     /* refusals logged in full per window, then one summary */
        uint64_t refusal_log_window_usec;
        EgressService *services;        /* in listen_port order as sandboxd wrote them */
        size_t n_services;
        char *broker_ca_file;           /* NULL: the system trust store */
} EgressPolicy;

/* A new policy with the defaults: enforce, require TLS, nothing allowed,
 * floor "*", no rate, 64 tunnels, 10 s / 10 s / 5 s timeouts. */
int egress_policy_new(EgressPolicy **ret);
EgressPolicy *egress_policy_free(EgressPolicy *p);
static inline void egress_policy_freep(EgressPolicy **p) { egress_policy_free(*p); }

/* Each returns 0, -EINVAL for a value that does not parse (nothing is
 * added then), -E2BIG past EGRESS_POLICY_ENTRIES_MAX, or -ENOMEM. */
int egress_policy_set_worker_id(EgressPolicy *p, const char *id);
int egress_policy_add_allow(EgressPolicy *p, const char *pattern);
int egress_policy_add_deny(EgressPolicy *p, const char *pattern);
int egress_policy_add_floor(EgressPolicy *p, const char *pattern);
int egress_policy_add_private_range(EgressPolicy *p, const char *cidr);
void egress_policy_clear_floor(EgressPolicy *p);

/* Copies SERVICE (all fields set, checked as the JSON reader checks them)
 * into the policy. -EINVAL for a bad field or a listen_port or name
 * already used, -E2BIG past EGRESS_SERVICES_MAX, -ENOMEM. */
int egress_policy_add_service(EgressPolicy *p, const EgressService *service);
const EgressService *egress_policy_find_service(const EgressPolicy *p, uint16_t listen_port);
int egress_policy_set_broker_ca_file(EgressPolicy *p, const char *path);
void egress_service_done(EgressService *s);

const char *egress_mode_to_string(EgressMode m);
int egress_mode_from_string(const char *s, EgressMode *ret);

/* Normalises raw_host (as the CONNECT request named it) into host_out (at
 * least EGRESS_HOST_MAX + 1 bytes) and applies the host rules above.
 * Returns NULL when allowed, else a static reason: "invalid-host",
 * "ip-literal", "ip-literal-obfuscated", "denied-by-rule",
 * "not-in-allow-list", "port-not-allowed", "outside-operator-floor". */
const char *egress_policy_check_host(const EgressPolicy *p, const char *raw_host, bool bracketed,
                                     uint16_t port, char *host_out, size_t host_out_size);

/* The operator's rules alone, for a destination the worker's allow-list
 * does not govern (a broker service): NULL, "denied-by-rule" or
 * "outside-operator-floor". HOST is normalised already. */
const char *egress_policy_check_operator(const EgressPolicy *p, const char *host, uint16_t port);

/* The first allow entry that reaches past the operator floor (some
 * destination it names no floor entry covers), or NULL when every one is
 * inside it: what Worker.SetEgress refuses (EgressOutsideFloor). */
const EgressPattern *egress_policy_allow_outside_floor(const EgressPolicy *p);

/* Serialisation. Unknown keys, wrong types and bad entries are refused
 * with -EINVAL, so a policy never loads half understood. */
int egress_policy_to_json(const EgressPolicy *p, char **ret);
int egress_policy_from_json(const char *text, EgressPolicy **ret);
/* Written to a temporary file in the same directory, mode 0600, then renamed over path. */
int egress_policy_to_json_file(const EgressPolicy *p, const char *path);
int egress_policy_from_json_file(const char *path, EgressPolicy **ret);

#define _cleanup_egress_policy_ __attribute__((cleanup(egress_policy_freep)))
