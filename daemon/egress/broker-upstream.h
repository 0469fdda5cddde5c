/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One TLS connection from the broker to a service's upstream: the host
 * resolved with the proxy's resolver, every address classified as a
 * CONNECT destination is (no private, no host-local address), a TCP
 * connection to exactly a checked one, then TLS with SNI, the certificate
 * verified against the broker's trust store and the host name checked
 * (SSL_set1_host). Finished connections go back to the service's idle
 * pool when the response left them reusable. */

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker.h"

/* CODE 0: C is ready for requests. Otherwise C has been freed and CODE and
 * REASON (static) say why: 403 for a refused address, 502, 504. */
typedef void (*broker_conn_ready_t)(BrokerConn *c, int code, const char *reason, void *userdata);
/* The connection's socket has an event its owner asked for. */
typedef void (*broker_conn_io_t)(BrokerConn *c, void *userdata);

int broker_tls_context_new(const char *ca_file, SSL_CTX **ret);

/* A pooled connection of the service (NULL if none). */
BrokerConn *broker_conn_take_idle(BrokerService *s);
/* Starts a new connection; READY runs exactly once, possibly before this
 * returns. */
int broker_conn_open(BrokerService *s, uint64_t timeout_usec, broker_conn_ready_t ready, void *userdata);

void broker_conn_set_io(BrokerConn *c, broker_conn_io_t io, void *userdata);
/* EPOLLIN and/or EPOLLOUT, 0 for none. */
int broker_conn_want(BrokerConn *c, uint32_t events);
/* Back to the pool if REUSABLE and there is room, else closed. */
void broker_conn_release(BrokerConn *c, bool reusable);
BrokerConn *broker_conn_free(BrokerConn *c);

SSL *broker_conn_ssl(const BrokerConn *c);
const char *broker_conn_address(const BrokerConn *c);
/* It came from the pool: a failure before any answer may be the upstream
 * having closed it meanwhile, and the request can be sent again. */
bool broker_conn_reused(const BrokerConn *c);
