/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What sandboxd tells a worker's inbound gate (daemon/gate/): which worker,
 * where its handler listens, the caps and timeouts. sandboxd writes it and
 * serves it as the gate's credential "gate-config"; the token is a
 * credential of its own ("gate-token") and never part of this. Lines of
 * key=value; unknown keys are refused, so a gate never runs with less than
 * sandboxd meant. Pure: no I/O, no global state. */

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GATE_CONFIG_CREDENTIAL "gate-config"
#define GATE_TOKEN_CREDENTIAL "gate-token"
#define GATE_TOKEN_MAX 4096
#define GATE_WORKER_ID_MAX 64

#define GATE_BODY_DEFAULT (UINT64_C(1) << 20)
#define GATE_TIMEOUT_DEFAULT_USEC (UINT64_C(30) * 1000000)
#define GATE_HEADER_TIMEOUT_DEFAULT_USEC (UINT64_C(10) * 1000000)
#define GATE_BODY_TIMEOUT_DEFAULT_USEC (UINT64_C(30) * 1000000)
#define GATE_IDLE_DEFAULT_USEC (UINT64_C(60) * 1000000)
#define GATE_MAX_CONCURRENT_DEFAULT 16
#define GATE_CONNECTIONS_MAX 256
/* What all of a gate's request and response buffers may hold together
 * before growth is refused with 503 (gate-busy): the gate unit's MemoryMax
 * (256M) would otherwise end the gate, and every request in flight with it. */
#define GATE_BUFFER_BUDGET_DEFAULT (UINT64_C(192) << 20)

typedef struct GateConfig {
        char worker_id[GATE_WORKER_ID_MAX + 1];
        char upstream_host[16];         /* a dotted IPv4 address: 127.0.0.1 or the sandbox's veth end */
        uint16_t upstream_port;
        uint64_t max_request_bytes;
        uint64_t max_response_bytes;
        uint64_t timeout_usec;          /* the handler's answer, from the request sent to the response held */
        uint64_t header_timeout_usec;   /* a request's head, from its first byte */
        uint64_t body_timeout_usec;     /* the whole request, from its first byte */
        uint64_t idle_usec;             /* a keep-alive connection between requests */
        uint32_t max_concurrent;        /* requests at the handler at once */
        uint64_t buffer_budget;         /* all sessions' buffers together */
        bool public;                    /* no token: only ever on the UNIX socket */
} GateConfig;

void gate_config_init(GateConfig *c);

/* Parses TEXT (SIZE bytes). -EINVAL with *ret_bad_line set (1-based) for a
 * line that is not a known key with a valid value, or when worker or
 * upstream is missing. */
int gate_config_parse(const char *text, size_t size, GateConfig *ret, unsigned *ret_bad_line);

/* The text gate_config_parse() reads back; malloc()ed into *ret. */
int gate_config_format(const GateConfig *c, char **ret);

/* The gate's STATUS= to systemd (its service's StatusText): how many
 * requests it served and refused, and how many are at the handler now
 * (taken past the token and every check, not yet answered). Sent at most
 * once a second, but at once when a request reaches the handler after
 * systemd was told none was open. sandboxd reads it back as the worker's
 * activity (worker-gate.h): the gate has no bus to say so. */
#define GATE_STATUS_FORMAT "served=%" PRIu64 " refused=%" PRIu64 " open=%u"

typedef struct GateStatus {
        uint64_t served;
        unsigned open;
} GateStatus;

/* STATUS, a StatusText of GATE_STATUS_FORMAT, into *RET (a gate from
 * before "open=" was added reports none open); -EINVAL for any other text
 * (an empty one: no status sent yet). */
int gate_status_parse(const char *status, GateStatus *ret);
