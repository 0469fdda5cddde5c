/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "authz.h"

typedef struct Manager Manager;
typedef struct PolkitQuery PolkitQuery;

/* The caller's effective UID as the bus daemon recorded it when the caller
 * connected; never a value read from /proc, which a caller could race. */
int bus_caller_uid(sd_bus_message *msg, uid_t *ret);

/* May the caller of MSG do ACTION (on a worker of OWNER, UID_INVALID for
 * none)? Returns 1 when allowed; 0 when polkit has been asked: the message is
 * dispatched again once it answers, so the handler must change nothing and
 * return 1; a negative errno when refused, with RET_ERROR naming the action.
 * With INTERACTIVE false polkit never asks for a password, whatever the
 * caller's message allows. Must run before any state changes, and before any
 * work for the caller (look-ups, journal reads).
 *
 * Each call waiting for polkit counts against its caller UID's cap and the
 * total one (Bus:AuthorizationsPerUser, Bus:AuthorizationsMax): past either,
 * -EBUSY with SBX_ERROR_TOO_MANY_REQUESTS in RET_ERROR, at once. A caller
 * that takes a refusal as "only its own" (listings) must still pass -EBUSY
 * on: bus_authorize_is_over_cap(). */
int bus_authorize(Manager *m, sd_bus_message *msg, SbxAction action, uid_t owner, const char *worker_id,
                  bool interactive, sd_bus_error *ret_error);

/* The same decision for CALLER (from bus_caller_uid()) without asking
 * anyone: root, the owner, or a polkit answer already received for MSG. */
bool bus_authorized(Manager *m, sd_bus_message *msg, uid_t caller, SbxAction action, uid_t owner);

static inline bool bus_authorize_is_over_cap(int r) {
        return r == -EBUSY;
}

/* Whether a creation by the caller of MSG (OWNER) is exempt from the
 * per-owner quota: [Quota] ExemptManagers=yes and the caller holds
 * manage-workers, asked of polkit without a password once the creation
 * itself is authorized (a second check of the same call). 1: exempt; 0:
 * polkit has been asked, return 1 and change nothing (as bus_authorize());
 * QUOTA_NOT_EXEMPT: decided, not exempt; another negative errno: over the
 * caps on pending authorizations, with RET_ERROR set. */
#define QUOTA_NOT_EXEMPT (-ENOENT)
int bus_quota_exempt(Manager *m, sd_bus_message *msg, uid_t owner, sd_bus_error *ret_error);
static inline bool bus_quota_exempt_decided(int r) {
        return r > 0 || r == QUOTA_NOT_EXEMPT;
}

void bus_polkit_queries_free(Manager *m);

/* The filter that frees each answered query once its request has been
 * dispatched again. Added after every other filter on m->bus: sd-bus runs
 * the last one added first, so no other filter can end the dispatch
 * before this one has seen the request. */
int bus_polkit_install(Manager *m);
