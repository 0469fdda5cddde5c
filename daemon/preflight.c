/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "manager.h"

/* One row per class: which runtime would serve it, and whether it can now. */
int manager_preflight(Manager *m, sd_bus_message *msg, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssbs)");
        if (r < 0)
                return r;
        for (int c = 0; c < _SBX_CLASS_MAX; c++) {
                SbxRuntime rt = class_required_runtime((SbxClass) c), chosen;
                const RuntimeStatus *st = &m->runtimes.status[rt];
                SbxError e = {};
                bool ok = manager_choose_runtime(m, (SbxClass) c, &chosen, &e) >= 0;
                const char *reason = ok ? (chosen != rt ? "shared kernel allowed by AllowSharedKernelForStandard"
                                                        : st->reason)
                                        : e.message;

                r = sd_bus_message_append(reply, "(sssbs)", sbx_class_to_string((SbxClass) c),
                                          sbx_runtime_to_string(ok ? chosen : rt),
                                          ok ? m->runtimes.status[chosen].path : st->path, ok, reason);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}
