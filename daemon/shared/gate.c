/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "errors.h"
#include "gate.h"

int gate_choose(const RuntimeTable *t, const SbxConfig *c, SbxClass class, SbxRuntime *ret, SbxError *error) {
        SbxRuntime need = class_required_runtime(class);
        const RuntimeStatus *st;

        if (need < 0)
                return sbx_error_set(error, -EINVAL, SBX_ERROR_UNKNOWN_CLASS, "Unknown isolation class");
        /* Every runtime stands inside the unit's namespaces (gVisor's
         * veth has its other end in the unit's network): where they are not private,
         * no class holds, not even by the operator's exception below. */
        if (!t->walls.namespaces_private)
                return sbx_error_set(error, -EHOSTDOWN, SBX_ERROR_ISOLATION_UNAVAILABLE,
                                     "Isolation class %s refused: a worker's namespaces are not verified private on "
                                     "this host: %s", sbx_class_to_string(class), t->walls.namespaces_reason);
        st = &t->status[need];
        if (st->available) {
                *ret = need;
                return 0;
        }
        /* The one sanctioned exception: an operator who wrote down that
         * "standard" may share the kernel. Never for any other class. */
        if (class == SBX_CLASS_STANDARD && c->allow_shared_kernel_for_standard) {
                *ret = SBX_RUNTIME_SYSTEMD;
                return 0;
        }
        return sbx_error_set(error, -EHOSTDOWN, SBX_ERROR_ISOLATION_UNAVAILABLE,
                             "Isolation class %s needs runtime %s, which is not available on this host: %s",
                             sbx_class_to_string(class), sbx_runtime_to_string(need),
                             st->reason[0] ? st->reason : "unknown reason");
}

int gate_recheck(const RuntimeTable *t, const SbxConfig *c, SbxClass class, SbxRuntime chosen, SbxError *error) {
        SbxRuntime now;
        int r = gate_choose(t, c, class, &now, error);

        if (r < 0)
                return r;
        if (now != chosen)
                return sbx_error_set(error, -EHOSTDOWN, SBX_ERROR_ISOLATION_UNAVAILABLE,
                                     "Runtime %s chosen for class %s is no longer what this host offers (now %s); refusing",
                                     sbx_runtime_to_string(chosen), sbx_class_to_string(class),
                                     sbx_runtime_to_string(now));
        return 0;
}
