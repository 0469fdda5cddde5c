/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One connection of the worker to a service listener, request after
 * request (keep-alive, pipelined requests taken in turn): read a request
 * whole and check it (broker-request.h; 100 Continue when asked, a 413
 * before any byte goes upstream), check the service against the floor,
 * take a pooled upstream connection or open one, send the rewritten
 * request, and stream the response back as the upstream framed it, cut
 * at its cap (broker-response.h). Refusals are a status with the reason
 * in X-Sandbox-Egress-Reason and the body, then a lingering close. A
 * response that fails after its head went to the worker can only be cut:
 * the connection is closed and the worker's client sees a short body.
 * One journal entry per request. */

#include "broker.h"

/* Takes ownership of the accepted, non-blocking fd. */
int broker_session_start(BrokerService *service, int fd);
BrokerSession *broker_session_free(BrokerSession *s);
