/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A spec's Endpoint: the port the worker's handler listens on inside its
 * own network namespace, served to the host through the worker's gate
 * (sandbox-gate), which holds the caller's token (never the worker), caps
 * both bodies and bounds the time. Parsed from CreateWorker's a{sv}, checked
 * against sandboxd.conf's [Endpoints]. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "util.h"

#define SBX_ENDPOINT_TOKEN_MIN 16
#define SBX_ENDPOINT_TOKEN_MAX 4096
#define SBX_ENDPOINT_BODY_DEFAULT (UINT64_C(1) << 20)
#define SBX_ENDPOINT_TIMEOUT_DEFAULT_USEC (30 * USEC_PER_SEC)
#define SBX_ENDPOINT_TIMEOUT_MAX_USEC (3600 * USEC_PER_SEC)
#define SBX_ENDPOINT_CONCURRENT_DEFAULT 16
#define SBX_ENDPOINT_CONCURRENT_MAX 256
#define SBX_ENDPOINTS_DIR "/run/sandboxd-endpoints"

typedef enum SbxEndpointField {
        ENDPOINT_HAS_PORT = 1 << 0,
        ENDPOINT_HAS_MAX_REQUEST = 1 << 1,
        ENDPOINT_HAS_MAX_RESPONSE = 1 << 2,
        ENDPOINT_HAS_TIMEOUT = 1 << 3,
        ENDPOINT_HAS_MAX_CONCURRENT = 1 << 4,
        ENDPOINT_HAS_TOKEN = 1 << 5,
        ENDPOINT_HAS_PUBLIC = 1 << 6,
        ENDPOINT_HAS_NAME = 1 << 7,
} SbxEndpointField;

typedef struct SbxEndpoint {
        bool requested;                 /* the spec has an Endpoint */
        unsigned set;                   /* SbxEndpointField bits */
        uint16_t port;
        uint64_t max_request_bytes;
        uint64_t max_response_bytes;
        uint64_t timeout_usec;
        uint32_t max_concurrent;
        uint8_t *token;                 /* a secret: wiped with the spec */
        size_t token_size;
        bool public;
        char *name;                     /* EndpointName: a second name of the socket, unique on the host */
} SbxEndpoint;

static inline bool sbx_endpoint_wanted(const SbxEndpoint *e) {
        return e->requested;
}

/* Frees and wipes the token. */
void sbx_endpoint_done(SbxEndpoint *e);
void sbx_endpoint_apply_defaults(SbxEndpoint *e);

/* An endpoint's Name: a DNS label (lowercase letters, digits, inner
 * hyphens, at most 63), never 12 hex digits, which could shadow a worker
 * id: it names the socket <name>.sock beside the ids' and a host name
 * <name>.<domain> in the front. */
bool sbx_endpoint_name_valid(const char *name);

/* Reads the Endpoint a{sv} at M's position; bad keys and types are
 * refused with InvalidEndpoint or WrongType. */
int sbx_endpoint_from_bus(SbxEndpoint *e, sd_bus_message *m, SbxError *error);

/* With defaults applied: a port, a token of printable ASCII (or Public=true
 * where the operator allows it), caps within [Endpoints]' maximums. CLASS:
 * the worker's; a gate reaches a shared-kernel or gVisor worker only. */
int sbx_endpoint_validate(const SbxEndpoint *e, SbxClass class, const SbxConfig *c, SbxError *error);

/* /run/sandboxd-endpoints/<id>.sock */
int sbx_endpoint_socket_path(const char *worker_id, char **ret);
