/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One caller's connection to the gate, request after request (keep-alive,
 * pipelined requests in turn):
 *   read a request whole (broker-request.h with the gate's route: the
 *   token first, in constant time, then the framing rules; a body over the
 *   cap is 413 from Content-Length before it arrives), within a head
 *   timeout and a whole-request timeout (408);
 *   wait for a slot among MaxConcurrent (503 otherwise);
 *   send it to the handler (a kept connection or a new one; 502 if none);
 *   hold the handler's response whole, up to its cap, before the caller
 *   gets a byte (broker-response.h): over the cap or malformed is a 502,
 *   no answer within the timeout a 504, never a truncated 200;
 *   release it, then the next request or the close.
 * A refusal is a short response with the reason in X-Sandbox-Gate-Reason
 * and a close after a short linger. One journal entry per request. */

#include <stdbool.h>

#include "sandbox-gate.h"

/* Takes ownership of the accepted, non-blocking fd. */
int gate_session_start(Gate *g, int fd, bool front);
GateSession *gate_session_free(GateSession *s);
/* A draining gate closes the connections idle between requests now. */
void gate_drain_sessions(Gate *g);
