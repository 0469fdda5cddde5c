/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "class.h"
#include "util.h"

/* The polkit actions of polkit/org.sandboxd1.policy. */
typedef enum SbxAction {
        SBX_ACTION_CREATE_WORKER,
        SBX_ACTION_CREATE_TRUSTED_WORKER,
        SBX_ACTION_MANAGE_WORKERS,
        SBX_ACTION_MANAGE_WORKSPACES,   /* use or delete another user's workspace */
        _SBX_ACTION_MAX,
} SbxAction;

typedef enum AuthzDecision {
        AUTHZ_ALLOW,            /* no need to ask anyone */
        AUTHZ_ASK_POLKIT,
        AUTHZ_DENY,
} AuthzDecision;

const char *sbx_action_to_string(SbxAction a);

/* Which action creating a worker of CLASS needs. The shared kernel has an
 * action of its own, never implied by the other. */
SbxAction authz_create_action(SbxClass class);

/* The whole policy that needs no polkit: root may do anything; a worker's
 * owner may manage that worker, a workspace's owner that workspace; a caller whose UID is unknown may do
 * nothing. OWNER is the worker's owner, UID_INVALID when there is none
 * (creation, listing). */
AuthzDecision authz_decide(uid_t caller, SbxAction action, uid_t owner);
