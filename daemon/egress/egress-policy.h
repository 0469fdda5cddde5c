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

typedef enum EgressMode {
        EGRESS_MODE_ENFORCE,
        EGRESS_MODE_REPORT,     /* log what enforce would deny, and allow it */
} EgressMode;

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

const char *egress_mode_to_string(EgressMode m);
int egress_mode_from_string(const char *s, EgressMode *ret);

/* Normalises raw_host (as the CONNECT request named it) into host_out (at
 * least EGRESS_HOST_MAX + 1 bytes) and applies the host rules above.
 * Returns NULL when allowed, else a static reason: "invalid-host",
 * "ip-literal", "ip-literal-obfuscated", "denied-by-rule",
 * "not-in-allow-list", "port-not-allowed", "outside-operator-floor". */
const char *egress_policy_check_host(const EgressPolicy *p, const char *raw_host, bool bracketed,
                                     uint16_t port, char *host_out, size_t host_out_size);

/* Serialisation. Unknown keys, wrong types and bad entries are refused
 * with -EINVAL, so a policy never loads half understood. */
int egress_policy_to_json(const EgressPolicy *p, char **ret);
int egress_policy_from_json(const char *text, EgressPolicy **ret);
/* Written to a temporary file in the same directory, mode 0600, then renamed over path. */
int egress_policy_to_json_file(const EgressPolicy *p, const char *path);
int egress_policy_from_json_file(const char *path, EgressPolicy **ret);

#define _cleanup_egress_policy_ __attribute__((cleanup(egress_policy_freep)))
