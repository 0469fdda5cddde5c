/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "authz.h"
#include "util.h"

static const char * const action_table[_SBX_ACTION_MAX] = {
        [SBX_ACTION_CREATE_WORKER] = "org.sandboxd1.create-worker",
        [SBX_ACTION_CREATE_TRUSTED_WORKER] = "org.sandboxd1.create-trusted-worker",
        [SBX_ACTION_MANAGE_WORKERS] = "org.sandboxd1.manage-workers",
        [SBX_ACTION_MANAGE_WORKSPACES] = "org.sandboxd1.manage-workspaces",
};

const char *sbx_action_to_string(SbxAction a) {
        return a >= 0 && a < _SBX_ACTION_MAX ? action_table[a] : NULL;
}

SbxAction authz_create_action(SbxClass class) {
        return class == SBX_CLASS_TRUSTED ? SBX_ACTION_CREATE_TRUSTED_WORKER : SBX_ACTION_CREATE_WORKER;
}

AuthzDecision authz_decide(uid_t caller, SbxAction action, uid_t owner) {
        if (caller == UID_INVALID || action < 0 || action >= _SBX_ACTION_MAX)
                return AUTHZ_DENY;
        if (caller == 0)
                return AUTHZ_ALLOW;
        if ((action == SBX_ACTION_MANAGE_WORKERS || action == SBX_ACTION_MANAGE_WORKSPACES) &&
            owner != UID_INVALID && caller == owner)
                return AUTHZ_ALLOW;
        return AUTHZ_ASK_POLKIT;
}
