/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The credential broker inside one worker's proxy: a loopback listener per
 * service of the policy, the secret of each (read once from the credential
 * "broker-<name>" and wiped when the proxy ends), the TLS context with the
 * trust store loaded before the seccomp filter, and per service a small
 * pool of idle upstream connections and a token bucket. The worker's
 * connections are BrokerSessions (broker-session.h), the upstream ones
 * BrokerConns (broker-upstream.h). */

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "broker-request.h"
#include "egress-policy.h"
#include "egress-proxy.h"
#include "token-bucket.h"

#define BROKER_CREDENTIAL_PREFIX "broker-"
#define BROKER_SECRET_MAX 8192
/* Idle upstream connections kept per service: enough for a client that
 * runs a few requests at once, few enough to cost the upstream nothing. */
#define BROKER_POOL_MAX 4
#define BROKER_POOL_IDLE_USEC (30 * USEC_PER_SEC)
/* A keep-alive connection of the worker with no request in progress. */
#define BROKER_CLIENT_IDLE_USEC (60 * USEC_PER_SEC)
/* The upstream's silence while a response is awaited or streamed. */
#define BROKER_RESPONSE_IDLE_USEC (120 * USEC_PER_SEC)

typedef struct Broker Broker;
typedef struct BrokerConn BrokerConn;
typedef struct BrokerSession BrokerSession;

typedef struct BrokerService {
        Broker *broker;
        const EgressService *config;     /* in the proxy's policy */
        char *inject_value;              /* the template filled with the secret */
        size_t inject_size;
        BrokerRoute route;
        BrokerConn *idle;                /* the pool, most recently used first */
        unsigned n_idle;
        TokenBucket bucket;              /* both directions; rate 0 = unlimited */
} BrokerService;

struct Broker {
        Proxy *proxy;
        SSL_CTX *tls;
        BrokerService *services;
        size_t n_services;
        sd_event_source **listeners;
        size_t n_listeners;
        BrokerSession *sessions;
        unsigned n_sessions;
};

/* Reads every service's secret from $CREDENTIALS_DIRECTORY and loads the
 * trust store (the policy's broker_ca_file, else the system's bundle):
 * everything that needs the file system, so it runs before seccomp. */
int broker_new(Proxy *proxy, Broker **ret);
Broker *broker_free(Broker *b);

BrokerService *broker_find_service(Broker *b, uint16_t listen_port);
/* Takes ownership of a listening socket for SERVICE. */
int broker_add_listener(Broker *b, BrokerService *service, int fd);

/* The service's host against the operator's deny rules and floor (the
 * allow list is the worker's CONNECT list and does not apply): NULL or a
 * reason. */
const char *broker_service_check_floor(const BrokerService *s);

void broker_session_link(Broker *b, BrokerSession *s);
void broker_session_unlink(Broker *b, BrokerSession *s);
